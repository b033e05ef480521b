"""The confirmation rule's calibration: every cell of leaders, gaps, caps, levels and noise is
simulated with both rules on the same draws and written as data; the tables' seed noise is
pooled from their repeated seeds; a count below one is refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.search_tables import confirm_calibration as calibration


def test_every_cell_is_simulated_with_both_rules_and_written(tmp_path: Path) -> None:
    out = tmp_path / "confirm.json"
    assert calibration.main(["--repetitions", "4", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    cells = data["cells"]
    assert len(cells) == 2 * len(calibration.LEADERS) * len(calibration.GAPS) * len(calibration.CAPS) * 2
    assert {c["noise"] for c in cells} == {"normal", "tables"}
    for cell in cells:
        assert 0 <= cell["wrong_separated"] <= 1 and 2 <= cell["seeds"] <= max(cell["cap"], 2)
        assert set(cell["earlier_rule"]) == {"separated", "wrong"}
    assert data["command"].startswith("python -m benchmarks.search_tables.confirm_calibration")


def test_the_tables_residuals_are_pooled_per_task_at_unit_spread() -> None:
    residuals = calibration.table_residuals(calibration.TABLES)
    assert len(residuals) > 1000 and abs(float(np.mean(residuals))) < 0.1
    assert float(np.std(residuals)) == pytest.approx(1.0, abs=0.05)


def test_a_count_below_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert calibration.main(["--repetitions", "0"]) == 2
    assert "--repetitions must be 1 or more" in capsys.readouterr().err

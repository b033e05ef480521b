"""The confirmation rule's calibration: every cell of leaders, gaps, caps, levels and noise is
simulated with the rule and the one it replaced on the same draws and written as data, each claim
judged; the tables' seed noise is pooled from their repeated seeds relative to each configuration's
value; a count below one is refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.search_tables import confirm_calibration as calibration
from sweeper.results.separation import CLAIMS, TIED


def test_every_cell_is_simulated_with_both_rules_and_every_claim_judged(tmp_path: Path) -> None:
    out = tmp_path / "confirm.json"
    assert calibration.main(["--repetitions", "4", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    cells = data["cells"]
    sizes = (calibration.NOISES, calibration.LEADERS, calibration.GAPS, calibration.CAPS, calibration.LEVELS)
    assert len(cells) == int(np.prod([len(s) for s in sizes]))
    assert {c["noise"] for c in cells} == {"normal", "t3", "tables", "unequal"}
    for cell in cells:
        assert set(cell["claims"]) == set(CLAIMS)
        for claim in cell["claims"].values():
            assert 0 <= claim["wrong"] <= claim["made"] <= 1 and 2 <= claim["seeds"] <= cell["cap"]
        assert set(cell["todays_rule"]) == {"separated", "tied", "wrong", "crashed", "seeds"}
    assert set(data["goals"]) >= {"ahead_at_two_margins", "margin_at_two_margins", "tie_at_zero"}
    assert data["command"].startswith("python -m benchmarks.search_tables.confirm_calibration")
    assert data["machine"]["device"] == "cpu"


def test_a_claim_is_wrong_exactly_where_the_truth_says_so() -> None:
    """At exactly one margin neither "margin" nor "tie" is true; "ahead" is false at a zero gap."""
    margin = TIED
    assert calibration.wrong("ahead", 0, np.array([0.0, 0.0]), margin)
    assert not calibration.wrong("ahead", 0, np.array([0.0, 0.1]), margin)
    assert calibration.wrong("ahead", 1, np.array([0.0, 0.1]), margin)
    at_margin = np.array([0.0, margin])
    assert calibration.wrong("margin", 0, at_margin, margin) and calibration.wrong(
        "tie", 0, at_margin, margin
    )
    assert not calibration.wrong("margin", 0, at_margin * 1.5, margin)
    assert not calibration.wrong("tie", 0, at_margin * 0.5, margin)
    assert calibration.tie_margin(calibration.spreads("unequal", 3)) == pytest.approx(TIED * np.sqrt(2.5))


def test_the_tables_residuals_are_relative_pooled_per_task_at_unit_spread() -> None:
    residuals = calibration.table_residuals(calibration.TABLES)
    assert len(residuals) > 1000 and abs(float(np.mean(residuals))) < 0.1
    assert float(np.std(residuals)) == pytest.approx(1.0, abs=0.05)
    assert float(np.mean(residuals**4)) > 3  # heavier tails than a normal's


def test_the_committed_calibration_is_valid_for_every_claim_and_meets_the_goals() -> None:
    data = json.loads((calibration.ROOT / "benchmarks/results/confirm-calibration.json").read_text())
    assert data["valid_in_every_cell"] and min(c["repetitions"] for c in data["cells"]) >= 4000
    for cell in data["cells"]:
        for claim in cell["claims"].values():
            assert claim["wrong"] <= (1 - cell["level"]) + 2 * cell["monte_carlo_error"]
    goals = data["goals"]
    assert goals["ahead_at_two_margins"]["5"] >= 0.9 and goals["margin_at_two_margins"]["10"] >= 0.5
    assert goals["tie_at_zero"]["10"] >= 0.8


def test_a_count_below_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert calibration.main(["--repetitions", "0"]) == 2
    assert "--repetitions and --jobs must be 1 or more" in capsys.readouterr().err

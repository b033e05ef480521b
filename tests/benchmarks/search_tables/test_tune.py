"""The defaults' tuning: each candidate setting reaches the default's studies, and its row holds
the default's figures as the replay judged them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.search_tables import replay, tune
from tests.benchmarks.search_tables.synthetic import synthetic_table


@pytest.mark.slow
def test_each_candidate_is_the_replays_default_under_that_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    synthetic_table(tmp_path / "table")
    common = ["--table", str(tmp_path / "table"), "--work", str(tmp_path / "work"), "--seeds", "4"]
    common += ["--workers", "2", "--trials", "4", "--tasks", "copying", "--jobs", "1"]
    out = tmp_path / "tuning.json"
    assert tune.main(["--candidates", "as shipped", "no early stopping", *common, "--out", str(out)]) == 0
    assert "no early stopping: copying W=2: " in capsys.readouterr().out
    rows = json.loads(out.read_text())["candidates"]
    assert rows["no early stopping"]["set"] == ["scheduler.name=none"]
    spent = {name: row["tasks"]["copying W=2"]["spent_hours"] for name, row in rows.items()}
    assert spent["no early stopping"] > spent["as shipped"]  # the setting reached the default's studies
    for name, settings in (("as shipped", []), ("no early stopping", ["--set", "scheduler.name=none"])):
        judged = tmp_path / f"{len(settings)}.json"
        assert (
            replay.main(["--strategies", "random", "default", *settings, *common, "--out", str(judged)]) == 0
        )
        default = json.loads(judged.read_text())["tasks"]["copying"]["W=2"]["strategies"]["default"]
        row = rows[name]["tasks"]["copying W=2"]
        assert (row["ratio_90"], row["spent_hours"]) == (
            default["ratio_90"],
            default["spent_hours"]["median"],
        )

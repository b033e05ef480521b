"""A recording's estimate prices each (task, model) at both ends of its sizes with the service's
own trial cost (kept per machine and code: a second estimate trains nothing), and writes nothing
to the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.search_tables import estimate
from sweeper.spec import trial_cost


@pytest.mark.slow
def test_each_model_is_priced_at_the_ends_of_its_sizes_and_a_second_estimate_reads_the_kept_costs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(trial_cost.CACHE_ENV, str(tmp_path / "cache"))
    out = tmp_path / "estimate.json"
    args = ["--table", str(tmp_path / "table"), "--hidden-scale", "0.25", "--iterations", "4"]
    args += ["--eval-every", "2", "--configs", "3", "--seeds", "1", "--tasks", "parenthesis"]
    args += ["--models", "gru", "--jobs", "1", "--out", str(out)]
    assert estimate.main(args) == 0
    result = json.loads(out.read_text())
    (row,) = result["rows"]
    assert (row["task"], row["model"], row["runs"]) == ("parenthesis", "gru", 4)  # a papers' point and 3
    assert row["sizes"][0] < row["sizes"][1] and row["worker_hours"] > 0
    assert result["machine"]["device"] == "cpu"  # its prices are timings on this machine
    assert not (tmp_path / "table").exists()  # nothing written to the table
    kept = json.loads((tmp_path / "cache" / trial_cost.CACHE_FILE).read_text())
    assert len(kept) == 2  # the two ends, each kept
    assert estimate.main(args) == 0 and json.loads(out.read_text())["rows"] == result["rows"]

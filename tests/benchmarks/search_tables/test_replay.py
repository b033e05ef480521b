"""The replay command: every strategy asked for, judged and written with its figure, resumable
from its log, and shorter trials replayed on a prefix of the table."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from benchmarks.search_tables import against, replay
from benchmarks.search_tables.simulator import Replay
from tests.benchmarks.search_tables.synthetic import synthetic_table


@pytest.mark.slow
def test_a_replay_judges_each_strategy_writes_its_figure_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    synthetic_table(tmp_path / "table")
    out = tmp_path / "search.json"
    args = ["--table", str(tmp_path / "table"), "--work", str(tmp_path / "work"), "--seeds", "4"]
    args += ["--workers", "2", "--trials", "4", "--strategies", "default", "+warm", "--out", str(out)]
    assert replay.main(args) == 0
    printed = capsys.readouterr().out
    assert "24 sweeps to replay" in printed and "right winner scornn" in printed
    data = json.loads(out.read_text())
    verdict = data["tasks"]["copying"]["W=2"]
    assert set(verdict["strategies"]) == {"random", "default", "+warm"}
    assert verdict["strategies"]["random"]["at_B"]["1.0"]["right"] >= 0.9
    judged = data["tasks"]["denoise"]["goal W=2"]
    assert judged["ratio_ok"] == (judged["ratio_90_upper"] is not None and judged["ratio_90_upper"] <= 0.33)
    assert judged["met"] == (judged["ratio_ok"] and judged["right_ok"] and judged["regret_ok"])
    floor = verdict["floor"]
    assert 0 < floor["any_sweep"] <= floor["busy_sweep"] and floor["busy_sweep_ratio"] > 0
    assert "no sweep names a winner before" in printed
    assert data["tasks"]["copying"]["goal W=2"]["busy_floor_ratio"] == floor["busy_sweep_ratio"]
    assert out.with_suffix(".png").stat().st_size > 10_000
    assert data["table"]["runs"]["complete"] > 0 and "files" not in data["table"]["versions"][0]
    assert replay.main(args) == 0
    assert "sweeps to replay" not in capsys.readouterr().out  # every sweep was in the log
    shorter = [*args[:-1], str(tmp_path / "short.json"), "--iterations", "300", "--strategies", "random"]
    assert replay.main(shorter) == 0
    assert "8 sweeps to replay" in capsys.readouterr().out


def test_settings_for_the_strategies_are_read_as_spec_entries() -> None:
    assert replay.parse_overrides(["scheduler.reduction_factor=2", "budget.race_rung=4"]) == {
        "scheduler": {"reduction_factor": 2},
        "budget": {"race_rung": 4},
    }
    with pytest.raises(SystemExit, match=r"SECTION\.KEY=VALUE"):
        replay.parse_overrides(["reduction_factor=2"])


def test_trained_sweeps_are_placed_among_the_replayed_ones(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path / "table")
    traces = [asdict(Replay(table, "copying", "random", s, 1, 2).run()) for s in range(20)]
    typical = min(t["value"] for t in traces[0]["trials"] if t["model"] == "gru")
    sweeps = [
        {"task": "copying", "strategy": "random", "seed": 0, "reports": [
            {"model": "gru", "value": typical, "complete": True, "seconds": 10.0},
            {"model": "scornn", "value": 0.001, "complete": True, "seconds": 20.0},  # better than any recorded run
            {"model": "goru", "value": 0.0, "complete": False, "seconds": 30.0},  # a report, not a trial's value
        ]},
    ]  # fmt: skip
    trained = tmp_path / "trained.json"
    trained.write_text(json.dumps({"settings": {"iterations": 600, "trials": 2}, "sweeps": sweeps}))
    checked = against.compare(trained, traces)
    assert checked["values"] == 2 and checked["inside_95"] == 1
    row = checked["tasks"]["copying"]["random"]["trained_sweeps"][0]
    assert row["percentiles"]["scornn"] == 0.0 and row["winner"] == "scornn"
    assert 0.0 < row["replayed_share_naming_it"] <= 1.0
    # the clock: this sweep's 30 worker-seconds against the replayed sweeps' median
    busy = sorted(sum(x["end"] - x["start"] for x in t["trials"]) for t in traces)
    assert row["clock_ratio"] == pytest.approx(30.0 / float(np.median(busy)))
    assert checked["clock"]["sweeps"] == 1 and checked["clock"]["median_ratio"] == row["clock_ratio"]
    with pytest.raises(SystemExit, match=r"--workers \[1\] \(asked \[4\]\)"):
        against.check_settings(trained, 600, 2, [4])


def test_the_replayed_code_digest_reads_every_path_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay's cached work is keyed by the code it ran; a path that moved would drop out of the
    key silently, so every named path must exist and a missing one is refused."""
    assert all((replay.ROOT / name).exists() for name in replay.REPLAYED_CODE)
    monkeypatch.setattr(replay, "REPLAYED_CODE", (*replay.REPLAYED_CODE, "benchmarks/gone"))
    with pytest.raises(FileNotFoundError, match="benchmarks/gone"):
        replay.code_digest()

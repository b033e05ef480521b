"""The odds' recalibration: learned from the replays' verdicts and judged leave-one-task-out (a
task's verdicts are never judged by a map that saw them), each cell's stated chance set against
its share right with the Wilson interval, and the shipped map what the committed replays give."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.search_tables import odds_calibration as oc
from sweeper.results import calibration


def _replay(path: Path, tasks: dict[str, tuple[float, float]]) -> Path:
    """A replay JSON whose default search states `stated` at each verdict and is right with `hit`."""
    rng = np.random.default_rng(7)
    data = {"settings": {"table": "benchmarks/results/blackbox"}, "tasks": {}}
    for task, (stated, hit) in tasks.items():
        n = 200
        kept = {
            "fraction": [1.0] * n,
            "stated": [stated] * n,
            "right": [float(x) for x in rng.random(n) < hit],
            "tie": [0.0] * n,
            "fewest_complete": [3.0] * n,
            "warned": [0.0] * n,
        }
        data["tasks"][task] = {"truth": {}, "W=4": {"strategies": {"transfer-indep": {"stated_odds": kept}}}}
    path.write_text(json.dumps(data))
    return path


def test_each_task_is_judged_by_a_map_learned_on_the_others_only(tmp_path: Path) -> None:
    """Tasks where a stated 0.5 is right 9 times in 10 teach the map to raise it, and each is then
    judged right; a task where it is right 2 times in 10 is judged by the map of the others alone,
    which never saw it, and stays off."""
    alike = {"a": (0.5, 0.9), "b": (0.5, 0.9), "c": (0.5, 0.9)}
    out, ship = tmp_path / "out.json", tmp_path / "ship.json"
    assert oc.main([str(_replay(tmp_path / "r.json", alike)), "--out", str(out), "--ship", str(ship)]) == 0
    for cell in json.loads(out.read_text())["cells"]:
        assert not cell["at 1"]["before"]["agrees"] and cell["at 1"]["after"]["agrees"]
        assert cell["at 1"]["after"]["mean_stated"] > 0.8
    shipped = json.loads(ship.read_text())
    assert shipped["features"] == list(calibration.FEATURES) and shipped["verdicts"] == 600
    odd = {**alike, "d": (0.5, 0.2)}
    assert oc.main([str(_replay(tmp_path / "odd.json", odd)), "--out", str(out)]) == 0
    (judged,) = [c["at 1"] for c in json.loads(out.read_text())["cells"] if c["task"] == "d"]
    assert judged["after"]["mean_stated"] > 0.8 and not judged["after"]["agrees"]


def test_the_wilson_interval_holds_the_share_and_a_replay_without_records_is_refused(tmp_path: Path) -> None:
    low, high = oc.wilson(45, 50)
    assert low < 0.9 < high and high < 1
    empty = tmp_path / "e.json"
    empty.write_text(json.dumps({"settings": {"table": "t"}, "tasks": {}}))
    assert oc.main([str(empty)]) == 2


def test_the_shipped_map_is_what_the_committed_replays_give() -> None:
    shipped = json.loads(calibration.SHIPPED.read_text())
    rows = [r for r in oc.verdicts([oc.ROOT / p for p in shipped["replays"]]) if r["fraction"] == 1.0]
    assert len(rows) == shipped["verdicts"]
    assert oc.fit(rows).tolist() == pytest.approx(shipped["coefficients"], abs=1e-4)

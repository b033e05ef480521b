"""Two replays side by side: ranks with ties, Kendall's tau-b worked by hand, the swapped pairs,
and bad input refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.search_tables import side_by_side


def replay(points: dict[str, float | None], table: str, workers: int = 4) -> dict:
    strategies = {
        name: {"ratio_90": r, "ratio_90_interval": [None if r is None else r * 0.9, r]}
        for name, r in points.items()
    }
    return {
        "settings": {"table": table, "tasks": ["copying"], "workers": [workers]},
        "tasks": {"copying": {f"W={workers}": {"strategies": strategies}}},
    }


def test_ties_share_their_mean_rank_and_never_ranks_last() -> None:
    assert side_by_side.ranks({"a": 0.5, "b": None, "c": 0.5, "d": 0.2, "e": None}) == {
        "d": 1.0,
        "a": 2.5,
        "c": 2.5,
        "b": 4.5,
        "e": 4.5,
    }


def test_kendall_tau_b_by_hand() -> None:
    same = {"a": 1.0, "b": 2.0, "c": 3.0}
    assert side_by_side.kendall_tau_b(same, same) == 1.0
    assert side_by_side.kendall_tau_b(same, {"a": 3.0, "b": 2.0, "c": 1.0}) == -1.0
    # pairs ab, ac, bc: concordant, concordant, tied in the second: (2 - 0) / sqrt(3 * 2)
    assert side_by_side.kendall_tau_b(same, {"a": 1.0, "b": 2.5, "c": 2.5}) == pytest.approx(2 / 6**0.5)
    assert side_by_side.kendall_tau_b({"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 1.0}) is None


def test_the_order_of_strategies_is_compared_and_the_swaps_named() -> None:
    first = replay({"random": 1.0, "default": 0.8, "curves": 0.7, "race": None}, "first")
    second = replay({"random": 1.0, "default": 0.6, "curves": 0.9, "race": None, "new": 0.1}, "second")
    first["tasks"]["copying"]["W=4"]["strategies"]["curves"]["versus_default"] = {"standing": "ahead"}
    second["tasks"]["copying"]["W=4"]["strategies"]["curves"]["versus_default"] = {"standing": "behind"}
    first["tasks"]["copying"]["W=4"]["strategies"]["default"]["ratio_90_interval"] = [0.65, 0.8]
    second["tasks"]["copying"]["W=4"]["strategies"]["default"]["ratio_90_interval"] = [0.55, 0.6]
    result = side_by_side.compare(first, second)
    cell = result["cells"]["copying W=4"]
    assert cell["standing_changed"] == ["curves: ahead → behind"]
    # default/curves swap, but only the second table's intervals are apart (first: 0.65-0.80 and 0.63-0.70)
    assert cell["swapped_beyond_intervals"] == []
    second["tasks"]["copying"]["W=4"]["strategies"]["curves"]["ratio_90_interval"] = [0.85, 0.9]
    first["tasks"]["copying"]["W=4"]["strategies"]["default"]["ratio_90_interval"] = [0.75, 0.8]
    assert side_by_side.compare(first, second)["cells"]["copying W=4"]["swapped_beyond_intervals"] == [
        "default/curves"
    ]
    assert set(cell["strategies"]) == {"random", "default", "curves", "race"}  # those in both
    assert cell["swapped"] == ["default/curves"]
    assert cell["pairs_unswapped"] == pytest.approx(5 / 6)
    assert cell["kendall_tau_b"] == pytest.approx(4 / 6)
    text = side_by_side.markdown(result)
    assert "| curves | 0.70x (0.63–0.70) → 0.90x (0.81–0.90) |" in text and "| race | never → never |" in text
    assert "| default | 0.80x (0.65–0.80) → 0.60x (0.55–0.60) |" in text


def test_files_that_are_no_replays_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(replay({"random": 1.0, "default": 0.8}, "good")))
    bad.write_text(json.dumps({"tasks": {}}))
    assert side_by_side.main([str(good), str(bad)]) == 2
    assert "not two replays' figures" in capsys.readouterr().err
    out = tmp_path / "out.json"
    assert side_by_side.main([str(good), str(good), "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["cells"]["copying W=4"]["kendall_tau_b"] == 1.0
    assert written["command"].startswith("python -m benchmarks.search_tables.side_by_side")
    assert written["machine"]["device"] == "cpu"

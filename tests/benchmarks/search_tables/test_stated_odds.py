"""The odds a replayed sweep states mid-way and at its end: the sweep cut where a share of its
trials had ended, each verdict kept as a record and judged, and the shares summarised."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.search_tables import stated_odds
from benchmarks.search_tables import table as tables
from benchmarks.search_tables.verdicts import Truth

TRUTH = Truth(
    {"a": np.array([0.1, 0.3]), "b": np.array([0.2, 0.5])}, {"a": 0.1, "b": 0.2}, 1.0, "a", ("a",), 0.01, 0.03
)
INFO = tables.TaskInfo({}, "valid_loss", "min", 0.5)


def _trial(model: str, design: int, seed: int, value: float, end: float) -> dict:
    return {
        "model": model,
        "design": design,
        "seed": seed,
        "start": end - 1,
        "end": end,
        "state": "COMPLETE",
        "value": value,
    }


def test_a_sweep_is_cut_where_a_share_of_its_trials_had_ended() -> None:
    trace = {"trials": [_trial("a", d, 0, 0.1, end) for d, end in enumerate((4.0, 1.0, 3.0, 2.0))]}
    assert [t["end"] for t in stated_odds.at_fraction(trace, 0.25)["trials"]] == [1.0]
    assert sorted(t["end"] for t in stated_odds.at_fraction(trace, 0.5)["trials"]) == [1.0, 2.0]
    assert len(stated_odds.at_fraction(trace, 1.0)["trials"]) == 4


def test_each_verdict_is_kept_with_its_share_stated_chance_and_whether_it_was_right() -> None:
    """At a quarter only b has finished (a verdict missing a, wrong); at half and at the end a
    leads (right); a sweep with no complete trial states nothing."""
    trace = {
        "trials": [
            _trial("b", 3, 0, 0.30, 1.0),
            _trial("a", 0, 0, 0.10, 2.0),
            _trial("a", 1, 0, 0.20, 3.0),
            _trial("b", 2, 0, 0.35, 4.0),
        ]
    }
    empty = {"trials": []}
    kept = stated_odds.records([trace, empty], INFO, TRUTH, 0.5, {"a": 1, "b": 1})
    assert kept["fraction"] == [0.25, 0.5, 1.0]
    assert kept["right"] == [0.0, 1.0, 1.0] and kept["tie"] == [0.0, 0.0, 0.0]
    assert kept["fewest_complete"] == [0.0, 1.0, 2.0]
    assert kept["warned"] == [1.0, 0.0, 0.0]  # a rival with fewer complete trials than searched values
    assert kept["stated"][0] == pytest.approx(1.0) and 0.5 < kept["stated"][2] <= 1.0
    summary = stated_odds.by_fraction(kept)
    assert summary["0.25"] == {"named": 1, "right": 0.0, "mean_stated": pytest.approx(kept["stated"][0])}
    assert summary["1"]["right"] == 1.0

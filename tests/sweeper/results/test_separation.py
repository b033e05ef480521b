"""`confirm`'s decision: separated, tied or undecided, by tests valid at every look: each look's
share of the error sums to at most 1 - level over every look there could be, a separation claimed
where the leaders lie within the margin is as rare as the level says (a seeded simulation), and a
maximised objective's leader is the highest."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sweeper.results.separation import FIRST_LOOK, TIED, decide, look_error, tie_margin


def test_the_looks_share_the_error_so_that_every_look_there_could_be_sums_to_it() -> None:
    shares = [look_error(0.95, look) for look in range(FIRST_LOOK, 10_000)]
    assert shares == sorted(shares, reverse=True) and shares[0] == pytest.approx(0.025)
    assert sum(shares) == pytest.approx(0.05, rel=1e-3) and sum(shares) <= 0.05
    with pytest.raises(ValueError, match="2 seeds or more"):
        look_error(0.95, 1)


def test_a_clear_gap_separates_equal_runs_tie_and_a_gap_near_the_margin_is_undecided() -> None:
    clear = decide({"gru": [0.199, 0.201], "lstm": [0.299, 0.301]}, "min", 0.95, 2)
    assert (clear.outcome, clear.winner) == ("separated", "gru")
    assert clear.sigma == pytest.approx(math.sqrt(4e-6 / 2)) and clear.dof == 2
    assert clear.margin == pytest.approx(tie_margin(clear.sigma)) == pytest.approx(TIED * clear.sigma)
    assert clear.line(0.95).startswith("gru ahead of lstm by more than the tie margin at 95% (separated;")
    level = decide({"a": [1.0, 1.2, 0.8], "b": [1.0, 0.8, 1.2], "c": [1.01, 0.81, 1.19]}, "min", 0.9, 3)
    assert level.outcome == "tied" and "tie confirmed" in level.line(0.9)
    near = decide({"a": [0.20, 0.30], "b": [0.27, 0.33]}, "min", 0.95, 2)
    assert near.outcome == "undecided" and near.winner == "a"
    accuracy = decide({"gru": [0.91, 0.90], "goru": [0.70, 0.71]}, "max", 0.95, 2)
    assert (accuracy.outcome, accuracy.winner) == ("separated", "gru")
    assert accuracy.means == {"gru": pytest.approx(0.905), "goru": pytest.approx(0.705)}


def test_a_decision_needs_two_leaders_each_with_a_run() -> None:
    with pytest.raises(ValueError, match="two leaders or more"):
        decide({"gru": [0.1, 0.2]}, "min", 0.95, 2)
    with pytest.raises(ValueError, match="each with a confirmation value"):
        decide({"gru": [0.1, 0.2], "lstm": []}, "min", 0.95, 2)
    one_each = decide({"gru": [0.1], "lstm": [0.3]}, "min", 0.95, 2)
    assert one_each.outcome == "undecided" and one_each.dof == 0


@pytest.mark.parametrize("gap_margins", [0.0, 1.0])
def test_separated_is_wrongly_claimed_no_more_often_than_the_level_allows_whatever_the_look(
    gap_margins: float,
) -> None:
    """Two leaders a gap of 0 or exactly one margin apart (a separation claim is wrong in both),
    two seeds each and one more per look up to ten, normal seed noise: wrong at most 1 - level
    plus three Monte-Carlo errors."""
    rng = np.random.default_rng(20261203)
    level, repetitions, wrong = 0.9, 600, 0
    for _ in range(repetitions):
        runs = rng.standard_normal((10, 2)) + np.array([0.0, gap_margins * TIED])
        for look in range(FIRST_LOOK, 11):
            decision = decide({"a": list(runs[:look, 0]), "b": list(runs[:look, 1])}, "min", level, look)
            if decision.outcome != "undecided":
                break
        wrong += decision.outcome == "separated"
    assert wrong / repetitions <= (1 - level) + 3 * math.sqrt(level * (1 - level) / repetitions)

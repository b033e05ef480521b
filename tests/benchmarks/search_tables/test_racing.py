"""The racing figures: normalized regret and its interquartile mean, drops judged against the
truth, the odds a replayed sweep states and whether its verdict was right, the reliability table,
calibration problems with truths of their own, the racing floor, and the paired standing of two
strategies."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks.search_tables import racing
from benchmarks.search_tables import table as tables
from benchmarks.search_tables.verdicts import Timeline, Truth, ground_truth
from tests.benchmarks.search_tables.synthetic import QUALITY, synthetic_table

TRUTH = Truth(
    {"a": np.array([0.1, 0.3]), "b": np.array([0.2, 0.5])}, {"a": 0.1, "b": 0.2}, 1.0, "a", ("a",), 0.01, 0.03
)


def test_the_interquartile_mean_leaves_out_each_quarter_at_the_ends() -> None:
    assert racing.iqm(np.array([100.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, -100.0])) == pytest.approx(3.5)
    low, high = racing.iqm_interval(np.array([1.0, 2.0, 3.0, 4.0] * 5), np.random.default_rng(0))
    assert 1.5 <= low <= 2.5 <= high <= 3.5


def test_normalized_regret_is_one_before_an_answer_and_scales_between_best_and_worst() -> None:
    line = Timeline(np.array([1.0, 2.0]), ["b", "a"], [0, 1], 3.0, np.array([0.5, 1.0]))
    assert racing.normalized_regret(line, TRUTH, 0.5, 0.5) == 1.0  # nothing named yet
    assert racing.normalized_regret(line, TRUTH, 0.5, 1.5) == pytest.approx((0.2 - 0.1) / (0.5 - 0.1))
    assert racing.normalized_regret(line, TRUTH, 0.5, 2.5) == pytest.approx((0.3 - 0.1) / 0.4)
    curve = racing.regret_curve([line] * 4, TRUTH, 0.5, 2.0, np.random.default_rng(0))
    assert curve["0.1"]["iqm"] == 1.0 and curve["1.0"]["iqm"] == pytest.approx(0.5)


def test_drops_are_judged_against_the_truths_co_winners() -> None:
    traces = [{"race_stops": [(1.0, "b"), (2.0, "a")]}, {"race_stops": [(3.0, "b")]}, {"race_stops": []}]
    assert racing.judged_drops(traces, TRUTH) == {
        "drops": 3,
        "co_winners_dropped": 1,
        "share": pytest.approx(1 / 3),
        "met": False,
    }
    kept = [{"race_stops": [(1.0, "b")] * 19 + [(2.0, "a")]}]
    assert racing.judged_drops(kept, TRUTH)["met"] and racing.judged_drops([{"race_stops": []}], TRUTH)["met"]


def _trial(model: str, design: int, seed: int, value: float) -> dict:
    return {"model": model, "design": design, "seed": seed, "state": "COMPLETE", "value": value}


def test_a_replayed_sweep_states_its_odds_and_its_verdict_is_judged_by_the_issues_rule() -> None:
    info = tables.TaskInfo({}, "valid_loss", "min", 0.5)
    trace = {
        "trials": [
            _trial("a", 0, 0, 0.10),
            _trial("a", 0, 1, 0.12),
            _trial("b", 3, 0, 0.30),
            _trial("a", 1, 0, 0.2),
        ]
    }
    said = racing.stated_odds(trace, info, relative_noise=0.5)
    # one configuration on two seeds is one pair: too few for the sweep's own estimate
    assert (
        said.noise.source == "the recorded tables of the other tasks"
        and said.noise.sigma == pytest.approx(0.05)
    )
    outcome = racing.verdict_outcome(said, info, TRUTH)
    assert outcome == {"tie": False, "stated": said.p_winner, "right": True}
    wrong = Truth(TRUTH.objective, TRUTH.best, 1.0, "b", ("b",), 0.01, 0.03)
    assert racing.verdict_outcome(said, info, wrong)["right"] is False
    unlearned = tables.TaskInfo({}, "valid_loss", "min", 0.05)  # nobody beat the baseline: no verdict
    assert racing.verdict_outcome(said, unlearned, TRUTH) is None
    repeated = [_trial("a", d, s, 0.1 + 0.01 * d + 0.002 * s) for d in range(3) for s in range(2)]
    own = racing.stated_odds({"trials": [*repeated, _trial("b", 3, 0, 0.3)]}, info, relative_noise=0.5)
    assert own.noise.source == "near-identical configurations (3 pairs)"
    assert own.noise.sigma == pytest.approx(0.002 / math.sqrt(2))
    rows = racing.reliability(
        [{"tie": False, "stated": 0.97, "right": True}, {"tie": True, "stated": 0.6, "right": False}]
    )
    assert (
        [r["verdicts"] for r in rows] == [0, 1, 0, 0, 1] and rows[-1]["right"] == 1.0 and rows[1]["ties"] == 1
    )


def test_a_calibration_problem_is_a_smaller_table_with_its_own_truth(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    sizes = set()
    for number in range(6):
        problem = racing.problem_table(table, "denoise", number)
        models = list(problem.curves["denoise"])
        assert len(models) >= 2 and set(models) <= set(QUALITY)
        for model in models:
            curves, whole = problem.curves["denoise"][model], table.curves["denoise"][model]
            assert curves.paper.sum() == whole.paper.sum()  # the papers' points kept
            assert (~curves.paper).sum() == round(0.6 * (~whole.paper).sum())
        truth = ground_truth(problem, "denoise")
        assert truth.winner == min(models, key=QUALITY.__getitem__)
        sizes.add(len(models))
    assert len(sizes) > 1  # problems differ in their models
    assert (
        racing.problem_table(table, "denoise", 3).curves["denoise"].keys()
        == racing.problem_table(table, "denoise", 3).curves["denoise"].keys()
    )  # a problem is the same table each time it is drawn


def test_the_racing_floor_is_w_times_the_winners_fastest_complete_run(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    truth = ground_truth(table, "copying")
    fastest = table.curves["copying"][truth.winner].ended.min()
    assert racing.racing_floor(table, "copying", truth, 4) == pytest.approx(4 * fastest / 3600)


def test_a_strategy_sooner_in_every_seed_stands_ahead_and_one_level_with_itself_level() -> None:
    def lines(hours: float) -> list[Timeline]:
        return [Timeline(np.array([hours + 0.01 * k]), ["a"], [0], 1.0, np.array([1.0])) for k in range(20)]

    rng = np.random.default_rng(0)
    assert racing.standing(racing.paired_difference(lines(1.0), lines(2.0), TRUTH, rng)) == "ahead"
    assert racing.standing(racing.paired_difference(lines(2.0), lines(1.0), TRUTH, rng)) == "behind"
    assert racing.standing(racing.paired_difference(lines(1.0), lines(1.0), TRUTH, rng)) == "level"
    never = [Timeline(np.array([1.0]), ["b"], [0], 1.0, np.array([1.0]))] * 20
    assert math.isinf(racing.paired_difference(never, lines(1.0), TRUTH, rng)[1])

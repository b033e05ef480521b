"""The verdicts: the right winner and its co-winners from the table, when a sweep is right for
good, and the goal read off paired seeds."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.simulator import Trace
from benchmarks.search_tables.verdicts import (
    Timeline,
    Truth,
    answer_at,
    first_named,
    floors,
    goal,
    ground_truth,
    judge,
    quantile,
    right_for_good,
    timeline,
)
from tests.benchmarks.search_tables.synthetic import SETTINGS, run_seconds, synthetic_table


def test_the_right_winner_and_the_models_within_seed_noise_of_it(tmp_path: Path) -> None:
    table = synthetic_table(tmp_path)
    truth = ground_truth(table, "copying")
    assert truth.winner == "scornn" and truth.co_winners == ("scornn",)
    spread = 0.001 * (1 - math.exp(-600 / 150))  # the two seeds' bests, 600 iterations in
    assert truth.noise == pytest.approx(spread / math.sqrt(2), rel=1e-6)
    goru = table.curves["copying"]["goru"]
    goru.objective -= truth.best["goru"] - truth.best["scornn"] - 0.0001  # a hair behind the winner
    near = ground_truth(table, "copying")
    assert near.winner == "scornn" and set(near.co_winners) == {"scornn", "goru"}
    gru = table.curves["copying"]["gru"]
    gru.status[:] = tables.FAILED  # a model with no complete run has no best
    assert math.isinf(ground_truth(table, "copying").best["gru"])


def _truth() -> Truth:
    objective = {"a": np.array([0.1, 0.3]), "b": np.array([0.2, 0.5])}
    return Truth(objective, {"a": 0.1, "b": 0.2}, 1.0, "a", ("a",), 0.01, 0.03)


def _task(baseline: float | None, mode: str = "min") -> tables.TaskInfo:
    return tables.TaskInfo({}, "valid_loss", mode, baseline)


def test_a_sweep_is_right_for_good_from_its_last_switch_to_a_right_winner() -> None:
    trace = Trace("t", "s", 0, 1)
    trace.trials = [
        {"model": "a", "design": 1, "start": 0, "end": 3600, "state": "COMPLETE", "value": 0.3},
        {"model": "b", "design": 0, "start": 3600, "end": 7200, "state": "COMPLETE", "value": 0.2},
        {"model": "a", "design": 0, "start": 7200, "end": 10800, "state": "COMPLETE", "value": 0.1},
        {"model": "b", "design": 1, "start": 10800, "end": 14400, "state": "PRUNED", "value": None},
    ]
    line = timeline(trace, ("a", "b"), _task(0.5))
    assert line.named == ["", "b", "a"] and list(line.hours) == [1.0, 2.0, 3.0] and line.total_hours == 4.0
    # a leader no better than the memoryless baseline is no answer: nothing learned yet
    assert timeline(trace, ("a", "b"), _task(0.15)).named == ["", "", "a"]
    # a task without a baseline: the leader is named once every model has completed a trial
    assert timeline(trace, ("a", "b"), _task(None)).named == ["", "b", "a"]
    # a maximised objective (an accuracy): the highest leads, and must beat its baseline
    assert timeline(trace, ("a", "b"), _task(0.15, "max")).named == ["", "a", "a"]
    assert right_for_good(line, _truth()) == 3.0
    assert answer_at(line, 2.5) == ("b", 0) and answer_at(line, 0.5) == ("", -1)
    assert answer_at(line, 10.0) == ("a", 0)  # a sweep that ended keeps its last answer
    wrong = Timeline(np.array([1.0, 2.0]), ["a", "b"], [0, 0], 2.0)
    assert math.isinf(right_for_good(wrong, _truth()))


def test_floors_are_each_models_fastest_complete_run_and_w_times_the_slowest_of_them(
    tmp_path: Path,
) -> None:
    table = synthetic_table(tmp_path)
    whole = {m: run_seconds(m, SETTINGS.iterations) for m in tables.MODELS}
    total, slowest = sum(whole.values()), max(whole.values())
    assert floors(table, "copying", 4) == {
        "any_sweep": pytest.approx(total / 3600),
        "busy_sweep": pytest.approx(4 * slowest / 3600),
    }
    assert floors(table, "copying", 1)["busy_sweep"] == pytest.approx(total / 3600)  # one worker: the sum
    ncgru = table.curves["copying"]["ncgru"]
    ncgru.ended[0, 0] = 1.0  # one faster complete run lowers the floor; a faster diverged one does not
    ncgru.ended[1, 0], ncgru.status[1, 0] = 0.5, tables.DIVERGED
    assert floors(table, "copying", 1)["any_sweep"] == pytest.approx((total - whole["ncgru"] + 1.0) / 3600)
    table.curves["copying"]["gru"].status[:] = tables.FAILED
    assert floors(table, "copying", 4) == {"any_sweep": None, "busy_sweep": None}


def test_a_sweeps_first_answer_is_its_first_named_winner_right_or_not() -> None:
    line = Timeline(np.array([1.0, 2.0, 3.0]), ["", "b", "a"], [-1, 0, 0], 4.0)
    assert first_named(line) == 2.0
    assert math.isinf(first_named(Timeline(np.array([1.0]), [""], [-1], 1.0)))


def test_quantiles_rank_sweeps_never_right_last() -> None:
    values = np.array([1.0, 2.0, 3.0, math.inf])
    assert (
        quantile(values, 0.5) == 2.0 and quantile(values, 0.75) == 3.0 and math.isinf(quantile(values, 0.9))
    )


def test_the_goal_holds_for_a_strategy_right_sooner_and_fails_for_one_no_better() -> None:
    truth = _truth()

    def lines(hours: list[float]) -> list[Timeline]:
        return [Timeline(np.array([h]), ["a"], [0], h + 1) for h in hours]

    slow = [10.0 + i for i in range(20)]
    verdict = judge({"random": lines(slow), "default": lines([h / 5 for h in slow])}, truth)
    assert verdict["B_hours"] == 27.0  # the 18th of 20 seeds
    assert verdict["strategies"]["default"]["ratio_90"] == pytest.approx(0.2)
    assert verdict["strategies"]["default"]["first_named_90_ratio"] == pytest.approx(0.2)
    assert goal(verdict)["met"] and "reachable" not in goal(verdict)
    verdict["floor"] = {"busy_sweep_ratio": 0.5}
    assert goal(verdict)["reachable"] is False and goal(verdict)["busy_floor_ratio"] == 0.5
    same = judge({"random": lines(slow), "default": lines(slow)}, truth)
    checks = goal(same)
    assert not checks["met"] and not checks["ratio_ok"] and checks["right_at_third"] == 0.0
    never = judge({"random": lines([math.inf] * 20), "default": lines(slow)}, truth)
    assert never["B_hours"] is None and goal(never) == {
        "met": False,
        "why": "random never reaches 90% right within its budget",
    }

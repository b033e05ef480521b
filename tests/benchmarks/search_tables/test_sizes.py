"""Hidden sizes judged by thirds of each model's range, and where each strategy spent, on a table
written by hand whose answer is worked out below."""

from __future__ import annotations

import math

import pytest

from benchmarks.search_tables import sizes
from benchmarks.search_tables import table as tables

NEVER = math.nan  # a configuration none of whose runs is recorded yet
FAILED = -1.0  # a configuration whose judged run failed, after spending its seconds
# (hidden size, truth value on seed 0, worker-seconds of its run); the last is a papers' point
DESIGN = [
    (8, 0.25, 10.0),
    (9, 0.60, 10.0),
    (10, 0.70, 10.0),
    (11, 0.75, 10.0),  # small: 8-13 (the sizes drawn, 8-40, cut at 13.7 and 23.4 on a log scale)
    (12, NEVER, 10.0),
    (16, 0.30, 20.0),
    (18, 0.80, 20.0),
    (20, 0.90, 20.0),  # middle
    (22, FAILED, 80.0),
    (32, 0.10, 40.0),
    (36, 0.95, 40.0),
    (40, 0.97, 40.0),  # large
    (20, 0.50, 20.0),  # the papers' point, its size scaled into the range
]


def hand_table(hidden: int | None = None, mode: str = "min", runs: bool = True) -> tables.Table:
    settings = (
        tables.Settings(hidden=None, hidden_scale=0.25, iterations=200)
        if hidden is None
        else tables.Settings(hidden=hidden, iterations=200)
    )
    designs = [
        {
            "label": f"sobol {i}" if i < len(DESIGN) - 1 else "ncgru Table 2",
            "params": {"hidden_size": size if hidden is None else hidden, "lr": 1e-3},
            "config": {},
        }
        for i, (size, _, _) in enumerate(DESIGN)
    ]
    curves = tables.Curves.empty(designs, seeds=2, evaluations=2)
    flip = 1.0 if mode == "min" else -1.0  # a maximised objective: the same order, higher is better
    for c, (_, value, seconds) in enumerate(DESIGN):
        if math.isnan(value) or not runs:
            continue
        curves.seconds[c, :] = curves.wall[c, :] = [seconds / 2, seconds]
        curves.version[c] = 0
        curves.ended[c] = [seconds, 1000.0]
        curves.status[c] = tables.COMPLETE
        curves.objective[c, 1] = [9.0, 9.0 - value]  # seed 1 reverses the order: held out below
        if value == FAILED:
            curves.status[c, 0] = tables.FAILED
            continue
        curves.objective[c, 0] = [flip * (value + 0.5), flip * value]
    info = tables.TaskInfo({"T": 10}, "valid_loss", mode, flip * 1.0)
    return tables.Table(settings, 2, {"copying": info}, {}, {"copying": {"gru": curves}})


def trace(task: str, strategy: str, trials: list[tuple[int, float]]) -> dict:
    return {
        "task": task,
        "strategy": strategy,
        "trials": [{"model": "gru", "design": d, "start": 5.0, "end": 5.0 + s} for d, s in trials],
    }


@pytest.mark.parametrize("mode", ["min", "max"])
def test_each_third_is_judged_by_the_truth_on_the_judged_seeds_and_the_cost_aware_one_named(
    mode: str,
) -> None:
    flip = 1.0 if mode == "min" else -1.0
    judged = sizes.findings([], hand_table(mode=mode), ["copying"], seeds=(0,))["copying"]["models"]["gru"]
    assert judged["range"] == [8.0, 40.0]
    assert judged["top_count"] == 2  # a tenth of the 11 completed, rounded up: 0.10 and 0.25
    assert (judged["best_size"], judged["best_third"]) == (32, "large")
    rows = {row["third"]: row for row in judged["thirds"]}
    assert rows["small"] == {
        "third": "small",
        "sizes": [8, 11],  # 12 is not recorded yet
        "configs": 4,
        "completed": 4,
        "best": flip * 0.25,
        "median": pytest.approx(flip * 0.65),
        "top": 1,
        "run_seconds": 10.0,
        "hours": pytest.approx(40 / 3600),
        "top_per_hour": pytest.approx(1 / (40 / 3600)),
    }
    # the failed run is no value but costs what it spent: 80 s beside three runs of 20 s
    assert (rows["middle"]["configs"], rows["middle"]["completed"]) == (4, 3)
    assert rows["middle"]["hours"] == pytest.approx(140 / 3600)
    assert (rows["middle"]["top"], rows["middle"]["top_per_hour"]) == (0, 0.0)
    assert rows["large"]["top_per_hour"] == pytest.approx(1 / (120 / 3600))
    assert (rows["papers"]["sizes"], rows["papers"]["top"]) == ([20, 20], 0)
    # the large third holds the best configuration, but a worker-hour finds three times as many
    # top configurations in the small one
    assert judged["cost_aware_third"] == "small"


def test_each_strategys_hours_are_shared_out_by_third_and_calibration_problems_are_left_out() -> None:
    traces = [
        trace("copying", "random", [(0, 10.0), (9, 30.0)]),
        trace("copying", "default", [(12, 20.0), (5, 20.0)]),
        trace("copying#1", "default", [(0, 1000.0)]),  # a calibration problem's design is a subset
    ]
    result = sizes.findings(traces, hand_table(), ["copying"], seeds=(0,))["copying"]
    spent = result["models"]["gru"]["spending"]
    assert spent["random"] == {"small": 0.25, "middle": 0.0, "large": 0.75, "papers": 0.0}
    assert spent["default"] == {"small": 0.0, "middle": 0.5, "large": 0.0, "papers": 0.5}
    assert result["in_cost_aware_third"] == {"random": 0.25, "default": 0.0}


def test_a_table_of_one_hidden_size_or_a_model_with_nothing_completed_has_no_findings() -> None:
    assert (
        sizes.findings([trace("copying", "random", [(0, 1.0)])], hand_table(hidden=32), ["copying"], None)
        == {}
    )
    assert sizes.findings([], hand_table(runs=False), ["copying"], None) == {}

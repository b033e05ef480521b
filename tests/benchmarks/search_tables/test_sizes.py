"""Hidden sizes judged by thirds of each model's range, and where each strategy spent, on a table
written by hand whose answer is worked out below."""

from __future__ import annotations

import pytest

from benchmarks.search_tables import sizes
from benchmarks.search_tables import table as tables

# (hidden size, truth value on seed 0, worker-seconds of a full run); the last is a papers' point
DESIGN = [
    (8, 0.25, 10.0),
    (9, 0.60, 10.0),
    (10, 0.70, 10.0),
    (11, 0.75, 10.0),  # small: 8-13 (the range 8-40 cut at 13.7 and 23.4 on a log scale)
    (16, 0.30, 20.0),
    (18, 0.80, 20.0),
    (20, 0.90, 20.0),  # middle
    (32, 0.10, 40.0),
    (36, 0.95, 40.0),
    (40, 0.97, 40.0),  # large
    (64, 0.50, 80.0),  # the papers' point, outside the range
]


def hand_table(hidden: int | None = None) -> tables.Table:
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
    for c, (_, value, seconds) in enumerate(DESIGN):
        curves.objective[c, 0] = [value + 0.5, value]
        curves.objective[c, 1] = [9.0, 9.0 - value]  # seed 1 reverses the order: held out below
        curves.seconds[c, :] = curves.wall[c, :] = [seconds / 2, seconds]
        curves.status[c] = tables.COMPLETE
        curves.version[c] = 0
        curves.ended[c, 0] = seconds
        curves.ended[c, 1] = 1000.0
    info = tables.TaskInfo({"T": 10}, "valid_loss", "min", 1.0)
    return tables.Table(settings, 2, {"copying": info}, {}, {"copying": {"gru": curves}})


def trace(task: str, strategy: str, trials: list[tuple[int, float]]) -> dict:
    return {
        "task": task,
        "strategy": strategy,
        "trials": [{"model": "gru", "design": d, "start": 5.0, "end": 5.0 + s} for d, s in trials],
    }


def test_each_third_is_judged_by_the_truth_on_the_judged_seeds_and_the_cost_aware_one_named() -> None:
    table = hand_table()
    judged = sizes.findings([], table, ["copying"], seeds=(0,))["copying"]["models"]["gru"]
    assert judged["range"] == [8.0, 40.0]
    assert judged["top_count"] == 2  # a tenth of 11 configurations, rounded up: 0.10 and 0.25
    assert (judged["best_size"], judged["best_third"]) == (32, "large")
    rows = {row["third"]: row for row in judged["thirds"]}
    assert rows["small"] == {
        "third": "small",
        "sizes": [8, 11],
        "configs": 4,
        "best": 0.25,
        "median": pytest.approx(0.65),
        "top": 1,
        "run_seconds": 10.0,
        "top_per_hour": pytest.approx(1 / (40 / 3600)),
    }
    assert (rows["middle"]["top"], rows["middle"]["top_per_hour"]) == (0, 0.0)
    assert rows["large"]["top_per_hour"] == pytest.approx(1 / (120 / 3600))
    assert (rows["papers"]["sizes"], rows["papers"]["top"]) == ([64, 64], 0)
    # the large third holds the best configuration, but a worker-hour finds three times as many
    # top configurations in the small one
    assert judged["cost_aware_third"] == "small"


def test_each_strategys_hours_are_shared_out_by_third_and_calibration_problems_are_left_out() -> None:
    traces = [
        trace("copying", "random", [(0, 10.0), (7, 30.0)]),
        trace("copying", "default", [(10, 20.0), (4, 20.0)]),
        trace("copying#1", "default", [(0, 1000.0)]),  # a calibration problem's design is a subset
    ]
    result = sizes.findings(traces, hand_table(), ["copying"], seeds=(0,))["copying"]
    spent = result["models"]["gru"]["spending"]
    assert spent["random"] == {"small": 0.25, "middle": 0.0, "large": 0.75, "papers": 0.0}
    assert spent["default"] == {"small": 0.0, "middle": 0.5, "large": 0.0, "papers": 0.5}
    assert result["in_cost_aware_third"] == {"random": 0.25, "default": 0.0}


def test_a_table_of_one_hidden_size_has_no_findings() -> None:
    assert (
        sizes.findings([trace("copying", "random", [(0, 1.0)])], hand_table(hidden=32), ["copying"], None)
        == {}
    )

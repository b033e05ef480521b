"""The price of a sweep before it runs: ASHA's rule and the iterations it lets a study run, the
worker-hours, GPU-hours of packed trials, wall time and first answer from given paces (exact
arithmetic; nothing timed)."""

from __future__ import annotations

import pytest

from sweeper.spec.loading import parse_spec
from sweeper.spec.price import Pace, asha_iterations, hours_text, price, price_text, study_iterations
from sweeper.spec.rungs import rungs
from tests.helpers import dump_spec, tiny_spec


def spec_of(**changes: object):
    raw = tiny_spec(models=("gru", "goru"), **changes)
    raw["params"].update(iterations=900, eval_every=100)
    return parse_spec(dump_spec(raw), "s.yaml")


def test_ashas_rule_stops_a_trial_below_the_quantile_of_those_recorded_before_it() -> None:
    # eta 2, rung 10: 0.5 goes on (nothing recorded), 0.9 against 0.5 goes on, 0.1 against the
    # median of 0.5 and 0.9 (0.7) stops, 0.7 against that of 0.1, 0.5 and 0.9 (0.5) goes on; rung 20:
    # 0.5, then 0.9 against 0.5, then 0.7 against the median of 0.5 and 0.9 (0.7, not below) go on
    assert asha_iterations([0.5, 0.9, 0.1, 0.7], [10, 20, 40], 2) == 40 + 40 + 10 + 40
    # arriving best first, every later trial is below the quantile and stops at the first rung
    assert asha_iterations([0.9, 0.8, 0.2, 0.1], [10, 20, 40], 2) == 40 + 10 + 10 + 10


def test_a_studys_iterations_range_over_the_orders_its_trials_arrive_in() -> None:
    asha = {"name": "asha", "grace_period": 100, "reduction_factor": 3}
    assert rungs(spec_of(scheduler=asha, budget={"trials": 9})) == [100, 300, 900]
    # two trials: the second stops at the first rung when it is the worse (1,000), else runs on (1,800)
    assert study_iterations(spec_of(scheduler=asha, budget={"trials": 2})) == (1000, 1800)
    assert study_iterations(spec_of(scheduler=asha, budget={"trials": 1})) == (900, 900)
    assert study_iterations(spec_of(scheduler="none", budget={"trials": 4})) == (3600, 3600)
    low, high = study_iterations(spec_of(scheduler=asha, budget={"trials": 30}))
    # never below the first trial run to the end and every other stopped at the first rung
    assert 900 + 29 * 100 <= low < high < 30 * 900
    assert study_iterations(spec_of(scheduler=asha, budget={"trials": 30})) == (low, high)  # seeded


def test_the_price_from_given_paces_is_exact() -> None:
    spec = spec_of(scheduler="none", budget={"trials": 4, "max_concurrent": 2})
    paces = {"gru": Pace(0.01, 0.02, "given"), "goru": Pace(0.03, 0.03, "given")}
    priced = price(spec, paces, slots=8)
    gru, goru = priced.studies
    assert gru.iterations == (3600, 3600) and gru.worker_hours == pytest.approx((0.01, 0.02))
    assert goru.worker_hours == pytest.approx((0.03, 0.03)) and goru.run_hours == pytest.approx(
        (900 * 0.03 / 3600,) * 2
    )
    assert priced.slots == 2  # budget.max_concurrent bounds the slots
    assert priced.worker_hours == pytest.approx((0.04, 0.05)) and priced.wall_hours == pytest.approx(
        (0.02, 0.025)
    )
    runs = 900 / 3600
    assert priced.first_answer_worker_hours == pytest.approx((runs * 0.04, 2 * runs * 0.03))
    assert priced.first_answer_wall_hours == pytest.approx((runs * 0.03, runs * 0.03))
    assert priced.gpu_hours is None


def test_trials_packed_on_a_gpu_take_their_packed_pace() -> None:
    spec = spec_of(scheduler="none", budget={"trials": 4}, resources={"gpus": 0.25})
    paces = {"gru": Pace(0.01, 0.01, "r"), "goru": Pace(0.01, 0.01, "r")}
    alone = 4 * 900 * 0.01 / 3600
    priced = price(spec, paces, slots=4, speedups={"gru": {"4": 2.0}, "goru": {}})
    gru, goru = priced.studies
    assert gru.gpu_hours == pytest.approx((alone / 2,) * 2)  # four per GPU run twice the trials per hour
    assert gru.worker_hours == pytest.approx((alone * 4 / 2,) * 2)  # each trial at half its pace alone
    assert goru.gpu_hours == pytest.approx((alone,) * 2)  # nothing recorded: no gain assumed
    whole = price(spec_of(scheduler="none", budget={"trials": 4}, resources={"gpus": 2}), paces, slots=1)
    assert whole.studies[0].gpu_hours == pytest.approx((2 * alone,) * 2)


def test_the_budgets_bound_the_price() -> None:
    """A study's iterations never beyond `budget.iterations`, its hours never beyond
    `budget.study_time`, the sweep's wall time never beyond `budget.time`, nor its worker-hours
    beyond that time on its slots; a grid runs no more trials than it holds."""
    paces = {"gru": Pace(0.01, 0.02, "given"), "goru": Pace(0.03, 0.03, "given")}
    free = price(spec_of(scheduler="none", budget={"trials": 4}), paces, slots=1)
    assert free.studies[0].iterations == (3600, 3600) and free.wall_hours == pytest.approx((0.04, 0.05))
    steps = price(spec_of(scheduler="none", budget={"trials": 4, "iterations": 1000}), paces, slots=1)
    assert steps.studies[0].iterations == (1000, 1000)
    assert steps.studies[1].worker_hours == pytest.approx((1000 * 0.03 / 3600,) * 2)
    study = price(spec_of(scheduler="none", budget={"trials": 4, "study_time": "36s"}), paces, slots=1)
    assert study.studies[1].worker_hours == pytest.approx((0.01, 0.01))  # 3600 x 0.03 s, cut at 36 s
    timed = price(spec_of(scheduler="none", budget={"trials": 4, "time": "72s"}), paces, slots=1)
    assert timed.wall_hours == pytest.approx((0.02, 0.02)) and timed.worker_hours == pytest.approx(
        (0.02, 0.02)
    )
    assert timed.stopped_by == "budget.time" and "(budget.time ends the sweep there)" in price_text(
        timed, "here"
    )
    assert free.stopped_by is None
    raw = tiny_spec(models=("gru",), scheduler="none", budget={"trials": 10})
    raw["params"].update(iterations=900, eval_every=100, hidden_size={"grid": [4, 8, 16]}, lr=0.01)
    grid = parse_spec(dump_spec(raw), "g.yaml")
    (gridded,) = price(grid, {"gru": Pace(0.01, 0.01, "given")}, slots=1).studies
    assert gridded.trials == 3 and gridded.iterations == (2700, 2700)


def test_hours_read_as_numbers_at_every_scale() -> None:
    """A sweep's thousands of worker-hours and a smoke test's thousandths alike: three figures,
    never an exponent."""
    assert [hours_text(h) for h in (0, 0.0008, 0.0123456, 2.0, 12.345, 99.96, 150.4, 1534.2)] == [
        "0",
        "0.0008",
        "0.0123",
        "2",
        "12.3",
        "100",
        "150",
        "1,534",
    ]

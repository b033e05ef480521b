"""The price of a sweep before it runs: ASHA's rungs and the share of a trial they let run, the
worker-hours, GPU-hours of packed trials, wall time and first answer from given paces (exact
arithmetic; nothing timed)."""

from __future__ import annotations

import pytest

from sweeper.spec.loading import parse_spec
from sweeper.spec.price import Pace, iterations_per_trial, price, reach
from sweeper.spec.rungs import rungs
from tests.helpers import dump_spec, tiny_spec


def spec_of(**changes: object):
    raw = tiny_spec(models=("gru", "goru"), **changes)
    raw["params"].update(iterations=900, eval_every=100)
    return parse_spec(dump_spec(raw), "s.yaml")


def test_ashas_rungs_and_the_share_of_a_trial_they_let_run() -> None:
    spec = spec_of(
        scheduler={"name": "asha", "grace_period": 100, "reduction_factor": 3}, budget={"trials": 9}
    )
    assert rungs(spec) == [100, 300, 900]
    assert reach(9, 2, 3, asynchronous=False) == pytest.approx([1, 1 / 3, 1 / 9])
    # the j-th of 9 arrivals goes on while among the best ceil(j / 3): (1 + 1/2 + 1/3 + 2/4 + 2/5 + 2/6 + 3/7 + 3/8 + 3/9) / 9
    first = (1 + 1 / 2 + 1 / 3 + 2 / 4 + 2 / 5 + 2 / 6 + 3 / 7 + 3 / 8 + 3 / 9) / 9
    assert reach(9, 1, 3, asynchronous=True) == pytest.approx([1, first])
    low, high = iterations_per_trial(spec)
    assert low == pytest.approx(100 + 200 / 3 + 600 / 9) and high > low
    assert iterations_per_trial(spec_of(scheduler="none")) == (900, 900)


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

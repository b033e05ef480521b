"""Where a sweep's trials are compared: the iterations of ASHA's rungs (the grace period times
powers of the reduction factor) and a trial's last. The scheduler (its papers' points judged at
them) and the price read them from here."""

from __future__ import annotations

from sweeper.spec.sweep import SweepSpec
from sweeper.spec.values import IntRange
from trainables.hyperparams import TRAINING


def max_iterations(spec: SweepSpec) -> int:
    longest = 0
    for model in spec.models:
        value = spec.space(model).get("iterations", TRAINING["iterations"].default)
        longest = max(longest, value.int[1] if isinstance(value, IntRange) else int(value))
    return longest


def first_report(spec: SweepSpec) -> int:
    value = spec.space(spec.models[0]).get("eval_every", TRAINING["eval_every"].default)
    return value.int[0] if isinstance(value, IntRange) else int(value)


def rungs(spec: SweepSpec) -> list[int]:
    """The iterations where ASHA compares a study's trials (grace period times powers of the
    reduction factor), and the trials' last."""
    max_t = max_iterations(spec)
    rung = float(min(spec.scheduler.grace_period or first_report(spec), max_t))
    out = []
    while rung < max_t:
        out.append(round(rung))
        rung *= spec.scheduler.reduction_factor
    return sorted({*out, max_t})

"""What a sweep will cost before it runs: per study and in all, the worker-hours to its budget
and to its first answer, and the wall time on the slots it will have, each as a range.

A study's price is its trials x (a trial's start + the iterations its scheduler lets each run x a
measured pace, seconds per iteration + its evaluations x one evaluation's seconds), its model
measured at the smallest and the largest hidden size it searches (the rest of the configuration
at the middle of the space). Under ASHA a trial reaches rung k of
its rungs (the grace period times powers of the reduction factor η, then the trial's length)
with a chance between 1/η^k (the top 1/η of a rung promoted, as ASHA aims) and what its
asynchronous promotions give trials arriving in a random order (the j-th trial to reach a rung
goes on while among the best ⌈j/η⌉ seen there); without early stopping every trial runs to the
end (the median and Hyperband pruners are priced as ASHA). The first answer (every model with a
complete trial) costs at least one whole run of each model and, with every slot busy meanwhile,
at most the slots times the slowest of those runs. Trials packed k to a GPU take the GPU-hours of
their packed pace (`gpu_paces.json`: trials per hour at k per GPU, measured).

The paces are measured, never guessed (`sweeper.run.pricing` says where each comes from); this
module only does the arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from sweeper.spec.rungs import first_report, max_iterations, rungs
from sweeper.spec.sweep import SweepSpec


def reach(trials: int, steps: int, eta: float, asynchronous: bool) -> list[float]:
    """The chance of a trial to reach each of `steps` rungs after the first (1 at the first)."""
    chances, arrivals = [1.0], float(trials)
    for _ in range(steps):
        if asynchronous:  # the j-th arrival goes on while among the best ceil(j / eta) seen
            n = max(1, round(arrivals))
            share = sum(min(1.0, math.ceil(j / eta) / j) for j in range(1, n + 1)) / n
        else:
            share = 1 / eta
        chances.append(chances[-1] * share)
        arrivals *= share
    return chances


def iterations_per_trial(spec: SweepSpec) -> tuple[float, float]:
    """The iterations a trial of the sweep runs on average: ASHA's aim, its asynchronous share."""
    points = rungs(spec)
    if spec.scheduler.name == "none":
        return float(points[-1]), float(points[-1])
    spans = [b - a for a, b in zip([0, *points[:-1]], points, strict=True)]
    out = []
    for asynchronous in (False, True):
        chance = reach(spec.budget.trials, len(points) - 1, spec.scheduler.reduction_factor, asynchronous)
        out.append(sum(s * c for s, c in zip(spans, chance, strict=True)))
    return out[0], out[1]


@dataclass(frozen=True)
class Pace:
    low: float  # seconds per iteration at the smallest hidden size searched
    high: float  # at the largest
    source: str
    start: float = 0.0  # seconds a trial takes to start (data, network, first step), the larger end's
    evaluation: float = 0.0  # seconds of one evaluation, the larger end's

    def trial_hours(self, iterations: float, evaluations: float, end: int) -> float:
        """A trial's hours at one end (0: the smallest size, 1: the largest)."""
        step = (self.low, self.high)[end]
        return (self.start + iterations * step + evaluations * self.evaluation) / 3600


@dataclass(frozen=True)
class StudyPrice:
    model: str
    trials: int
    iterations: tuple[float, float]  # the whole study's
    worker_hours: tuple[float, float]
    gpu_hours: tuple[float, float] | None
    run_hours: tuple[float, float]  # one complete trial, what the first answer waits for
    source: str


@dataclass(frozen=True)
class Price:
    studies: list[StudyPrice]
    slots: int
    worker_hours: tuple[float, float]
    gpu_hours: tuple[float, float] | None
    wall_hours: tuple[float, float]
    first_answer_worker_hours: tuple[float, float]
    first_answer_wall_hours: tuple[float, float]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def packed_speedup(share: float, speedups: dict[str, float]) -> float:
    """How many times the trials per hour of one trial per GPU k trials per GPU give (k = 1 /
    share), from the recorded figures; 1 where none is recorded for that k."""
    if share <= 0 or share >= 1:
        return 1.0
    return float(speedups.get(str(round(1 / share)), 1.0))


def price(
    spec: SweepSpec, paces: dict[str, Pace], slots: int, speedups: dict[str, dict[str, float]] | None = None
) -> Price:
    """The sweep's price on `slots` trials at once (see the module's docstring)."""
    low_iterations, high_iterations = iterations_per_trial(spec)
    full = max_iterations(spec)
    every = first_report(spec)
    studies = []
    for model in spec.models:
        pace = paces[model]
        trials = spec.budget.trials
        iterations = (trials * low_iterations, trials * high_iterations)
        hours = (
            trials * pace.trial_hours(low_iterations, low_iterations / every, 0),
            trials * pace.trial_hours(high_iterations, high_iterations / every, 1),
        )
        share = spec.resources.for_model(model)["gpu"]
        gpu = None
        if share >= 1:
            gpu = (hours[0] * share, hours[1] * share)
        elif share > 0:  # k = 1 / share trials on one GPU finish k runs in k / S(k) runs' time
            faster = packed_speedup(share, (speedups or {}).get(model, {}))
            gpu = (hours[0] / faster, hours[1] / faster)
            hours = (hours[0] / share / faster, hours[1] / share / faster)
        run = (pace.trial_hours(full, full / every, 0), pace.trial_hours(full, full / every, 1))
        studies.append(StudyPrice(model, trials, iterations, hours, gpu, run, pace.source))
    total = (sum(s.worker_hours[0] for s in studies), sum(s.worker_hours[1] for s in studies))
    gpus = [s.gpu_hours for s in studies if s.gpu_hours is not None]
    gpu_total = (sum(g[0] for g in gpus), sum(g[1] for g in gpus)) if gpus else None
    busy = max(1, min(slots, spec.budget.max_concurrent or slots))
    first_low = sum(s.run_hours[0] for s in studies)
    slowest = max(s.run_hours[1] for s in studies)
    rounds = math.ceil(len(studies) / busy)  # the first trials of every model, `busy` at a time
    return Price(
        studies,
        busy,
        total,
        gpu_total,
        (total[0] / busy, total[1] / busy),
        (first_low, max(first_low, busy * slowest * rounds)),
        (max(s.run_hours[0] for s in studies) * rounds, slowest * rounds),
    )


def price_text(priced: Price, where: str) -> str:
    lines = [
        f"  price ({where}; {priced.slots} trials at once; the trials' training, not the sweep's few "
        "seconds a trial of start-up, reports and hand-offs):"
    ]
    for s in priced.studies:
        gpu = "" if s.gpu_hours is None else f", {_range(s.gpu_hours)} GPU-hours"
        lines.append(
            f"    {s.model}: {s.trials} trials, {_range(s.iterations, '{:,.0f}')} iterations, "
            f"{_range(s.worker_hours)} worker-hours{gpu} ({s.source})"
        )
    gpu = "" if priced.gpu_hours is None else f", {_range(priced.gpu_hours)} GPU-hours"
    lines += [
        f"    in all: {_range(priced.worker_hours)} worker-hours{gpu}, {_range(priced.wall_hours)} hours of wall time",
        f"    to the first answer (a complete trial of every model): {_range(priced.first_answer_worker_hours)} "
        f"worker-hours, {_range(priced.first_answer_wall_hours)} hours of wall time",
    ]
    return "\n".join(lines)


def _range(pair: tuple[float, float], form: str = "{:.3g}") -> str:
    low, high = (form.format(v) for v in pair)
    return low if low == high else f"{low}-{high}"

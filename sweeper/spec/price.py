"""What a sweep will cost before it runs: per study and in all, the worker-hours to its budget
and to its first answer, and the wall time on the slots it will have, each as a range.

A study's price is its trials' cost (`trial_cost`: starts + the iterations its scheduler lets
them run x a step's seconds + their evaluations x one evaluation's seconds), its model measured at
both ends of its space: the low end its smallest hidden size with the cheapest choice of every
categorical setting, the high end its largest size with the dearest (the rest of the
configuration at the middle of the space). Under ASHA the iterations are a range over the orders
its trials can arrive in: ASHA's own rule (a trial reaching a rung stops when it is below the
1 - 1/η quantile of those recorded there before it, so the first at every rung goes on) applied to
sweeps whose trials arrive in a random order, each as good at every rung, and the study's total at
the 10th and 90th percentile of those sweeps; without early stopping every trial runs to the end
(the median and Hyperband pruners are priced as ASHA). The budgets bound it: a study runs no more
trials than its grid holds, no more iterations than `budget.iterations` and no longer than
`budget.study_time`; the sweep stops at `budget.time`. The first answer (every model with a
complete trial) costs at least one whole run of each model and, with every slot busy meanwhile,
at most the slots times the slowest of those runs. Trials packed k to a GPU take the GPU-hours of
their packed pace (`gpu_paces.json`: trials per hour at k per GPU, measured).

The paces are measured, never guessed (`sweeper.run.pricing` says where each comes from); this
module only does the arithmetic.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from sweeper.spec.rungs import first_report, max_iterations, rungs
from sweeper.spec.space import study_budget
from sweeper.spec.sweep import SweepSpec
from sweeper.spec.trial_cost import trial_seconds

RANGE = (0.1, 0.9)  # the quantiles of a study's iterations over its trials' orders of arrival
SWEEPS_SIMULATED = 1000
ARRIVALS_SIMULATED = 40_000  # a bound on the simulation's work, a tenth of a second or so


def asha_iterations(quality: list[float], points: list[int], eta: float) -> int:
    """One study's iterations under Ray's ASHA, its trials arriving at each rung in the order given
    (`quality`, higher better, the same at every rung): at each rung but the last, a trial stops when
    it is below the 1 - 1/eta quantile (linear, as numpy's) of the values recorded there before it."""
    alive, total = list(quality), 0
    for milestone in points[:-1]:
        recorded: list[float] = []
        promoted = []
        for value in alive:
            stops = bool(recorded) and value < _quantile(recorded, 1 - 1 / eta)
            bisect.insort(recorded, value)
            if stops:
                total += milestone
            else:
                promoted.append(value)
        alive = promoted
    return total + len(alive) * points[-1]


def _quantile(ordered: list[float], q: float) -> float:
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def study_iterations(spec: SweepSpec, trials: int | None = None) -> tuple[float, float]:
    """A study of `trials` trials' iterations in all (the spec's budget where not given): their
    10th and 90th percentile over up to `SWEEPS_SIMULATED` random orders of arrival (fewer for
    large studies, whose spread narrows), seeded so a price repeats; never beyond the study's
    `budget.iterations`."""
    points, trials = rungs(spec), trials or spec.budget.trials
    cap = spec.budget.iterations or math.inf
    if spec.scheduler.name == "none" or len(points) == 1 or trials == 1:
        whole = float(min(trials * points[-1], cap))
        return whole, whole
    sweeps = max(200, min(SWEEPS_SIMULATED, ARRIVALS_SIMULATED // (trials * (len(points) - 1))))
    rng = random.Random(0)
    totals = sorted(
        asha_iterations([rng.random() for _ in range(trials)], points, spec.scheduler.reduction_factor)
        for _ in range(sweeps)
    )
    return min(_quantile(totals, RANGE[0]), cap), min(_quantile(totals, RANGE[1]), cap)


@dataclass(frozen=True)
class Pace:
    low: float  # seconds per iteration at the smallest hidden size searched
    high: float  # at the largest
    source: str
    start: float = 0.0  # seconds a trial takes to start (data, network, first step), the larger end's
    evaluation: float = 0.0  # seconds of one evaluation, the larger end's

    def hours(self, trials: int, iterations: float, evaluations: float, end: int) -> float:
        """The hours of `trials` trials that run `iterations` and `evaluations` in all, at one end
        (0: the cheapest configuration, 1: the dearest)."""
        step = (self.low, self.high)[end]
        return trial_seconds(trials * self.start, step, self.evaluation, iterations, evaluations) / 3600


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
    stopped_by: str | None = None  # the budget that ends the sweep before its trials would

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
    full = max_iterations(spec)
    every = first_report(spec)
    bound = math.inf if spec.budget.study_time is None else spec.budget.study_time / 3600
    studies = []
    for model in spec.models:
        pace = paces[model]
        trials = study_budget(spec, model)
        iterations = study_iterations(spec, trials)
        hours = (
            min(pace.hours(trials, iterations[0], iterations[0] / every, 0), bound),
            min(pace.hours(trials, iterations[1], iterations[1] / every, 1), bound),
        )
        share = spec.resources.for_model(model)["gpu"]
        gpu = None
        if share >= 1:
            gpu = (hours[0] * share, hours[1] * share)
        elif share > 0:  # k = 1 / share trials on one GPU finish k runs in k / S(k) runs' time
            faster = packed_speedup(share, (speedups or {}).get(model, {}))
            gpu = (hours[0] / faster, hours[1] / faster)
            hours = (hours[0] / share / faster, hours[1] / share / faster)
        run = (pace.hours(1, full, full / every, 0), pace.hours(1, full, full / every, 1))
        studies.append(StudyPrice(model, trials, iterations, hours, gpu, run, pace.source))
    busy = max(1, min(slots, spec.budget.max_concurrent or slots))
    time = math.inf if spec.budget.time is None else spec.budget.time / 3600  # the sweep stops there
    unbounded = sum(s.worker_hours[1] for s in studies)
    total = tuple(min(sum(s.worker_hours[end] for s in studies), time * busy) for end in (0, 1))
    gpus = [s.gpu_hours for s in studies if s.gpu_hours is not None]
    gpu_total = (sum(g[0] for g in gpus), sum(g[1] for g in gpus)) if gpus else None
    first_low = sum(s.run_hours[0] for s in studies)
    slowest = max(s.run_hours[1] for s in studies)
    rounds = math.ceil(len(studies) / busy)  # the first trials of every model, `busy` at a time
    return Price(
        studies,
        busy,
        total,
        gpu_total,
        (min(total[0] / busy, time), min(total[1] / busy, time)),
        (first_low, max(first_low, busy * slowest * rounds)),
        (max(s.run_hours[0] for s in studies) * rounds, slowest * rounds),
        "budget.time" if unbounded > time * busy else None,
    )


def price_text(priced: Price, where: str) -> str:
    lines = [
        f"  price ({where}; {priced.slots} trials at once; the trials' training, not the sweep's few "
        "seconds a trial of start-up, reports and hand-offs):"
    ]
    for s in priced.studies:
        gpu = "" if s.gpu_hours is None else f", {_range(s.gpu_hours)} GPU-hours"
        lines.append(
            f"    {s.model}: {s.trials} trials, {_range(s.iterations, '{:,.0f}'.format)} iterations, "
            f"{_range(s.worker_hours)} worker-hours{gpu} ({s.source})"
        )
    gpu = "" if priced.gpu_hours is None else f", {_range(priced.gpu_hours)} GPU-hours"
    lines += [
        f"    in all: {_range(priced.worker_hours)} worker-hours{gpu}, {_range(priced.wall_hours)} hours of wall time"
        + ("" if priced.stopped_by is None else f" ({priced.stopped_by} ends the sweep there)"),
        f"    to the first answer (a complete trial of every model): {_range(priced.first_answer_worker_hours)} "
        f"worker-hours, {_range(priced.first_answer_wall_hours)} hours of wall time",
    ]
    return "\n".join(lines)


def _range(pair: tuple[float, float], form: Callable[[float], str] | None = None) -> str:
    low, high = map(form or hours_text, pair)
    return low if low == high else f"{low}-{high}"


def hours_text(hours: float) -> str:
    """Hours (of workers, GPUs or wall time) to three significant figures, never in exponent
    notation: a large sweep's thousands and a smoke sweep's thousandths read as numbers."""
    if hours >= 100:
        return f"{hours:,.0f}"
    if hours <= 0:
        return "0"
    places = 2 - math.floor(math.log10(hours))
    return f"{round(hours, places):.{places}f}".rstrip("0").rstrip(".")

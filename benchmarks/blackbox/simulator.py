"""One sweep replayed against the recorded table on a simulated clock with W workers.

The search is the service's own: the studies `create_study` makes (papers' points enqueued),
warm-started by `warm_start_study`, served by the `MultiStudySearcher` that `searcher_over`
builds (its samplers, startup trials and race), and stopped by the per-model ASHA of
`make_scheduler`. Only Ray's trial runner is replaced, by an event queue that calls the
searcher and the scheduler in the order Tune's controller does:

- a free worker asks the searcher for a trial (`None`: nothing now, ask again when a trial ends;
  `FINISHED`: never ask again);
- its parameters, as the study drew them, snap to the nearest recorded configuration of its
  model, and it draws one of that configuration's recorded seeds and keeps it;
- each recorded evaluation is a report at start + its recorded worker-seconds; the scheduler
  decides on it first, and a STOP (or the last report) ends the trial at once, freeing its
  worker; a run that diverged or failed reports its failure when it did;
- events are handled in time order, so a decision at simulated time t sees only what was
  reported by t.

Busy worker-seconds are the cost; the searcher's own time (sampling, pruning, bookkeeping) is
measured separately and not added to the clock.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import FixedTrial
from ray.tune.schedulers import TrialScheduler
from ray.tune.search import Searcher

from benchmarks.blackbox import table as tables
from benchmarks.blackbox.strategies import STRATEGIES, sweep_spec
from sweeper.papers.points import first_points
from sweeper.run.launch import create_study, searcher_over
from sweeper.run.search.pruning import make_scheduler
from sweeper.run.search.warm_start import warm_start_study
from sweeper.spec.space import suggest_params
from sweeper.spec.sweep import SweepSpec


class Snapper:
    """The nearest recorded configuration of one model to a proposal, in the space's transformed
    coordinates: each number scaled to [0, 1] of its range (through the logarithm where the range
    is logarithmic), each choice 0 when equal and 1 when not; Euclidean. Only configurations with
    a recorded run are candidates."""

    def __init__(self, spec: SweepSpec, model: str, curves: tables.Curves) -> None:
        fixed = FixedTrial(curves.designs[0]["params"])
        suggest_params(fixed, spec, model)
        self.distributions = dict(sorted(fixed.distributions.items()))
        self.numeric = [
            n for n, d in self.distributions.items() if not isinstance(d, CategoricalDistribution)
        ]
        self.choices = [n for n, d in self.distributions.items() if isinstance(d, CategoricalDistribution)]
        params = [d["params"] for d in curves.designs]
        self.points = np.array([[self._unit(n, p[n]) for n in self.numeric] for p in params]).reshape(
            len(params), -1
        )
        self.options = np.array([[self._index(n, p[n]) for n in self.choices] for p in params]).reshape(
            len(params), -1
        )
        self.recorded = (curves.status != tables.MISSING).any(axis=1)
        if not self.recorded.any():
            raise ValueError(f"{model}: the table holds no run of it yet")

    def _unit(self, name: str, value: float) -> float:
        d = self.distributions[name]
        low, high, value = float(d.low), float(d.high), float(value)
        if getattr(d, "log", False):
            low, high, value = math.log(low), math.log(high), math.log(value)
        return 0.0 if high == low else (value - low) / (high - low)

    def _index(self, name: str, value: Any) -> int:
        return int(self.distributions[name].to_internal_repr(value))

    def nearest(self, params: dict[str, Any]) -> int:
        point = np.array([self._unit(n, params[n]) for n in self.numeric])
        options = np.array([self._index(n, params[n]) for n in self.choices])
        distance = ((self.points - point) ** 2).sum(axis=1) + (self.options != options).sum(axis=1)
        distance[~self.recorded] = np.inf
        return int(np.argmin(distance))


class RecordedSampler(optuna.samplers.BaseSampler):
    """Random draws restricted to the recorded configurations, as tabular benchmarks restrict
    them (Syne Tune's `restrict_configurations`): each trial takes one uniformly, without
    replacement while any is left. It stands in for Optuna's `RandomSampler`: as the sampler of
    random search, and as the draws TPE and GP make before they model a study."""

    def __init__(self, params: list[dict[str, Any]], seed: int | list[int]) -> None:
        self.params = params
        self.rng = np.random.default_rng(seed)
        self.unused = list(range(len(params)))
        self.chosen: dict[int, int] = {}

    def infer_relative_search_space(self, study: optuna.Study, trial: Any) -> dict[str, Any]:
        return {}

    def sample_relative(
        self, study: optuna.Study, trial: Any, search_space: dict[str, Any]
    ) -> dict[str, Any]:
        return {}

    def sample_independent(
        self, study: optuna.Study, trial: Any, param_name: str, param_distribution: Any
    ) -> Any:
        if trial.number not in self.chosen:
            pool = self.unused or list(range(len(self.params)))
            pick = pool[int(self.rng.integers(len(pool)))]
            if self.unused:
                self.unused.remove(pick)
            self.chosen[trial.number] = pick
        return self.params[self.chosen[trial.number]][param_name]


def restrict_random_draws(study: optuna.Study, sampler: optuna.samplers.BaseSampler) -> None:
    """Replace the study's random draws (its whole sampler when random, else the one TPE or GP
    draws their first trials with) by `sampler`."""
    current = study.sampler
    if isinstance(current, optuna.samplers.RandomSampler):
        study.sampler = sampler
    elif isinstance(current, optuna.samplers.TPESampler):
        current._random_sampler = sampler
    elif isinstance(current, optuna.samplers.GPSampler):
        current._independent_sampler = sampler
    else:
        raise ValueError(f"no random draws to restrict in {type(current).__name__}")


@dataclass(frozen=True)
class _TuneTrial:
    """What Tune's schedulers read of a trial."""

    trial_id: str
    config: dict[str, Any]


@dataclass
class _Running:
    tune: _TuneTrial
    model: str
    design: int
    seed: int
    started: float
    reports: int  # recorded evaluations of its run
    failure: str | None  # why its run ended early, reported after those evaluations
    evaluation: int = 0
    best: float = math.inf


@dataclass
class Trace:
    """What one replayed sweep did, for the verdicts: every trial's interval and how it ended,
    each complete trial's value at the moment the study was told, the race's cuts."""

    task: str
    strategy: str
    seed: int
    workers: int
    trials: list[dict[str, Any]] = field(
        default_factory=list
    )  # model, design, seed, start, end, state, value
    race_stops: list[tuple[float, str]] = field(default_factory=list)
    searcher_seconds: float = 0.0
    paper_points: int = 0
    reused: int = 0

    @property
    def busy(self) -> float:
        return sum(t["end"] - t["start"] for t in self.trials)


class Replay:
    """A replayed sweep: built like a launch builds one, then run on the event queue."""

    def __init__(
        self,
        table: tables.Table,
        task: str,
        strategy: str,
        seed: int,
        workers: int,
        trials: int,
        earlier: dict[str, optuna.Study] | None = None,
        snappers: dict[str, Snapper] | None = None,
        **overrides: Any,
    ) -> None:
        self.table = table
        self.curves = table.curves[task]
        self.strategy = STRATEGIES[strategy]
        self.spec = sweep_spec(task, self.strategy, seed, table.settings, trials, **overrides)
        self.metric = self.spec.resolved_objective().metric
        self.steps = table.steps
        self.snappers = snappers or {m: Snapper(self.spec, m, self.curves[m]) for m in self.spec.models}
        self.trace = Trace(task, strategy, seed, workers)
        self.workers = workers
        self.rng = np.random.default_rng(seed)
        storage = optuna.storages.InMemoryStorage()
        first, _ = first_points(self.spec)
        self.trace.paper_points = sum(len(points) for points in first.values())
        self.studies = {
            m: create_study(self.spec, storage, f"{task}-{m}", first.get(m, ())) for m in self.spec.models
        }
        if self.strategy.warm and earlier is not None:
            for model, study in self.studies.items():
                self.trace.reused += warm_start_study(
                    earlier[model], study, self.spec, model, "earlier"
                ).reused
        self.searcher = searcher_over(
            self.spec, storage, [(s.study_name, m, None) for m, s in self.studies.items()]
        )
        for offset, plan in enumerate(self.searcher.plans):
            if self.strategy.sampler == "old":  # independent TPE with Optuna's defaults
                plan.study.sampler = optuna.samplers.TPESampler(seed=seed + offset, constant_liar=True)
            curves = self.curves[plan.model]
            recorded = self.snappers[plan.model].recorded
            drawable = recorded & ~curves.paper  # the Sobol design, as far as it is recorded
            drawable = drawable if drawable.any() else recorded
            params = [curves.designs[i]["params"] for i in np.flatnonzero(drawable)]
            restrict_random_draws(plan.study, RecordedSampler(params, [seed, offset]))
        self.scheduler = make_scheduler(self.spec, self.searcher)
        self.plans = {p.model: p for p in self.searcher.plans}
        self._events: list[tuple[float, int, str]] = []
        self._running: dict[str, _Running] = {}
        self._count = 0
        self.now = 0.0  # the simulated clock, in seconds since the sweep started
        self._order = itertools.count()  # ties in time are handled in the order they were scheduled

    def _timed(self, call: Any, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args)
        finally:
            self.trace.searcher_seconds += time.perf_counter() - started

    def run(self) -> Trace:
        np.random.seed(self.trace.seed)  # ASHA draws its bracket from numpy's global generator
        free, finished = self.workers, False
        while True:
            while free and not finished:
                trial_id = str(self._count)
                config = self._timed(self.searcher.suggest, trial_id)
                if config is Searcher.FINISHED:
                    finished = True
                elif config is None:
                    break
                else:
                    self._count += 1
                    free -= 1
                    self._start(trial_id, config)
            if not self._events:
                return self.trace
            self.now, _, trial_id = heapq.heappop(self._events)
            if self._report(self._running[trial_id]):
                free += 1

    def _start(self, trial_id: str, config: dict[str, Any]) -> None:
        model = config["model"]
        design = self.snappers[model].nearest(self.searcher.trial_of(trial_id).params)
        curves = self.curves[model]
        seeds = np.flatnonzero(curves.status[design] != tables.MISSING)
        seed = int(self.rng.choice(seeds))
        reports = int(np.isfinite(curves.objective[design, seed]).sum())
        status = int(curves.status[design, seed])
        failure = None
        if status != tables.COMPLETE:
            key = f"{self.trace.task}/{model}/{design}/{seed}"
            failure = self.table.reasons.get(key, tables.STATUS_NAMES[status])
        running = _Running(_TuneTrial(trial_id, config), model, design, seed, self.now, reports, failure)
        self._running[trial_id] = running
        self._timed(self.scheduler.on_trial_add, None, running.tune)
        self._schedule(running)

    def _schedule(self, running: _Running) -> None:
        curves = self.curves[running.model]
        if running.evaluation < running.reports:
            after = curves.seconds[running.design, running.seed, running.evaluation]
        else:
            after = curves.ended[running.design, running.seed]
        heapq.heappush(
            self._events, (running.started + float(after), next(self._order), running.tune.trial_id)
        )

    def _report(self, running: _Running) -> bool:
        """Handle the trial's next report; True when the trial ended and freed its worker."""
        curves = self.curves[running.model]
        e = running.evaluation
        if e < running.reports:
            value = float(curves.objective[running.design, running.seed, e])
            running.best = min(running.best, value)
            result = {
                "step": int(self.steps[e]),
                self.metric: value,
                "time_total_s": float(curves.seconds[running.design, running.seed, e]),
                "training_iteration": e + 1,
            }
            decision = self._timed(self.scheduler.on_trial_result, None, running.tune, result)
            if decision != TrialScheduler.STOP:
                self._timed(self.searcher.on_trial_result, running.tune.trial_id, result)
            last = e + 1 == running.reports and running.failure is None
            if decision != TrialScheduler.STOP and not last:
                running.evaluation += 1
                self._schedule(running)
                return False
        else:
            result = {"fail_reason": running.failure}
            self._timed(self.scheduler.on_trial_result, None, running.tune, result)
            self._timed(self.searcher.on_trial_result, running.tune.trial_id, result)
        self._end(running, result)
        return True

    def _end(self, running: _Running, result: dict[str, Any]) -> None:
        plan = self.plans[running.model]
        before = dict(plan.counts)
        stopped = set(self.searcher.race.stopped) if self.searcher.race is not None else set()
        self._timed(self.scheduler.on_trial_complete, None, running.tune, result)
        self._timed(self.searcher.on_trial_complete, running.tune.trial_id, result)
        state = next((s for s in plan.counts if plan.counts[s] > before[s]), "INTERRUPTED")
        self.trace.trials.append(
            {
                "model": running.model,
                "design": running.design,
                "seed": running.seed,
                "start": running.started,
                "end": self.now,
                "state": state,
                "value": running.best if state == "COMPLETE" else None,
            }
        )
        if self.searcher.race is not None:
            for model in sorted(set(self.searcher.race.stopped) - stopped):
                self.trace.race_stops.append((self.now, model))
        del self._running[running.tune.trial_id]

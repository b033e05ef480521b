"""One sweep replayed against the recorded table on a simulated clock with W workers.

The search is the service's own: the studies `create_study` makes (papers' points enqueued),
priced as a launch prices them (each model's median recorded run, where the launch times it),
warm-started by `warm_start_study`, served by the `MultiStudySearcher` that `searcher_over`
builds (its samplers, startup trials and race), and stopped by the per-model ASHA of
`make_scheduler`. Only Ray's trial runner is replaced, by an event queue that calls the
searcher and the scheduler in the order Tune's controller does:

- the controller asks the searcher for a trial whenever none is waiting for a worker (`None`:
  nothing now, ask again when a trial ends; `FINISHED`: never ask again), so one trial is drawn
  ahead of the running ones, as Tune does for a searcher without `budget.max_concurrent`
  (with it, at most that many trials are live); the scheduler hears of it then;
- the study's samplers draw only recorded configurations (`restrict`); a trial takes its
  configuration and one of that configuration's recorded seeds, and keeps it;
- a trial starts when a worker is free; each recorded evaluation is a report at start + its
  recorded worker-seconds; the scheduler decides on it first, and a STOP ends the trial at once,
  freeing its worker; a trial that was not stopped ends when its run ended; a run that diverged
  or failed reports its failure when it did;
- events are handled in time order, so a decision at simulated time t sees only what was
  reported by t.

Busy worker-seconds are the cost; the searcher's own time (sampling, pruning, bookkeeping) is
measured separately and not added to the clock.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
from ray.tune.schedulers import TrialScheduler
from ray.tune.search import Searcher

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.allocations import MaxUCB, RaceStops, TopAfterOneRung
from benchmarks.search_tables.design import papers
from benchmarks.search_tables.restrict import Snapper, restrict
from benchmarks.search_tables.strategies import STRATEGIES, sweep_spec
from sweeper.run.launch import create_study, searcher_over
from sweeper.run.search.portfolio import portfolio_points
from sweeper.run.search.pruning import make_scheduler
from sweeper.run.search.transfer import Source, enqueue_transferred, transferred_points
from sweeper.run.search.warm_start import warm_start_study
from sweeper.spec.rungs import rungs
from sweeper.spec.space import study_budget
from sweeper.store.trial_record import PAPER_POINT_ATTR, PRICE_ATTR


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
    best: float = math.nan  # its best value so far
    returned: bool = False  # its last report is in; it ends when its function returns
    last_result: dict[str, Any] = field(default_factory=dict)


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
    earlier_hours: float = 0.0  # the busy worker-hours of the earlier sweep a warm start took its trials from

    @property
    def busy(self) -> float:
        return sum(t["end"] - t["start"] for t in self.trials)


UNMODELLED = {"budget": ("time", "trial_time", "iterations", "study_time")}  # settings the clock ignores


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
        run_seeds: tuple[int, ...] | None = None,
        pace_noise: float = 0.0,
        transfer_from: dict[str, dict[str, optuna.Study]] | None = None,
        portfolio: dict[str, list[dict[str, Any]]] | None = None,
        **overrides: Any,
    ) -> None:
        for section, names in UNMODELLED.items():
            unsupported = sorted(set(overrides.get(section, {})) & set(names))
            if unsupported:
                raise ValueError(f"the replay's clock does not model {section}.{', '.join(unsupported)}")
        self.table = table
        self.curves = table.curves[task]
        self.strategy = STRATEGIES[strategy]
        self.spec = sweep_spec(
            task, self.strategy, seed, table.settings, trials, list(self.curves), **overrides
        )
        self.metric = self.spec.resolved_objective().metric
        self.steps = table.steps
        self.snappers = snappers or {m: Snapper(self.spec, m, self.curves[m]) for m in self.spec.models}
        self.trace = Trace(task, strategy, seed, workers)
        self.workers = workers
        # Tune keeps one trial waiting for resources beside the running ones (`max_concurrent`
        # unset: `_get_max_pending_trials`), or, under a ConcurrencyLimiter, at most that many live
        limit = self.spec.budget.max_concurrent
        self.max_pending = 1 if limit is None else limit
        self.max_live = math.inf if limit is None else limit
        self.rng = np.random.default_rng(seed)
        self.run_seeds = run_seeds
        # each configuration's pace as timed once, scattered by the clock's own noise: the same
        # scatter for every strategy of one seed (paired), another for the next seed
        jitter = np.random.default_rng([seed, 20261128])
        self.pace = {
            m: np.exp(pace_noise * jitter.standard_normal(len(c.designs))) for m, c in self.curves.items()
        }
        storage = optuna.storages.InMemoryStorage()
        first = papers(task, table.settings, self.spec) if self.spec.sampler.paper_points else {}
        self.trace.paper_points = sum(len(points) for points in first.values())
        late = self.strategy.points_last  # the papers' points after the opening points
        self.studies = {
            m: create_study(self.spec, storage, f"{task}-{m}", () if late else first.get(m, ()))
            for m in self.spec.models
        }
        for model, study in self.studies.items() if self.strategy.priced else ():
            # the launch's price, as the table gives it: the model's median recorded run
            run = float(np.nanmedian(self.curves[model].seconds[:, :, -1]))
            hours = run * study_budget(self.spec, model) / 3600
            study.set_user_attr(PRICE_ATTR, {"worker_hours": [hours, hours], "source": "the table"})
        for model, study in self.studies.items() if self.strategy.transfer else ():
            sources = [
                Source(t, t, studies[model])
                for t, studies in (transfer_from or {}).items()
                if model in studies
            ]
            if (
                self.strategy.first
            ):  # an empty database: the portfolio (the replay's, learned without this task)
                points = portfolio_points(self.spec, model, (portfolio or {}).get(model, []))
            else:
                points = transferred_points(self.spec, model, sources)
            enqueue_transferred(study, points)
            for label, params in first.get(model, ()) if late else ():
                study.enqueue_trial(params, user_attrs={PAPER_POINT_ATTR: label}, skip_if_exists=True)
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
                plan.study.sampler = optuna.samplers.TPESampler(
                    seed=seed + offset, constant_liar=True, multivariate=False
                )
            restrict(plan.study, self.snappers[plan.model], [seed, offset])
        self.scheduler = make_scheduler(self.spec, self.searcher, table.tasks[task].baseline)
        self.allocation = self._allocation()
        self.plans = {p.model: p for p in self.searcher.plans}
        self._events: list[tuple[float, int, str]] = []
        self._waiting: collections.deque[_Running] = collections.deque()
        self._running: dict[str, _Running] = {}
        self._count = 0
        self.now = 0.0  # the simulated clock, in seconds since the sweep started
        self._order = itertools.count()  # ties in time are handled in the order they were scheduled

    def _allocation(self) -> Any:
        """The race the strategy allocates by: the service's, or one of the benchmark's own."""
        race, mode = self.searcher.race, self.spec.resolved_objective().mode
        plans = self.searcher.plans
        if self.strategy.allocate == "top2":
            race = TopAfterOneRung(plans, self.spec.budget.trials, rungs(self.spec)[0], mode)
            self.scheduler = RaceStops(self.scheduler, self.searcher)
        elif self.strategy.allocate == "maxucb":
            race = MaxUCB(plans, self.spec.budget.trials, mode)
            self.searcher._next_plan = race.next_plan  # type: ignore[method-assign]
        self.searcher.race = race
        return race

    def _note_race_stops(self) -> None:
        """Families the race dropped since the last event, at this moment."""
        if self.searcher.race is None:
            return
        known = {model for _, model in self.trace.race_stops}
        for model in sorted(set(self.searcher.race.stopped) - known):
            self.trace.race_stops.append((self.now, model))

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
            while True:
                live = len(self._waiting) + len(self._running)
                if not finished and len(self._waiting) < self.max_pending and live < self.max_live:
                    trial_id = str(self._count)
                    config = self._timed(self.searcher.suggest, trial_id)
                    if config is Searcher.FINISHED:
                        finished = True
                    elif config is not None:
                        self._count += 1
                        self._waiting.append(self._add(trial_id, config))
                        continue
                if not (free and self._waiting):
                    break
                self._start(self._waiting.popleft())
                free -= 1
            if not self._events:
                return self.trace
            self.now, _, trial_id = heapq.heappop(self._events)
            if self._report(self._running[trial_id]):
                free += 1

    def _add(self, trial_id: str, config: dict[str, Any]) -> _Running:
        """A trial as Tune adds it: its recorded configuration and seed chosen, the scheduler told."""
        model = config["model"]
        trial = self.searcher.trial_of(trial_id)
        snapper = self.snappers[model]
        if PAPER_POINT_ATTR in trial.user_attrs:  # by its label: a value it leaves to the sampler
            design = snapper.labelled(trial.user_attrs[PAPER_POINT_ATTR])  # the run ignores
        else:
            design = snapper.nearest(trial.params)
        curves = self.curves[model]
        seeds = np.flatnonzero(curves.status[design] != tables.MISSING)
        if self.run_seeds is not None:
            seeds = np.intersect1d(seeds, self.run_seeds)
        seed = int(self.rng.choice(seeds))
        reports = int(np.isfinite(curves.objective[design, seed]).sum())
        status = int(curves.status[design, seed])
        failure = None
        if status != tables.COMPLETE:
            key = f"{self.trace.task}/{model}/{design}/{seed}"
            failure = self.table.reasons.get(key, tables.STATUS_NAMES[status])
        running = _Running(_TuneTrial(trial_id, config), model, design, seed, math.nan, reports, failure)
        self._timed(self.scheduler.on_trial_add, None, running.tune)
        return running

    def _start(self, running: _Running) -> None:
        running.started = self.now
        self._running[running.tune.trial_id] = running
        self._schedule(running)

    def _schedule(self, running: _Running, ended: bool = False) -> None:
        """The trial's next event: its next report, its failure, or (`ended`) the moment its
        function returns after its last report."""
        curves = self.curves[running.model]
        if running.evaluation < running.reports and not ended:
            after = curves.seconds[running.design, running.seed, running.evaluation]
        else:
            after = curves.ended[running.design, running.seed]
        after *= self.pace[running.model][running.design]
        heapq.heappush(
            self._events, (running.started + float(after), next(self._order), running.tune.trial_id)
        )

    def _report(self, running: _Running) -> bool:
        """Handle the trial's next event; True when the trial ended and freed its worker."""
        curves = self.curves[running.model]
        e = running.evaluation
        if running.returned:
            result = running.last_result
        elif e < running.reports:
            value = float(curves.objective[running.design, running.seed, e])
            running.best = (
                value if self.table.tasks[self.trace.task].better(value, running.best) else running.best
            )
            result = {
                "step": int(self.steps[e]),
                self.metric: value,
                "time_total_s": float(curves.seconds[running.design, running.seed, e])
                * self.pace[running.model][running.design],
                "training_iteration": e + 1,
            }
            decision = self._timed(self.scheduler.on_trial_result, None, running.tune, result)
            if decision != TrialScheduler.STOP:
                self._timed(self.searcher.on_trial_result, running.tune.trial_id, result)
            last = e + 1 == running.reports and running.failure is None
            if decision != TrialScheduler.STOP:
                running.evaluation += 1
                if last:  # Tune stops it once its function returns, when the run ended
                    running.returned, running.last_result = True, result
                self._schedule(running, ended=last)
                self._note_race_stops()
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
        self._timed(self.scheduler.on_trial_complete, None, running.tune, result)
        self._timed(self.searcher.on_trial_complete, running.tune.trial_id, result)
        state = next((s for s in plan.counts if plan.counts[s] > before[s]), "INTERRUPTED")
        self.trace.trials.append(
            {
                "id": running.tune.trial_id,
                "model": running.model,
                "design": running.design,
                "seed": running.seed,
                "start": running.started,
                "end": self.now,
                "state": state,
                "value": running.best if state == "COMPLETE" else None,
            }
        )
        if state == "COMPLETE" and isinstance(self.allocation, MaxUCB):
            self.allocation.observe(running.model, running.best)
        self._note_race_stops()
        del self._running[running.tune.trial_id]

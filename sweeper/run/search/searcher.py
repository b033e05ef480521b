"""The sweep's Ray Tune searcher: it serves several Optuna studies at once, with faithful trial
states, and keeps each study's best network (its bookkeeping is `recorder`'s).

One study per (task, model). Interleaving the studies in one Tune run keeps every worker busy:
no study's tail leaves the cluster idle while the next model waits. A searcher lives in the
driver; it is the one place that knows why a trial ended, so it also writes the MLflow run.

Trial states: reached its last step → COMPLETE (value: the best objective it attained, the
papers' "minimum attained loss"); stopped earlier by the scheduler → PRUNED; raised, diverged or
crashed → FAIL with the reason; cut by Ctrl-C or the time budget → FAIL marked interrupted,
which does not count toward the trial budget, so `resume` runs it again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import TrialState
from ray.tune.search import Searcher

from sweeper.run.search.race import Race
from sweeper.run.search.recorder import RUN_ID_WAIT_S, Progress, ResultRecorder, database_guarded
from sweeper.run.tracking.tracker import Tracker
from sweeper.run.tracking.weights import WeightsDetails, final_weights_folder
from sweeper.spec.space import suggest_params
from sweeper.spec.sweep import SweepSpec, trial_config
from sweeper.store.database import DATABASE_ERRORS
from sweeper.store.states import TrialEnd
from sweeper.store.trial_record import (
    CONFIG_ATTR,
    FAIL_REASON_ATTR,
    FAIL_TRACEBACK_ATTR,
    FINAL_METRICS_ATTR,
    FINISHED_STATES,
    INTERRUPTED_ATTR,
    MLFLOW_RUN_ATTR,
    PAPER_POINT_ATTR,
    SEED_ATTR,
    TRANSFER_ATTR,
    counts_toward_budget,
    reported_seconds,
    run_params,
    steps_trained,
    trial_seed,
    worker_seconds,
)

log = logging.getLogger(__name__)


def origin_tags(attrs: dict[str, Any]) -> dict[str, str]:
    """The MLflow tags of a trial that starts from a paper's configuration or from an earlier
    sweep's best on another task."""
    tags = {"sweeper.paper_point": attrs[PAPER_POINT_ATTR]} if PAPER_POINT_ATTR in attrs else {}
    if TRANSFER_ATTR in attrs:
        tags["sweeper.transferred_from"] = attrs[TRANSFER_ATTR]
    return tags


@dataclass
class StudyPlan:
    """A study the searcher serves, with its budget and progress counters."""

    study: optuna.Study
    model: str
    parent_run_id: str | None
    budget: int
    step_budget: int | None = None
    time_budget: float | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"COMPLETE": 0, "PRUNED": 0, "FAIL": 0})
    running: int = 0
    best: float | None = None
    steps: int = 0  # training steps of finished trials
    seconds: float = 0.0  # their own time in their workers (`worker_seconds`), what `time_budget` caps
    trial_hours: float = 0.0  # a trial's worker-hours as the launch's price put them (0: unpriced)

    @property
    def name(self) -> str:
        return self.study.study_name

    @property
    def done(self) -> int:
        return sum(self.counts.values())

    @property
    def remaining(self) -> int:
        """Trials still to hand out: none once the trial or the step budget is spent."""
        if self.step_budget is not None and self.steps >= self.step_budget:
            return 0
        if self.time_budget is not None and self.seconds >= self.time_budget:
            return 0
        return self.budget - self.done - self.running


@dataclass
class LiveTrial:
    plan: StudyPlan
    trial: optuna.Trial
    progress: Progress


class MultiStudySearcher(ResultRecorder):
    def __init__(
        self,
        spec: SweepSpec,
        plans: list[StudyPlan],
        tracker: Tracker | None,
        experiment_id: str | None,
    ) -> None:
        super().__init__(spec, tracker)
        self.plans = plans
        self.experiment_id = experiment_id
        self.race: Race | None = None  # set once the plans hold what the studies have done
        self._live: dict[str, LiveTrial] = {}
        self._completed: dict[str, tuple[LiveTrial, float]] = {}  # until their weights are seen
        for plan in plans:
            for frozen in plan.study.get_trials(deepcopy=False, states=FINISHED_STATES):
                if counts_toward_budget(frozen):
                    plan.counts[frozen.state.name] += 1
                    plan.steps += steps_trained(frozen)
                    plan.seconds += worker_seconds([frozen])  # as `_tell` counted it
                    if frozen.state == TrialState.COMPLETE:
                        plan.best = self.better(plan.best, frozen.value)

    def _next_plan(self) -> StudyPlan | None:
        """The open study least far through its budget, so models advance together. Among the
        studies yet to start a trial, the dearest by the price goes first, so the cheap ones fill
        the slots it leaves and every model completes a trial soon (longest first); after that,
        the spec's order, since a dear model first at every tie would delay the cheap ones'."""
        open_plans = [p for p in self.plans if p.remaining > 0]
        if not open_plans:
            return None

        def key(plan: StudyPlan) -> tuple[float, float]:
            started = plan.done + plan.running
            return started / plan.budget, -plan.trial_hours if started == 0 else 0.0

        return min(open_plans, key=key)

    @database_guarded(default=Searcher.FINISHED)
    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:
        if self.stop_reason is not None:
            return Searcher.FINISHED
        plan = self._next_plan()
        if plan is None:
            if self.race is not None and not self.race.final and any(p.running for p in self.plans):
                return None  # the race cuts its field when the rung's running trials end: ask again
            return Searcher.FINISHED
        trial = plan.study.ask()
        params = suggest_params(trial, self.spec, plan.model)
        seed = trial_seed(self.spec.seed, trial.number)
        trial.set_user_attr(SEED_ATTR, seed)
        config = trial_config(self.spec, plan.model, params, seed)
        trial.set_user_attr(CONFIG_ATTR, config)
        run = None
        if self.tracker is not None and self.experiment_id is not None and plan.parent_run_id is not None:
            run = self.tracker.start_trial(
                self.experiment_id,
                plan.parent_run_id,
                plan.name,
                self.spec.task.name,
                plan.model,
                trial.number,
                run_params(config),
                extra_tags=origin_tags(trial.user_attrs),
            )
        self._live[trial_id] = LiveTrial(plan, trial, self.new_progress(config, run))
        plan.running += 1
        return config

    def progress_of(self, trial_id: str) -> Progress | None:
        live = self._live.get(trial_id)
        return None if live is None else live.progress

    def trial_of(self, trial_id: str) -> optuna.Trial | None:
        """The study's trial behind a running Tune trial (its parameters as the study drew them)."""
        live = self._live.get(trial_id)
        return None if live is None else live.trial

    @database_guarded(default=None)
    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        live = self._live.get(trial_id)
        if live is not None:
            self._report(live, result)

    def _report(self, live: LiveTrial, result: dict[str, Any]) -> None:
        taken = live.progress.last_step
        observed = self.observe(live.progress, result)
        if observed is not None:
            step, value = observed
            try:
                live.trial.report(value, step)
            except DATABASE_ERRORS:
                live.progress.last_step = taken  # so a retry reports this step again
                raise
            if self.race is not None:
                self.race.reported(live.plan, live.trial.number, step, value)

    @database_guarded(default=False)
    def should_prune(self, trial_id: str, result: dict[str, Any]) -> bool:
        """Optuna's pruner on this result (for the `median` and `hyperband` schedulers)."""
        live = self._live.get(trial_id)
        if live is None:
            return False
        self._report(live, result)
        return live.trial.should_prune()

    @database_guarded(default=None)
    def on_trial_complete(
        self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False
    ) -> None:
        live = self._live.get(trial_id)
        if live is None:
            return
        if result:
            self._report(live, result)
        outcome, reason = self.outcome(live.progress, error)
        self._tell(live, outcome, reason)
        del self._live[trial_id]
        if outcome == TrialEnd.COMPLETE and live.progress.best is not None:
            self._completed[trial_id] = (live, live.progress.best)

    def keep_final_weights(self, trial_id: str, checkpoint: Any | None) -> None:
        """Keep the trial's trained network when it is its study's best so far (the study's
        earlier best is dropped then): each study ends with its best trial's weights."""
        completed = self._completed.pop(trial_id, None)
        if completed is None or checkpoint is None or self.tracker is None or self.experiment_id is None:
            return
        live, value = completed
        if value != live.plan.best:
            return
        folder = final_weights_folder(checkpoint)
        if folder is None:
            return
        config = dict(live.trial.user_attrs.get(CONFIG_ATTR, {}))
        details = WeightsDetails(
            study=live.plan.name,
            model=live.plan.model,
            task=self.spec.task.name,
            hyperparameters=dict(live.trial.params),
            config=config,
            objective=self.metric,
            value=value,
            trial=live.trial.number,
        )
        self.tracker.keep_weights(live.progress.run, self.experiment_id, folder, details)

    def abandon_running(self, reason: str) -> None:
        """Mark every trial still running as interrupted (the sweep is stopping).

        With the database gone they stay RUNNING there, for `resume` to reconcile.
        """
        for trial_id, live in list(self._live.items()):
            try:
                self._tell(live, TrialEnd.INTERRUPTED, reason)
            except DATABASE_ERRORS as exc:
                log.error(
                    "trial %d of %s left RUNNING for resume: %s", live.trial.number, live.plan.name, exc
                )
            del self._live[trial_id]

    def _tell(self, live: LiveTrial, outcome: TrialEnd, reason: str | None) -> None:
        """Store the trial's end first, then count it: a retried call never counts twice."""
        plan = live.plan
        state = TrialState.FAIL if outcome == TrialEnd.INTERRUPTED else TrialState[outcome]
        if reason is not None:
            live.trial.set_user_attr(FAIL_REASON_ATTR, reason[:2000])
        if live.progress.fail_traceback is not None:
            live.trial.set_user_attr(FAIL_TRACEBACK_ATTR, live.progress.fail_traceback)
        if outcome == TrialEnd.INTERRUPTED:
            live.trial.set_user_attr(INTERRUPTED_ATTR, True)
        value = live.progress.best if state == TrialState.COMPLETE else None
        if live.progress.metrics:
            live.trial.set_user_attr(FINAL_METRICS_ATTR, live.progress.metrics)
        run_id = live.progress.run.id(timeout=RUN_ID_WAIT_S) if live.progress.run is not None else None
        if run_id is not None:
            live.trial.set_user_attr(MLFLOW_RUN_ATTR, run_id)
        plan.study.tell(live.trial, value, state=state, skip_if_finished=True)
        plan.running -= 1
        if outcome != TrialEnd.INTERRUPTED:
            plan.counts[state.name] += 1
            plan.steps += live.progress.last_step
            plan.seconds += reported_seconds(live.progress.metrics)  # what the trial keeps
        plan.best = self.better(plan.best, value)
        if self.race is not None and outcome != TrialEnd.INTERRUPTED:
            self.race.trial_ended(plan, live.trial.number)
        if self.tracker is not None:
            self.tracker.finish_trial(
                live.progress.run, state.name, value, reason, live.progress.fail_traceback
            )

    def snapshot(self) -> list[dict[str, Any]]:
        """Per-study progress for the live display."""
        return [
            {
                "model": p.model,
                **{k.lower(): v for k, v in p.counts.items()},
                "running": p.running,
                "budget": p.budget,
                "steps": p.steps,
                "seconds": p.seconds,
                "step_budget": p.step_budget,
                "best": p.best,
            }
            for p in self.plans
        ]

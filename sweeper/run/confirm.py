"""Confirmation: retrain each study's best configuration with fresh seeds, for its full budget.

A sweep's best trial is one draw; the papers report "mean and standard deviation of minimum
attained loss over 3 random seeds". Confirmation runs are Ray trials on the same cluster, with no
early stopping, recorded in the registry (so a stopped confirmation resumes where it was) and in
MLflow under the study's parent run.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import optuna
from ray.tune.schedulers import FIFOScheduler
from ray.tune.search import Searcher
from sqlalchemy import select

from sweeper.results.retrained import confirmed, test_metric
from sweeper.run.launch import STORED_SPEC_GPUS, Where, connect
from sweeper.run.search.recorder import RUN_ID_WAIT_S, Progress, ResultRecorder, database_guarded
from sweeper.run.tracking.answer import log_odds
from sweeper.run.tracking.tracker import Tracker, open_tracker
from sweeper.run.tune.progress import ProgressDisplay
from sweeper.run.tune.runtime import RunEnd, drive, results_dir, start_ray
from sweeper.run.tune.workers import local_cpus
from sweeper.spec.loading import stored_spec
from sweeper.spec.sweep import SweepSpec, trial_config
from sweeper.store.database import DATABASE_ERRORS, ConfirmationRecord, Store, StudyRecord, SweepRecord, now
from sweeper.store.states import ConfirmationStatus, SweepStatus, TrialEnd
from sweeper.store.trial_record import best_trial, run_params, trial_seed

log = logging.getLogger(__name__)
CONFIRM_SEED_OFFSET = 1_000_000  # confirmation seeds never collide with a sweep trial's seed


def confirm_seed(spec_seed: int, k: int) -> int:
    return trial_seed(spec_seed, CONFIRM_SEED_OFFSET + k)


@dataclass(frozen=True)
class Job:
    confirmation_id: int
    study: StudyRecord
    source_trial: int
    seed: int
    params: dict[str, Any]


def select_studies(record: SweepRecord, task: str | None, model: str | None) -> list[StudyRecord]:
    return [
        s for s in record.studies if (task is None or s.task == task) and (model is None or s.model == model)
    ]


def plan_confirmations(
    store: Store, record: SweepRecord, spec: SweepSpec, seeds: int, studies: list[StudyRecord]
) -> tuple[list[Job], list[str]]:
    """Register `seeds` confirmations of each study's best trial; return those still to run.

    Complete and failed confirmations are results and stay; pending ones and those a stopped
    driver left running are run (again).
    """
    jobs, notes = [], []
    for study_record in studies:
        study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        best = best_trial(study)
        if best is None:
            notes.append(f"{study_record.model}: no complete trial to confirm")
            continue
        with store.session() as session:
            for k in range(seeds):
                seed = confirm_seed(spec.seed, k)
                row = session.scalar(
                    select(ConfirmationRecord).where(
                        ConfirmationRecord.study_id == study_record.id,
                        ConfirmationRecord.source_trial == best.number,
                        ConfirmationRecord.seed == seed,
                    )
                )
                if row is None:
                    row = ConfirmationRecord(
                        study_id=study_record.id,
                        source_trial=best.number,
                        seed=seed,
                        params_json=json.dumps(best.params, sort_keys=True),
                    )
                    session.add(row)
                    session.flush()
                if row.status in (ConfirmationStatus.PENDING, ConfirmationStatus.RUNNING):
                    row.status = ConfirmationStatus.PENDING
                    jobs.append(Job(row.id, study_record, best.number, seed, dict(best.params)))
    return jobs, notes


class ConfirmationSearcher(ResultRecorder):
    """Hands out the pending confirmations one by one and records how each ended.

    Its database writes are guarded as the sweep's searcher's are: short outages are retried,
    longer ones stop the confirmation as interrupted, and a run whose end could not be written
    stays running in the registry, so the next `sweeper confirm` runs it again.
    """

    def __init__(
        self,
        store: Store,
        spec: SweepSpec,
        jobs: list[Job],
        tracker: Tracker | None,
        experiment_id: str | None,
    ) -> None:
        super().__init__(spec, tracker)
        self.store = store
        self.experiment_id = experiment_id
        self._pending = deque(jobs)
        self._live: dict[str, tuple[Job, Progress]] = {}
        self._counts: dict[str, dict[str, int]] = {}
        self._budget: dict[str, int] = {}
        self._values: dict[str, list[float]] = {}  # this invocation's complete runs, per model
        self._sign = 1.0 if spec.resolved_objective().mode == "min" else -1.0
        for job in jobs:
            self._budget[job.study.model] = self._budget.get(job.study.model, 0) + 1
            self._counts.setdefault(job.study.model, {"complete": 0, "pruned": 0, "fail": 0})

    @database_guarded(default=Searcher.FINISHED)
    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:
        if self.stop_reason is not None or not self._pending:
            return Searcher.FINISHED
        self._update(self._pending[0], status=ConfirmationStatus.RUNNING)
        job = self._pending.popleft()
        config = trial_config(self.spec, job.study.model, job.params, job.seed)
        run = None
        if self.tracker is not None and self.experiment_id and job.study.mlflow_parent_run_id:
            run = self.tracker.start_trial(
                self.experiment_id,
                job.study.mlflow_parent_run_id,
                job.study.study_name,
                job.study.task,
                job.study.model,
                job.source_trial,
                run_params(config),
                role="confirmation",
                extra_tags={"seed": str(job.seed)},
            )
        self._live[trial_id] = (job, self.new_progress(config, run))
        return config

    def progress_of(self, trial_id: str) -> Progress | None:
        return self._live[trial_id][1] if trial_id in self._live else None

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        if trial_id in self._live:
            self.observe(self._live[trial_id][1], result)

    @database_guarded(default=None)
    def on_trial_complete(
        self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False
    ) -> None:
        if trial_id not in self._live:
            return
        job, progress = self._live[trial_id]
        if result:
            self.observe(progress, result)
        outcome, reason = self.outcome(progress, error)
        if outcome == TrialEnd.PRUNED:  # nothing prunes confirmations; a stop without a reason is a stop
            outcome, reason = TrialEnd.INTERRUPTED, "stopped before its last step"
        self._finish(job, progress, outcome, reason)
        del self._live[trial_id]

    def abandon_running(self, reason: str) -> None:
        """Put the running confirmations back to pending; where the database is gone they stay
        running in the registry, and the next `sweeper confirm` runs them again all the same."""
        for trial_id, (job, progress) in list(self._live.items()):
            try:
                self._finish(job, progress, TrialEnd.INTERRUPTED, reason)
            except DATABASE_ERRORS as exc:
                log.error("confirmation %d left running for the next confirm: %s", job.confirmation_id, exc)
            del self._live[trial_id]

    def _finish(self, job: Job, progress: Progress, outcome: TrialEnd, reason: str | None) -> None:
        """Store the run's end first, then count it: a retried call never counts twice."""
        run = {"mlflow_run_id": progress.run.id(timeout=RUN_ID_WAIT_S)} if progress.run is not None else {}
        if outcome == TrialEnd.INTERRUPTED:
            self._update(job, status=ConfirmationStatus.PENDING, message=reason, **run)
        elif outcome == TrialEnd.COMPLETE:
            self._update(
                job,
                status=ConfirmationStatus.COMPLETE,
                objective=progress.best,
                metrics_json=json.dumps(progress.metrics, sort_keys=True),
                ended_at=now(),
                **run,
            )
            self._counts[job.study.model]["complete"] += 1
            if progress.best is not None:
                self._values.setdefault(job.study.model, []).append(progress.best)
        else:
            self._update(job, status=ConfirmationStatus.FAILED, message=reason, ended_at=now(), **run)
            self._counts[job.study.model]["fail"] += 1
        if self.tracker is not None:
            state = TrialEnd.COMPLETE if outcome == TrialEnd.COMPLETE else TrialEnd.FAIL
            self.tracker.finish_trial(
                progress.run, state, progress.best if outcome == TrialEnd.COMPLETE else None, reason
            )

    def _update(self, job: Job, **values: Any) -> None:
        with self.store.session() as session:
            row = session.get(ConfirmationRecord, job.confirmation_id)
            for key, value in values.items():
                setattr(row, key, value)

    def snapshot(self) -> list[dict[str, Any]]:
        running: dict[str, int] = {}
        for job, _ in self._live.values():
            running[job.study.model] = running.get(job.study.model, 0) + 1
        return [
            {
                "model": model,
                **counts,
                "running": running.get(model, 0),
                "budget": self._budget[model],
                "best": min(self._values[model], key=lambda v: self._sign * v)
                if self._values.get(model)
                else None,
            }
            for model, counts in self._counts.items()
        ]


def run_confirmation(
    store: Store,
    record: SweepRecord,
    where: Where,
    *,
    seeds: int,
    task: str | None = None,
    model: str | None = None,
) -> tuple[RunEnd, list[str]]:
    """Run the pending confirmations of the selected studies; return how it ended and notes."""
    spec = stored_spec(record)
    jobs, notes = plan_confirmations(store, record, spec, seeds, select_studies(record, task, model))
    if not jobs:
        return RunEnd(record.name, SweepStatus.FINISHED, None), notes
    end = run_jobs(store, record, where, jobs, f"{record.name} confirmation")
    return end, notes


def run_jobs(store: Store, record: SweepRecord, where: Where, jobs: list[Job], label: str) -> RunEnd:
    """Run registered confirmation jobs as Ray trials, unpruned, recorded in the registry and in
    MLflow under their study's parent run: `confirm` and `reproduce` both run this way."""
    spec = stored_spec(record)
    connect(where, [spec], STORED_SPEC_GPUS)
    tracker = open_tracker(record.tracking_uri) if record.tracking_uri else None
    searcher = ConfirmationSearcher(store, spec, jobs, tracker, record.mlflow_experiment_id)
    start_ray(where.address, where.verbose, local_cpus([spec]))
    started = time.monotonic()

    display = ProgressDisplay(label, searcher.snapshot, lambda: time.monotonic() - started)

    status, message = drive(
        searcher,
        spec,
        scheduler=FIFOScheduler(),
        name=f"{record.name}-confirm",
        runs_dir=results_dir(where.results, where.home),
        verbose=where.verbose,
        deadline=None,
        display=display,
    )
    if tracker is not None:
        _summarize_confirmations(tracker, store, record)
        log_odds(tracker, store, record)
    return RunEnd(record.name, status, message)


def _summarize_confirmations(tracker: Tracker, store: Store, record: SweepRecord) -> None:
    """Mean and spread on the parent runs, so the MLflow run table compares models directly."""
    metric = stored_spec(record).resolved_objective().metric
    parents = {s.model: s.mlflow_parent_run_id for s in record.studies}
    for result in confirmed(store, record):
        parent = parents.get(result.model)
        if parent is None:
            continue
        values: dict[str, float] = {"confirmed_runs": float(len(result.objectives))}
        for name, (mean, std) in ((metric, result.objective), (test_metric(metric), result.test)):
            if mean is not None:
                values[f"confirmed_{name}_mean"] = mean
            if std is not None:
                values[f"confirmed_{name}_std"] = std
        tracker.log_parent_metrics(parent, values)

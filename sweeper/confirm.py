"""Confirmation: retrain each study's best configuration with fresh seeds, for its full budget.

A sweep's best trial is one draw; the papers report "mean and standard deviation of minimum
attained loss over 3 random seeds". Confirmation runs are Ray trials on the same cluster, with no
early stopping, recorded in the registry (so a stopped confirmation resumes where it was) and in
MLflow under the study's parent run.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from ray.tune.schedulers import FIFOScheduler
from ray.tune.search import Searcher
from sqlalchemy import select

from sweeper.launch import (
    INTERRUPTED,
    Outcome,
    open_tracker,
    quiet_environment,
    results_dir,
    run_tune,
    start_ray,
)
from sweeper.progress import progress_table
from sweeper.search import RUN_ID_WAIT_S, Progress, ResultRecorder, TrialOutcome, run_params, trial_seed
from sweeper.spec import SweepSpec, parse_spec, trial_config
from sweeper.store import DEFAULT_HOME, ConfirmationRecord, Store, StudyRecord, SweepRecord, now
from sweeper.tracking import Tracker
from sweeper.workers import local_cpus

CONFIRM_SEED_OFFSET = 1_000_000  # confirmation seeds never collide with a sweep trial's seed


def confirm_seed(spec_seed: int, k: int) -> int:
    return trial_seed(spec_seed, CONFIRM_SEED_OFFSET + k)


def test_metric(metric: str) -> str:
    """The test-split counterpart of a validation metric (`valid_loss` → `test_loss`)."""
    return "test_" + metric.removeprefix("valid_")


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
        try:
            best = study.best_trial
        except ValueError:
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
                if row.status in ("pending", "running"):
                    row.status = "pending"
                    jobs.append(Job(row.id, study_record, best.number, seed, dict(best.params)))
    return jobs, notes


class ConfirmationSearcher(ResultRecorder):
    """Hands out the pending confirmations one by one and records how each ended."""

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
        for job in jobs:
            self._budget[job.study.model] = self._budget.get(job.study.model, 0) + 1
            self._counts.setdefault(job.study.model, {"complete": 0, "pruned": 0, "fail": 0})

    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:
        if self.stop_reason is not None or not self._pending:
            return Searcher.FINISHED
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
        self._update(job, status="running")
        self._live[trial_id] = (job, self.new_progress(config, run))
        return config

    def progress_of(self, trial_id: str) -> Progress | None:
        return self._live[trial_id][1] if trial_id in self._live else None

    def on_trial_result(self, trial_id: str, result: dict[str, Any]) -> None:
        if trial_id in self._live:
            self.observe(self._live[trial_id][1], result)

    def on_trial_complete(
        self, trial_id: str, result: dict[str, Any] | None = None, error: bool = False
    ) -> None:
        if trial_id not in self._live:
            return
        job, progress = self._live.pop(trial_id)
        if result:
            self.observe(progress, result)
        outcome, reason = self.outcome(progress, error)
        if outcome == "PRUNED":  # nothing prunes confirmations; a stop without a reason is a stop
            outcome, reason = "INTERRUPTED", "stopped before its last step"
        self._finish(job, progress, outcome, reason)

    def abandon_running(self, reason: str) -> None:
        for trial_id in list(self._live):
            job, progress = self._live.pop(trial_id)
            self._finish(job, progress, "INTERRUPTED", reason)

    def _finish(self, job: Job, progress: Progress, outcome: TrialOutcome, reason: str | None) -> None:
        run = {"mlflow_run_id": progress.run.id(timeout=RUN_ID_WAIT_S)} if progress.run is not None else {}
        if outcome == "INTERRUPTED":
            self._update(job, status="pending", message=reason, **run)
        elif outcome == "COMPLETE":
            self._counts[job.study.model]["complete"] += 1
            self._update(
                job,
                status="complete",
                objective=progress.best,
                metrics_json=json.dumps(progress.metrics, sort_keys=True),
                ended_at=now(),
                **run,
            )
        else:
            self._counts[job.study.model]["fail"] += 1
            self._update(job, status="failed", message=reason, ended_at=now(), **run)
        if self.tracker is not None:
            state = {"COMPLETE": "COMPLETE", "FAIL": "FAIL"}.get(outcome, "FAIL")
            self.tracker.finish_trial(
                progress.run, state, progress.best if outcome == "COMPLETE" else None, reason
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
                "best": None,
            }
            for model, counts in self._counts.items()
        ]


@dataclass(frozen=True)
class ConfirmedStudy:
    task: str
    model: str
    source_trial: int
    params: dict[str, Any]
    seeds: list[int]
    objectives: list[float]
    tests: list[float]
    failed: int

    @property
    def objective(self) -> tuple[float | None, float | None]:
        return mean_std(self.objectives)

    @property
    def test(self) -> tuple[float | None, float | None]:
        return mean_std(self.tests)


def mean_std(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (n − 1); no spread is claimed from a single run."""
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def confirmed(store: Store, record: SweepRecord, spec: SweepSpec) -> list[ConfirmedStudy]:
    """The confirmations of each study's latest confirmed configuration, from the registry."""
    metric = test_metric(spec.resolved_objective().metric)
    results = []
    with store.session() as session:
        for study_record in record.studies:
            rows = session.scalars(
                select(ConfirmationRecord)
                .where(ConfirmationRecord.study_id == study_record.id)
                .order_by(ConfirmationRecord.id)
            ).all()
            if not rows:
                continue
            source = rows[-1].source_trial
            rows = [r for r in rows if r.source_trial == source]
            done = [r for r in rows if r.status == "complete"]
            tests = [json.loads(r.metrics_json).get(metric) for r in done]
            results.append(
                ConfirmedStudy(
                    task=study_record.task,
                    model=study_record.model,
                    source_trial=source,
                    params=json.loads(rows[-1].params_json),
                    seeds=[r.seed for r in done],
                    objectives=[r.objective for r in done],
                    tests=[t for t in tests if t is not None],
                    failed=sum(r.status == "failed" for r in rows),
                )
            )
    return results


def run_confirmation(
    store: Store,
    record: SweepRecord,
    *,
    seeds: int,
    task: str | None = None,
    model: str | None = None,
    address: str | None = None,
    verbose: bool = False,
    home: Path = DEFAULT_HOME,
    results: str | None = None,
) -> tuple[Outcome, list[str]]:
    """Run the pending confirmations of the selected studies; return how it ended and notes."""
    spec = parse_spec(record.spec_yaml, f"sweep {record.name}")
    jobs, notes = plan_confirmations(store, record, spec, seeds, select_studies(record, task, model))
    if not jobs:
        return Outcome(record.name, "finished", None), notes
    tracker = open_tracker(record.tracking_uri) if record.tracking_uri else None
    searcher = ConfirmationSearcher(store, spec, jobs, tracker, record.mlflow_experiment_id)
    quiet_environment(verbose)
    start_ray(address, verbose, local_cpus([spec]))
    started = time.monotonic()

    def render() -> Any:
        return progress_table(
            searcher.snapshot(), time.monotonic() - started, None, f"{record.name} confirmation"
        )

    status, message = "finished", None
    try:
        run_tune(
            searcher,
            spec,
            scheduler=FIFOScheduler(),
            name=f"{record.name}-confirm",
            runs_dir=results_dir(results, home),
            verbose=verbose,
            deadline=None,
            render=render,
        )
    except Exception as exc:
        status, message = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        searcher.abandon_running(searcher.stop_reason or message or "the confirmation stopped")
        if searcher.stop_reason and searcher.stop_reason.startswith(INTERRUPTED):
            status, message = INTERRUPTED, searcher.stop_reason
        searcher.flush_tracking()
    if tracker is not None:
        _summarize_confirmations(tracker, store, record, spec)
    return Outcome(record.name, status, message), notes


def _summarize_confirmations(tracker: Tracker, store: Store, record: SweepRecord, spec: SweepSpec) -> None:
    """Mean and spread on the parent runs, so the MLflow run table compares models directly."""
    metric = spec.resolved_objective().metric
    parents = {s.model: s.mlflow_parent_run_id for s in record.studies}
    for result in confirmed(store, record, spec):
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

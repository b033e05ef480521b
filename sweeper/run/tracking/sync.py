"""Back-fill MLflow from the studies, after a tracking outage or against a new tracking server.

The study database is the record of truth; MLflow is a view of it. Syncing is idempotent: runs
are keyed by (study, Optuna trial number) through their tags, so a run is created only where
none exists, a run left RUNNING by an outage gets its final state, and missing objective points
are added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import TrialState

from sweeper.run.tracking.tracker import Tracker
from sweeper.spec.loading import stored_spec
from sweeper.spec.space import searched_names
from sweeper.spec.sweep import trial_config
from sweeper.store.credentials import redact
from sweeper.store.database import Store, SweepRecord
from sweeper.store.trial_record import (
    CONFIG_ATTR,
    FAIL_REASON_ATTR,
    FAIL_TRACEBACK_ATTR,
    INTERRUPTED_ATTR,
    RACE_STOP_ATTR,
    SEED_ATTR,
    best_trial,
    final_metrics,
    parameter_count,
    run_params,
)


@dataclass
class SyncCounts:
    experiments: int = 0
    parents: int = 0
    created: int = 0
    completed: int = 0
    points: int = 0


def sync_mlflow(store: Store, record: SweepRecord, tracker: Tracker) -> SyncCounts:
    """Make MLflow at `tracker` hold every study and trial of `record`; return what was added."""
    spec = stored_spec(record)
    client = tracker.client
    counts = SyncCounts()
    experiment = client.get_experiment_by_name(record.name)
    if experiment is None:
        experiment_id = tracker.experiment(
            record.name,
            f"{spec.description}\n\n```yaml\n{record.spec_yaml}```",
            ascending=spec.resolved_objective().mode == "min",
            searched=searched_names(spec),
        )
        counts.experiments += 1
    else:
        experiment_id = experiment.experiment_id
    store.update_sweep(
        record.id, mlflow_experiment_id=experiment_id, tracking_uri=redact(tracker.tracking_uri)
    )

    existing = client.search_runs([experiment_id], max_results=50_000)
    parents = {
        r.data.tags.get("sweeper.study"): r for r in existing if r.data.tags.get("sweeper.role") == "study"
    }
    children = {
        (r.data.tags.get("sweeper.study"), r.data.tags.get("optuna.trial_number")): r
        for r in existing
        if r.data.tags.get("sweeper.role") == "trial"
    }
    with store.session() as session:
        for study_record in record.studies:
            study_record = session.merge(study_record)
            parent = parents.get(study_record.study_name)
            if parent is None:
                study_record.mlflow_parent_run_id = tracker.parent_run(
                    experiment_id, study_record.study_name, study_record.task, study_record.model
                )
                counts.parents += 1
            else:
                study_record.mlflow_parent_run_id = parent.info.run_id
            study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
            for trial in study.get_trials(deepcopy=False):
                if not trial.state.is_finished():
                    continue
                key = (study_record.study_name, str(trial.number))
                _sync_trial(tracker, spec, study_record, experiment_id, trial, children.get(key), counts)
            best = best_trial(study)
            tracker.summarize_parent(
                study_record.mlflow_parent_run_id,
                best.value if best else None,
                best.params if best else {},
                parameter_count(best) if best else None,
                study.user_attrs.get(RACE_STOP_ATTR),
            )
    if tracker.missed:
        raise SyncError(
            f"{tracker.missed} MLflow writes to {redact(tracker.tracking_uri)} failed; run the sync again"
        )
    return counts


class SyncError(RuntimeError):
    """MLflow could not take every write; the sync can simply be run again."""


def _sync_trial(
    tracker: Tracker,
    spec: Any,
    study_record: Any,
    experiment_id: str,
    trial: optuna.trial.FrozenTrial,
    run: Any,
    counts: SyncCounts,
) -> None:
    client = tracker.client
    if run is None:
        config = trial.user_attrs.get(CONFIG_ATTR) or trial_config(
            spec, study_record.model, trial.params, trial.user_attrs.get(SEED_ATTR, 0)
        )
        run_id = tracker.start_trial(
            experiment_id,
            study_record.mlflow_parent_run_id,
            study_record.study_name,
            study_record.task,
            study_record.model,
            trial.number,
            run_params(config),
        )
        counts.created += 1
        logged: set[int] = set()
    else:
        run_id = run.info.run_id
        if run.data.tags.get("state") not in ("RUNNING", None):
            return
        logged = {m.step for m in client.get_metric_history(run_id, spec.resolved_objective().metric)}
    metric = spec.resolved_objective().metric
    missing = {step: value for step, value in trial.intermediate_values.items() if step not in logged}
    for step, value in sorted(missing.items()):
        tracker.log_metrics(run_id, step, {metric: value})
    counts.points += len(missing)
    present = set(run.data.metrics) if run is not None else set()
    final = {k: v for k, v in final_metrics(trial).items() if k not in present | {metric}}
    if final and trial.intermediate_values:
        tracker.log_metrics(run_id, max(trial.intermediate_values), final)
    state = trial.state.name
    reason = trial.user_attrs.get(FAIL_REASON_ATTR)
    if INTERRUPTED_ATTR in trial.user_attrs:
        reason = reason or "interrupted"
    value = trial.value if trial.state == TrialState.COMPLETE else None
    tracker.finish_trial(run_id, state, value, reason, trial.user_attrs.get(FAIL_TRACEBACK_ATTR))
    counts.completed += 1

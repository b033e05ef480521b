"""Launching and resuming sweeps: register the studies and MLflow runs, then run them on Ray.

The studies in the database are the sweep's state. Launch creates them; resume reconciles trials
a dead or interrupted driver left RUNNING, then runs again toward the same budgets. What each
study samples, how its trials stop and how the models share the budget is `sweeper.run.search`;
the Ray side is `sweeper.run.tune`, MLflow's `sweeper.run.tracking`.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from sqlalchemy.engine import make_url

from sweeper.run.jobs import SUBMISSION_ID_METADATA, job_metadata
from sweeper.run.search.portfolio import opening_points
from sweeper.run.search.pruning import make_pruner, make_scheduler
from sweeper.run.search.race import Race, race_rung
from sweeper.run.search.repair import reconcile, requeue_paper_points
from sweeper.run.search.samplers import make_sampler, paper_point_count, sampler_text
from sweeper.run.search.searcher import MultiStudySearcher, StudyPlan
from sweeper.run.search.transfer import enqueue_transferred, sources_in_store
from sweeper.run.tracking.answer import catch_up_mlflow, write_answer
from sweeper.run.tracking.tracker import Tracker, open_tracker
from sweeper.run.tune.progress import ProgressDisplay
from sweeper.run.tune.runtime import (
    RunEnd,
    connect_ray,
    drive,
    quiet_environment,
    refuse_missing_gpus,
    results_dir,
    start_ray,
)
from sweeper.run.tune.workers import local_cpus
from sweeper.spec.loading import stored_spec
from sweeper.spec.preflight import NO_GPUS_OVERRIDE
from sweeper.spec.price import Price
from sweeper.spec.sections import WITHDRAWN_ALLOCATIONS
from sweeper.spec.space import searched_count, searched_names, study_budget
from sweeper.spec.sweep import SweepSpec
from sweeper.store.credentials import redact
from sweeper.store.database import DATABASE_ERRORS, Store, StudyRecord, SweepRecord, check_url, now
from sweeper.store.locations import DEFAULT_HOME
from sweeper.store.states import SweepStatus
from sweeper.store.trial_record import (
    PAPER_POINT_ATTR,
    PRICE_ATTR,
    RACE_STOP_ATTR,
    SAMPLER_ATTR,
    SHARE_ATTR,
)

IMAGE_VARIABLE = "SWEEPER_IMAGE"  # the container image a cluster's driver runs in (deploy/)
log = logging.getLogger(__name__)

# Per model, the labelled parameters its study asks for first (`sweeper.papers.points`).
FirstTrials = Mapping[str, Sequence[tuple[str, dict[str, Any]]]]
STORED_SPEC_GPUS = "a sweep's stored spec does not change; run it where Ray has GPUs"


@dataclass(frozen=True)
class Where:
    """Where a sweep runs and what it writes to: the study database, MLflow, Ray, Tune's files."""

    storage_url: str
    tracking_uri: str
    address: str | None = None
    results: str | None = None
    verbose: bool = False
    home: Path = DEFAULT_HOME


def study_name(sweep: str, task: str, model: str) -> str:
    return f"{sweep}/{task}/{model}"


def with_budget(spec: SweepSpec, max_trials: int | None, time_budget: float | None) -> SweepSpec:
    """The spec with command-line budget overrides applied (they are stored with the sweep)."""
    update: dict[str, Any] = {}
    if max_trials is not None:
        update["trials"] = max_trials
    if time_budget is not None:
        update["time"] = time_budget
    if not update:
        return spec
    return spec.model_copy(update={"budget": spec.budget.model_copy(update=update)})


def with_seed(spec: SweepSpec, seed: int | None) -> SweepSpec:
    """The spec with the command line's seed (its samplers' and its trials'), stored with the sweep."""
    if seed is None:
        return spec
    return spec.model_copy(update={"seed": seed, "sampler": spec.sampler.model_copy(update={"seed": None})})


def without_gpus(spec: SweepSpec) -> SweepSpec:
    """The spec with every trial on the CPU (`--no-gpus`), validated again: `kernel: fused` needs a GPU."""
    resources = spec.resources.model_dump()
    resources["gpus"] = 0.0
    for own in resources["per_model"].values():
        own["gpus"] = None
    return SweepSpec.model_validate({**spec.canonical(), "resources": resources})


def connect(where: Where, specs: list[SweepSpec], override: str) -> None:
    """Start or join Ray for these sweeps; refuse a multi-node SQLite sweep, and GPU trials on a
    local Ray that has no GPU (`override` says what to do instead)."""
    connect_ray(where.address, where.storage_url, where.verbose, local_cpus(specs))
    if where.address is None:
        refuse_missing_gpus(specs, override)


def register(
    spec: SweepSpec,
    where: Where,
    profile: str | None,
    launched: list[SweepSpec],
    first_trials: FirstTrials | None = None,
    priced: Price | None = None,
) -> tuple[Store, SweepRecord]:
    """Reach the database and Ray, in the order that refuses a bad setup before anything is
    written, then register the sweep. SQLite: Ray first, so a multi-node cluster is refused before
    the database file exists; a server: the database first, so an unreachable one is reported
    before Ray starts. A local Ray is sized for every sweep `launched` with this one."""
    check_url(where.storage_url)
    if make_url(where.storage_url).get_backend_name() == "sqlite":
        connect(where, launched, NO_GPUS_OVERRIDE)
        store = Store(where.storage_url)
    else:
        store = Store(where.storage_url)
        connect(where, launched, NO_GPUS_OVERRIDE)
    return store, create_sweep(
        spec, store, where.tracking_uri, profile, where.address, where.home, first_trials, priced
    )


def create_sweep(
    spec: SweepSpec,
    store: Store,
    tracking_uri: str,
    profile: str | None,
    address: str | None,
    home: Path = DEFAULT_HOME,
    first_trials: FirstTrials | None = None,
    priced: Price | None = None,
) -> SweepRecord:
    """Register the sweep, its studies and its MLflow experiment and parent runs. `first_trials`
    are each model's labelled parameters (the papers' points) that its study asks for first;
    `priced`, what each study was predicted to cost (kept on it, for status to set beside what
    it spent)."""
    name = store.next_sweep_name(spec.name)
    objective = spec.resolved_objective()
    quiet_environment(verbose=False)
    record = SweepRecord(
        name=name,
        spec_name=spec.name,
        spec_yaml=spec.to_yaml(),
        spec_hash=spec.digest(),
        profile=profile,
        status=SweepStatus.CREATED,
        ray_address=address or "local",
        tracking_uri=redact(tracking_uri),
        job_id=job_metadata().get(SUBMISSION_ID_METADATA),
        image=os.environ.get(IMAGE_VARIABLE),
    )
    tracker = open_tracker(tracking_uri)
    experiment_id = None
    if tracker is not None:
        description = f"{spec.description}\n\n```yaml\n{spec.to_yaml()}```"
        # a tracking server keeps artifacts itself; only a local store needs a local folder
        artifacts = None if tracking_uri.startswith(("http://", "https://")) else home / "mlartifacts"
        experiment_id = tracker.call(
            "create_experiment",
            tracker.experiment,
            name,
            description,
            artifacts,
            objective.mode == "min",
            searched_names(spec),
        )
    record.mlflow_experiment_id = experiment_id
    for model in spec.models:
        sname = study_name(name, spec.task.name, model)
        study = create_study(spec, store.optuna, sname, (first_trials or {}).get(model, ()))
        if spec.sampler.transfer:
            sources = sources_in_store(store, spec, model, name)
            room = study_budget(spec, model) - len(
                study.get_trials(deepcopy=False)
            )  # after the papers' points
            enqueue_transferred(study, opening_points(spec, model, sources, room))
        if priced is not None:
            mine = next(s for s in priced.studies if s.model == model)
            study.set_user_attr(PRICE_ATTR, {"worker_hours": list(mine.worker_hours), "source": mine.source})
        parent = None
        if tracker is not None and experiment_id is not None:
            parent = tracker.call(
                "create_run", tracker.parent_run, experiment_id, sname, spec.task.name, model
            )
        record.studies.append(
            StudyRecord(study_name=sname, task=spec.task.name, model=model, mlflow_parent_run_id=parent)
        )
    return store.add_sweep(record)


def create_study(
    spec: SweepSpec,
    storage: optuna.storages.BaseStorage,
    name: str,
    first: Sequence[tuple[str, dict[str, Any]]] = (),
) -> optuna.Study:
    """A study of the sweep, asking first for the labelled `first` parameters (papers' points)."""
    objective = spec.resolved_objective()
    study = optuna.create_study(
        study_name=name,
        storage=storage,
        direction="minimize" if objective.mode == "min" else "maximize",
        load_if_exists=True,
    )
    with warnings.catch_warnings():  # experimental in Optuna, and what names the objective in its dashboard
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names([objective.metric])
    for label, params in first:
        study.enqueue_trial(params, user_attrs={PAPER_POINT_ATTR: label}, skip_if_exists=True)
    return study


def resume(store: Store, record: SweepRecord, where: Where) -> tuple[int, RunEnd]:
    """Join Ray, mark what a stopped driver left running as interrupted, and run the sweep on.
    Returns how many trials were reconciled, and how the run ended."""
    connect(where, [stored_spec(record)], STORED_SPEC_GPUS)
    fixed = reconcile(store, record)
    return fixed, run_sweep(store, record, where)


def study_searcher(store: Store, record: SweepRecord, tracker: Tracker | None) -> MultiStudySearcher:
    """The searcher over the sweep's studies, each with its sampler, pruner, budget and the
    papers' points a stopped driver cut short; racing when the spec allocates by a race."""
    return searcher_over(
        stored_spec(record),
        store.optuna,
        [(s.study_name, s.model, s.mlflow_parent_run_id) for s in record.studies],
        tracker,
        record.mlflow_experiment_id,
    )


def searcher_over(
    spec: SweepSpec,
    storage: optuna.storages.BaseStorage,
    studies: Sequence[tuple[str, str, str | None]],
    tracker: Tracker | None = None,
    experiment_id: str | None = None,
) -> MultiStudySearcher:
    """The searcher over `studies` (name, model, MLflow parent run) in `storage`: what a launch
    and a resume run, and what the search benchmark replays against recorded curves."""
    plans = []
    most_papers = 0
    for name, model, parent_run_id in studies:
        study = optuna.load_study(study_name=name, storage=storage, pruner=make_pruner(spec))
        requeue_paper_points(study)
        trials = study.get_trials(deepcopy=False)
        papers = paper_point_count(trials)
        most_papers = max(most_papers, papers)
        study.sampler = make_sampler(spec, model, len(trials), papers)
        drawn = sampler_text(spec, model, papers)
        study.set_user_attr(SAMPLER_ATTR, drawn)
        log.info("study %s samples with %s", name, drawn)
        budget = study_budget(spec, model)
        plans.append(
            StudyPlan(
                study,
                model,
                parent_run_id,
                budget,
                spec.budget.iterations,
                spec.budget.study_time,
                trial_hours=priced_trial_hours(study, budget),
            )
        )
    searcher = MultiStudySearcher(spec, plans, tracker, experiment_id)
    if spec.budget.allocate == "race":
        rung = race_rung(spec, most_papers)
        mode = spec.resolved_objective().mode
        searched = {model: searched_count(spec, model) for model in spec.models}
        searcher.race = Race(plans, spec.budget.trials, rung, mode, searched, spec.budget.race_exempt)
    elif spec.budget.allocate in WITHDRAWN_ALLOCATIONS:  # a stored sweep's: it runs on as equal
        for plan in plans:  # so no drop or share its race made holds any longer
            for attr in (RACE_STOP_ATTR, SHARE_ATTR):
                if plan.study.user_attrs.get(attr) is not None:
                    plan.study.set_user_attr(attr, None)
    return searcher


def priced_trial_hours(study: optuna.Study, budget: int) -> float:
    """A trial's worker-hours by the price the launch kept on `study` (the middle of its range,
    over its budget's trials); 0 where the sweep started unpriced."""
    price = study.user_attrs.get(PRICE_ATTR)
    if not price or budget <= 0:
        return 0.0
    low, high = price["worker_hours"]
    return (low + high) / 2 / budget


def withdrawn_allocation(spec: SweepSpec) -> str | None:
    """What `resume` says of a sweep stored with an allocation since withdrawn (`curves`): it runs
    on as equal (`searcher_over`)."""
    if spec.budget.allocate not in WITHDRAWN_ALLOCATIONS:
        return None
    return (
        f"allocate: {spec.budget.allocate} is withdrawn, so it runs on as allocate: equal, each model "
        f"to {spec.budget.trials} trials, those its race dropped too"
    )


def task_baseline(spec: SweepSpec) -> float | None:
    """The task's memoryless baseline at the sweep's settings, where it has one."""
    from trainables.registry import TASKS

    return TASKS.get(spec.task.name).sized(spec.task.settings).baseline


def run_sweep(store: Store, record: SweepRecord, where: Where) -> RunEnd:
    """Run (or continue) a registered sweep until its budgets are met or it is stopped."""
    spec = stored_spec(record)
    tracker = open_tracker(record.tracking_uri) if record.tracking_uri else None
    searcher = study_searcher(store, record, tracker)
    plans = searcher.plans

    remaining_time = None if spec.budget.time is None else spec.budget.time - record.elapsed_s
    if remaining_time is not None and remaining_time <= 0:
        store.update_sweep(record.id, status=SweepStatus.FINISHED, message="time budget exhausted")
        return RunEnd(record.name, SweepStatus.FINISHED, "time budget exhausted")

    start_ray(where.address, where.verbose, local_cpus([spec]))
    started = time.monotonic()
    deadline = None if remaining_time is None else started + remaining_time
    driver_died = record.status == SweepStatus.RUNNING  # its last MLflow writes may never have been made
    store.update_sweep(
        record.id, status=SweepStatus.RUNNING, started_at=record.started_at or now(), message=None
    )

    display = ProgressDisplay(
        record.name,
        searcher.snapshot,
        lambda: record.elapsed_s + time.monotonic() - started,
        spec.budget.time,
    )
    status, message = drive(
        searcher,
        spec,
        scheduler=make_scheduler(spec, searcher, task_baseline(spec)),
        name=record.name,
        runs_dir=results_dir(where.results, where.home),
        verbose=where.verbose,
        deadline=deadline,
        display=display,
    )
    try:
        store.update_sweep(
            record.id,
            status=status,
            ended_at=now(),
            elapsed_s=record.elapsed_s + time.monotonic() - started,
            message=message,
        )
        if tracker is not None:
            write_answer(tracker, store, record, plans)
            if tracker.missed or record.mlflow_experiment_id is None:
                catch_up_mlflow(store, record, "MLflow was unavailable during the sweep")
            elif driver_died:
                catch_up_mlflow(
                    store, record, "the previous driver stopped without finishing its MLflow writes"
                )
    except DATABASE_ERRORS as exc:  # its trials are safe; resume reconciles the rest
        log.error("could not record how sweep %s ended: %s", record.name, exc)
    return RunEnd(record.name, status, message)

"""Launching and resuming sweeps: studies, MLflow runs, and one Ray Tune run over all studies.

The studies in the database are the sweep's state. Launch creates them; resume reconciles trials
a dead or interrupted driver left RUNNING, then starts a fresh Tune run toward the same budgets.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState
from ray.tune import Stopper
from sqlalchemy.engine import make_url

from sweeper.checkpoints import CheckpointPruner
from sweeper.progress import ProgressCallback, make_live, progress_table
from sweeper.schedulers import OptunaPrunerScheduler, PerStudyScheduler
from sweeper.search import (
    DATABASE_ERRORS,
    FAIL_REASON_ATTR,
    INTERRUPTED_ATTR,
    MultiStudySearcher,
    StudyPlan,
    driver_only_state,
)
from sweeper.space import describe, grid_of, grid_size
from sweeper.spec import IntRange, SweepSpec, parse_spec
from sweeper.store import DEFAULT_HOME, Store, StoreError, StudyRecord, SweepRecord, now, redact
from sweeper.tracking import Tracker, resolve_tracking_uri
from sweeper.urls import scrub
from sweeper.workers import (
    TrialResources,
    keep_starting_trial_actors,
    local_cpus,
    local_ray_options,
    trial_actors_without_runtime_env,
)
from trainables.registry import plugin_modules
from trainables.train import TRAINING

log = logging.getLogger(__name__)

INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Outcome:
    sweep: str
    status: str
    message: str | None


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


def without_gpus(spec: SweepSpec) -> SweepSpec:
    """The spec with every trial on the CPU (`--no-gpus`), validated again: `kernel: fused` needs a GPU."""
    resources = spec.resources.model_dump()
    resources["gpus"] = 0.0
    for own in resources["per_model"].values():
        own["gpus"] = None
    return SweepSpec.model_validate({**spec.canonical(), "resources": resources})


class MissingGPUs(Exception):
    """Trials ask for GPUs that the Ray they would run on does not have and cannot get."""


def refuse_missing_gpus(specs: list[SweepSpec], override: str) -> None:
    """A local Ray without GPUs would leave GPU trials pending forever: refuse before registering.

    Only a local Ray is judged; a cluster may have an autoscaler that adds GPU nodes on demand.
    """
    import ray

    if ray.cluster_resources().get("GPU", 0) > 0:
        return
    asking: dict[float, list[str]] = {}
    for spec in specs:
        for model in spec.models:
            gpus = spec.resources.for_model(model)["gpu"]
            if gpus > 0:
                asking.setdefault(gpus, []).append(model)
    if asking:
        shares = "; ".join(f"{g:g} for {', '.join(models)}" for g, models in sorted(asking.items()))
        raise MissingGPUs(
            f"resources: the trials ask for GPUs ({shares}) and this machine's Ray has none; "
            f"{override}, or join a cluster with GPU workers (--address)"
        )


def plan_text(spec: SweepSpec, storage_url: str, tracking_uri: str, address: str | None) -> str:
    """The resolved plan `--dry-run` prints: studies, spaces, budgets, resources, targets."""
    objective = spec.resolved_objective()
    budget = spec.budget
    lines = [
        f"sweep {spec.name}: task {spec.task.name} {spec.task.settings}",
        f"  objective: {objective.mode} {objective.metric}",
        f"  sampler: {spec.sampler.name} (seed {spec.sampler.seed if spec.sampler.seed is not None else spec.seed})"
        f", scheduler: {spec.scheduler.name}",
        f"  budget: {budget.trials} trials per study"
        + (f", {budget.iterations:,} training steps per study" if budget.iterations else "")
        + (f", {budget.study_time:.0f}s of training per study" if budget.study_time else "")
        + (f", {budget.trial_time:.0f}s per trial" if budget.trial_time else "")
        + (f", {budget.time:.0f}s in all" if budget.time else "")
        + (f", at most {budget.max_concurrent} at once" if budget.max_concurrent else ""),
        f"  resources per trial: {spec.resources.cpus:g} CPU, {spec.resources.gpus:g} GPU"
        + "".join(
            f"; {m}: {r['cpu']:g} CPU, {r['gpu']:g} GPU"
            for m, r in ((m, spec.resources.for_model(m)) for m in spec.resources.per_model)
        ),
        f"  storage: {redact(storage_url)}",
        f"  tracking: {redact(tracking_uri)}",
        f"  ray: {address or 'a new local Ray instance'}",
    ]
    for model in spec.models:
        lines.append(f"  study {spec.task.name}/{model}:")
        for name, value in spec.space(model).items():
            lines.append(f"    {name}: {describe(value)}")
    return "\n".join(lines)


def _max_iterations(spec: SweepSpec) -> int:
    longest = 0
    for model in spec.models:
        value = spec.space(model).get("iterations", TRAINING["iterations"].default)
        longest = max(longest, value.int[1] if isinstance(value, IntRange) else int(value))
    return longest


def _first_report(spec: SweepSpec) -> int:
    value = spec.space(spec.models[0]).get("eval_every", TRAINING["eval_every"].default)
    return value.int[0] if isinstance(value, IntRange) else int(value)


class AskTellGridSampler(optuna.samplers.GridSampler):
    """Optuna's grid sampler without its `study.stop()` once the grid is walked.

    That call only works inside `study.optimize`; under ask-and-tell it raises before the last
    trial's state is saved. The study's budget is capped at the grid size instead.
    """

    def after_trial(self, study: optuna.Study, trial: Any, state: Any, values: Any) -> None:
        return None


def make_sampler(spec: SweepSpec, model: str, offset: int) -> optuna.samplers.BaseSampler:
    """Seeded from the spec, shifted by the trials already asked so a resume does not replay draws;
    a study whose searched values are grids walks its grid."""
    seed = (spec.sampler.seed if spec.sampler.seed is not None else spec.seed) + offset
    grid = grid_of(spec.space(model))
    if grid is not None:
        return AskTellGridSampler(grid, seed=seed)
    if spec.sampler.name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if spec.sampler.name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, constant_liar=True)


def study_budget(spec: SweepSpec, model: str) -> int:
    """Trials of one study: the spec's budget, or the grid's size when that is smaller."""
    grid = grid_of(spec.space(model))
    return spec.budget.trials if grid is None else min(spec.budget.trials, grid_size(grid))


def make_pruner(spec: SweepSpec) -> optuna.pruners.BasePruner:
    """The study's Optuna pruner: it acts only under the `median` and `hyperband` schedulers."""
    warmup = spec.scheduler.grace_period or _first_report(spec)
    if spec.scheduler.name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=warmup)
    if spec.scheduler.name == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=warmup,
            max_resource=_max_iterations(spec),
            reduction_factor=max(2, round(spec.scheduler.reduction_factor)),
        )
    return optuna.pruners.NopPruner()


def _scheduler(spec: SweepSpec, searcher: MultiStudySearcher) -> Any:
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    if spec.scheduler.name == "none":
        return FIFOScheduler()
    if spec.scheduler.name in ("median", "hyperband"):
        return OptunaPrunerScheduler(searcher)
    objective = spec.resolved_objective()
    max_t = _max_iterations(spec)
    grace = min(spec.scheduler.grace_period or _first_report(spec), max_t)
    return PerStudyScheduler(
        lambda: ASHAScheduler(
            time_attr="step",
            metric=objective.metric,
            mode=objective.mode,
            max_t=max_t,
            grace_period=grace,
            reduction_factor=spec.scheduler.reduction_factor,
        )
    )


def reconcile(store: Store, record: SweepRecord) -> int:
    """Mark trials left RUNNING by a driver that is gone as interrupted failures; return how many.

    Optuna's heartbeats act only inside `study.optimize`, not under ask-and-tell, so the
    service does this itself before any resume.
    """
    fixed = 0
    for study_record in record.studies:
        study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING)):
            storage = store.optuna
            storage.set_trial_user_attr(trial._trial_id, INTERRUPTED_ATTR, True)
            storage.set_trial_user_attr(trial._trial_id, FAIL_REASON_ATTR, "the sweep's driver stopped")
            storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
            fixed += 1
    return fixed


@contextmanager
def _stop_on_signals(searcher: MultiStudySearcher) -> Iterator[None]:
    """First Ctrl-C or SIGTERM: stop cleanly (running trials marked interrupted); second: abort."""

    def handle(signum: int, frame: Any) -> None:
        if searcher.stop_reason is not None and searcher.stop_reason.startswith(INTERRUPTED):
            raise KeyboardInterrupt
        searcher.stop_reason = f"{INTERRUPTED} by {signal.Signals(signum).name}"

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _BudgetStopper(Stopper):
    """Ends the Tune run when the searcher was told to stop or the time budget is spent."""

    def __init__(self, searcher: MultiStudySearcher, deadline: float | None) -> None:
        self.searcher = searcher
        self.deadline = deadline

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        """Stop a trial that outran `budget.trial_time`; the searcher records it as a failure."""
        limit = self.searcher.spec.budget.trial_time
        if limit is not None and result.get("time_total_s", 0.0) > limit:
            self.searcher.fail(trial_id, f"exceeded the trial time limit of {limit:g}s")
            return True
        return False

    def __getstate__(self) -> dict[str, Any]:
        return driver_only_state(self)

    def stop_all(self) -> bool:
        if (
            self.deadline is not None
            and time.monotonic() >= self.deadline
            and self.searcher.stop_reason is None
        ):
            self.searcher.stop_reason = "time budget exhausted"
        return self.searcher.stop_reason is not None


def connect_ray(
    address: str | None, storage_url: str, verbose: bool = False, cpus: int | None = None
) -> None:
    """Start or join Ray, refusing SQLite when trials could run on several machines.

    SQLite locks break across hosts and on network filesystems; a multi-node sweep needs a
    database server. Checked before a sweep is registered, so a refused launch registers nothing.
    `cpus` sizes a local Ray (`sweeper.workers.local_cpus`).
    """
    import ray

    quiet_environment(verbose)
    start_ray(address, verbose, cpus)
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    if len(nodes) > 1 and make_url(storage_url).get_backend_name() == "sqlite":
        raise StoreError(
            f"the Ray cluster has {len(nodes)} nodes, and SQLite ({redact(storage_url)}) is for one machine; "
            "use a PostgreSQL URL (--storage or SWEEPER_STORAGE)"
        )


def start_ray(address: str | None, verbose: bool, cpus: int | None = None) -> None:
    """Join the Ray at `address`, or start a local one with `cpus` logical CPUs (None: all)."""
    import ray

    if ray.is_initialized():
        return
    level = logging.INFO if verbose else logging.WARNING
    kwargs: dict[str, Any] = {"log_to_driver": verbose, "logging_level": level, "include_dashboard": False}
    if address is None:
        ray.init(**kwargs, num_cpus=cpus, **local_ray_options())
    else:
        ray.init(address=address, **kwargs)


def quiet_environment(verbose: bool) -> None:
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"  # our handler marks trials, then stops Tune
    os.environ["TUNE_DISABLE_STRICT_METRIC_CHECKING"] = "1"  # a failed trial reports its reason only
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", "3600")  # sweeper resumes from the studies
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    if not verbose:
        os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    if not verbose:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        for name in ("ray", "mlflow", "alembic"):
            logging.getLogger(name).setLevel(logging.WARNING)
        # the studies hold the results; Tune's own result files are not written, so don't warn of them
        logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)


def create_sweep(
    spec: SweepSpec,
    store: Store,
    tracking_uri: str,
    profile: str | None,
    address: str | None,
    home: Path = DEFAULT_HOME,
) -> SweepRecord:
    """Register the sweep, its studies and its MLflow experiment and parent runs."""
    name = store.next_sweep_name(spec.name)
    objective = spec.resolved_objective()
    quiet_environment(verbose=False)
    record = SweepRecord(
        name=name,
        spec_name=spec.name,
        spec_yaml=spec.to_yaml(),
        spec_hash=spec.digest(),
        profile=profile,
        status="created",
        ray_address=address or "local",
        tracking_uri=redact(tracking_uri),
    )
    tracker = open_tracker(tracking_uri)
    experiment_id = None
    if tracker is not None:
        description = f"{spec.description}\n\n```yaml\n{spec.to_yaml()}```"
        # a tracking server keeps artifacts itself; only a local store needs a local folder
        artifacts = None if tracking_uri.startswith(("http://", "https://")) else home / "mlartifacts"
        experiment_id = tracker.call("create_experiment", tracker.experiment, name, description, artifacts)
    record.mlflow_experiment_id = experiment_id
    for model in spec.models:
        sname = study_name(name, spec.task.name, model)
        optuna.create_study(
            study_name=sname,
            storage=store.optuna,
            direction="minimize" if objective.mode == "min" else "maximize",
            load_if_exists=True,
        )
        parent = None
        if tracker is not None and experiment_id is not None:
            parent = tracker.call(
                "create_run", tracker.parent_run, experiment_id, sname, spec.task.name, model
            )
        record.studies.append(
            StudyRecord(study_name=sname, task=spec.task.name, model=model, mlflow_parent_run_id=parent)
        )
    return store.add_sweep(record)


_trackers: dict[str, Tracker] = {}


def open_tracker(tracking_uri: str) -> Tracker | None:
    """One tracker per URI and process: creating an MLflow client costs over a second."""
    uri = resolve_tracking_uri(tracking_uri)
    try:
        if uri not in _trackers:
            _trackers[uri] = Tracker(uri)
        return _trackers[uri]
    except Exception as exc:
        log.warning("MLflow tracking at %s is unavailable: %s", redact(tracking_uri), exc)
        return None


def run_sweep(
    store: Store,
    record: SweepRecord,
    *,
    address: str | None,
    verbose: bool = False,
    home: Path = DEFAULT_HOME,
    results: str | None = None,
) -> Outcome:
    """Run (or continue) a registered sweep until its budgets are met or it is stopped."""
    spec = parse_spec(record.spec_yaml, f"sweep {record.name}")
    tracker = open_tracker(record.tracking_uri) if record.tracking_uri else None
    plans = []
    for study_record in record.studies:
        study = optuna.load_study(
            study_name=study_record.study_name, storage=store.optuna, pruner=make_pruner(spec)
        )
        study.sampler = make_sampler(spec, study_record.model, len(study.get_trials(deepcopy=False)))
        budget = study_budget(spec, study_record.model)
        plans.append(
            StudyPlan(
                study,
                study_record.model,
                study_record.mlflow_parent_run_id,
                budget,
                spec.budget.iterations,
                spec.budget.study_time,
            )
        )
    searcher = MultiStudySearcher(spec, plans, tracker, record.mlflow_experiment_id)

    remaining_time = None if spec.budget.time is None else spec.budget.time - record.elapsed_s
    if remaining_time is not None and remaining_time <= 0:
        store.update_sweep(record.id, status="finished", message="time budget exhausted")
        return Outcome(record.name, "finished", "time budget exhausted")

    quiet_environment(verbose)
    start_ray(address, verbose, local_cpus([spec]))
    started = time.monotonic()
    deadline = None if remaining_time is None else started + remaining_time
    driver_died = record.status == "running"  # its last MLflow writes may never have been made
    store.update_sweep(record.id, status="running", started_at=record.started_at or now(), message=None)

    def render() -> Any:
        return progress_table(
            searcher.snapshot(), record.elapsed_s + time.monotonic() - started, spec.budget.time, record.name
        )

    status, message = "finished", None
    try:
        run_tune(
            searcher,
            spec,
            scheduler=_scheduler(spec, searcher),
            name=record.name,
            runs_dir=results_dir(results, home),
            verbose=verbose,
            deadline=deadline,
            render=render,
        )
    except Exception as exc:
        status, message = "failed", f"{type(exc).__name__}: {exc}"
        log.exception("sweep %s failed", record.name)
    finally:
        reason = searcher.stop_reason or message or "the sweep stopped"
        searcher.abandon_running(reason)
        if searcher.stop_reason and searcher.stop_reason.startswith(INTERRUPTED):
            status, message = INTERRUPTED, searcher.stop_reason
        elif searcher.stop_reason:
            message = searcher.stop_reason
        searcher.flush_tracking()
        try:
            store.update_sweep(
                record.id,
                status=status,
                ended_at=now(),
                elapsed_s=record.elapsed_s + time.monotonic() - started,
                message=message,
            )
            if tracker is not None:
                _summarize_parents(tracker, plans)
                if tracker.missed or record.mlflow_experiment_id is None:
                    catch_up_mlflow(store, record, "MLflow was unavailable during the sweep")
                elif driver_died:
                    catch_up_mlflow(
                        store, record, "the previous driver stopped without finishing its MLflow writes"
                    )
        except DATABASE_ERRORS as exc:  # its trials are safe; resume reconciles the rest
            log.error("could not record how sweep %s ended: %s", record.name, exc)
    return Outcome(record.name, status, message)


def catch_up_mlflow(store: Store, record: SweepRecord, why: str) -> None:
    """Back-fill MLflow from the studies once (after an outage or a dead driver); say so if it fails."""
    from sweeper.sync import sync_mlflow

    try:
        counts = sync_mlflow(
            store, store.get_sweep(record.name), Tracker(resolve_tracking_uri(record.tracking_uri))
        )
        log.warning("%s; back-filled %d runs from the studies", why, counts.created)
    except Exception as exc:  # a catch-up that fails leaves the sweep intact and says what to run
        log.warning(
            "MLflow is still incomplete (%s); run `sweeper sync-mlflow %s` once it is back",
            scrub(str(exc), resolve_tracking_uri(record.tracking_uri or "")),
            record.name,
        )


def results_dir(results: str | None, home: Path) -> str:
    """Where Tune keeps trial results: the given location (shared by all nodes) or a local folder."""
    return results or str((home / "ray_results").resolve())


def run_tune(
    searcher: Any,
    spec: SweepSpec,
    *,
    scheduler: Any,
    name: str,
    runs_dir: str,
    verbose: bool,
    deadline: float | None,
    render: Callable[[], Any],
) -> None:
    """One Tune run driven by `searcher` (which hands out configs and records outcomes).

    Ctrl-C or SIGTERM sets `searcher.stop_reason` and the run stops cleanly; a second one aborts
    through KeyboardInterrupt, which is caught here: either way the caller finds the reason in
    `searcher.stop_reason` and the trials still running in `searcher.abandon_running`.
    """
    from ray import tune
    from ray.tune import FailureConfig

    live = make_live()
    tuner = tune.Tuner(
        trial_trainable(spec),
        tune_config=tune.TuneConfig(
            search_alg=searcher,
            scheduler=scheduler,
            num_samples=-1,
            max_concurrent_trials=spec.budget.max_concurrent,
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(
            name=f"{name.replace('/', '_')}-{int(time.time())}",
            storage_path=runs_dir,
            verbose=2 if verbose else 0,
            stop=_BudgetStopper(searcher, deadline),
            callbacks=[ProgressCallback(live, render), CheckpointPruner()],
            failure_config=FailureConfig(max_failures=spec.budget.retries),
        ),
    )
    try:
        with (
            _stop_on_signals(searcher),
            live,
            trial_actors_without_runtime_env(),
            keep_starting_trial_actors(),
        ):
            live.update(render(), refresh=True)
            tuner.fit()
            live.update(render(), refresh=True)
    except KeyboardInterrupt:
        searcher.stop_reason = searcher.stop_reason or f"{INTERRUPTED} by SIGINT"


def trial_trainable(spec: SweepSpec) -> Any:
    """The trial function with what each trial reserves, as Tune creates its actors from it.

    The driver's plugins are handed over explicitly rather than through a runtime environment,
    which would keep trials off the warm workers; and nothing in it refers to the spec, which
    a new trial process would otherwise import to create the actor (`sweeper.workers`).
    """
    from ray import tune

    from sweeper.trial import run_trial

    resources = TrialResources({model: spec.resources.for_model(model) for model in spec.models})
    return tune.with_resources(tune.with_parameters(run_trial, plugins=plugin_modules()), resources)


def _summarize_parents(tracker: Tracker, plans: list[StudyPlan]) -> None:
    for plan in plans:
        if plan.parent_run_id is None:
            continue
        try:
            best = plan.study.best_trial
        except ValueError:
            best = None
        tracker.summarize_parent(
            plan.parent_run_id, best.value if best else None, best.params if best else {}
        )
        tracker.end_parent(plan.parent_run_id)

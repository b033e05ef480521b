"""The Ray side of a run: starting or joining Ray, and driving one Tune run with a searcher.

Sweeps and confirmations are both a searcher (which hands out trial configs and records how
each trial ended) driven through one Tune run by `drive`: Ctrl-C and SIGTERM stop it cleanly,
the time budget ends it, and whatever way it ends, the trials still running are marked
interrupted and the MLflow writes are flushed before it returns.
"""

from __future__ import annotations

import _thread
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from ray.tune import Stopper
from sqlalchemy.engine import make_url

from sweeper.run.tune.checkpoints import CheckpointPruner
from sweeper.run.tune.driver_state import driver_only_state
from sweeper.run.tune.patches import patched_tune
from sweeper.run.tune.progress import ProgressCallback, ProgressDisplay
from sweeper.run.tune.workers import TrialResources, local_ray_options
from sweeper.spec.preflight import declared_gpus, gpu_problems
from sweeper.spec.sweep import SweepSpec
from sweeper.store.credentials import redact
from sweeper.store.database import StoreError
from sweeper.store.states import SweepStatus
from trainables.catalog import plugin_modules

log = logging.getLogger(__name__)

# A stop reason that begins so (a signal, a lost database) ends the sweep interrupted, for `resume`
INTERRUPTED = str(SweepStatus.INTERRUPTED)
REDELIVERY_DELAY_S = 0.05  # long enough for the finalizer that swallowed a Ctrl-C to return
# The environment the local Ray this process started gave its workers (empty when it joined a
# cluster, whose nodes have their own): Tune need not copy these variables into trial actors.
_local_workers_environment: dict[str, str] = {}


@dataclass(frozen=True)
class RunEnd:
    """How a sweep's (or its confirmation's) run ended, and why where it did not finish."""

    sweep: str
    status: SweepStatus
    message: str | None


class MissingGPUs(Exception):
    """Trials ask for GPUs that the Ray they would run on does not have and cannot get."""


def quiet_environment(verbose: bool) -> None:
    """Tune's and MLflow's settings for a driver that shows its own progress."""
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"  # our handler marks trials, then stops Tune
    os.environ["TUNE_DISABLE_STRICT_METRIC_CHECKING"] = "1"  # a failed trial reports its reason only
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    os.environ.setdefault("TUNE_GLOBAL_CHECKPOINT_S", "3600")  # sweeper resumes from the studies
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    # Trials keep the launch directory as theirs (Tune would move them into their trial folder), so
    # a relative data_dir names the files preflight checked; trials write only to temporary folders.
    os.environ.setdefault("RAY_CHDIR_TO_TRIAL_DIR", "0")
    if verbose:
        return
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for name in ("ray", "mlflow", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # Ray's notice that it chose token authentication, its default: nothing for the user to do
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    # the studies hold the results; Tune's own result files are not written, so don't warn of them
    logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)


def start_ray(address: str | None, verbose: bool, cpus: int | None = None) -> None:
    """Join the Ray at `address`, or start a local one with `cpus` logical CPUs (None: all)."""
    import ray

    if ray.is_initialized():
        return
    quiet_environment(verbose)
    level = logging.INFO if verbose else logging.WARNING
    kwargs: dict[str, Any] = {"log_to_driver": verbose, "logging_level": level, "include_dashboard": False}
    if address is None:  # "local": a new Ray, even where a `ray start` cluster or a dying one is found
        options = local_ray_options()  # sets the variables its workers inherit
        _local_workers_environment.update(os.environ)
        ray.init(address="local", **kwargs, num_cpus=cpus, num_gpus=declared_gpus(), **options)
    else:
        ray.init(address=address, **kwargs)


def stop_ray() -> None:
    """Shut Ray down before the command exits, deaf to Ctrl-C meanwhile: a second Ctrl-C meant to
    hurry the exit would otherwise break Ray's own shutdown at exit, with a traceback."""
    import ray

    if not ray.is_initialized():
        return
    _local_workers_environment.clear()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ray.shutdown()
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def lost_interrupts_delivered() -> Iterator[None]:
    """A Ctrl-C whose KeyboardInterrupt lands in a finalizer or a garbage-collection callback is
    swallowed by Python, which prints "Exception ignored ... Traceback" and carries on, so the
    abort it asked for never happens. Meanwhile, send that Ctrl-C again instead of printing it, from
    a timer thread a moment later: sent from the hook itself, it would be handled inside the hook."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            threading.Timer(REDELIVERY_DELAY_S, _thread.interrupt_main, (signal.SIGINT,)).start()
        else:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def connect_ray(
    address: str | None, storage_url: str, verbose: bool = False, cpus: int | None = None
) -> None:
    """Start or join Ray, refusing SQLite when trials could run on several machines.

    SQLite locks break across hosts and on network filesystems; a multi-node sweep needs a
    database server. Checked before a sweep is registered, so a refused launch registers nothing.
    `cpus` sizes a local Ray (`sweeper.run.workers.local_cpus`).
    """
    import ray

    start_ray(address, verbose, cpus)
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    if len(nodes) > 1 and make_url(storage_url).get_backend_name() == "sqlite":
        raise StoreError(
            f"the Ray cluster has {len(nodes)} nodes, and SQLite ({redact(storage_url)}) is for one machine; "
            "use a PostgreSQL URL (--storage or SWEEPER_STORAGE)"
        )


def refuse_missing_gpus(specs: list[SweepSpec], override: str) -> None:
    """A local Ray without GPUs would leave GPU trials pending forever: refuse before registering.

    Only a local Ray is judged; a cluster may have an autoscaler that adds GPU nodes on demand.
    """
    import ray

    problems = gpu_problems(specs, ray.cluster_resources().get("GPU", 0), override)
    if problems:
        raise MissingGPUs(problems[0])


def results_dir(results: str | None, home: Path) -> str:
    """Where Tune keeps trial results: the given location (shared by all nodes) or a local folder."""
    return results or str((home / "ray_results").resolve())


@contextmanager
def _stop_on_signals(searcher: Any) -> Iterator[None]:
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

    def __init__(self, searcher: Any, deadline: float | None) -> None:
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


def trial_trainable(spec: SweepSpec) -> Any:
    """The trial function with what each trial reserves, as Tune creates its actors from it.

    The driver's plugins are handed over explicitly rather than through a runtime environment,
    which would keep trials off the warm workers; and nothing in it refers to the spec, which
    a new trial process would otherwise import to create the actor (`sweeper.run.tune.workers`).
    """
    from ray import tune

    from sweeper.run.tune.trial import run_trial

    resources = TrialResources({model: spec.resources.for_model(model) for model in spec.models})
    return tune.with_resources(tune.with_parameters(run_trial, plugins=plugin_modules()), resources)


def drive(
    searcher: Any,
    spec: SweepSpec,
    *,
    scheduler: Any,
    name: str,
    runs_dir: str,
    verbose: bool,
    deadline: float | None,
    display: ProgressDisplay,
) -> tuple[SweepStatus, str | None]:
    """Run `searcher` (which hands out configs and records outcomes) through one Tune run to its
    end; return the status and why, where it did not simply finish.

    Ctrl-C or SIGTERM sets `searcher.stop_reason` and the run stops cleanly; a second one aborts
    through KeyboardInterrupt, caught here. However the run ends (its budgets met, a stop, a crash
    of the driver's own code), the trials still running are marked interrupted and the queued
    MLflow writes are made before this returns, so nothing finished is lost and `resume` knows
    what to run again.
    """
    from ray import tune
    from ray.tune import FailureConfig

    quiet_environment(verbose)
    status, message = SweepStatus.FINISHED, None
    try:
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
                callbacks=[ProgressCallback(display), CheckpointPruner(searcher.keep_final_weights)],
                # each trial's stdout and stderr, kept in its folder under `runs_dir` (the shared
                # results volume on a cluster), where they outlive the Ray cluster
                log_to_file=True,
                sync_config=tune.SyncConfig(sync_artifacts=True),
                failure_config=FailureConfig(max_failures=spec.budget.retries),
            ),
        )
        with _stop_on_signals(searcher), display, patched_tune(_local_workers_environment):
            tuner.fit()
    except KeyboardInterrupt:
        searcher.stop_reason = searcher.stop_reason or f"{INTERRUPTED} by SIGINT"
    except Exception as exc:
        status, message = SweepStatus.FAILED, f"{type(exc).__name__}: {exc}"
        log.exception("%s failed", name)
    finally:
        searcher.abandon_running(searcher.stop_reason or message or f"{name} stopped")
        if searcher.stop_reason and searcher.stop_reason.startswith(INTERRUPTED):
            status, message = SweepStatus.INTERRUPTED, searcher.stop_reason
        elif searcher.stop_reason:
            message = searcher.stop_reason
        searcher.flush_tracking()
    return status, message

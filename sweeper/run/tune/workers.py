"""Trial processes that are warm before the first trial: started with Ray, imports already done.

A fresh Python worker spends seconds importing Ray Tune, torch and `torch._dynamo` (which the
first optimizer pulls in) before a trial's first line; Tune reuses it for later trials, so this
is paid once per worker slot, but a sweep pays it on its critical path. Ray starts idle workers
when the driver connects and can import modules in them while they wait
(`preload_python_modules`), but it hands an actor only a worker started for the same runtime
environment, and Tune gives every trainable one (`env_vars` of `PL_DISABLE_FORK`, for PyTorch
Lightning). Sweeper therefore puts that variable in the environment the local Ray inherits and
creates its trial actors without a runtime environment of their own, so they land on the warm
idle workers. (`benchmarks/overheads/worker_start.py` and `overhead.py` measure it.)

Ray starts one idle worker per logical CPU, so a local Ray gets as many CPUs as the sweep's
concurrent trials reserve (`local_cpus`): the workers it starts are the ones the trials use, and
the machine's other cores stay with the driver while those import. Those workers must still be
there when the trials ask for them (`IDLE_WORKER_KEEP_MS`), and Tune must not stop the actor of
a trial that is starting on one (`sweeper.run.tune.patches`). What Tune unpickles in a trial
process to create the trial's actor is kept light (`TrialResources`).

Ray nodes started elsewhere (`ray start`, Kubernetes) read the same settings from the
`RAY_preload_python_modules` and `RAY_idle_worker_killing_time_threshold_ms` environment
variables (`deploy/` sets them).
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sweeper.spec.sweep import SweepSpec

PRELOAD_ENV = "RAY_preload_python_modules"
PRELOAD_MODULES = ("ray.tune", "torch", "torch._dynamo", "trainables.train", "sweeper.run.tune.trial")
# Tune's Trainable.__init__ imports IPython when it is installed (0.1 s in each new trial process)
PRELOAD_IF_INSTALLED = ("IPython.core.interactiveshell",)
TUNE_ACTOR_ENV_VARS = {"PL_DISABLE_FORK": "1"}
# Ray stops idle workers beyond the node's *available* CPUs once idle for a second. Tune's
# placement groups take those CPUs a moment before its actors ask for workers, so the preloaded
# workers were stopped just before use and cold ones started instead: keep them 10 minutes.
IDLE_KILL_CONFIG = "idle_worker_killing_time_threshold_ms"
IDLE_KILL_ENV = f"RAY_{IDLE_KILL_CONFIG}"
IDLE_WORKER_KEEP_MS = 600_000
# Ray starts its workers at niceness 15; a local sweep's workers run at the driver's (0)
NICENESS_CONFIG = "worker_niceness"
NICENESS_ENV = f"RAY_{NICENESS_CONFIG}"


def preload_modules() -> tuple[str, ...]:
    """What idle workers import before their first trial: `PRELOAD_MODULES`, plus what Tune
    imports in a trial's actor from the packages this environment happens to have."""
    installed = tuple(
        name for name in PRELOAD_IF_INSTALLED if importlib.util.find_spec(name.split(".")[0]) is not None
    )
    return PRELOAD_MODULES + installed


def node_environment() -> dict[str, str]:
    """What a Ray node started outside sweeper (`ray start`, Kubernetes) needs in its environment
    for the same warm workers as a local Ray: the preload list, the idle workers' keep, and
    Tune's actor variables (`deploy/` sets these)."""
    return {
        PRELOAD_ENV: ",".join(PRELOAD_MODULES),
        IDLE_KILL_ENV: str(IDLE_WORKER_KEEP_MS),
        **TUNE_ACTOR_ENV_VARS,
    }


def local_ray_options() -> dict[str, object]:
    """`ray.init` options for a local Ray whose idle workers import what a trial needs, and are
    still there when the trials ask for them.

    Its workers run at the driver's priority: Ray starts them at niceness 15, and beside other
    CPU-bound processes such a worker gets a few percent of a core (a trial that takes seconds
    alone then takes minutes). Also exports Tune's actor variables, which the local Ray's workers
    inherit from this process. Settings the user made in the environment win.
    """
    for name, value in TUNE_ACTOR_ENV_VARS.items():
        os.environ.setdefault(name, value)
    config: dict[str, object] = {}
    if PRELOAD_ENV not in os.environ:
        config["preload_python_modules"] = list(preload_modules())
    if IDLE_KILL_ENV not in os.environ:
        config[IDLE_KILL_CONFIG] = IDLE_WORKER_KEEP_MS
    if NICENESS_ENV not in os.environ:
        config[NICENESS_CONFIG] = 0
    return {"_system_config": config} if config else {}


def local_cpus(specs: Iterable[SweepSpec]) -> int | None:
    """Logical CPUs for a local Ray that runs these sweeps: what their concurrent trials reserve,
    and at least one per concurrent trial, so that each finds an idle, preloaded worker.

    None (the machine's count, Ray's default) where a sweep sets no `budget.max_concurrent`, or
    asks for more than the machine has: then, as before, Ray's CPUs are what limit the trials.
    """
    machine = os.cpu_count() or 1
    wanted = 0
    for spec in specs:
        concurrent = spec.budget.max_concurrent
        if concurrent is None:
            return None
        per_trial = max(spec.resources.for_model(model)["cpu"] for model in spec.models)
        wanted = max(wanted, concurrent, math.ceil(round(concurrent * per_trial, 9)))
    return wanted if 0 < wanted <= machine else None


@dataclass(frozen=True)
class TrialResources:
    """What a trial reserves, by model: Tune's `with_resources` callable.

    Tune pickles it into the trial actor's class; a closure over the sweep's spec would make every
    new trial process import the spec's module (pydantic models, SQLAlchemy: 0.3 s) to create it.
    """

    by_model: dict[str, dict[str, float]]

    def __call__(self, config: dict[str, Any]) -> dict[str, float]:
        return self.by_model[config["model"]]

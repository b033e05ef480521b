"""Trial processes that are warm before the first trial: started with Ray, imports already done.

A fresh Python worker spends seconds importing Ray Tune, torch and `torch._dynamo` (which the
first optimizer pulls in) before a trial's first line; Tune reuses it for later trials, so this
is paid once per worker slot, but a sweep pays it on its critical path. Ray starts idle workers
when the driver connects and can import modules in them while they wait
(`preload_python_modules`), but it hands an actor only a worker started for the same runtime
environment, and Tune gives every trainable one (`env_vars` of `PL_DISABLE_FORK`, for PyTorch
Lightning). Sweeper therefore puts that variable in the environment the local Ray inherits and
creates its trial actors without a runtime environment of their own, so they land on the warm
idle workers. (`benchmarks/worker_start.py` and `overhead.py` measure it.)

Ray nodes started elsewhere (`ray start`, Kubernetes) read the same setting from the
`RAY_preload_python_modules` environment variable (`deploy/` sets it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

PRELOAD_ENV = "RAY_preload_python_modules"
PRELOAD_MODULES = ("ray.tune", "torch", "torch._dynamo", "trainables.train", "sweeper.trial")
TUNE_ACTOR_ENV_VARS = {"PL_DISABLE_FORK": "1"}


def local_ray_options() -> dict[str, object]:
    """`ray.init` options for a local Ray whose idle workers import what a trial needs.

    Also exports Tune's actor variables, which the local Ray's workers inherit from this process.
    A preload list the user set in the environment wins.
    """
    for name, value in TUNE_ACTOR_ENV_VARS.items():
        os.environ.setdefault(name, value)
    if PRELOAD_ENV in os.environ:
        return {}
    return {"_system_config": {"preload_python_modules": list(PRELOAD_MODULES)}}


@contextmanager
def trial_actors_without_runtime_env() -> Iterator[None]:
    """Tune's trial actors get no runtime environment of their own while this is open.

    Their variables are already in the workers' environment (`local_ray_options`, or the Ray
    node's own environment on a cluster), and an actor without a runtime environment of its own
    can start in an idle, preloaded worker. Variables Tune propagates from the driver's
    environment (cloud credentials, Ray Train settings) still give the actors one.
    """
    from ray.tune.execution import class_cache

    defaults = getattr(class_cache, "DEFAULT_ENV_VARS", None)
    if not isinstance(defaults, dict):  # another Ray version: its actors start as they always did
        yield
        return
    saved = dict(defaults)
    defaults.clear()
    try:
        yield
    finally:
        defaults.update(saved)

"""The two places sweeper changes Ray Tune's private behaviour, checked against the Ray version
they were written for.

Both reach into Tune internals that have no public API, so each says loudly when it cannot apply
(a Ray upgrade moved what it patches) and Tune then behaves as it always did: correct, only
slower to start trials. `CHECKED_RAY` is the version they were checked on; a test fails when
the installed Ray differs, so an upgrade re-checks them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any

CHECKED_RAY = "2.60.0"
log = logging.getLogger(__name__)


def _cannot_apply(patch: str, why: str) -> None:
    import ray

    log.warning(
        "sweeper's Tune patch %r does not apply to Ray %s (checked on %s): %s; trials still run, "
        "but may start in cold worker processes",
        patch,
        ray.__version__,
        CHECKED_RAY,
        why,
    )


@contextmanager
def keep_starting_trial_actors() -> Iterator[bool]:
    """While open, Tune does not stop a trial's actor that is starting on a worker in order to
    give the trial a finished trial's actor instead; that actor goes to the next trial.

    Tune's actor reuse does stop it, which stops its worker process too: with trials shorter
    than a worker's start, the second slot's preloaded worker was stopped the moment it was
    ready and a cold one started in its place, again and again, so a sweep of short trials at
    concurrency 2 ran in one process while the replacements' imports took CPU from it. An actor
    still waiting for resources is handed over as before (the finished trial's actor may hold
    them). Yields whether the patch applied.
    """
    from ray.tune.execution.tune_controller import TuneController

    original = getattr(TuneController, "_maybe_reuse_cached_actor", None)
    if original is None:
        _cannot_apply("keep_starting_trial_actors", "TuneController._maybe_reuse_cached_actor is gone")
        yield False
        return

    def reuse_unless_starting(controller: Any, trial: Any) -> bool:
        actor = getattr(controller, "_trial_to_actor", {}).get(trial)
        manager = getattr(controller, "_actor_manager", None)
        live = getattr(manager, "_live_actors_to_ray_actors_resources", {})
        started = getattr(controller, "_started_actors", None)
        if actor is not None and started is not None and actor in live and actor not in started:
            return False
        return original(controller, trial)

    TuneController._maybe_reuse_cached_actor = reuse_unless_starting
    try:
        yield True
    finally:
        TuneController._maybe_reuse_cached_actor = original


@contextmanager
def trial_actors_without_runtime_env(inherited: Mapping[str, str] | None = None) -> Iterator[bool]:
    """Tune's trial actors get no runtime environment of their own while this is open.

    Their variables are already in the workers' environment (`sweeper.run.tune.workers`, or the Ray
    node's own environment on a cluster), and an actor without a runtime environment of its own
    can start in an idle, preloaded worker. Tune also copies some of the driver's variables into
    the actors' environment (`RAY_CHDIR_TO_TRIAL_DIR`, which sweeper sets, cloud credentials, Ray
    Train settings): those whose value is the one in `inherited`, the environment the workers
    were started with (a local Ray's, taken from this process), are left out, since the workers
    have them; any other still gives the actors a runtime environment. Yields whether the patch
    applied.
    """
    from ray.tune.execution import class_cache

    defaults = getattr(class_cache, "DEFAULT_ENV_VARS", None)
    propagated = getattr(class_cache, "ENV_VARS_TO_PROPAGATE", None)
    if not isinstance(defaults, dict) or not isinstance(propagated, set):
        _cannot_apply(
            "trial_actors_without_runtime_env",
            "class_cache's DEFAULT_ENV_VARS or ENV_VARS_TO_PROPAGATE is gone",
        )
        yield False
        return
    inherited = inherited or {}
    saved_defaults, saved_propagated = dict(defaults), set(propagated)
    defaults.clear()
    propagated.difference_update(
        name for name in saved_propagated if name in inherited and os.environ.get(name) == inherited[name]
    )
    try:
        yield True
    finally:
        defaults.update(saved_defaults)
        propagated.update(saved_propagated)


@contextmanager
def patched_tune(inherited: Mapping[str, str] | None = None) -> Iterator[None]:
    """Both patches, for the length of a Tune run; `inherited`: the environment the Ray's workers
    were started with, where it is known (a local Ray's)."""
    import ray

    if ray.__version__ != CHECKED_RAY:
        log.warning(
            "Ray %s is installed; sweeper's Tune patches were checked on Ray %s", ray.__version__, CHECKED_RAY
        )
    with ExitStack() as stack:
        stack.enter_context(trial_actors_without_runtime_env(inherited))
        stack.enter_context(keep_starting_trial_actors())
        yield

"""sweeper's changes to Ray Tune's private behaviour: checked against the Ray they were written
for, and loud when they cannot apply."""

from __future__ import annotations

import logging

import pytest
import ray

from sweeper.run.tune.patches import (
    CHECKED_RAY,
    keep_starting_trial_actors,
    patched_tune,
    trial_actors_without_runtime_env,
)


def test_the_installed_ray_is_the_one_the_patches_were_checked_on() -> None:
    """Fails on a Ray upgrade: read both patches against the new Tune, then raise CHECKED_RAY."""
    assert ray.__version__ == CHECKED_RAY


def test_both_patches_apply_to_this_ray() -> None:
    with keep_starting_trial_actors() as kept, trial_actors_without_runtime_env() as bare:
        assert kept and bare


def test_a_patch_that_cannot_apply_says_so_and_leaves_tune_alone(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from ray.tune.execution import class_cache
    from ray.tune.execution.tune_controller import TuneController

    monkeypatch.delattr(TuneController, "_maybe_reuse_cached_actor")
    monkeypatch.setattr(class_cache, "DEFAULT_ENV_VARS", None)
    with caplog.at_level(logging.WARNING, logger="sweeper.run.tune.patches"), patched_tune():
        assert not hasattr(TuneController, "_maybe_reuse_cached_actor")
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "'keep_starting_trial_actors' does not apply" in warned
    assert "'trial_actors_without_runtime_env' does not apply" in warned


def trial_actor_runtime_env(inherited: dict[str, str] | None) -> dict:
    """The runtime environment Tune gives a new trainable's actors under the patch."""
    from ray.tune.execution import class_cache

    class Trainable:
        pass

    with trial_actors_without_runtime_env(inherited):
        return dict(class_cache._ActorClassCache().get(Trainable)._default_options["runtime_env"])


def test_variables_a_local_rays_workers_inherited_are_not_copied_into_trial_actors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A runtime environment of their own would start trial actors in new workers, not the
    preloaded ones; a local Ray's workers already have the driver's variables."""
    import os

    monkeypatch.setenv("RAY_CHDIR_TO_TRIAL_DIR", "0")
    assert trial_actor_runtime_env(dict(os.environ)) == {}


def test_variables_the_workers_do_not_have_still_reach_the_trial_actors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ray.tune.execution import class_cache

    monkeypatch.setenv("RAY_CHDIR_TO_TRIAL_DIR", "0")
    defaults, propagated = dict(class_cache.DEFAULT_ENV_VARS), set(class_cache.ENV_VARS_TO_PROPAGATE)
    assert trial_actor_runtime_env(None) == {"env_vars": {"RAY_CHDIR_TO_TRIAL_DIR": "0"}}  # a cluster's
    changed = {"RAY_CHDIR_TO_TRIAL_DIR": "1"}  # the workers were started with another value
    assert trial_actor_runtime_env(changed) == {"env_vars": {"RAY_CHDIR_TO_TRIAL_DIR": "0"}}
    assert defaults == class_cache.DEFAULT_ENV_VARS and propagated == class_cache.ENV_VARS_TO_PROPAGATE

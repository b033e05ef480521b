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

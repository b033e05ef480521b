"""How trial processes are made ready: the local Ray's size, the preload list, what Tune unpickles
in a new trial process, and the rule that keeps a starting trial actor (`sweeper.run.tune.workers`)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from sweeper.run.tune import workers
from sweeper.run.tune.patches import keep_starting_trial_actors
from sweeper.run.tune.workers import (
    NICENESS_CONFIG,
    NICENESS_ENV,
    PRELOAD_MODULES,
    TrialResources,
    local_cpus,
    local_ray_options,
    preload_modules,
)
from sweeper.spec.loading import parse_spec
from sweeper.spec.sweep import SweepSpec
from tests.helpers import tiny_spec


def spec(**overrides: Any) -> SweepSpec:
    return parse_spec(yaml.safe_dump(tiny_spec(**overrides)), "t.yaml")


@pytest.fixture
def eight_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 8)


@pytest.mark.usefixtures("eight_cores")
def test_a_local_ray_has_a_cpu_per_concurrent_trial_and_what_they_reserve() -> None:
    assert local_cpus([spec(budget={"trials": 4, "max_concurrent": 2})]) == 2
    assert local_cpus([spec(budget={"trials": 4, "max_concurrent": 2}, resources={"cpus": 3})]) == 6
    # fractional CPUs: still one worker per concurrent trial
    assert local_cpus([spec(budget={"trials": 4, "max_concurrent": 4}, resources={"cpus": 0.25})]) == 4
    per_model = {"cpus": 1, "per_model": {"lstm": {"cpus": 2}}}
    assert local_cpus([spec(budget={"trials": 4, "max_concurrent": 3}, resources=per_model)]) == 6
    # several sweeps in one launch share the Ray: the largest decides
    assert (
        local_cpus([spec(budget={"trials": 4, "max_concurrent": 1}), spec(budget={"max_concurrent": 3})]) == 3
    )


@pytest.mark.usefixtures("eight_cores")
def test_a_local_ray_has_every_cpu_without_a_limit_or_beyond_the_machine() -> None:
    assert local_cpus([spec(budget={"trials": 4})]) is None
    assert local_cpus([spec(budget={"max_concurrent": 2}), spec(budget={"trials": 4})]) is None
    assert local_cpus([spec(budget={"trials": 4, "max_concurrent": 9})]) is None
    assert local_cpus([spec(budget={"trials": 4, "max_concurrent": 3}, resources={"cpus": 3})]) is None


def test_start_ray_sizes_only_a_local_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    from sweeper.run.tune.runtime import start_ray

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: calls.append(kwargs))
    start_ray(None, verbose=False, cpus=3)
    start_ray("ray://head:10001", verbose=False, cpus=3)
    assert calls[0]["num_cpus"] == 3 and calls[0]["address"] == "local"  # never a stray cluster
    assert "num_cpus" not in calls[1]


def test_preload_adds_what_tune_imports_only_where_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "IPython" else found(name))
    assert preload_modules() == PRELOAD_MODULES
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    assert preload_modules() == (*PRELOAD_MODULES, "IPython.core.interactiveshell")


def test_trial_resources_are_per_model() -> None:
    resources = TrialResources({"gru": {"cpu": 1.0, "gpu": 0.25}, "lstm": {"cpu": 2.0, "gpu": 0.0}})
    assert resources({"model": "lstm", "lr": 0.1}) == {"cpu": 2.0, "gpu": 0.0}
    assert resources({"model": "gru"}) == {"cpu": 1.0, "gpu": 0.25}


def test_a_new_trial_process_creates_its_actor_without_importing_the_spec(tmp_path) -> None:
    """Tune ships the trainable class to each new trial process; loading it there must not pull in
    the spec's module and SQLAlchemy (0.3 s on the sweep's critical path)."""
    from ray import cloudpickle
    from ray.tune.trainable import wrap_function

    from sweeper.run.tune.runtime import trial_trainable

    blob = tmp_path / "trainable.pkl"
    actor_class = wrap_function(trial_trainable(spec(resources={"cpus": 2})))  # as Tune registers it
    blob.write_bytes(cloudpickle.dumps(actor_class))
    probe = (
        "import sys, pickle\n"
        f"trainable = pickle.loads(open({str(blob)!r}, 'rb').read())\n"
        "print(trainable.default_resource_request({'model': 'gru'}))\n"
        "print(sorted(m for m in ('sweeper.spec', 'sqlalchemy') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    resources, imported = result.stdout.strip().splitlines()[-2:]
    assert "'cpu': 2" in resources
    assert imported == "[]"


class FakeActorManager:
    def __init__(self, live: set[str]) -> None:
        self._live_actors_to_ray_actors_resources = {actor: None for actor in live}


def fake_controller(trial_to_actor: dict[str, str], live: set[str], started: set[str]) -> SimpleNamespace:
    return SimpleNamespace(
        _trial_to_actor=trial_to_actor, _actor_manager=FakeActorManager(live), _started_actors=started
    )


def test_a_trial_keeps_its_starting_actor_and_otherwise_tune_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    from ray.tune.execution.tune_controller import TuneController

    asked: list[str] = []

    def tunes_rule(controller: Any, trial: str) -> bool:
        asked.append(trial)
        return True

    monkeypatch.setattr(TuneController, "_maybe_reuse_cached_actor", tunes_rule)
    controller = fake_controller(
        {"starting": "a1", "waiting-for-resources": "a2", "running": "a3"}, live={"a1", "a3"}, started={"a3"}
    )
    with keep_starting_trial_actors():
        reuse = TuneController._maybe_reuse_cached_actor
        assert reuse(controller, "starting") is False
        assert reuse(controller, "waiting-for-resources") is True
        assert reuse(controller, "without-actor") is True
        assert reuse(controller, "running") is True
    assert asked == ["waiting-for-resources", "without-actor", "running"]
    assert TuneController._maybe_reuse_cached_actor is tunes_rule


IDLE_PROBE = """
import time

import psutil
import ray
from ray.util.placement_group import placement_group

from sweeper.run.tune.workers import local_ray_options

ray.init(address="local", num_cpus=2, include_dashboard=False, **local_ray_options())


def idle_workers():
    return {p.pid for p in psutil.Process().children(recursive=True) if "ray::IDLE" in " ".join(p.cmdline())}


deadline = time.time() + 60
while len(idle_workers()) < 2 and time.time() < deadline:
    time.sleep(0.1)
before = idle_workers()
time.sleep(1.5)  # idle for longer than Ray's default threshold
group = placement_group([{"CPU": 1}, {"CPU": 1}])  # as Tune reserves its trials' CPUs
ray.get(group.ready())
time.sleep(2)  # Ray looks for idle workers to stop every 0.2 s
print(len(before), len(before & idle_workers()))
"""


@pytest.mark.slow
@pytest.mark.parametrize(("threshold", "survivors"), [(None, 2), ("1000", 0)])
def test_idle_workers_outlive_the_placement_groups_that_take_their_cpus(
    tmp_path, threshold: str | None, survivors: int
) -> None:
    """The preloaded workers are still there when the trials whose placement groups took every
    CPU ask for them; with Ray's own threshold (1 s), Ray stops them first."""
    env = {**os.environ, workers.PRELOAD_ENV: ""}  # no preload: the workers start quickly
    env.pop(workers.IDLE_KILL_ENV, None)
    if threshold is not None:
        env[workers.IDLE_KILL_ENV] = threshold
    result = subprocess.run(
        [sys.executable, "-c", IDLE_PROBE], capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-2:] == ["2", str(survivors)]


def test_a_local_rays_workers_run_at_the_drivers_priority_unless_the_user_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ray's niceness 15 left a worker a few percent of a core beside other CPU-bound processes."""
    monkeypatch.delenv(NICENESS_ENV, raising=False)
    assert local_ray_options()["_system_config"][NICENESS_CONFIG] == 0
    monkeypatch.setenv(NICENESS_ENV, "5")
    assert NICENESS_CONFIG not in local_ray_options()["_system_config"]


NICENESS_PROBE = """
import os

import ray

from sweeper.run.tune.workers import local_ray_options

ray.init(address="local", num_cpus=1, include_dashboard=False, **local_ray_options())
print("NICENESS", ray.get(ray.remote(lambda: os.nice(0)).remote()))
"""


@pytest.mark.slow
def test_a_local_rays_worker_really_runs_at_niceness_0(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k != NICENESS_ENV}
    done = subprocess.run(
        [sys.executable, "-c", NICENESS_PROBE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "NICENESS 0" in done.stdout, done.stdout + done.stderr

"""Mechanisms behind sweep throughput (the timings themselves are benchmarks, never tests).

- Actor reuse: with one trial at a time, consecutive trials run in one worker process instead of
  paying a process start and the imports of torch and the trainables each.
- Warm workers: that process had imported what a trial needs (`torch._dynamo` included) before
  its first trial, and yet its trials compute with the one thread their one CPU allows. (When Ray
  started it is not compared with when the sweep started: on a slow machine Ray's prestart may
  fork it a moment later; `benchmarks/overheads/worker_start.py` measures the start itself.)
- A late worker: the second of two slots takes trials even when trials are shorter than its
  start (Tune would stop its starting actor and hand the first worker's to its trial).
- Checkpoints: a trial keeps only its newest on disk, and none once it has ended.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import optuna
import pytest
from mlflow.tracking import MlflowClient

from sweeper.store.database import Store
from tests.helpers import BENCH_PLUGINS, cli_env, run_cli, start_cli, write_spec

pytestmark = pytest.mark.slow


def fixed_work_sweep(
    name: str, step_seconds: float, scheduler: dict, trials: int, concurrency: int, **params: int
) -> dict:
    """A GRU sweep over the bench plugin's `fixed_work` task, searching the learning rate."""
    return {
        "name": name,
        "task": {"name": "fixed_work", "settings": {"kind": "sleep", "step_seconds": step_seconds}},
        "models": ["gru"],
        "params": {**params, "batch_size": 1, "hidden_size": 4, "lr": {"float": [1e-3, 1e-1], "log": True}},
        "scheduler": scheduler,
        "budget": {"trials": trials, "max_concurrent": concurrency},
        "seed": 0,
    }


@pytest.fixture(scope="module")
def one_at_a_time(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Counter[Path]]:
    """Two sweeps of one launch (one driver, one local Ray with one CPU: one trial at a time), each
    read by its own test below: `reuse`, three short trials; `prune`, two trials that checkpoint
    every step, watched while the launch runs. Returns the launch's folder and the most checkpoints
    each trial folder held at once."""
    folder = tmp_path_factory.mktemp("one-at-a-time")
    reuse = fixed_work_sweep(
        "reuse",
        0.01,
        {"name": "asha", "grace_period": 4},
        trials=3,
        concurrency=1,
        iterations=4,
        eval_every=2,
    )
    prune = fixed_work_sweep(
        "prune",
        0.03,
        {"name": "none"},
        trials=2,
        concurrency=1,
        iterations=60,
        eval_every=1,
        checkpoint_every=1,
    )
    results = folder / "results"
    env = cli_env(BENCH_PLUGINS)
    configs = [str(write_spec(folder, reuse, "reuse.yaml")), str(write_spec(folder, prune, "prune.yaml"))]
    process = start_cli(
        [
            "launch",
            *configs,
            "--storage",
            f"sqlite:///{folder / 'sweeper.db'}",
            "--tracking-uri",
            f"sqlite:///{folder / 'mlflow.db'}",
            "--results",
            str(results),
            "--no-price",
        ],
        folder,
        env,
    )
    most: Counter[Path] = Counter()  # the most checkpoints seen at once, per trial folder
    deadline = time.monotonic() + 300
    while process.poll() is None and time.monotonic() < deadline:
        seen = Counter(path.parent for path in results.glob("*/*/checkpoint_*"))
        for trial_folder, count in seen.items():
            most[trial_folder] = max(most[trial_folder], count)
        time.sleep(0.05)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 0, output
    return folder, most


@pytest.mark.xdist_group("one_at_a_time")
def test_consecutive_trials_reuse_one_worker_process(one_at_a_time) -> None:
    folder, _ = one_at_a_time
    storage = f"sqlite:///{folder / 'sweeper.db'}"
    tracking = f"sqlite:///{folder / 'mlflow.db'}"
    store = Store(storage)
    try:
        record = store.get_sweep("reuse-1")
        (study,) = record.studies
        trials = optuna.load_study(study_name=study.study_name, storage=store.optuna).get_trials()
    finally:
        store.dispose()
    assert len(trials) == 3
    stored_pids = {trial.user_attrs["final_metrics"]["worker_pid"] for trial in trials}
    assert len(stored_pids) == 1, f"the trials ran in processes {sorted(stored_pids)}"

    # an actor with a runtime environment of its own would run in a worker started for it
    assert {trial.user_attrs["final_metrics"]["runtime_env_vars"] for trial in trials} == {0.0}
    first = min(trials, key=lambda t: t.number).user_attrs
    assert first["final_metrics"]["dynamo_preloaded"] == 1.0, "the worker had not imported torch._dynamo"
    # torch was imported before Ray gave the worker its one CPU; the trial computes with one thread
    assert {trial.user_attrs["final_metrics"]["torch_threads"] for trial in trials} == {1.0}

    client = MlflowClient(tracking)
    (experiment,) = [e for e in client.search_experiments() if e.name == "reuse-1"]
    runs = client.search_runs([experiment.experiment_id], "tags.`sweeper.role` = 'trial'")
    assert len(runs) == 3
    assert {run.data.metrics["worker_pid"] for run in runs} == stored_pids


def test_a_worker_that_starts_late_still_takes_trials(tmp_path: Path) -> None:
    """At concurrency 2 with trials shorter than the second worker's start, both workers run
    trials: the second one's actor is not stopped in favour of the first worker's."""
    from sweeper.run.tune.workers import PRELOAD_ENV, PRELOAD_MODULES

    spec = fixed_work_sweep(
        "late", 0.01, {"name": "none"}, trials=40, concurrency=2, iterations=10, eval_every=10
    )
    storage = f"sqlite:///{tmp_path / 'sweeper.db'}"
    env = cli_env(
        {
            **BENCH_PLUGINS,
            PRELOAD_ENV: ",".join((*PRELOAD_MODULES, "sweeper_slow_start")),
            "SWEEPER_SLOW_START_DIR": str(tmp_path),
            "SWEEPER_SLOW_START_S": "3",
        }
    )
    config = write_spec(tmp_path, spec)
    tracking = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = run_cli(
        ["launch", str(config), "--storage", storage, "--tracking-uri", tracking, "--no-price"], tmp_path, env
    )
    assert result.returncode == 0, result.stdout + result.stderr

    store = Store(storage)
    try:
        (study,) = store.get_sweep("late-1").studies
        trials = optuna.load_study(study_name=study.study_name, storage=store.optuna).get_trials()
    finally:
        store.dispose()
    assert len(trials) == 40
    per_process = Counter(trial.user_attrs["final_metrics"]["worker_pid"] for trial in trials)
    assert len(per_process) == 2, f"trials per worker process: {dict(per_process)}"


@pytest.mark.xdist_group("one_at_a_time")
def test_a_trial_keeps_only_its_newest_checkpoint_and_none_once_ended(one_at_a_time) -> None:
    folder, most = one_at_a_time
    results = folder / "results"
    pruned = [trial for trial in most if trial.parent.name.startswith("prune-1-")]
    assert len(pruned) == 2, f"saw checkpoints of {len(pruned)} prune trials: {dict(most)}"
    # 60 checkpoints per prune trial (reuse's hold one, their final weights, until they end); a new
    # one is persisted before the one it supersedes is deleted
    assert max(most.values()) <= 2, dict(most)
    assert not list(results.glob("*/*/checkpoint_*")), "an ended trial left its checkpoints"

"""A driver killed with SIGKILL mid-sweep: resume keeps every finished trial exactly once,
marks the ones that were running, repeats no trial number and reaches the budget."""

from __future__ import annotations

import contextlib
import os
import signal
import time

import psutil
import pytest
from mlflow.tracking import MlflowClient
from optuna.trial import TrialState

from sweeper.store.database import Store
from sweeper.store.trial_record import FAIL_REASON_ATTR, INTERRUPTED_ATTR
from tests.helpers import BENCH_PLUGINS, cli_env, run_cli, start_cli, tiny_spec, write_spec
from tests.sweeper.run.test_sweep_end_to_end import studies

pytestmark = pytest.mark.slow


def completed(trials: dict[str, list]) -> dict[tuple[str, int], float]:
    return {(m, t.number): t.value for m, ts in trials.items() for t in ts if t.state == TrialState.COMPLETE}


def test_driver_sigkill_then_resume(tmp_path):
    # Two studies, one trial each at a time: the first two trials train; every later one waits
    # before its first step until `release` exists, so the driver is killed while trials run,
    # however fast the first two were.
    release = tmp_path / "release"
    (tmp_path / "started").mkdir()
    settings = {
        "kind": "sleep",
        "step_seconds": 0.01,
        "hold_after": 2,
        "meet_dir": str(tmp_path / "started"),
        "release_file": str(release),
    }
    spec = tiny_spec(
        name="killed",
        task={"name": "fixed_work", "settings": settings},
        scheduler="none",
        budget={"trials": 4, "max_concurrent": 1},
    )
    spec["params"].update(iterations=4, eval_every=2)
    config = write_spec(tmp_path, spec)
    url = f"sqlite:///{tmp_path / 'sweeps' / 'sweeper.db'}"

    # unpriced: timing the task's steps would start trials of its own in `started`
    process = start_cli(["launch", str(config), "--no-price"], tmp_path, cli_env(BENCH_PLUGINS))
    driver = psutil.Process(process.pid)
    deadline = time.monotonic() + 300
    before: dict[tuple[str, int], float] = {}
    running = 0
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.5)
        try:
            trials = studies(url, "killed-1")
        except Exception:
            continue
        before = completed(trials)
        running = sum(t.state == TrialState.RUNNING for ts in trials.values() for t in ts)
        if len(before) == 2 and running:
            break
    children = driver.children(recursive=True)
    if not (process.poll() is None and running):
        for leftover in [*children, driver]:  # no Ray of this test may outlive it
            with contextlib.suppress(psutil.NoSuchProcess):
                leftover.kill()
        pytest.fail("no moment with finished and running trials to kill at")
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    for child in children:  # the local Ray instance the driver started dies with it, as on a crash
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    assert completed(studies(url, "killed-1")) == before  # the held trials never finished
    release.touch()

    store = Store(url)
    assert store.get_sweep("killed-1").status == "running"  # nobody was left to say otherwise
    store.dispose()
    resumed = run_cli(["resume", "killed-1"], tmp_path, cli_env(BENCH_PLUGINS))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "left running by a stopped driver marked interrupted" in resumed.stdout

    final = studies(url, "killed-1")
    for model, trials in final.items():
        numbers = [t.number for t in trials]
        assert len(numbers) == len(set(numbers))
        for (m, number), value in before.items():
            if m == model:
                (kept,) = [t for t in trials if t.number == number]
                assert kept.state == TrialState.COMPLETE and kept.value == value
        marked = [t for t in trials if INTERRUPTED_ATTR in t.user_attrs]
        assert all(t.state == TrialState.FAIL and t.user_attrs[FAIL_REASON_ATTR] for t in marked)
        counted = [t for t in trials if INTERRUPTED_ATTR not in t.user_attrs]
        assert len(counted) == 4 and all(t.state == TrialState.COMPLETE for t in counted)
    assert sum(INTERRUPTED_ATTR in t.user_attrs for ts in final.values() for t in ts) >= 1
    store = Store(url)
    assert store.get_sweep("killed-1").status == "finished"
    store.dispose()

    # MLflow writes the killed driver still had queued are back-filled: every trial has its run, in its state
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'sweeps' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("killed-1")
    runs = client.search_runs([experiment.experiment_id], "tags.`sweeper.role` = 'trial'", max_results=1000)
    states = {
        (r.data.tags["model"], int(r.data.tags["optuna.trial_number"])): r.data.tags["state"] for r in runs
    }
    assert states == {(m, t.number): t.state.name for m, ts in final.items() for t in ts}

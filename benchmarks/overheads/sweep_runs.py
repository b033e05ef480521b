"""What the sweep benchmarks share: the fixed-work plugin task, a sweep run in-process exactly as
`sweeper launch` runs it (`create_sweep` then `run_sweep`: our searcher, per-study scheduler,
study database and MLflow tracking), and its trials read back from the study database.

The plugin lives with the tests (`tests/plugins/sweeper_bench_plugin.py`) because the actor-reuse
test reads the same `worker_pid` metric the benchmarks read.
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import yaml

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_DIR = ROOT / "tests" / "plugins"
PLUGIN = "sweeper_bench_plugin"


def use_plugin() -> None:
    """Make the fixed-work task importable here and in Ray workers.

    Workers inherit the environment of the Ray instance the driver starts, so this must run
    before Ray does.
    """
    from trainables.catalog import PLUGINS_ENV

    for path in (str(ROOT), str(PLUGIN_DIR)):
        if path not in sys.path:
            sys.path.insert(0, path)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(PLUGIN_DIR), str(ROOT), os.environ.get("PYTHONPATH")])
    )
    plugins = [p for p in os.environ.get(PLUGINS_ENV, "").split(",") if p.strip()]
    if PLUGIN not in plugins:
        plugins.append(PLUGIN)
    os.environ[PLUGINS_ENV] = ",".join(plugins)


def fixed_work_spec(
    name: str,
    models: list[str],
    trials: int,
    concurrency: int,
    settings: dict[str, Any],
    iterations: int | dict[str, Any],
    eval_every: int,
    grace_period: int,
    per_model: dict[str, dict[str, Any]] | None = None,
    gpus: float = 0.0,
) -> dict[str, Any]:
    """A sweep spec over the `fixed_work` task, searching the learning rate only."""
    return {
        "name": name,
        "task": {"name": "fixed_work", "settings": settings},
        "models": models,
        "params": {
            "iterations": iterations,
            "eval_every": eval_every,
            "batch_size": 1,
            "hidden_size": 4,
            "lr": {"float": [1e-3, 1e-1], "log": True},
        },
        "per_model": per_model or {},
        "scheduler": {"name": "asha", "grace_period": grace_period, "reduction_factor": 2},
        "budget": {"trials": trials, "max_concurrent": concurrency},
        "resources": {"cpus": 1, "gpus": gpus},
        "seed": 0,
    }


@dataclass(frozen=True)
class TrialTimes:
    """One finished trial as its last report saw it (epoch seconds, worker process id)."""

    model: str
    number: int
    state: str
    pid: int
    started: float
    reported: float


@dataclass(frozen=True)
class SweepRun:
    """A sweep's wall-clock phases and its trials."""

    started: float
    create_s: float
    run_s: float
    status: str
    trials: list[TrialTimes]

    @property
    def ended(self) -> float:
        return self.started + self.create_s + self.run_s


def fresh_ray(spec: dict[str, Any]) -> float:
    """Start a new local Ray as `sweeper launch` does for `spec`; return the seconds it took.

    Each sweep gets its own, as each launch does: sized to the sweep (`sweeper.run.workers.local_cpus`),
    and with all its idle workers, where a Ray that ran a sweep before holds fewer.
    """
    import ray

    from sweeper.run.tune.runtime import start_ray
    from sweeper.run.tune.workers import local_cpus
    from sweeper.spec.loading import parse_spec

    if ray.is_initialized():
        ray.shutdown()
    parsed = parse_spec(yaml.safe_dump(spec, sort_keys=False), f"benchmark {spec['name']}")
    started = time.perf_counter()
    start_ray(None, verbose=False, cpus=local_cpus([parsed]))
    return time.perf_counter() - started


def run_sweep_in_process(
    spec: dict[str, Any], storage: str, directory: Path, address: str | None
) -> SweepRun:
    """Register and run one sweep as `sweeper launch` does, with MLflow in `directory`."""
    from sweeper.run.launch import Where, create_sweep, run_sweep
    from sweeper.spec.loading import parse_spec
    from sweeper.store.database import Store

    store = Store(storage)
    try:
        parsed = parse_spec(yaml.safe_dump(spec, sort_keys=False), f"benchmark {spec['name']}")
        tracking = f"sqlite:///{directory / 'mlflow.db'}"
        started = time.time()
        record = create_sweep(parsed, store, tracking, None, address, home=directory)
        registered = time.time()
        where = Where(storage, tracking, address, results=str(directory / "ray"), home=directory)
        outcome = run_sweep(store, record, where)
        ran = time.time()
        print()  # the live progress table leaves the cursor at the end of its last line
        trials = read_trials(store, record.name)
    finally:
        store.dispose()
    return SweepRun(started, registered - started, ran - registered, outcome.status, trials)


def read_trials(store: Any, sweep: str) -> list[TrialTimes]:
    """Every trial of a sweep that reported at least once, from its stored final metrics."""
    found = []
    for study in store.get_sweep(sweep).studies:
        loaded = optuna.load_study(study_name=study.study_name, storage=store.optuna)
        for trial in loaded.get_trials(deepcopy=False):
            metrics = trial.user_attrs.get("final_metrics") or {}
            if "worker_pid" not in metrics:
                continue
            found.append(
                TrialTimes(
                    study.model,
                    trial.number,
                    trial.state.name,
                    int(metrics["worker_pid"]),
                    float(metrics["trial_started_at"]),
                    float(metrics["reported_at"]),
                )
            )
    return sorted(found, key=lambda t: t.started)


def handoff_gaps(trials: list[TrialTimes]) -> list[float]:
    """Seconds between a trial's last report and the next trial's start in the same process."""
    by_pid: dict[int, list[TrialTimes]] = {}
    for trial in trials:
        by_pid.setdefault(trial.pid, []).append(trial)
    gaps = []
    for runs in by_pid.values():
        runs.sort(key=lambda t: t.started)
        gaps += [b.started - a.reported for a, b in itertools.pairwise(runs)]
    return gaps

"""Test helpers: tiny sweep specs written to a temporary directory, and the CLI run as a
subprocess, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

PLUGINS_DIR = Path(__file__).parent / "plugins"
POSTGRES_ADMIN_URL = os.environ.get(
    "SWEEPER_TEST_POSTGRES", "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
)


def tiny_spec(name: str = "tiny", models: tuple[str, ...] = ("lstm", "gru"), **overrides: object) -> dict:
    """A denoise sweep small enough to run in seconds on 2 cores."""
    spec = {
        "name": name,
        "task": {"name": "denoise", "settings": {"T": 6, "valid_size": 32}},
        "models": list(models),
        "params": {
            "iterations": 30,
            "eval_every": 10,
            "batch_size": 16,
            "hidden_size": {"int": [4, 16], "log": True},
            "lr": {"float": [1e-3, 3e-2], "log": True},
        },
        "scheduler": {"name": "asha", "grace_period": 10, "reduction_factor": 2},
        # one trial at a time: one preloaded Ray worker instead of one per core
        "budget": {"trials": 4, "max_concurrent": 1},
        "seed": 0,
    }
    spec.update(overrides)
    return spec


class _NoAliasDumper(yaml.SafeDumper):
    """Writes shared objects out in full: sweep specs refuse YAML anchors and aliases."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def dump_spec(spec: dict) -> str:
    return yaml.dump(spec, Dumper=_NoAliasDumper, sort_keys=False)


def write_spec(directory: Path, spec: dict, filename: str = "sweep.yaml") -> Path:
    path = directory / filename
    path.write_text(dump_spec(spec))
    return path


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGINS_DIR), env.get("PYTHONPATH", "")]))
    env["SWEEPER_PLUGINS"] = "sweeper_test_plugin"
    env["COLUMNS"] = "200"
    env.pop("SWEEPER_STORAGE", None)
    env.pop("SWEEPER_TRACKING_URI", None)
    env.update(extra or {})
    return env


def run_cli(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sweeper.cli", *args],
        cwd=cwd,
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_cli(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "sweeper.cli", *args],
        cwd=cwd,
        env=env or cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@dataclass(frozen=True)
class FinishedSweep:
    cwd: Path
    storage: str
    tracking: str
    name: str
    launch: subprocess.CompletedProcess


def run_sweep_cli(cwd: Path, storage: str | None) -> FinishedSweep:
    """Launch the tiny 2-model x 4-trial sweep `e2e` through the CLI and return where it went."""
    storage = storage or f"sqlite:///{cwd / 'sweeps' / 'sweeper.db'}"
    tracking = f"sqlite:///{cwd / 'mlflow.db'}"
    config = write_spec(cwd, tiny_spec(name="e2e"))
    result = run_cli(["launch", str(config), "--storage", storage, "--tracking-uri", tracking], cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return FinishedSweep(cwd, storage, tracking, "e2e-1", result)


def recorded_sweep(folder: Path) -> Path:
    """`folder` holding what the README's main command leaves, without Ray: `denoise-1` registered
    from `configs/denoise.yaml` (smoke), two trials per model recorded as the searcher records
    them, a local MLflow store, and the configs beside it."""
    import optuna
    import torch

    from sweeper.run.launch import create_sweep
    from sweeper.spec.loading import load_spec, parse_spec
    from sweeper.spec.sweep import trial_config
    from sweeper.store.database import Store
    from sweeper.store.trial_record import CONFIG_ATTR, FINAL_METRICS_ATTR, SEED_ATTR
    from trainables.train import TrialConfig, build, network_facts

    root = Path(__file__).parents[1]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "configs").symlink_to(root / "configs")
    spec = load_spec(root / "configs" / "denoise.yaml", "smoke")
    store = Store(f"sqlite:///{(folder / 'sweeps' / 'sweeper.db').resolve()}")
    record = create_sweep(
        spec,
        store,
        f"sqlite:///{(folder / 'sweeps' / 'mlflow.db').resolve()}",
        "smoke",
        None,
        home=folder / "sweeps",
    )
    for study_record in record.studies:
        study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        for number, lr in enumerate((0.002, 0.01)):
            params = {"hidden_size": 16, "lr": lr}
            params = {
                k: v
                for k, v in params.items()
                if k in parse_spec(spec.to_yaml(), "s").space(study_record.model)
            }
            config = trial_config(spec, study_record.model, params, number)
            task, network, _ = build(TrialConfig.from_mapping(config), torch.device("cpu"))
            curve = {20: 1.0 - lr, 40: 0.9 - lr}
            study.add_trial(
                optuna.trial.create_trial(
                    params=params,
                    distributions={
                        "hidden_size": optuna.distributions.IntDistribution(8, 32, log=True),
                        "lr": optuna.distributions.FloatDistribution(1e-4, 3e-2, log=True),
                    },
                    value=min(curve.values()),
                    intermediate_values=curve,
                    user_attrs={
                        SEED_ATTR: number,
                        CONFIG_ATTR: config,
                        FINAL_METRICS_ATTR: {"valid_loss": 0.9 - lr, **network_facts(task, network)},
                    },
                )
            )
    store.dispose()
    return folder

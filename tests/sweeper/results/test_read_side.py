"""The commands that only read results import neither Ray nor torch: they start in a fraction of
the time, and run where neither is installed (a laptop reading a cluster's database)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.distributions import FloatDistribution

from sweeper.run.launch import create_sweep
from sweeper.spec.loading import parse_spec, stored_spec
from sweeper.spec.sweep import trial_config
from sweeper.store.database import Store
from sweeper.store.trial_record import CONFIG_ATTR, FINAL_METRICS_ATTR, SEED_ATTR
from tests.helpers import tiny_spec

pytestmark = pytest.mark.xdist_group("read_side")  # the module's sweep is built once, on one worker

HEAVY = ("torch", "ray", "triton")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A sweep of two studies with complete trials, as the searcher records them (no Ray)."""
    folder = tmp_path_factory.mktemp("read-side")
    spec = parse_spec(yaml.safe_dump(tiny_spec(name="read", models=("gru", "goru"))), "read.yaml")
    url = f"sqlite:///{folder / 'sweeper.db'}"
    store = Store(url)
    record = create_sweep(spec, store, f"sqlite:///{folder / 'mlflow.db'}", None, None, home=folder)
    for study_record in record.studies:
        study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        for number, lr in enumerate((0.001, 0.01)):
            config = trial_config(spec, study_record.model, {"lr": lr}, number)
            study.add_trial(
                optuna.trial.create_trial(
                    params={"lr": lr},
                    distributions={"lr": FloatDistribution(1e-3, 3e-2, log=True)},
                    value=0.5 - lr,
                    intermediate_values={10: 0.9, 30: 0.5 - lr},
                    user_attrs={
                        SEED_ATTR: number,
                        CONFIG_ATTR: config,
                        FINAL_METRICS_ATTR: {"valid_loss": 0.5 - lr, "parameters": 1234.0, "baseline": 0.3},
                    },
                )
            )
    store.dispose()
    return folder, url, record.name


READ_COMMANDS = {
    "--help": ["--help"],
    "status": ["status"],
    "list": ["list"],
    "summarize": ["summarize", "read-1"],
    "summarize json": ["summarize", "read-1", "--format", "json", "--importance"],
    "export": ["export", "read-1", "--out", "exported"],
    "report": ["report", "read-1", "--format", "json"],
    "tasks": ["tasks"],
}


@pytest.mark.slow
def test_read_commands_import_neither_ray_nor_torch(finished: tuple[Path, str, str]) -> None:
    """Every read command in turn in one interpreter (one start instead of one per command):
    modules stay imported, so the first command that loads a heavy one is the one named."""
    folder, url, _ = finished
    probe = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from sweeper.cli import main
        for name, args in {READ_COMMANDS!r}.items():
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = main(args, standalone_mode=False)
            loaded = [m for m in {HEAVY!r} if m in sys.modules]
            print("PROBE", json.dumps({{"command": name, "code": code, "loaded": loaded, "out": out.getvalue()}}))
        """
    )
    env = {**os.environ, "SWEEPER_STORAGE": url, "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-c", probe], cwd=folder, env=env, capture_output=True, text=True)
    results = [
        json.loads(line.removeprefix("PROBE "))
        for line in done.stdout.splitlines()
        if line.startswith("PROBE ")
    ]
    assert [r["command"] for r in results] == list(READ_COMMANDS), done.stdout + done.stderr
    for result in results:
        assert result["code"] in (0, None), (result, done.stderr)
        assert result["loaded"] == [], f"{result['command']} imported {result['loaded']}"
    (report,) = [r for r in results if r["command"] == "report"]
    rows = json.loads(report["out"])["rows"]
    assert {row["model"] for row in rows} == {"gru", "goru"}
    assert all(row["parameters"] == 1234 for row in rows)


STATUS_SKIPS = (
    *HEAVY,
    "mlflow",
    "alembic",
    "sweeper.run",
    "sweeper.cli.sweeps",
    "sweeper.cli.jobs",
    "sweeper.cli.catalog",
)


def test_status_imports_only_what_it_reads_with(finished: tuple[Path, str, str]) -> None:
    """`sweeper status` (its start is mostly imports, issue 89) reads the studies without Optuna's
    writing storage, whose opening imports Alembic and SQLAlchemy's every dialect, and loads no
    module of the commands that run sweeps, nor MLflow: its tables, verdict and JSON alike."""
    folder, url, _ = finished
    probe = textwrap.dedent(
        f"""
        import contextlib, io, sys
        from sweeper.cli import main
        for args in (["status"], ["status", "read-1", "--wide"], ["status", "--json"]):
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(args, standalone_mode=False) in (0, None), args
        print(sorted(m for m in {STATUS_SKIPS!r} if m in sys.modules))
        """
    )
    env = {**os.environ, "SWEEPER_STORAGE": url}
    done = subprocess.run([sys.executable, "-c", probe], cwd=folder, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"status imported {done.stdout.strip()}"


def test_a_stored_spec_is_parsed_once_per_record(finished: tuple[Path, str, str]) -> None:
    _, url, name = finished
    store = Store(url)
    record = store.get_sweep(name)
    assert stored_spec(record) is stored_spec(record)
    assert stored_spec(record).objective is not None  # validation wrote the task's objective in
    store.dispose()

"""Test helpers: tiny sweep specs written to a temporary directory, the CLI run as a subprocess
as a user runs it, the launches that several tests read (`tests/conftest.py` runs each once per
session), and throw-away PostgreSQL databases."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from sweeper.spec.preflight import DECLARED_GPUS_ENV

if TYPE_CHECKING:
    from tests.ray_head import RayHead

PLUGINS_DIR = Path(__file__).parent / "plugins"
POSTGRES_ADMIN_URL = os.environ.get(
    "SWEEPER_TEST_POSTGRES", "postgresql+psycopg2://postgres@127.0.0.1:5432/test"
)
GPU_RESOURCES = {"gpus": 0.5, "per_model": {"gru": {"gpus": 0.125}}}  # trials that ask for GPUs
SECRET = "S3cr3t-xyz"  # a password the secrets tests search every output, row and file for
BENCH_PLUGINS = {"SWEEPER_PLUGINS": "sweeper_test_plugin,sweeper_bench_plugin"}  # its `fixed_work` task
GPU_PLUGINS = {**BENCH_PLUGINS, DECLARED_GPUS_ENV: "1"}  # and a local Ray that declares one GPU


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
        # the tests' sweeps draw their own first trials: the portfolio (tests/sweeper/run/search/
        # test_portfolio.py) would ask every one for the same four configurations
        "sampler": {"portfolio": False},
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
    env.pop("SWEEPER_RAY_ADDRESS", None)  # a launch joins a Ray only where its test says so
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


def run_sweep_cli(
    cwd: Path, storage: str | None, storage_by_environment: bool = False, head: RayHead | None = None
) -> FinishedSweep:
    """Launch the tiny 2-model x 4-trial sweep `e2e` through the CLI and return where it went; the
    storage URL as `--storage`, or in SWEEPER_STORAGE (the documented way for one with a password);
    on a local Ray, or joining `head`."""
    storage = storage or f"sqlite:///{cwd / 'sweeps' / 'sweeper.db'}"
    tracking = f"sqlite:///{cwd / 'mlflow.db'}"
    config = write_spec(cwd, tiny_spec(name="e2e"))
    args = ["launch", str(config), "--tracking-uri", tracking, *(head.args if head else [])]
    env = head.env if head else {}
    if storage_by_environment:
        result = run_cli(args, cwd, cli_env({**env, "SWEEPER_STORAGE": storage}))
    else:
        result = run_cli([*args, "--storage", storage], cwd, cli_env(env))
    assert result.returncode == 0, result.stdout + result.stderr
    return FinishedSweep(cwd, storage, tracking, "e2e-1", result)


def raced_spec() -> dict:
    """Copying at T = 10 under the race: scoRNN at a learning rate that learns in a hundred
    iterations, GRU at one that never leaves the baseline, one trial at a time and none stopped
    early, so once both have run the first rung's two trials the race stops GRU and gives scoRNN
    the two trials GRU did not run."""
    spec = tiny_spec(
        name="raced",
        models=("scornn", "gru"),
        task={"name": "copying", "settings": {"T": 10, "valid_size": 64}},
        scheduler={"name": "none", "grace_period": 100, "reduction_factor": 3},
        budget={"trials": 3, "max_concurrent": 1, "allocate": "race", "race_rung": 2},
        per_model={"scornn": {"lr": 0.01}, "gru": {"lr": 1.0e-6}},
    )
    spec["params"] = {"iterations": 600, "eval_every": 100, "batch_size": 32, "hidden_size": 32}
    return spec


def run_shared_launch(cwd: Path) -> subprocess.CompletedProcess:
    """Four sweeps in one `sweeper launch --no-gpus` in `cwd` (one driver, one local Ray), each read
    by a test of its own: `faults`, a pruning scheduler beside a model that raises; `ptb`, a
    file-based task whose data directory is relative to the launch directory; `gpus`, trials that
    ask for GPUs, which `--no-gpus` trains on the CPU; `raced`, a model the race stops."""
    from tests import corpora

    faults = tiny_spec(
        name="faults",
        models=("gru", "exploding"),
        sampler={"name": "random", "seed": 3},
        budget={"trials": 4, "max_concurrent": 1},
        per_model={"gru": {"lr": {"choice": [1.0e-6, 0.05]}}, "exploding": {"fail_after": 5}},
    )
    corpora.write_ptb(cwd / "data" / "ptb")
    ptb = tiny_spec(
        name="ptb",
        models=("gru",),
        task={"name": "ptb_char", "settings": {"bptt": 8}},
        sampler={"transfer": False},  # its one trial is its own draw, not `faults`' best carried over
    )
    ptb["params"].update(iterations=4, eval_every=2, batch_size=4)
    ptb["scheduler"] = {"name": "none"}
    ptb["budget"] = {"trials": 1, "max_concurrent": 1}
    gpus = tiny_spec(name="gpus", resources=GPU_RESOURCES, budget={"trials": 1, "max_concurrent": 1})
    specs = {"faults.yaml": faults, "ptb.yaml": ptb, "gpus.yaml": gpus, "raced.yaml": raced_spec()}
    configs = [str(write_spec(cwd, spec, filename)) for filename, spec in specs.items()]
    return run_cli(["launch", *configs, "--no-gpus"], cwd)


def gpu_sweep(
    name: str,
    model: str,
    resources: dict,
    trials: int,
    concurrent: int,
    meet: Path | None = None,
    peers: int = 0,
) -> dict:
    """Trials of `model` on the bench plugin's `fixed_work` task, each sleeping 2 s, at most
    `concurrent` at once (one preloaded Ray worker each); with `meet`, each first waits until
    `peers` trials have started (up to a minute), which none can see unless Ray runs that many at
    once."""
    settings: dict = {"kind": "sleep", "step_seconds": 0.5}
    if meet is not None:
        meet.mkdir()
        settings.update(meet=peers, meet_dir=str(meet), meet_timeout_s=60.0)
    return {
        "name": name,
        "task": {"name": "fixed_work", "settings": settings},
        "models": [model],
        "params": {"iterations": 4, "eval_every": 2, "batch_size": 1, "hidden_size": 4, "lr": {"float": [1e-3, 1e-1], "log": True}},
        "scheduler": {"name": "none"},
        "budget": {"trials": trials, "max_concurrent": concurrent},
        "resources": {"cpus": 0.5, **resources},
        "seed": 0,
    }  # fmt: skip


def run_failing_launch(cwd: Path) -> tuple[str, subprocess.CompletedProcess]:
    """Two sweeps whose every trial fails, in one `sweeper launch` in `cwd` on a local Ray that
    declares a GPU (`GPU_PLUGINS`), each read by a test of its own: `doomed`, a model that raises
    at once; `nocuda`, scoRNN trials given the GPU, which this build of torch cannot use. Returns
    the studies' storage URL and the launch."""
    doomed = tiny_spec(name="doomed", models=("exploding",), budget={"trials": 3, "max_concurrent": 1})
    doomed["per_model"] = {"exploding": {"fail_after": 0}}
    nocuda = gpu_sweep("nocuda", "scornn", {"gpus": 0.5}, 2, 1)
    configs = [str(write_spec(cwd, doomed, "doomed.yaml")), str(write_spec(cwd, nocuda, "nocuda.yaml"))]
    storage = f"sqlite:///{cwd / 'sweeper.db'}"
    tracking = f"sqlite:///{cwd / 'mlflow.db'}"
    launch = run_cli(
        ["launch", *configs, "--storage", storage, "--tracking-uri", tracking], cwd, cli_env(GPU_PLUGINS)
    )
    return storage, launch


_HANDED_OUT: set[int] = set()  # every port free_port() returned in this process


def free_port() -> int:
    """A loopback port nothing listens on: closed again with the socket, free for a server to take
    (or left closed, as a server that is down). Never one it returned before in this process: the
    kernel hands a just-closed port out again, and a Ray node given one port for two of its
    services refuses to start."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def outage_environment(tracking_uri: str) -> dict[str, str]:
    """The CLI's environment with an MLflow server that is down (`tracking_uri`, in
    SWEEPER_TRACKING_URI), without MLflow's retries, to keep the launch short."""
    return cli_env(
        {
            "SWEEPER_TRACKING_URI": tracking_uri,
            "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
            "MLFLOW_HTTP_REQUEST_TIMEOUT": "2",
        }
    )


def run_outage_sweep(cwd: Path, head: RayHead) -> FinishedSweep:
    """Launch the tiny 2-model x 2-trial sweep `outage` in `cwd`, joining `head`, while its MLflow
    server is down: a closed loopback port, named with a password (SECRET). Its studies go to the
    default SQLite store under `cwd`."""
    tracking = f"http://sweeper:{SECRET}@127.0.0.1:{free_port()}"
    config = write_spec(cwd, tiny_spec(name="outage", budget={"trials": 2, "max_concurrent": 1}))
    env = {**outage_environment(tracking), **head.env}
    result = run_cli(["launch", str(config), *head.args], cwd, env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return FinishedSweep(cwd, f"sqlite:///{cwd / 'sweeps' / 'sweeper.db'}", tracking, "outage-1", result)


@contextlib.contextmanager
def throwaway_databases(count: int) -> Iterator[list[str]]:
    """`count` fresh PostgreSQL databases (psycopg2 URLs, as the Secrets hold), dropped afterwards;
    skips the test where no PostgreSQL is reachable."""
    import sqlalchemy as sa

    try:
        admin = sa.create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with admin.connect():
            pass
    except Exception as exc:
        pytest.skip(f"no PostgreSQL reachable at {POSTGRES_ADMIN_URL}: {str(exc).splitlines()[0]}")
    names = [f"sweeper_test_{uuid.uuid4().hex[:10]}" for _ in range(count)]
    url = sa.engine.make_url(POSTGRES_ADMIN_URL).set(drivername="postgresql+psycopg2")
    try:
        with admin.connect() as conn:
            for name in names:
                conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield [url.set(database=n).render_as_string(hide_password=False) for n in names]
    finally:
        with admin.connect() as conn:
            for name in names:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextlib.contextmanager
def role_with_password(url: str) -> Iterator[str]:
    """The database at `url`, reached as a role of its own whose URL carries SECRET.

    The server may trust local connections and accept any password: what matters is that the
    password travels in the URL sweeper is given.
    """
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    role = f"sweeper_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    database = sa.engine.make_url(url).database
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE ROLE {role} LOGIN PASSWORD '{SECRET}'"))
        conn.execute(sa.text(f'GRANT ALL ON DATABASE "{database}" TO {role}'))
        conn.execute(sa.text(f"GRANT ALL ON SCHEMA public TO {role}"))
    try:
        yield (
            sa.engine.make_url(url).set(username=role, password=SECRET).render_as_string(hide_password=False)
        )
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP OWNED BY {role}"))
            conn.execute(sa.text(f"DROP ROLE {role}"))
        admin.dispose()


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
    # the two trials recorded below stand for those the searcher runs: none is asked for first
    spec = spec.model_copy(update={"sampler": spec.sampler.model_copy(update={"portfolio": False})})
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


def add_confirmations(store: object, study_id: int, values: dict[int, float], params: dict) -> None:
    """Complete confirmation runs of a study's trial 0, `values` by seed, each with its test value
    0.01 above."""
    import json

    from sweeper.store.database import ConfirmationRecord

    with store.session() as session:  # type: ignore[attr-defined]
        for seed, value in values.items():
            session.add(
                ConfirmationRecord(
                    study_id=study_id,
                    source_trial=0,
                    seed=seed,
                    params_json=json.dumps(params),
                    status="complete",
                    objective=value,
                    metrics_json=json.dumps({"test_loss": value + 0.01}),
                )
            )


def add_queued_trials(study: object, walls: list[float], slots: int, recorded: bool = True) -> None:
    """Complete trials as a sweep with more trials than slots leaves them: all suggested at once,
    each waiting for a free slot, then `walls[i]` seconds in its worker (its report's `wall_time`,
    unless not `recorded`), so its time from the suggestion counts the wait besides."""
    import datetime as dt

    import optuna

    from sweeper.store.trial_record import FINAL_METRICS_ATTR, WALL_TIME_METRIC

    suggested = dt.datetime(2026, 1, 1, 12, 0, 0)
    free = [0.0] * slots  # when each slot is free again, in seconds after the suggestions
    for number, wall in enumerate(walls):
        slot = min(range(slots), key=free.__getitem__)
        free[slot] += wall
        value = 0.5 - 0.01 * number
        trial = optuna.trial.create_trial(
            value=value,
            intermediate_values={30: value},
            user_attrs={
                FINAL_METRICS_ATTR: {"valid_loss": value, **({WALL_TIME_METRIC: wall} if recorded else {})}
            },
        )
        trial.datetime_start = suggested
        trial.datetime_complete = suggested + dt.timedelta(seconds=free[slot])
        study.add_trial(trial)  # type: ignore[attr-defined]


def wait_until_healthy(base: str, process: subprocess.Popen, output: Callable[[], str]) -> None:
    """Poll `base`/health until the server that `process` started answers 200 (90 s at most);
    fail with its `output` if it exits or never answers."""
    import time
    import urllib.request

    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        assert process.poll() is None, output()
        assert time.monotonic() < deadline, f"the server did not come up: {output()}"
        time.sleep(0.5)

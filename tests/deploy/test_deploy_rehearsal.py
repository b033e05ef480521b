"""The deployment rehearsed without Kubernetes: what the RayJob's head pod does, on loopback.

A Ray head that takes no trials (`--num-cpus 0`, as the manifests' rayStartParams say) and one
worker form a two-node cluster with token authentication (KubeRay's `authOptions.mode: token`);
the MLflow server runs with the arguments of the rendered Deployment against a fresh PostgreSQL
database; and `sweeper launch` runs as a subprocess with exactly the environment variables the
RayJob's head container sets, each given its local equivalent. The sweep must leave its studies
in PostgreSQL and its runs in the MLflow server, and SQLite must be refused on two nodes.

Every process started here runs in its own session and is killed by its process group, so other
Ray or MLflow instances on the machine are left alone (no `ray stop`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from tests.deploy.workloads import REPO, env_of, find, render_overlay
from tests.helpers import free_port, throwaway_databases, write_spec
from tests.ray_head import Processes, head_options, http_ok, node_options

# one worker starts the module's services and runs every test against them
pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.xdist_group("deploy_rehearsal")]

CONFIG = REPO / "configs" / "denoise.yaml"
SMOKE_ITERATIONS = 100  # one evaluation, at the smoke profile's grace period: each trial reports once


@dataclass
class Rehearsal:
    """The running services and the environment the manifests' head container would have."""

    workdir: Path
    env: dict[str, str]
    storage_url: str
    tracking_uri: str
    processes: Processes

    def launch(self, *args: str, config: Path = CONFIG, **overrides: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sweeper.cli", "launch", str(config), *args],
            cwd=self.workdir,
            env={**self.env, **overrides},
            capture_output=True,
            text=True,
            timeout=240,
        )


def start_ray(processes: Processes, env: dict[str, str], head_cpus: str, worker_cpus: int) -> str:
    """A head and one worker; returns the head's GCS address once both nodes have joined."""
    port = free_port()
    temp_dir = processes.logdir / "ray"
    head = ["ray", "start", *head_options(port), "--num-cpus", head_cpus]
    head_log = processes.start(
        "ray-head", [*head, "--include-dashboard", "false", *node_options(temp_dir)], env
    )
    # `ray start` prints this once the node is registered with the GCS (cheaper than polling Ray)
    processes.wait_for("the Ray head", lambda: "Ray runtime started" in head_log.read_text())
    address = f"127.0.0.1:{port}"
    worker = ["ray", "start", f"--address={address}", "--num-cpus", str(worker_cpus)]
    worker_log = processes.start("ray-worker", [*worker, *node_options(temp_dir)], env)
    processes.wait_for("the Ray worker", lambda: "Ray runtime started" in worker_log.read_text())
    return address


def under_pod_tmp(
    container: dict[str, Any], pod_tmp: Path, manifests: list[dict[str, Any]]
) -> dict[str, str]:
    """The container's variables that point under the pod's /tmp volume, pointed under `pod_tmp`."""
    return {
        name: str(pod_tmp / PurePosixPath(item["value"]).relative_to("/tmp"))
        for name, item in env_of(container, manifests).items()
        if str(item.get("value", "")).startswith("/tmp")
    }


def start_mlflow(
    processes: Processes,
    env: dict[str, str],
    container: dict[str, Any],
    database: str,
    pod_tmp: Path,
    manifests: list[dict[str, Any]],
) -> str:
    """The Deployment's `mlflow server` command and arguments, bound to a free loopback port; returns
    its URI at once (its schema migrations run while Ray starts: wait for `/health`)."""
    assert container["command"][0] == "mlflow"
    caches = under_pod_tmp(container, pod_tmp, manifests)
    env_items = env_of(container, manifests)
    assert set(env_items) == {
        "MLFLOW_BACKEND_STORE_URI",
        "MLFLOW_ARTIFACTS_DESTINATION",
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION",
        *caches,
    }
    port = free_port()
    args = [a for a in container["args"] if not a.startswith(("--host=", "--port=", "--workers="))]
    argv = [sys.executable, "-m", "mlflow", *container["command"][1:], *args]
    argv += ["--host=127.0.0.1", f"--port={port}", "--workers=1"]
    local = {
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": env_items["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"]["value"],
        "MLFLOW_BACKEND_STORE_URI": database,
        "MLFLOW_ARTIFACTS_DESTINATION": str(processes.logdir / "artifacts"),
        **caches,
    }
    processes.start("mlflow", argv, {**env, **local})
    return f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def rehearsal() -> Iterator[Rehearsal]:
    manifests = render_overlay("dev")
    cluster = find(manifests, "RayJob", "sweeper-denoise")["spec"]["rayClusterSpec"]
    head_env = env_of(cluster["headGroupSpec"]["template"]["spec"]["containers"][0], manifests)
    mlflow = find(manifests, "Deployment", "mlflow")["spec"]["template"]["spec"]["containers"][0]

    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "SWEEPER_", "MLFLOW_"))}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        RAY_USAGE_STATS_ENABLED="0",
        RAY_AUTH_MODE="token",  # what KubeRay injects for authOptions.mode: token
        RAY_AUTH_TOKEN=secrets.token_hex(32),
    )
    # short: Ray's unix socket paths under the temp dir must stay below ~107 characters
    workdir = Path(tempfile.mkdtemp(prefix="swr", dir="/tmp"))
    # the pods' /tmp, an empty volume: their home, caches and temp files are under it (not made yet)
    pod_tmp = workdir / "tmp"
    pod_tmp.mkdir()
    under_tmp = under_pod_tmp(
        cluster["headGroupSpec"]["template"]["spec"]["containers"][0], pod_tmp, manifests
    )
    processes = Processes(workdir)
    with throwaway_databases(2) as (studies_db, mlflow_db):
        try:
            tracking_uri = start_mlflow(processes, env, mlflow, mlflow_db, pod_tmp, manifests)
            address = start_ray(processes, env, cluster["headGroupSpec"]["rayStartParams"]["num-cpus"], 2)
            processes.wait_for("the MLflow server", lambda: http_ok(f"{tracking_uri}/health"))
            local = {
                "SWEEPER_STORAGE": studies_db,
                "SWEEPER_TRACKING_URI": tracking_uri,
                "SWEEPER_RAY_ADDRESS": address,  # `auto` inside the head pod
                "SWEEPER_RESULTS": str(workdir / "results"),  # the shared volume's mount
                **under_tmp,
                "SWEEPER_IMAGE": head_env["SWEEPER_IMAGE"]["value"],  # what the sweep records it ran on
            }
            ray_settings = {k: v["value"] for k, v in head_env.items() if k.startswith("RAY_")}  # as they are
            assert set(head_env) == {*local, *ray_settings}, (
                "the manifests' head environment changed: rehearse it"
            )
            local.update(ray_settings)
            (workdir / "results").mkdir()
            (workdir / "cwd").mkdir()
            yield Rehearsal(workdir / "cwd", {**env, **local}, studies_db, tracking_uri, processes)
        finally:
            processes.stop_all()
            shutil.rmtree(workdir, ignore_errors=True)


def test_sqlite_is_refused_on_the_two_node_cluster(rehearsal: Rehearsal) -> None:
    import sqlalchemy as sa

    database = rehearsal.workdir.parent / "studies.db"  # outside the driver's working directory
    result = rehearsal.launch("--profile", "smoke", SWEEPER_STORAGE=f"sqlite:///{database}")
    assert result.returncode == 2, result.stdout + result.stderr + rehearsal.processes.tails()
    assert "2 nodes" in result.stderr and "SQLite" in result.stderr and "PostgreSQL" in result.stderr
    assert "Traceback" not in result.stderr
    if database.exists():  # the refusal comes before any sweep is registered
        engine = sa.create_engine(f"sqlite:///{database}")
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM sweeper_sweeps")).scalar() == 0
        engine.dispose()


def test_a_smoke_sweep_with_the_manifests_environment(rehearsal: Rehearsal) -> None:
    import optuna
    from mlflow.tracking import MlflowClient

    from sweeper.spec.loading import load_spec

    # the shipped spec with fewer iterations per smoke trial, one at a time (one Ray worker): what
    # is rehearsed is where a sweep's records go on the manifests' services, not what its trials
    # learn or how fast (the README's main command is tested for that)
    raw = yaml.safe_load(CONFIG.read_text())
    raw["profiles"]["smoke"]["params"]["iterations"] = SMOKE_ITERATIONS
    raw["profiles"]["smoke"]["budget"]["max_concurrent"] = 1
    config = write_spec(rehearsal.workdir.parent, raw, CONFIG.name)  # outside the driver's folder
    spec = load_spec(config, "smoke")
    assert spec.params["iterations"] == SMOKE_ITERATIONS and spec.budget.max_concurrent == 1
    result = rehearsal.launch("--profile", "smoke", "--max-trials", "1", config=config)
    assert result.returncode == 0, result.stdout + result.stderr + rehearsal.processes.tails()

    sweep = f"{spec.name}-1"
    studies = {s.study_name for s in optuna.get_all_study_summaries(rehearsal.storage_url)}
    assert studies == {f"{sweep}/{spec.task.name}/{model}" for model in spec.models}
    for name in studies:
        trials = optuna.load_study(study_name=name, storage=rehearsal.storage_url).trials
        assert len(trials) == 1, name
        assert all(t.state.is_finished() and t.state.name != "FAIL" for t in trials), name

    client = MlflowClient(tracking_uri=rehearsal.tracking_uri)
    experiment = client.get_experiment_by_name(sweep)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if r.data.tags.get("sweeper.role") == "study"]
    children = [r for r in runs if r.data.tags.get("sweeper.role") == "trial"]
    assert len(parents) == len(spec.models) and len(children) == len(spec.models)
    assert all(r.data.metrics for r in children)
    parent_ids = {r.info.run_id for r in parents}
    assert all(r.data.tags["mlflow.parentRunId"] in parent_ids for r in children)
    # the driver kept nothing on its own disk: every record is in the services
    assert not any(rehearsal.workdir.iterdir()), sorted(rehearsal.workdir.rglob("*"))


def test_the_schema_upgrades_run_before_the_services_and_are_repeatable(tmp_path: Path) -> None:
    """The init containers of MLflow and of the Ray head, run as written with their Secret's URL:
    on a fresh database they create the schema the image expects, and a second run (the next
    rollout) changes nothing and succeeds."""
    import sqlalchemy as sa

    manifests = render_overlay("prod")
    mlflow = find(manifests, "Deployment", "mlflow")["spec"]["template"]["spec"]["initContainers"]
    head = find(manifests, "RayCluster", "sweeper")["spec"]["headGroupSpec"]["template"]["spec"][
        "initContainers"
    ]
    (mlflow_upgrade,) = mlflow
    (optuna_upgrade,) = head
    with throwaway_databases(2) as (mlflow_db, optuna_db):
        for container, variable, database, table in (
            (mlflow_upgrade, "MLFLOW_BACKEND_STORE_URI", mlflow_db, "alembic_version"),
            (optuna_upgrade, "OPTUNA_STORAGE", optuna_db, "version_info"),
        ):
            assert (
                "secretKeyRef" in env_of(container)[variable]["valueFrom"]
            )  # the URL is never in the manifest
            env = {
                **os.environ,
                variable: database,
                "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            }
            env.update(under_pod_tmp(container, tmp_path, manifests))
            for attempt in (1, 2):
                done = subprocess.run(
                    container["command"], env=env, capture_output=True, text=True, timeout=300
                )
                assert done.returncode == 0, (container["name"], attempt, done.stdout + done.stderr)
            engine = sa.create_engine(database)
            try:
                assert table in sa.inspect(engine).get_table_names(), container["name"]
            finally:
                engine.dispose()

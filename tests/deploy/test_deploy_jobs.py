"""`sweeper job ...` against a real Ray head with its dashboard and job server, as on the cluster:
token authentication on (KubeRay's `authOptions.mode: token`), the head's RAY_JOB_STOP_WAIT_TIME_S
from the manifests, and the CLI run as a user runs it, with RAY_ADDRESS and RAY_AUTH_TOKEN.

Jobs run `sweeper launch --dry-run` (the real entrypoint, cheap), `sweeper resume` of an unknown
sweep (a failing one), and a Python driver that takes SIGTERM as `sweeper launch` does (a long one
to stop).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sweeper.run.jobs import Jobs
from tests.deploy.workloads import REPO, env_of, find, head_container, render_overlay
from tests.helpers import free_port
from tests.ray_head import Processes, head_options, http_ok, node_options

# one worker starts the module's cluster and runs every test against it
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("deploy_jobs")]

# A driver that, like `sweeper launch`, ends cleanly on SIGTERM (marking its trials interrupted)
GRACEFUL = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: (print('interrupted cleanly', flush=True), sys.exit(130)))\n"
    "print('sweep running', flush=True)\n"
    "time.sleep(600)\n"
)


@dataclass
class Cluster:
    address: str
    env: dict[str, str]  # a user's shell: RAY_ADDRESS and the token
    workdir: Path

    def sweeper(self, *args: str, **overrides: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in {**self.env, **overrides}.items() if v}
        return subprocess.run(
            [sys.executable, "-m", "sweeper.cli", "job", *args],
            cwd=self.workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )


def submitted_id(stdout: str) -> str:
    first = stdout.splitlines()[0]
    assert first.startswith("submitted "), stdout
    return first.split()[1]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    head = head_container(find(render_overlay("prod"), "RayCluster", "sweeper"))
    stop_wait = env_of(head)["RAY_JOB_STOP_WAIT_TIME_S"]["value"]
    token = secrets.token_hex(32)
    workdir = Path(tempfile.mkdtemp(prefix="swj", dir="/tmp"))  # Ray's socket paths must stay short
    (workdir / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "SWEEPER_"))}
    env.update(
        HOME=str(workdir / "home"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        RAY_USAGE_STATS_ENABLED="0",
    )
    head_env = {
        **env,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token,
        "RAY_JOB_STOP_WAIT_TIME_S": stop_wait,
    }
    dashboard = free_port()
    argv = ["ray", "start", *head_options(free_port()), "--num-cpus=1", "--include-dashboard=true"]
    argv += ["--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}", *node_options(workdir / "ray")]
    processes = Processes(workdir)
    address = f"http://127.0.0.1:{dashboard}"
    try:
        processes.start("ray-head", argv, head_env)
        ready = lambda: http_ok(f"{address}/api/version", {"Authorization": f"Bearer {token}"})  # noqa: E731
        processes.wait_for("the Ray dashboard", ready, timeout=120)
        yield Cluster(address, {**env, "RAY_ADDRESS": address, "RAY_AUTH_TOKEN": token}, workdir)
    finally:
        processes.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)


def test_a_submitted_sweep_runs_on_the_head_and_its_logs_are_followed(cluster: Cluster) -> None:
    """A spec file here is validated here and shipped with the job: the driver on the head runs
    exactly it, whatever the head holds under that name."""
    config = cluster.workdir / "my-denoise.yaml"
    config.write_text((REPO / "configs" / "denoise.yaml").read_text())
    submitted = cluster.sweeper("submit", str(config), "--profile", "smoke", "--dry-run")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted_id(submitted.stdout)
    assert job_id.startswith("sweep-my-denoise-")
    assert f"validated {config}" in submitted.stderr and "shipped with the job" in submitted.stderr
    config.unlink()  # the head reads the job's copy, not this file
    assert f"sweeper job logs {job_id} --follow" in submitted.stdout
    assert f"sweeper job stop {job_id}" in submitted.stdout

    followed = cluster.sweeper("logs", job_id, "--follow")
    assert followed.returncode == 0, followed.stdout + followed.stderr
    assert "study denoise/" in followed.stdout and "preflight: ok" in followed.stdout
    assert f"job {job_id}: SUCCEEDED" in followed.stderr
    listed = cluster.sweeper("list")
    assert listed.returncode == 0, listed.stderr
    assert job_id in listed.stdout and "SUCCEEDED" in listed.stdout  # the id whole, within 80 columns
    assert max(len(line) for line in listed.stdout.splitlines()) <= 80
    wide = cluster.sweeper("list", "--wide")
    assert "sweeper launch my-denoise.yaml --submitted-spec --profile smoke --dry-run" in wide.stdout


def test_a_bad_spec_is_refused_here_and_never_submitted(cluster: Cluster) -> None:
    bad = cluster.workdir / "bad.yaml"
    bad.write_text((REPO / "configs" / "denoise.yaml").read_text().replace("models:", "modelz:", 1))
    refused = cluster.sweeper("submit", str(bad))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "bad.yaml" in refused.stderr and "submitted" not in refused.stdout
    assert "sweep-bad-" not in cluster.sweeper("list", "--wide").stdout


def test_a_stopped_sweep_ends_cleanly_and_says_how_to_resume(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`job stop` sends SIGTERM and waits RAY_JOB_STOP_WAIT_TIME_S (the manifests' value) before
    SIGKILL: the driver has time to mark its trials interrupted."""
    monkeypatch.setenv("RAY_AUTH_TOKEN", cluster.env["RAY_AUTH_TOKEN"])
    jobs = Jobs(cluster.address)
    job_id = jobs.submit([sys.executable, "-c", GRACEFUL], "sweep-stop-test")
    deadline = time.monotonic() + 60
    while "sweep running" not in jobs.logs(job_id):
        assert time.monotonic() < deadline, jobs.status(job_id)
        time.sleep(0.5)
    stopped = cluster.sweeper("stop", job_id)
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopping {job_id}" in stopped.stdout and "sweeper job resume" in stopped.stdout
    followed = cluster.sweeper("logs", job_id, "--follow")
    assert followed.returncode == 130, followed.stdout + followed.stderr  # interrupted, as launch exits
    assert "interrupted cleanly" in followed.stdout and f"job {job_id}: STOPPED" in followed.stderr
    again = cluster.sweeper("stop", job_id)
    assert again.returncode == 0 and "had already ended: STOPPED" in again.stdout


def test_resume_runs_sweeper_resume_and_a_failed_job_exits_non_zero(cluster: Cluster) -> None:
    submitted = cluster.sweeper("resume", "no-such-sweep")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted_id(submitted.stdout)
    assert job_id.startswith("resume-no-such-sweep-")
    followed = cluster.sweeper("logs", job_id, "--follow")
    assert followed.returncode == 1, followed.stdout + followed.stderr
    assert "no sweep named 'no-such-sweep'" in followed.stdout and "FAILED" in followed.stderr


def test_errors_are_one_line_each(cluster: Cluster) -> None:
    unknown = cluster.sweeper("logs", "no-such-job")
    assert unknown.returncode == 2 and unknown.stderr.startswith("error: no job no-such-job on ")
    refused = cluster.sweeper("list", RAY_AUTH_TOKEN="")
    assert refused.returncode == 1 and "RAY_AUTH_TOKEN" in refused.stderr, refused.stderr
    wrong = cluster.sweeper("list", RAY_AUTH_TOKEN="not-the-token")
    assert wrong.returncode == 1 and "refused the request" in wrong.stderr, wrong.stderr
    nowhere = cluster.sweeper("list", RAY_ADDRESS="")
    assert nowhere.returncode == 2 and "--address" in nowhere.stderr
    for failed in (unknown, refused, wrong, nowhere):
        assert len(failed.stderr.strip().splitlines()) == 1 and "Traceback" not in failed.stderr


def test_reading_jobs_imports_no_torch(cluster: Cluster) -> None:
    code = (
        "import json, sys\n"
        "from sweeper.cli import main\n"
        "code = main(['job', 'list'], standalone_mode=False)\n"
        "print(json.dumps([code, 'torch' in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=cluster.env, capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == [0, False]

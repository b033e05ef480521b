"""Ray nodes on loopback for the tests: each started with `ray start --block` in its own session,
on free ports and a private temp dir, and stopped by its process group, so other Ray instances on
the machine (another test run's, a user's) are left alone: never `ray stop`, which stops every Ray
of the user.

`started_head` is the head that each test worker starts once (`tests/conftest.py`, `ray_head`):
the launches of tests whose subject is not Ray's own start, stop, loss or recovery join it with
`--address`, as a user of a cluster does, and leave it running for the next. The deployment tests
start their own nodes with the same options.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import cli_env, free_port


class Processes:
    """Background processes, each in its own session, stopped by process group (TERM, then KILL)."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self.started: list[tuple[subprocess.Popen[bytes], Path]] = []

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> Path:
        """Start `argv` with its output in `<name>.log`, which is returned."""
        log = self.logdir / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv, env=env, cwd=self.logdir, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.started.append((process, log))
        return log

    def wait_for(self, what: str, ready: Callable[[], bool], timeout: float = 90) -> None:
        """Poll `ready` until it holds, failing early (with its log) if a process died."""
        deadline = time.monotonic() + timeout
        while not ready():
            for process, log in self.started:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"{log.stem} exited with {process.returncode}:\n{log.read_text()[-3000:]}"
                    )
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not ready after {timeout:.0f}s\n{self.tails()}")
            time.sleep(0.5)

    def tails(self) -> str:
        return "\n".join(f"--- {log.stem}\n{log.read_text()[-3000:]}" for _, log in self.started)

    def stop_all(self) -> None:
        for process, _ in reversed(self.started):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for process, _ in reversed(self.started):
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(max(0.1, deadline - time.monotonic()))
            # `ray start --block` can linger after its children died, and daemons may outlive it
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def http_ok(url: str, headers: dict[str, str] | None = None) -> bool:
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers or {}), timeout=2
        ) as response:
            return response.status == 200
    except OSError:
        return False


def node_options(temp_dir: Path) -> list[str]:
    """One node's `ray start` options: loopback, a private temp dir and explicit free ports for its
    services and workers, so two nodes on one machine (and other users' Ray instances) never
    collide (`ray start` would give every node's workers ports from one range, 10002-19999)."""
    options = [
        "--node-ip-address",
        "127.0.0.1",
        "--temp-dir",
        str(temp_dir),
        "--block",
        "--disable-usage-stats",
    ]
    options += ["--object-store-memory", str(200 * 2**20)]
    options += ["--min-worker-port", "0", "--max-worker-port", "0"]  # the OS's free ports, as `ray.init`'s
    for option in (
        "--node-manager-port",
        "--object-manager-port",
        "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port",
        "--metrics-export-port",
        "--runtime-env-agent-port",
    ):
        options += [option, str(free_port())]
    return options


def head_options(port: int) -> list[str]:
    """A head's own `ray start` options: its GCS port, and its Ray Client server's (10001 unless
    told, which a second head on the machine would find taken)."""
    return ["--head", f"--port={port}", f"--ray-client-server-port={free_port()}"]


HEAD_CPUS = 2  # CI's cores: what a local launch gives a sweep without budget.max_concurrent there


def token_environment(token: str) -> dict[str, str]:
    """Token authentication as deploy/ turns it on (KubeRay's `authOptions.mode: token`): the nodes
    and every driver that joins them hold the same variables."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}


def head_environment(token: str) -> dict[str, str]:
    """The head's environment: the CLI's in these tests (the test plugins importable, the session's
    kept trial costs, no Ray setting from outside), the variables a local launch gives its node's
    workers, and the cluster's token.

    A local launch preloads `preload_modules()`, which adds what Tune imports from the packages
    installed here to `node_environment()`'s list, and runs its workers at the driver's niceness
    (Ray's 15 leaves a worker a few percent of a core beside the other test worker's processes);
    its driver exports RAY_CHDIR_TO_TRIAL_DIR=0, which its workers inherit and deploy/ sets on
    the nodes.
    """
    from sweeper.run.tune.workers import NICENESS_ENV, PRELOAD_ENV, node_environment, preload_modules

    env = {name: value for name, value in cli_env().items() if not name.startswith("RAY_")}
    env.update(node_environment())
    env.update({PRELOAD_ENV: ",".join(preload_modules()), NICENESS_ENV: "0", "RAY_CHDIR_TO_TRIAL_DIR": "0"})
    env.update(RAY_USAGE_STATS_ENABLED="0", **token_environment(token))
    return env


@dataclass(frozen=True)
class RayHead:
    """A running head: the address a launch joins with `--address`, its temp folder, and the PID
    of its `ray start`, which leads the process group that stopping it ends."""

    address: str
    temp_dir: Path
    pid: int
    token: str

    @property
    def args(self) -> list[str]:
        """The options that make a `sweeper` command join the head."""
        return ["--address", self.address]

    @property
    def env(self) -> dict[str, str]:
        """What a driver that joins the head adds to its environment: the cluster's token."""
        return token_environment(self.token)


@contextlib.contextmanager
def started_head() -> Iterator[RayHead]:
    """A one-node Ray head with `HEAD_CPUS` CPUs, no dashboard, and a folder of its own under /tmp
    (short: Ray's unix socket paths under it must stay below ~107 characters), removed with it."""
    workdir = Path(tempfile.mkdtemp(prefix="sweeper-ray-", dir="/tmp"))
    token = secrets.token_hex(32)
    port = free_port()
    argv = ["ray", "start", *head_options(port), f"--num-cpus={HEAD_CPUS}", "--include-dashboard=false"]
    processes = Processes(workdir)
    try:
        log = processes.start("ray-head", [*argv, *node_options(workdir / "ray")], head_environment(token))
        # `ray start` prints this once the node is registered with the GCS (cheaper than polling Ray)
        processes.wait_for("the Ray head", lambda: "Ray runtime started" in log.read_text())
        (process, _), *_ = processes.started
        yield RayHead(f"127.0.0.1:{port}", workdir / "ray", process.pid, token)
    finally:
        processes.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)

"""Ray processes on loopback for the tests that need a real cluster: each node started with
`ray start --block` in its own session, on free ports and a private temp dir, and stopped by its
process group, so other Ray instances on the machine (another test run's, a user's) are left
alone: never `ray stop`, which stops every Ray of the user.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.helpers import free_port


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
    services, so two nodes on one machine (and other users' Ray instances) never collide."""
    options = [
        "--node-ip-address",
        "127.0.0.1",
        "--temp-dir",
        str(temp_dir),
        "--block",
        "--disable-usage-stats",
    ]
    options += ["--object-store-memory", str(200 * 2**20)]
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

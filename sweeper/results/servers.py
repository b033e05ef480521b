"""`sweeper ui`: the MLflow UI on a sweep's tracking store, and optuna-dashboard on its studies,
run until Ctrl-C and then stopped with every process they started."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
from typing import Any

from sweeper.store.database import Store, SweepRecord
from sweeper.store.locations import default_tracking_uri, resolve_tracking_uri, runs_page


def server_env() -> dict[str, str]:
    """The servers' environment, with MLflow's GenAI scorer jobs off: a sweep never submits one,
    and with them on the server keeps seven idle job consumers beside its web workers. A value the
    user set wins."""
    return {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **os.environ}


def ui_servers(
    store: Store, record: SweepRecord, host: str, port: int, dashboard_port: int
) -> tuple[list[str], list[list[str]]]:
    """What to tell the user (one line per server) and the server commands to run."""
    uri = resolve_tracking_uri(record.tracking_uri or default_tracking_uri())
    lines, commands = [], []
    if uri.startswith(("http://", "https://")):
        lines.append(f"MLflow UI: {runs_page(uri, record.mlflow_experiment_id)}")
    else:
        # one web worker: the UI of one researcher's store; MLflow's default of four starts in
        # twice the CPU time, each worker loading the whole server
        command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri, "--workers", "1"]
        commands.append([*command, "--host", host, "--port", str(port)])
        lines.append(f"MLflow UI: {runs_page(f'http://{host}:{port}', record.mlflow_experiment_id)}")
    if importlib.util.find_spec("optuna_dashboard") is not None:
        serve = [sys.executable, "-m", "sweeper.results.dashboard", store.url, record.name]
        commands.append([*serve, "--host", host, "--port", str(dashboard_port)])
        lines.append(f"Optuna dashboard: http://{host}:{dashboard_port} ({record.name}'s studies, read-only)")
    else:
        lines.append("Optuna dashboard: not installed (pip install optuna-dashboard)")
    return lines, commands


def serve_until_stopped(commands: list[list[str]]) -> None:
    """Run the servers until Ctrl-C or SIGTERM, then stop them with all their workers.

    `mlflow server` forks uvicorn workers: each server gets a process group of its own, and the
    whole group is stopped, so no server outlives the command that started it.
    """

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for command in commands:  # one by one: a server that fails to start still stops the others
            processes.append(subprocess.Popen(command, start_new_session=True, env=server_env()))
        for process in processes:
            process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()

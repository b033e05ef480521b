"""A benchmark's figures as data: `benchmarks/results/<name>.json`, with what they were measured on.

The README summarizes these files; a figure in it that no file holds was not measured by the
script that claims it.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from sweeper.spec.trial_cost import machine_name

RESULTS = Path(__file__).parent / "results"


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"python": platform.python_version()}
    for package in ("torch", "triton", "ray", "optuna", "mlflow"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def machine(device: str) -> dict[str, Any]:
    """The machine the figures come from, or the script ran on: its device, CPU by name and core
    count, and on a GPU the GPU's name. Every results file holds one (`tests/benchmarks/
    test_figures_file.py`), since a figure read without its machine cannot be compared; a
    simulated figure's file names where it ran too, for the timings beside its figures."""
    described: dict[str, Any] = {"device": device, "cpus": os.cpu_count(), "platform": platform.platform()}
    described["cpu"] = machine_name()  # /proc/cpuinfo's model name: `platform` says only "x86_64"
    if device.startswith("cuda"):
        import torch

        described["gpu"] = torch.cuda.get_device_name(torch.device(device))
        described["cuda"] = torch.version.cuda
    return described


def loop_seconds(runs: int = 1) -> float:
    """The median time of 10^7 empty loop iterations at module level, as `python -c` runs them:
    the machine's pace, so timings made on machines of different speed can be set side by side."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        exec("for _ in range(10**7): pass", {})
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def command_line() -> str:
    """The command as a user types it from the project's root: `python -m benchmarks.<script> ...`
    (Python puts the module's full path in `sys.argv[0]`, which names this machine's folders)."""
    script = Path(sys.argv[0]).resolve()
    root = Path(__file__).resolve().parent.parent
    if script.is_relative_to(root) and script.suffix == ".py":
        module = ".".join(script.relative_to(root).with_suffix("").parts)
        return " ".join(["python", "-m", module, *sys.argv[1:]])
    return " ".join(["python", *sys.argv])


def write(name: str, device: str, figures: Any, out: Path | None = None) -> Path:
    """Write `figures` with the device, versions, date and command line; return the file's path."""
    path = out or RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "benchmark": name,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": command_line(),
        "machine": machine(device),
        "versions": versions(),
        "figures": figures,
    }
    path.write_text(json.dumps(document, indent=1) + "\n")
    print(f"figures written to {path}")
    return path

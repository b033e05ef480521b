"""A sweep on a busy machine: the README's main command alone, then beside N CPU-bound processes.

With N busy processes at the driver's priority on C cores, a sweep that can use every core gets
about C / (C + N) of the machine, so it should take its alone time divided by that share. The
ratio printed is the wall time beside the processes over that expectation: 1 is a sweep that
degrades in proportion to the CPU it gets; the goal is under 1.5. Both runs must train every
model (a sweep that ran out of time is reported, not timed).

    python -m benchmarks.overheads.contention                 # N = number of cores
    python -m benchmarks.overheads.contention --busy 2 --config configs/denoise.yaml --profile smoke
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import figures_file

ROOT = Path(__file__).resolve().parents[2]
BUSY = "while True:\n    pass\n"


def launch(config: str, profile: str, folder: Path, *extra: str) -> tuple[float, dict]:
    """Wall time of `sweeper launch` (with `extra` options), and its sweep's status as JSON."""
    storage = f"sqlite:///{folder / 'sweeper.db'}"
    env = {**os.environ, "SWEEPER_STORAGE": storage}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "sweeper", "launch", str(ROOT / config), "--profile", profile,
         "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}", *extra],
        cwd=folder, env=env, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the sweep failed:\n{done.stdout}\n{done.stderr}")
    status = subprocess.run(
        [sys.executable, "-m", "sweeper", "status", "--json"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )
    return wall, json.loads(status.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1, help="CPU-bound processes")
    parser.add_argument("--config", default="configs/denoise.yaml")
    parser.add_argument("--profile", default="smoke")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as alone_dir, tempfile.TemporaryDirectory() as busy_dir:
        alone, alone_status = launch(args.config, args.profile, Path(alone_dir))
        print(f"alone: {alone:.0f} s", flush=True)
        hogs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.busy)]
        try:
            busy, busy_status = launch(args.config, args.profile, Path(busy_dir))
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
    share = cores / (cores + args.busy)
    expected = alone / share
    untrained = {"alone": alone_status["missing"], "busy": busy_status["missing"]}
    print(f"beside {args.busy} CPU-bound processes on {cores} cores: {busy:.0f} s")
    ratio = None
    if any(untrained.values()):  # a sweep cut short by its time budget is no timing
        print(f"not timed: models without a complete trial: {untrained}")
    else:
        ratio = busy / expected
        print(f"CPU share {share:.2f}; expected {expected:.0f} s; ratio {ratio:.2f} (goal < 1.5)")
    figures_file.write(
        "contention",
        "cpu",
        {
            "config": args.config,
            "profile": args.profile,
            "cores": cores,
            "busy_processes": args.busy,
            "alone_s": alone,
            "busy_s": busy,
            "cpu_share": share,
            "ratio": ratio,
            "untrained": untrained,
        },
    )


if __name__ == "__main__":
    main()

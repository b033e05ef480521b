"""What the console script's exit saves (`sweeper.cli.run`): a tiny sweep launched on a local Ray
as a user launches it, through `run` and through `main` (the interpreter's teardown kept), in turn,
each in a fresh folder; per side the median wall time, and the tail from the launch's last line to
the process's end, with the ratio of the two sides' medians.

    python -m benchmarks.overheads.teardown [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import figures_file

ROOT = Path(__file__).resolve().parents[2]
SPEC = """\
name: teardown
task: {name: denoise, settings: {T: 6, valid_size: 32}}
models: [lstm, gru]
params: {iterations: 30, eval_every: 10, batch_size: 16, hidden_size: 8, lr: {float: [0.001, 0.03], log: true}}
scheduler: {name: asha, grace_period: 10, reduction_factor: 2}
budget: {trials: 4, max_concurrent: 1}
seed: 0
"""
SIDES = {
    "run": [sys.executable, "-m", "sweeper.cli"],
    "main": [sys.executable, "-c", "from sweeper.cli import main; main()"],
}


def wall_and_tail(command: list[str], cwd: Path) -> tuple[float, float]:
    """The command's wall seconds, and the seconds between its last line of output and its end."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    started = last = time.perf_counter()
    with subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as process:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            last = time.perf_counter()
    ended = time.perf_counter()
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{''.join(lines)[-3000:]}")
    return ended - started, ended - last


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="launches per side")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs {args.runs}: at least one launch per side")
    measured: dict[str, list[tuple[float, float]]] = {side: [] for side in SIDES}
    with tempfile.TemporaryDirectory(prefix="sweeper-teardown-") as tmp:
        for run in range(args.runs + 1):  # the first pair warms the caches and is not counted
            for side, cli in SIDES.items():
                folder = Path(tmp) / f"{side}-{run}"
                folder.mkdir()
                (folder / "sweep.yaml").write_text(SPEC)
                timing = wall_and_tail([*cli, "launch", "sweep.yaml", "--no-price"], folder)
                if run:
                    measured[side].append(timing)
    figures, walls = [], {}
    for side, timings in measured.items():
        walls[side] = statistics.median(t[0] for t in timings)
        tail = statistics.median(t[1] for t in timings)
        figures.append(
            {"side": side, "median_wall_s": walls[side], "median_tail_s": tail, "runs": len(timings)}
        )
        print(f"{side:<5} wall {walls[side]:6.2f} s   last line to exit {tail:5.2f} s")
    ratio = walls["run"] / walls["main"]
    print(f"run/main wall: {ratio:.2f}")
    figures.append({"side": "run/main", "wall_ratio": ratio})
    figures_file.write("teardown", "cpu", figures)


if __name__ == "__main__":
    main()

"""What each of the replay's changes to Optuna saves it: the same sweeps replayed in one process
without and with the change (`--speedup`: `fast_tpe`, TPE's normal CDFs by SciPy; `uncopied`, the
deep copies nothing reads; `batched_gp`, the GP sampler's starts optimized together, as greenlet
lets Optuna do for the service too), every change listed before it in place on both sides, in
turn (plain, fast, plain, fast ...), so both see the machine at the same speed; per strategy the
least CPU-seconds of each side and their ratio, every sweep compared trial by trial (a
difference exits 1).

    python -m benchmarks.search_tables.tpe_speed --table benchmarks/results/blackbox-hidden \\
        --out benchmarks/results/tpe-speed.json
    python -m benchmarks.search_tables.tpe_speed --table benchmarks/results/blackbox-hidden \\
        --speedup uncopied --out benchmarks/results/uncopied-speed.json
    python -m benchmarks.search_tables.tpe_speed --table benchmarks/results/blackbox-hidden \\
        --speedup batched_gp --strategies +gp --out benchmarks/results/batched-gp-speed.json
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

import optuna

from benchmarks import figures_file
from benchmarks.search_tables import batched_gp, fast_tpe, uncopied
from benchmarks.search_tables import table as tables
from benchmarks.search_tables.loading import load
from benchmarks.search_tables.record import DEFAULT_TABLE
from benchmarks.search_tables.simulator import Replay
from benchmarks.search_tables.strategies import STRATEGIES

# in the order the replay has them: it installs the first two; the third is on wherever greenlet
# is installed, as the service installs Optuna (`SHIPPED`), and only this benchmark turns it off
SPEEDUPS = {"fast_tpe": fast_tpe, "uncopied": uncopied, "batched_gp": batched_gp}
SHIPPED = ("batched_gp",)


def _side(speedup: str, on: bool) -> None:
    """Every change installed before `speedup`, and `speedup` itself where `on`."""
    names = list(SPEEDUPS)
    for name in names[: names.index(speedup)]:
        SPEEDUPS[name].install()
    (SPEEDUPS[speedup].install if on else SPEEDUPS[speedup].uninstall)()


def _optuna_as_it_ships() -> None:
    for name, module in SPEEDUPS.items():
        (module.install if name in SHIPPED else module.uninstall)()


Job = tuple[str, str, int, int]  # task, strategy, workers, seed


def comparable_traces(table: tables.Table, jobs: list[Job], trials: int) -> list[dict[str, Any]]:
    """Each job's replayed sweep, less the searcher's own CPU time: the one figure a change to
    Optuna's speed may change."""
    traces = []
    for task, strategy, workers, seed in jobs:
        trace = asdict(Replay(table, task, strategy, seed, workers, trials).run())
        trace.pop("searcher_seconds")
        traces.append(trace)
    return traces


def _sweeps(table: Any, strategy: str, seeds: int, trials: int) -> tuple[float, list[dict[str, Any]]]:
    jobs = [
        (task, strategy, workers, seed)
        for task in table.curves
        for workers in (4, 8)
        for seed in range(seeds)
    ]
    started = time.process_time()
    traces = comparable_traces(table, jobs, trials)
    return time.process_time() - started, traces


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--table", type=Path, default=DEFAULT_TABLE)
    parser.add_argument("--strategies", nargs="+", choices=list(STRATEGIES), default=list(STRATEGIES))
    parser.add_argument("--seeds", type=int, default=1, help="paired seeds per (task, W)")
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=2, help="turns of each side; the least is kept")
    parser.add_argument("--speedup", choices=list(SPEEDUPS), default="fast_tpe", help="the change measured")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")
    if not (args.table / tables.META).is_file():
        print(f"error: {args.table} holds no table (no {tables.META})", file=sys.stderr)
        return 2
    table = load(args.table, None)
    rows, plain_total, fast_total = {}, 0.0, 0.0
    for strategy in args.strategies:
        _sweeps(table, strategy, 1, args.trials)  # first calls and imports, on neither side
        seconds: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.rounds):
            for fast in (False, True):
                _side(args.speedup, fast)
                spent, traces = _sweeps(table, strategy, args.seeds, args.trials)
                seconds[fast].append(spent)
                if not fast:
                    reference = traces
                elif traces != reference:
                    print(f"{strategy}: a sweep differs with {args.speedup}", file=sys.stderr)
                    _optuna_as_it_ships()
                    return 1
        _optuna_as_it_ships()
        plain, fast = min(seconds[False]), min(seconds[True])
        plain_total, fast_total = plain_total + plain, fast_total + fast
        rows[strategy] = {"plain_cpu_s": plain, "fast_cpu_s": fast, "ratio": plain / fast}
        print(f"{strategy:12s} plain {plain:6.2f} s  fast {fast:6.2f} s  {plain / fast:.2f}x", flush=True)
    print(
        f"{'every':12s} plain {plain_total:6.2f} s  fast {fast_total:6.2f} s  {plain_total / fast_total:.2f}x"
    )
    if args.out is not None:
        data = {
            "command": shlex.join(
                ["python", "-m", "benchmarks.search_tables.tpe_speed", *(argv or sys.argv[1:])]
            ),
            "machine": figures_file.machine("cpu"),  # CPU-seconds are this machine's
            "speedup": args.speedup,
            "beneath": list(SPEEDUPS)[: list(SPEEDUPS).index(args.speedup)],
            "sweeps_per_side": 4 * args.seeds * len(args.strategies),
            "identical": True,
            "strategies": rows,
            "every_strategy": {
                "plain_cpu_s": plain_total,
                "fast_cpu_s": fast_total,
                "ratio": plain_total / fast_total,
            },
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a recording will cost before it starts: each asked (task, model)'s trial cost measured at
both ends of its hidden-size range (the configurations of the design with the smallest and the
largest size, priced by the service's own estimator, `sweeper.spec.trial_cost`: a start, steps and
evaluations timed apart in a worker like the recorder's, kept per machine and code), every run
still to record priced by its own size between the two (linear in the size), and the sum on
`--jobs` processes. A design whose sizes move the pace little makes a table whose cost findings are thin:
the high/low ratio per model says how much they move it.

Nothing is written to the table; the same options as `record` name it and its design.

    python -m benchmarks.search_tables.estimate --table benchmarks/results/blackbox-hidden \\
        --hidden-scale 0.25 --configs 64 --seeds 3 --models gru goru scornn ncgru lstm eurnn
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import figures_file
from benchmarks.search_tables import record
from benchmarks.search_tables import table as tables
from sweeper.spec import trial_cost


def ends(curves: tables.Curves, indices: list[int]) -> tuple[int, int]:
    """The configurations among `indices` with the smallest and the largest hidden size."""
    sizes = [curves.designs[i]["config"].get("hidden_size", 0) for i in indices]
    return indices[int(np.argmin(sizes))], indices[int(np.argmax(sizes))]


def priced(size: float, low: tuple[float, float], high: tuple[float, float]) -> float:
    """A run's seconds at `size`, on the line through the two measured (size, seconds) ends."""
    (s0, t0), (s1, t1) = low, high
    return t0 if s1 == s0 else t0 + (size - s0) * (t1 - t0) / (s1 - s0)


def _start_worker(device: str, warm_up: dict[str, Any]) -> None:
    """A recorder's worker: one torch thread; its process's first-call costs paid untimed."""
    from trainables.step_time import trial_costs

    record._start_worker(device)
    trial_costs(warm_up, 1)


def estimate(args: argparse.Namespace) -> dict[str, Any]:
    table, tasks, models = record.opened(args, args.table)
    runs = list(record.pending(table, tasks, models))
    evaluations = len(table.settings.steps)
    pending: dict[tuple[str, str], list[record.Run]] = {}
    for run in runs:
        pending.setdefault((run.task, run.model), []).append(run)
    measured: dict[tuple[str, str, int], float] = {}
    todo = {
        (task, model, index)
        for (task, model), mine in pending.items()
        for index in ends(table.curves[task][model], sorted({r.index for r in mine}))
    }

    def config(key: tuple[str, str, int]) -> dict[str, Any]:
        return {**table.curves[key[0]][key[1]].designs[key[2]]["config"], "device": args.device, "seed": 0}

    with ProcessPoolExecutor(
        args.jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(args.device, config(min(todo))),
    ) as pool:
        futures = {key: pool.submit(trial_cost.measured, config(key)) for key in sorted(todo)}
        for key, future in futures.items():
            try:
                cost = future.result()
            except Exception as exc:  # a configuration that cannot train here is said, by name
                raise tables.TableMismatch(f"{'/'.join(map(str, key))} could not be timed: {exc}") from None
            measured[key] = cost.seconds(table.settings.iterations, evaluations)
    rows = []
    for (task, model), mine in pending.items():
        curves = table.curves[task][model]
        low, high = ends(curves, sorted({r.index for r in mine}))
        size = {i: curves.designs[i]["config"].get("hidden_size", 0) for i in (low, high)}
        points = (size[low], measured[(task, model, low)]), (size[high], measured[(task, model, high)])
        seconds = sum(priced(curves.designs[r.index]["config"].get("hidden_size", 0), *points) for r in mine)
        rows.append(
            {
                "task": task,
                "model": model,
                "runs": len(mine),
                "sizes": [size[low], size[high]],
                "run_seconds": [points[0][1], points[1][1]],
                "high_over_low": points[1][1] / points[0][1],
                "worker_hours": seconds / 3600,
            }
        )
    total = sum(r["worker_hours"] for r in rows)
    return {
        "design": table.settings.design,
        "settings": table.settings.as_dict(),
        "runs": len(runs),
        "rows": rows,
        "worker_hours": total,
        "jobs": args.jobs,
        "wall_hours": total / args.jobs,
    }


def text(result: dict[str, Any]) -> str:
    lines = [
        f"{result['runs']} runs to record; {result['design']}",
        f"{'task':>12} {'model':>14} {'runs':>5} {'sizes':>9} {'s/run low':>10} {'s/run high':>11} "
        f"{'high/low':>9} {'worker-h':>9}",
    ]
    for r in result["rows"]:
        lines.append(
            f"{r['task']:>12} {r['model']:>14} {r['runs']:>5} {r['sizes'][0]:>4}-{r['sizes'][1]:<4} "
            f"{r['run_seconds'][0]:>10.1f} {r['run_seconds'][1]:>11.1f} {r['high_over_low']:>9.2f} "
            f"{r['worker_hours']:>9.2f}"
        )
    lines.append(
        f"in all {result['worker_hours']:.1f} worker-hours: {result['wall_hours']:.1f} hours on {result['jobs']} processes"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    record.design_options(parser)
    parser.add_argument("--jobs", type=int, default=2, help="the recorder's processes (and the timing's)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--out", type=Path, help="the estimate as JSON")
    args = parser.parse_args(argv)
    try:
        result = estimate(args)
    except tables.TableMismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(text(result))
    if args.out is not None:
        # each run's price is a timing on this machine's device
        written = {**result, "machine": figures_file.machine(args.device)}
        args.out.write_text(json.dumps(written, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

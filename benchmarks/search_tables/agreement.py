"""Whether two recordings of one design measured the same thing: each (task, model)'s runs that
both tables hold complete, the best objective of each run in one against the other.

A table recorded on a GPU (`record --device cuda`) is worth having only if its runs learn as the
CPU's did (the same configurations and seeds; the generators and the kernels differ, so the
curves are close, not equal) while their clock is the GPU's. This prints, per (task, model), how
far each run's best value moved (relative difference, median and largest), whether the runs keep
their order (Spearman's rank correlation) and each table's median worker-seconds per run.

    python -m benchmarks.search_tables.agreement benchmarks/results/blackbox benchmarks/results/blackbox-cuda
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from benchmarks.search_tables import table as tables


def ranks(values: np.ndarray) -> np.ndarray:
    """Each value's place in the sorted order (0 for the smallest)."""
    return np.argsort(np.argsort(values)).astype(float)


def relative_difference(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """|second - first| / |first|; where the first is 0, 0 if the second is too, else infinite."""
    gap = np.abs(second - first)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gap == 0, 0.0, gap / np.abs(first))


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Rank correlation (ties broken by position: best values of real runs rarely tie)."""
    if len(a) < 3:
        return float("nan")
    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def agreement(first: tables.Table, second: tables.Table) -> list[dict]:
    """One row per (task, model) of the first table: the runs complete in both, compared."""
    if first.curves.keys() != second.curves.keys() or any(
        first.curves[t].keys() != second.curves[t].keys()
        or [d["config"] for d in first.curves[t][m].designs]
        != [d["config"] for d in second.curves[t][m].designs]
        for t in first.curves
        for m in first.curves[t]
    ):
        raise tables.TableMismatch("the two tables hold different designs: their runs cannot be paired")
    rows = []
    for task, models in first.curves.items():
        for model, a in models.items():
            b = second.curves[task][model]
            seeds = min(a.status.shape[1], b.status.shape[1])
            both = (a.status[:, :seeds] == tables.COMPLETE) & (b.status[:, :seeds] == tables.COMPLETE)
            best_a = np.nanmin(a.objective[:, :seeds][both], axis=-1)
            best_b = np.nanmin(b.objective[:, :seeds][both], axis=-1)
            moved = relative_difference(best_a, best_b)
            rows.append(
                {
                    "task": task,
                    "model": model,
                    "runs": int(both.sum()),
                    "median_relative_difference": float(np.median(moved)) if len(moved) else float("nan"),
                    "largest_relative_difference": float(moved.max()) if len(moved) else float("nan"),
                    "spearman": spearman(best_a, best_b),
                    "seconds_first": float(np.median(a.ended[:, :seeds][both]))
                    if both.any()
                    else float("nan"),
                    "seconds_second": float(np.median(b.ended[:, :seeds][both]))
                    if both.any()
                    else float("nan"),
                }
            )
    return rows


def text(rows: list[dict], first: str, second: str) -> str:
    """The rows as the table the command prints, each table named by its folder."""
    lines = [
        f"runs complete in both, best {first} against best {second}",
        f"{'task':>8} {'model':>7} {'runs':>5} {'median diff':>12} {'largest':>8} {'spearman':>9} "
        f"{'s/run ' + first:>14} {'s/run ' + second:>14}",
    ]
    for r in rows:
        lines.append(
            f"{r['task']:>8} {r['model']:>7} {r['runs']:>5} {100 * r['median_relative_difference']:>11.1f}% "
            f"{100 * r['largest_relative_difference']:>7.1f}% {r['spearman']:>9.2f} "
            f"{r['seconds_first']:>14.1f} {r['seconds_second']:>14.1f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("first", type=Path, help="a table's folder")
    parser.add_argument("second", type=Path, help="another recording of the same design")
    parser.add_argument("--out", type=Path, help="the rows as JSON")
    args = parser.parse_args(argv)
    for folder in (args.first, args.second):
        if not (folder / tables.META).is_file():
            print(f"error: {folder} holds no table (no {tables.META})", file=sys.stderr)
            return 2
    try:
        rows = agreement(tables.read(args.first), tables.read(args.second))
    except tables.TableMismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(text(rows, args.first.name, args.second.name))
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

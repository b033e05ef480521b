"""Learn the verdict's fallback seed noise (`sweeper.results.odds`) from recorded tables: one
run's best value's spread between its seeds relative to its mean as a loss, the median over each
(task, model)'s five best configurations.

    python -m benchmarks.search_tables.prior --tables benchmarks/results/blackbox \
        benchmarks/results/blackbox-hidden --noise-out sweeper/results/seed_noise.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from benchmarks.search_tables import table as tables
from sweeper.results.loss_scale import as_loss, resolved


def seed_spread(
    sources: list[tuple[str, tables.Table]], tasks: list[str] | None = None, top: int = 5
) -> dict:
    """One run's best value's spread between seeds relative to its mean as a loss (`loss_scale`;
    the median over each (task, model)'s `top` best configurations with two seeds or more)."""
    from benchmarks.search_tables.verdicts import run_bests

    relative, used = [], []
    for name, table in sources:
        for task, models in table.curves.items():
            if tasks is not None and task not in tasks:
                continue
            sign = table.sign(task)
            for c in models.values():
                bests = run_bests(c, table.tasks[task].mode)
                counts = np.isfinite(bests).sum(axis=1)
                means = np.nansum(np.where(np.isfinite(bests), bests, 0), axis=1) / np.maximum(counts, 1)
                order = np.argsort(np.where(counts > 0, sign * means, np.inf))
                for design in order[:top]:
                    runs = bests[design][np.isfinite(bests[design])]
                    if len(runs) >= 2:
                        mode = table.tasks[task].mode
                        scale = resolved(as_loss(float(np.mean(runs)), mode), mode)
                        relative.append(float(np.std(runs, ddof=1) / scale))
            used.append(f"{name}/{task}")
    if not relative:
        raise tables.TableMismatch("no configuration with two seeds to learn the seed noise from")
    return {"relative": float(np.median(relative)), "configurations": len(relative), "tables": used}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tables", nargs="+", type=Path, default=[Path("benchmarks/results/blackbox")])
    parser.add_argument("--tasks", nargs="+", help="learn from these tasks only")
    parser.add_argument("--noise-out", type=Path, help="write the seed noise here (JSON)")
    args = parser.parse_args(argv)
    from benchmarks.search_tables.loading import load

    try:
        noise = seed_spread([(f.name, load(f, None)) for f in args.tables], args.tasks)
    except tables.TableMismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(noise, indent=1) + "\n"
    print(text, end="")
    if args.noise_out is not None:
        args.noise_out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The replay's anytime curves: the share of seeds naming a right winner against worker-hours,
one panel per task and W, one line per strategy, B marked and shown to three times B, and the
floor below which no sweep that keeps its W workers busy names a winner shaded."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.simulator import Trace
from benchmarks.search_tables.verdicts import (
    floors,
    ground_truth,
    quantile,
    right_for_good,
    share_right,
    timeline,
)


def anytime_figure(
    traces: list[dict[str, Any]], args: argparse.Namespace, table: tables.Table, path: Path
) -> None:
    import matplotlib

    from benchmarks.search_tables.summary import paired

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = dict(zip(args.strategies, plt.get_cmap("tab20").colors, strict=False))
    rows, cols = len(args.tasks), len(args.workers)
    figure, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 3.8 * rows), squeeze=False)
    for r, task in enumerate(args.tasks):
        truth = ground_truth(table, task)
        models = tuple(table.curves[task])
        for c, workers in enumerate(args.workers):
            ax = axes[r][c]
            sweeps = paired(traces, task, workers, args)
            if not sweeps:
                continue
            lines = {
                s: [timeline(Trace(**t), models, table.tasks[task]) for t in mine]
                for s, mine in sweeps.items()
            }
            longest = max((line.total_hours for mine in lines.values() for line in mine), default=1.0)
            budget = quantile(np.array([right_for_good(line, truth) for line in lines["random"]]), 0.9)
            grid = np.linspace(0, min(longest, 3 * budget) if np.isfinite(budget) else longest, 300)
            for strategy, mine in lines.items():
                if mine:
                    shares = [share_right(mine, truth, x).mean() for x in grid]
                    ax.plot(
                        grid,
                        shares,
                        label=strategy,
                        color=colours[strategy],
                        lw=1.6 if strategy in ("random", "default") else 1.0,
                    )
            floor = floors(table, task, workers)["busy_sweep"]
            if floor is not None:
                ax.axvspan(
                    0,
                    floor,
                    color="grey",
                    alpha=0.12,
                    lw=0,
                    label="floor (W busy)" if ax is axes[0][-1] else None,
                )
            if np.isfinite(budget):
                ax.axvline(budget, color="grey", ls="--", lw=0.8)
                ax.text(budget, 0.02, " B", color="grey")
            ax.axhline(0.9, color="grey", ls=":", lw=0.8)
            ax.set_ylim(0, 1.02)
            ax.set_title(
                f"{task} T={table.settings.T}, W={workers}: right winner {'/'.join(truth.co_winners)}"
            )
            ax.set_xlabel("busy worker-hours")
            ax.set_ylabel("share of seeds naming a right winner")
    axes[0][-1].legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def regret_figure(result: dict[str, Any], args: argparse.Namespace, path: Path) -> None:
    """Normalized regret of the named winner's best configuration (its interquartile mean over
    seeds, with the bootstrap 95% interval) at fractions of B, one panel per task and W."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = dict(zip(args.strategies, plt.get_cmap("tab20").colors, strict=False))
    rows, cols = len(args.tasks), len(args.workers)
    figure, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 3.8 * rows), squeeze=False)
    for r, task in enumerate(args.tasks):
        for c, workers in enumerate(args.workers):
            ax = axes[r][c]
            verdict = result[task].get(f"W={workers}")
            if verdict is None:
                continue
            for offset, (name, row) in enumerate(verdict["strategies"].items()):
                curve = row.get("regret_normalized")
                if curve is None:
                    continue
                x = np.array([float(f) for f in curve]) * (1 + 0.02 * offset)  # apart, to be read
                y = np.array([v["iqm"] for v in curve.values()])
                low = y - np.array([v["interval"][0] for v in curve.values()])
                high = np.array([v["interval"][1] for v in curve.values()]) - y
                ax.errorbar(x, y, yerr=[low, high], label=name, color=colours[name], marker="o", ms=3, capsize=2,
                            lw=1.6 if name in ("random", "default") else 1.0)  # fmt: skip
            ax.set_xscale("log")
            ax.set_ylim(-0.02, 1.02)
            ax.set_title(f"{task}, W={workers}")
            ax.set_xlabel("share of B (random's 90%-right worker-hours)")
            ax.set_ylabel("normalized regret (IQM)")
    if axes[0][-1].get_legend_handles_labels()[0]:
        axes[0][-1].legend(loc="upper right", fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)

"""A first sweep's portfolio, learned from the recorded tables: per model, an ordered list of
configurations that did well across the tables' tasks (Wistuba et al. 2015's greedy portfolio;
Syne Tune's `ZeroShotTransfer`), for a study whose database holds no other task to transfer from.

Each configuration is a position within each searched range (`UnitTrial`'s coordinates: what
carries a configuration between spaces whose ranges differ, as a transfer does), taken from the
tables' Sobol designs. A candidate is scored on every (table, task) it is learned from by the
quantile rank, among the model's designs there, of the design nearest to it (0: the best, 1: the
worst or failed), over the names both search. The portfolio is built greedily: each next entry is
the candidate that lowers most the mean over those tasks of the best rank the portfolio reaches.

    python -m benchmarks.search_tables.portfolio --ship     # every task: the service's portfolio
    python -m benchmarks.search_tables.portfolio --without copying --out FILE   # one task held out

The replay judges a task with the portfolio learned without any table's runs of it (`learned`).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.search_tables.design import SOBOL_SEED, base_spec, searched
from benchmarks.search_tables.loading import load
from benchmarks.search_tables.record import ROOT
from benchmarks.search_tables.verdicts import ground_truth
from sweeper.run.search.portfolio import SHIPPED

TABLES = ("blackbox", "blackbox-hidden", "blackbox-algorithmic")  # the CPU tables, under results/
ENTRIES = 4  # configurations per model: a quarter of the smallest study budget a sweep is replayed at


@dataclass(frozen=True)
class Designs:
    """One (table, task, model): its Sobol designs' positions and quantile ranks."""

    where: str  # "blackbox/denoise"
    labels: list[str]  # each design's, "sobol 12"
    units: list[dict[str, float]]
    ranks: np.ndarray  # 0: the best design, 1: the worst; a failed design ranks 1

    def rank_of(self, units: dict[str, float]) -> float:
        """The rank of the design nearest to `units` over the names both search."""
        shared = [n for n in units if n in self.units[0]]
        if not shared:
            return 1.0
        mine = np.array([[d[n] for n in shared] for d in self.units])
        distance = np.abs(mine - np.array([units[n] for n in shared])).sum(axis=1)
        return float(self.ranks[int(np.argmin(distance))])


@cache
def recorded(folder: str) -> dict[tuple[str, str], Designs]:
    """Every (task, model) of one recorded table (a folder under benchmarks/results/)."""
    table = load(ROOT / "benchmarks" / "results" / folder, None)
    out = {}
    for task, models in table.curves.items():
        spec = base_spec(task, table.settings, list(models))
        truth = ground_truth(table, task)
        for model, curves in models.items():
            names = searched(spec, model)
            engine = torch.quasirandom.SobolEngine(
                len(names), scramble=True, seed=SOBOL_SEED + zlib.crc32(model.encode())
            )
            indexes = [int(d["label"].split()[1]) for d in curves.designs if d["label"].startswith("sobol ")]
            points = engine.draw(max(indexes) + 1, dtype=torch.float64).tolist() if indexes else []
            rows = [k for k, d in enumerate(curves.designs) if d["label"].startswith("sobol ")]
            values = table.sign(task) * truth.objective[model][rows]
            order = np.argsort(np.where(np.isnan(values), np.inf, values), kind="stable")
            ranks = np.empty(len(rows))
            ranks[order] = np.arange(len(rows)) / max(1, len(rows) - 1)
            ranks[np.isnan(values)] = 1.0
            units = [dict(zip(names, points[i], strict=True)) for i in indexes]
            out[(task, model)] = Designs(f"{folder}/{task}", [f"sobol {i}" for i in indexes], units, ranks)
    return out


def learned(model: str, without: str | None = None, entries: int = ENTRIES) -> list[dict[str, Any]]:
    """`model`'s portfolio from every recorded table's tasks but `without`: the greedy order of
    candidates, each with the mean best rank the portfolio reaches once it is in."""
    tasks = [
        designs
        for folder in TABLES
        for (task, name), designs in recorded(folder).items()
        if name == model and task != without
    ]
    candidates = [
        (f"{d.where} {label}", units) for d in tasks for label, units in zip(d.labels, d.units, strict=True)
    ]
    if not candidates:
        return []
    scores = np.array([[t.rank_of(units) for t in tasks] for _, units in candidates])
    reached = np.ones(len(tasks))
    chosen: list[dict[str, Any]] = []
    for _ in range(min(entries, len(candidates))):
        means = np.minimum(scores, reached).mean(axis=1)
        pick = int(np.argmin(means))
        reached = np.minimum(reached, scores[pick])
        source, units = candidates[pick]
        chosen.append({"units": units, "from": source, "mean_best_rank": float(means[pick])})
    return chosen


def models() -> list[str]:
    return sorted({model for folder in TABLES for (_, model) in recorded(folder)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--without", help="a task whose runs, in every table, the portfolio does not learn from"
    )
    parser.add_argument("--ship", action="store_true", help=f"write the service's portfolio ({SHIPPED.name})")
    parser.add_argument("--out", type=Path, help="write the portfolio here (JSON)")
    args = parser.parse_args(argv)
    if args.ship and args.without:
        print(
            "error: the shipped portfolio learns from every task (--ship without --without)", file=sys.stderr
        )
        return 2
    data = {
        "command": "python -m benchmarks.search_tables.portfolio " + shlex.join(argv or sys.argv[1:]),
        "tables": [f"benchmarks/results/{folder}" for folder in TABLES],
        "without": args.without,
        "entries": ENTRIES,
        "models": {model: learned(model, args.without) for model in models()},
    }
    for model, entries in data["models"].items():
        print(f"{model}: " + "; ".join(f"{e['from']} ({e['mean_best_rank']:.3f})" for e in entries))
    for path in [*([SHIPPED] if args.ship else []), *([args.out] if args.out else [])]:
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

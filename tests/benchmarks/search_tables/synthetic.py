"""A tiny recorded table with curves written by formula instead of training: the benchmark's
real design (8 Sobol points and the papers' points per model, 2 seeds, trials of 600 iterations
reported every 100), with a clear order of the models and a clear effect of the learning rate."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.design import new_table

QUALITY = {"scornn": 0.02, "ncgru": 0.06, "goru": 0.10, "gru": 0.14}  # each model's floor at its best lr
SPEED = {"gru": 0.010, "goru": 0.020, "scornn": 0.012, "ncgru": 0.018}  # worker-seconds per iteration
SETTINGS = tables.Settings(iterations=600, eval_every=100)
CONFIGS = 8


def value(model: str, lr: float, step: int, seed: int) -> float:
    """A decaying curve whose floor is the model's quality, worse away from lr = 3e-3."""
    floor = QUALITY[model] + 0.03 * abs(math.log10(lr / 3e-3)) + 0.001 * seed
    return floor + (0.25 - floor) * math.exp(-step / 150)


def synthetic_table(folder: Path, configs: int = CONFIGS) -> tables.Table:
    table = new_table(SETTINGS, configs, 2, list(tables.TASK_NAMES), list(tables.MODELS))
    table.versions.append(
        {"device": "cpu", "machine": "synthetic", "trainables": "synthetic", "torch": "-", "files": {}}
    )
    for models in table.curves.values():
        for model, curves in models.items():
            for c, design in enumerate(curves.designs):
                for s in range(table.seeds):
                    for e, step in enumerate(table.steps):
                        curves.objective[c, s, e] = value(model, design["params"]["lr"], int(step), s)
                        curves.seconds[c, s, e] = curves.wall[c, s, e] = 1.0 + SPEED[model] * step
                    curves.status[c, s] = tables.COMPLETE
                    curves.version[c, s] = 0
                    curves.ended[c, s] = curves.seconds[c, s, -1]
    tables.write(table, folder)
    return tables.read(folder)


def run_seconds(model: str, step: int) -> float:
    return 1.0 + SPEED[model] * step


def lowest(curves: tables.Curves) -> int:
    return int(np.argmin([abs(math.log10(d["params"]["lr"] / 3e-3)) for d in curves.designs]))

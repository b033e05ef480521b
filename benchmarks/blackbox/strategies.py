"""The search benchmark's sweep and the strategies it compares: shared by the recorded table
(whose design is drawn over this sweep's spaces), its replay, and the real-training benchmark.

Every model runs at one hidden size that trains on a CPU core; its training and orthogonal
settings are searched over ranges that hold both papers' values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from benchmarks.blackbox.table import MODELS, Settings
from sweeper.spec.loading import parse_spec
from sweeper.spec.sweep import SweepSpec


@dataclass(frozen=True)
class Strategy:
    sampler: str  # the spec's sampler; "old" is independent TPE, set on the studies
    scheduler: str = "asha"
    paper_points: bool = False
    warm: bool = False
    race: bool = False
    late_grace: bool = False  # ASHA's first rung at a third of a trial, not at the first report


STRATEGIES = {  # in the order they run: the comparison that matters most first
    "random": Strategy("random", scheduler="none"),
    "default": Strategy("tpe", paper_points=True),
    "old": Strategy("old"),
    "all": Strategy("tpe", paper_points=True, warm=True, race=True),
    "+points": Strategy("old", paper_points=True),
    "+race": Strategy("old", race=True),
    "+warm": Strategy("old", warm=True),
    "+tpe": Strategy("tpe"),
    "+gp": Strategy("gp"),
    "+grace": Strategy("tpe", paper_points=True, late_grace=True),
}


def sweep_spec(
    task: str, strategy: Strategy, seed: int, settings: Settings, trials: int, **extra: Any
) -> SweepSpec:
    """The benchmark's sweep of `task` under `strategy`; `extra` overrides top-level spec entries
    (a scheduler's reduction factor, a race's rung) when a default is being tuned."""
    raw: dict[str, Any] = {
        "name": f"search-{task}",
        "task": {"name": task, "settings": {"T": settings.T, "valid_size": settings.valid_size}},
        "models": list(MODELS),
        "params": {
            "iterations": settings.iterations,
            "eval_every": settings.eval_every,
            "batch_size": settings.batch_size,
            "hidden_size": settings.hidden,
            "lr": {"float": [1e-4, 3e-2], "log": True},
            "optimizer": {"choice": ["adam", "rmsprop_tf"]},
            "orth_lr": {"float": [1e-5, 1e-2], "log": True},
            "orth_optimizer": {"choice": ["adam", "rmsprop_tf"]},
        },
        "per_model": {
            "scornn": {"rho": {"fraction": [0.0, 1.0]}},
            "ncgru": {
                "rho": {"fraction": [0.1, 1.0]},
                "orthogonal": {"choice": ["c", "rc"]},
                "neumann_order": {"choice": [0, 1, 2, 3]},
                "reset_interval": {"int": [10, 100], "log": True},
            },
        },
        "sampler": {
            "name": "tpe" if strategy.sampler == "old" else strategy.sampler,
            "seed": seed,
            "paper_points": strategy.paper_points,
        },
        "scheduler": {
            "name": strategy.scheduler,
            "grace_period": settings.iterations // 3 if strategy.late_grace else settings.eval_every,
            "reduction_factor": 3,
        },
        "budget": {"trials": trials, "allocate": "race" if strategy.race else "equal"},
        "seed": seed,
    }
    for key, value in extra.items():
        raw[key] = {**raw[key], **value} if isinstance(raw.get(key), dict) else value
    return parse_spec(json.dumps(raw), f"benchmark {task}")

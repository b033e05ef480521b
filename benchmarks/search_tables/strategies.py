"""The search benchmark's sweep and the strategies it compares: shared by the recorded table
(whose design is drawn over this sweep's spaces, `space`), its replay, and the real-training
benchmark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from benchmarks.search_tables.space import raw_space
from benchmarks.search_tables.table import Settings
from sweeper.spec.loading import parse_spec
from sweeper.spec.sweep import SweepSpec


@dataclass(frozen=True)
class Strategy:
    sampler: str  # the spec's sampler; "old" is independent TPE, set on the studies
    scheduler: str = "asha"
    paper_points: bool = False
    warm: bool = False
    allocate: str = "equal"  # the spec's (equal, race), or the benchmark's own (top2, maxucb)
    late_grace: bool = False  # ASHA's first rung at a third of a trial, not at the first report
    judge_points: bool = (
        False  # a papers' point trailing its study at a rung stops (scheduler.judge_paper_points)
    )
    transfer: bool = False  # first the other tasks' best configurations, from their earlier sweeps
    multivariate: bool = True  # TPE models the values jointly (`sampler.multivariate`), else each alone
    first: bool = False  # a lab's first sweep: no other task's sweep to transfer from, so the portfolio
    points_last: bool = False  # the papers' points after the transferred or portfolio points, not before
    priced: bool = True  # priced at launch, so the dearest model's trial starts first (`--no-price`: not)

    @property
    def spec_allocate(self) -> str:
        """What the spec says: an allocation of the benchmark's own runs on equal budgets."""
        return self.allocate if self.allocate in ("equal", "race") else "equal"


STRATEGIES = {  # in the order they run: the comparison that matters most first
    "random": Strategy("random", scheduler="none"),
    "default": Strategy("tpe", paper_points=True),
    "points-judged": Strategy("tpe", paper_points=True, judge_points=True),
    "transfer": Strategy("tpe", paper_points=True, transfer=True),
    "race": Strategy("tpe", paper_points=True, allocate="race"),
    "top2": Strategy("tpe", paper_points=True, allocate="top2"),
    "maxucb": Strategy("tpe", scheduler="none", paper_points=True, allocate="maxucb"),
    "old": Strategy("old"),
    "all": Strategy("tpe", paper_points=True, warm=True, allocate="race"),
    "+points": Strategy("old", paper_points=True),
    "+race": Strategy("old", allocate="race"),
    "+warm": Strategy("old", warm=True),
    "+tpe": Strategy("tpe"),
    "+gp": Strategy("gp"),
    "+grace": Strategy("tpe", paper_points=True, late_grace=True),
    "transfer-indep": Strategy("tpe", paper_points=True, transfer=True, multivariate=False),
    # the default one spec setting away, as the service runs each (`OFFERED`)
    "race-indep": Strategy("tpe", paper_points=True, transfer=True, multivariate=False, allocate="race"),
    "random-points": Strategy("random", paper_points=True, transfer=True),
    "gp-points": Strategy("gp", paper_points=True, transfer=True),
    "points-indep": Strategy("tpe", paper_points=True, multivariate=False),
    # the default in a database that holds no other task: the recorded tables' portfolio instead
    "first-sweep": Strategy("tpe", paper_points=True, transfer=True, multivariate=False, first=True),
    # the benchmark's own variants of a first sweep: its papers' points last, and unpriced (`--no-price`)
    "first-points-last": Strategy(
        "tpe", paper_points=True, transfer=True, multivariate=False, first=True, points_last=True
    ),
    "first-unpriced": Strategy(
        "tpe", paper_points=True, transfer=True, multivariate=False, first=True, priced=False
    ),
}
OFFERED = {  # the searches a user chooses with one setting, and the strategy that replays each
    "the default": "transfer-indep",
    "sampler.multivariate: true": "transfer",
    "allocate: race": "race-indep",
    "sampler.name: random": "random-points",
    "sampler.name: gp": "gp-points",
    "sampler.transfer: false": "points-indep",
}


def sweep_spec(
    task: str, strategy: Strategy, seed: int, settings: Settings, trials: int, models: list[str], **extra: Any
) -> SweepSpec:
    """The benchmark's sweep of `task` and `models` under `strategy`; `extra` overrides top-level
    spec entries (a scheduler's reduction factor, a race's rung) when a default is being tuned."""
    raw: dict[str, Any] = {
        "name": f"search-{task}",
        **raw_space(task, settings, models),
        "sampler": {
            "name": "tpe" if strategy.sampler == "old" else strategy.sampler,
            "seed": seed,
            "paper_points": strategy.paper_points,
            "transfer": strategy.transfer,
            "multivariate": strategy.multivariate,
        },
        "scheduler": {
            "name": strategy.scheduler,
            "grace_period": settings.iterations // 3 if strategy.late_grace else settings.eval_every,
            "reduction_factor": 3,
            "judge_paper_points": strategy.judge_points,
        },
        "budget": {"trials": trials, "allocate": strategy.spec_allocate},
        "seed": seed,
    }
    for key, value in extra.items():
        raw[key] = {**raw[key], **value} if isinstance(raw.get(key), dict) else value
    return parse_spec(json.dumps(raw), f"benchmark {task}")

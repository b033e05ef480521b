"""The verdict's stated chance made to match how often such a verdict is right.

The odds (`sweeper.results.odds`) model seed noise and how much further each model's search could
reach; on the recorded tables' replayed sweeps that model understates its chance where the answer
was found early (the default, 0.5 stated where 9 in 10 were right) and overstates it where one
narrow configuration wins and the search missed it (multivariate TPE on parenthesis). At a
sweep's end, a logistic map of the stated chance's logit, whether the verdict names a tie, and
which search the sweep ran (`SEARCHES`: the default, or one setting away from it) turns it into the
chance such verdicts were right on the replays. Of the inputs and uses tried, these judged best
leave one task out; the share of the sweep ended, whether a model had no complete trial, the odds
without their search term and the trials per model added nothing, and a map applied mid-sweep
agreed with the hit rate less often than the model's own odds there, so a running sweep states
those. It was learned from every recorded task's replayed end-of-sweep verdicts
(`odds_calibration.json`: the replays and the command, in
`benchmarks/search_tables/odds_calibration.py`, which also judges it leave-one-task-out).
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

SHIPPED = Path(__file__).with_name("odds_calibration.json")
SEARCHES = (  # the default, then each search one spec setting away from it
    "the default",
    "sampler.multivariate: true",
    "allocate: race",
    "sampler.name: random",
    "sampler.name: gp",
    "sampler.transfer: false",
)
FEATURES = ("intercept", "logit stated", "tie", *(f"search: {s}" for s in SEARCHES[1:]))
CLIP = 1e-3  # a stated chance is taken within [CLIP, 1 - CLIP]: 20,000 draws resolve no finer


def features(stated: float, tie: bool, search: str) -> list[float]:
    """The map's inputs for one end-of-sweep verdict, in `FEATURES`' order."""
    if search not in SEARCHES:
        raise ValueError(f"unknown search {search!r} (known: {', '.join(SEARCHES)})")
    p = min(max(stated, CLIP), 1 - CLIP)
    return [1.0, math.log(p / (1 - p)), float(tie), *(float(search == s) for s in SEARCHES[1:])]


def search_of(sampler: Any, allocate: str) -> str:
    """Which of `SEARCHES` a sweep ran, from its spec's sampler and allocation; a spec several
    settings away takes the one whose verdicts it is likeliest to resemble (a race first, then the
    sampler), and CMA-ES the default's."""
    if allocate == "race":
        return "allocate: race"
    if sampler.name in ("random", "gp"):
        return f"sampler.name: {sampler.name}"
    if sampler.multivariate:
        return "sampler.multivariate: true"
    return "the default" if sampler.transfer else "sampler.transfer: false"


@cache
def shipped() -> tuple[float, ...] | None:
    """The shipped map's coefficients, None where the package holds none."""
    if not SHIPPED.is_file():
        return None
    data = json.loads(SHIPPED.read_text())
    if tuple(data["features"]) != FEATURES:
        raise ValueError(f"{SHIPPED} was learned on other features: {data['features']}")
    return tuple(data["coefficients"])


def calibrated(stated: float, tie: bool, search: str) -> float:
    """The chance that a verdict stating `stated` is right, by the shipped map (the stated chance
    itself where none is shipped)."""
    beta = shipped()
    if beta is None:
        return stated
    z = sum(b * x for b, x in zip(beta, features(stated, tie, search), strict=True))
    return 1 / (1 + math.exp(-z))

"""The odds a replayed sweep states while it runs and when it ends, judged by the table's truth:
what `sweeper status` would say after a quarter and half of the sweep's trials had ended, and
what the sweep ends with (`racing.stated_odds`, the service's own `odds`), each verdict kept as a
compact record (the share of trials ended, the stated chance to be right, whether it was, whether
it named a tie, the fewest complete trials of any model by then, whether the verdict warned that
the search may have missed a rival's best, `odds.few_draws`) for the odds' calibration to learn
from and judge (`odds_calibration`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchmarks.search_tables import racing
from benchmarks.search_tables import table as tables
from benchmarks.search_tables.strategies import STRATEGIES, sweep_spec
from benchmarks.search_tables.verdicts import Truth
from sweeper.results.odds import few_draws
from sweeper.spec.space import searched_count

FRACTIONS = (0.25, 0.5, 1.0)  # of the sweep's trials, in the order they ended
FIELDS = ("fraction", "stated", "right", "tie", "fewest_complete", "warned")


def searched_values(table: tables.Table, task: str, trials: int) -> dict[str, int]:
    """Each model's searched values in the benchmark's sweep of `task` (every strategy's alike)."""
    spec = sweep_spec(task, STRATEGIES["transfer-indep"], 0, table.settings, trials, list(table.curves[task]))
    return {m: searched_count(spec, m) for m in table.curves[task]}


def at_fraction(trace: dict[str, Any], fraction: float) -> dict[str, Any]:
    """The sweep as it stood when `fraction` of its trials had ended."""
    ends = sorted(t["end"] for t in trace["trials"])
    if not ends:
        return trace
    cut = ends[max(math.ceil(fraction * len(ends)) - 1, 0)]
    return {**trace, "trials": [t for t in trace["trials"] if t["end"] <= cut]}


def records(
    traces: list[dict[str, Any]],
    info: tables.TaskInfo,
    truth: Truth,
    relative: float,
    searched: dict[str, int],
) -> dict[str, list[float]]:
    """Every verdict the sweeps state at `FRACTIONS`, one entry per field (`FIELDS`); a sweep that
    names no winner yet (nothing learned beyond the baseline, or no complete trial) states none.
    `searched`: each model's searched values."""
    kept: dict[str, list[float]] = {name: [] for name in FIELDS}
    for trace in traces:
        for fraction in FRACTIONS:
            now = at_fraction(trace, fraction)
            odds = racing.stated_odds(now, info, relative)
            said = racing.verdict_outcome(odds, info, truth)
            if odds is None or said is None:
                continue
            done = [t["model"] for t in now["trials"] if t["state"] == "COMPLETE"]
            complete = {m: done.count(m) for m in searched}
            warned = bool(few_draws(complete, searched, odds.winner))
            values = (fraction, said["stated"], said["right"], said["tie"], min(complete.values()), warned)
            for name, value in zip(FIELDS, values, strict=True):
                kept[name].append(float(value))
    return kept


def by_fraction(kept: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Per share of the sweep: the verdicts stated, the share right and the mean stated chance."""
    fraction = np.array(kept["fraction"])
    out = {}
    for f in FRACTIONS:
        mine = fraction == f
        named = int(mine.sum())
        out[f"{f:g}"] = {
            "named": named,
            "right": float(np.mean(np.array(kept["right"])[mine])) if named else None,
            "mean_stated": float(np.mean(np.array(kept["stated"])[mine])) if named else None,
        }
    return out

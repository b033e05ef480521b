"""The odds a replayed sweep states while it runs and when it ends, judged by the table's truth:
what `sweeper status` would say after a quarter and half of the sweep's trials had ended, and
what the sweep ends with (`racing.stated_odds`, the service's own `odds`), each verdict kept as a
compact record (the share of trials ended, the stated chance to be right, whether it was, whether
it named a tie, the fewest complete trials of any model by then) for the odds' calibration to
learn from and judge (`odds_calibration`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchmarks.search_tables import racing
from benchmarks.search_tables import table as tables
from benchmarks.search_tables.verdicts import Truth

FRACTIONS = (0.25, 0.5, 1.0)  # of the sweep's trials, in the order they ended
FIELDS = ("fraction", "stated", "right", "tie", "fewest_complete")


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
    models: tuple[str, ...],
) -> dict[str, list[float]]:
    """Every verdict the sweeps state at `FRACTIONS`, one entry per field (`FIELDS`); a sweep that
    names no winner yet (nothing learned beyond the baseline, or no complete trial) states none."""
    kept: dict[str, list[float]] = {name: [] for name in FIELDS}
    for trace in traces:
        for fraction in FRACTIONS:
            now = at_fraction(trace, fraction)
            said = racing.verdict_outcome(racing.stated_odds(now, info, relative), info, truth)
            if said is None:
                continue
            complete = [t["model"] for t in now["trials"] if t["state"] == "COMPLETE"]
            for name, value in zip(
                FIELDS,
                (
                    fraction,
                    said["stated"],
                    said["right"],
                    said["tie"],
                    min(complete.count(m) for m in models),
                ),
                strict=True,
            ):
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

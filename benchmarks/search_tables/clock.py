"""One clock for the whole table: every configuration's pace measured again in as few sittings
as it takes, each sitting scaled onto the first by an anchor configuration timed at its start.

The recorded runs' worker-seconds come from several sessions on machines of different speed and
from moments with other work beside the recorder, so a configuration recorded on a slow day
looked expensive to every strategy that drew it, and the papers' points, recorded first, most of
all. A configuration's step costs the same throughout a run (fixed sequence length and batch), so
its first `EVALUATIONS` evaluations, trained again, give its pace: the replay's clock puts a run's
evaluation e at the first evaluation's measured time plus e intervals at the measured pace, its
last interval stretched as the recorded run's was (the test set is evaluated there too).

Two files beside the table: `timing.json` (each sitting's code version, machine, date and its
anchor's pace) and `timing.npz` (per task and model, over [configuration]: the measured
worker-seconds at each of the first evaluations, and the sitting that measured them).
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.search_tables import table as tables

TIMING_META, TIMING = "timing.json", "timing.npz"
EVALUATIONS = 3  # measured per configuration: the pace is read over the last two intervals


@dataclass
class Timing:
    evaluations: int
    sittings: list[dict[str, Any]]  # each with "anchor_pace", the anchor's seconds per evaluation
    measured: dict[str, dict[str, np.ndarray]]  # task -> model -> [configuration, evaluation]
    sitting: dict[str, dict[str, np.ndarray]]  # task -> model -> [configuration], -1 where not yet
    reasons: dict[str, str] = field(default_factory=dict)  # "task/model/configuration" -> why not

    @classmethod
    def empty(cls, table: tables.Table) -> Timing:
        measured, sitting = {}, {}
        for task, models in table.curves.items():
            for model, curves in models.items():
                configs = len(curves.designs)
                measured.setdefault(task, {})[model] = np.full((configs, EVALUATIONS), np.nan)
                sitting.setdefault(task, {})[model] = np.full(configs, -1, dtype=np.int16)
        return cls(EVALUATIONS, [], measured, sitting)

    def pending(self, table: tables.Table) -> list[tuple[str, str, int]]:
        """(task, model, configuration) with a recorded run and no timing yet, in design order
        across the table."""
        longest = max(len(s) for models in self.sitting.values() for s in models.values())
        return [
            (task, model, index)
            for index in range(longest)
            for task, models in self.sitting.items()
            for model, sittings in models.items()
            if index < len(sittings)
            and sittings[index] < 0
            and (table.curves[task][model].status[index] != tables.MISSING).any()
        ]

    def pace(self, task: str, model: str) -> np.ndarray:
        """Measured worker-seconds on the first sitting's clock, [configuration, evaluation]."""
        anchors = np.array([s["anchor_pace"] for s in self.sittings] + [np.nan])
        sitting = self.sitting[task][model]
        return self.measured[task][model] * (anchors[0] / anchors[sitting])[:, None]


def read_timing(folder: Path, table: tables.Table) -> Timing:
    """The table's timing, empty where nothing was measured yet; refused when it was measured for
    another design."""
    timing = Timing.empty(table)
    if not (folder / TIMING_META).exists():
        return timing
    meta = json.loads((folder / TIMING_META).read_text())
    timing.sittings, timing.reasons = meta["sittings"], meta["reasons"]
    if meta["designs"] != {t: {m: len(c.designs) for m, c in ms.items()} for t, ms in table.curves.items()}:
        raise tables.TableMismatch(f"{folder / TIMING_META} was measured for another design than the table's")
    with np.load(folder / TIMING) as stored:
        for task, models in timing.measured.items():
            for model in models:
                models[model] = stored[f"{task}.{model}.measured"]
                timing.sitting[task][model] = stored[f"{task}.{model}.sitting"]
    return timing


def write_timing(timing: Timing, folder: Path) -> None:
    meta = {
        "evaluations": timing.evaluations,
        "designs": {t: {m: len(s) for m, s in ms.items()} for t, ms in timing.sitting.items()},
        "sittings": timing.sittings,
        "reasons": timing.reasons,
    }
    arrays = {
        f"{task}.{model}.{name}": getattr(timing, name)[task][model]
        for task, models in timing.sitting.items()
        for model in models
        for name in ("measured", "sitting")
    }
    tables._replace(folder / TIMING_META, lambda path: path.write_text(json.dumps(meta, indent=1) + "\n"))
    tables._replace(folder / TIMING, lambda path: np.savez_compressed(path, **arrays))


def on_one_clock(table: tables.Table, timing: Timing) -> tables.Table:
    """The table with every run's worker-seconds on the timing's clock; refused while a recorded
    configuration is not yet measured."""
    curves: dict[str, dict[str, tables.Curves]] = {}
    for task, models in table.curves.items():
        for model, c in models.items():
            recorded = (c.status != tables.MISSING).any(axis=1)
            missing = np.flatnonzero(recorded & (timing.sitting[task][model] < 0))
            if missing.size:
                raise tables.TableMismatch(
                    f"{task}/{model}: {missing.size} recorded configurations are not re-timed yet "
                    "(python -m benchmarks.search_tables.retime)"
                )
            clock = _evaluation_times(c, timing.pace(task, model))
            reported = np.isfinite(c.objective)
            seconds = np.where(reported, clock[:, None, :], np.nan)
            curves.setdefault(task, {})[model] = tables.Curves(
                c.designs, c.objective, seconds, c.wall, c.status, c.version, _ends(c, clock, reported)
            )
    return dataclasses.replace(table, curves=curves)


def _evaluation_times(c: tables.Curves, pace: np.ndarray) -> np.ndarray:
    """[configuration, evaluation]: measured where measured, then on at the measured pace, the
    last interval as much longer than the others as it was in the recorded runs."""
    evaluations, measured = c.objective.shape[2], pace.shape[1]
    step = (pace[:, -1] - pace[:, 0]) / (measured - 1)
    clock = pace[:, :1] + np.arange(evaluations)[None, :] * step[:, None]
    clock[:, :measured] = pace[:, :evaluations]
    if evaluations > measured:
        s = c.seconds
        with np.errstate(invalid="ignore", divide="ignore"):
            last = (s[:, :, -1] - s[:, :, -2]) / (s[:, :, -2] - s[:, :, -3])
        stretch = np.nan_to_num(_nanmedian(last, axis=1), nan=1.0)
        clock[:, -1] = clock[:, -2] + step * stretch
    return clock


def _ends(c: tables.Curves, clock: np.ndarray, reported: np.ndarray) -> np.ndarray:
    """Each run's end on the new clock: after its last report by the recorded gap, scaled as its
    last report was; a run that failed before any report, scaled as the model's first reports."""
    last = reported.sum(axis=2) - 1
    configs = np.arange(c.status.shape[0])[:, None]
    at = np.maximum(last, 0)
    recorded_last = np.take_along_axis(c.seconds, at[:, :, None], axis=2)[:, :, 0]
    new_last = clock[configs, at]
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = new_last / recorded_last
        first = _nanmedian((clock[:, :1] / c.seconds[:, :, 0]).ravel(), axis=0)
        ends = np.where(last >= 0, new_last + (c.ended - recorded_last) * scale, c.ended * first)
    return np.where(c.status == tables.MISSING, np.nan, ends)


def _nanmedian(values: np.ndarray, axis: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a slice with nothing finite is NaN
        return np.nanmedian(values, axis=axis)


def clock_text(folder: Path) -> str:
    """Which clock a replay of the table in `folder` runs on, in words."""
    if not (folder / TIMING_META).exists():
        return "each run's own recorded worker-seconds"
    sittings = json.loads((folder / TIMING_META).read_text())["sittings"]
    where = "; ".join(f"{s['machine']}, {s['device']}, {s['first_run']}" for s in sittings)
    return f"every configuration re-timed in {len(sittings)} sitting{'s' * (len(sittings) != 1)} ({where})"


def clock_noise(folder: Path) -> float:
    """How much one timing of a configuration scatters on the clock, on the log scale: the spread
    of the anchors timed side by side in each sitting (one per worker process), pooled. The replay
    scatters each configuration's pace by it, seed by seed, so its intervals hold the clock's noise."""
    if not (folder / TIMING_META).exists():
        return 0.0
    sittings = json.loads((folder / TIMING_META).read_text())["sittings"]
    groups = [np.log(s["anchor_paces"]) for s in sittings if len(s.get("anchor_paces", [])) > 1]
    dof = sum(len(g) - 1 for g in groups)
    if not dof:
        return 0.0
    return float(np.sqrt(sum(float(np.sum((g - g.mean()) ** 2)) for g in groups) / dof))

"""The recorded table: every run's learning curve, as data in the repository.

Two files in one folder: `table.json` (the settings, each task's settings, objective and baseline,
each (task, model)'s design and space, the code versions and machines that recorded it, why a run
failed) and `curves.npz` (per task and
model, arrays over [configuration, seed, evaluation]: the objective, the worker-seconds since the
trial's start, the wall seconds; and over [configuration, seed]: the run's status, the code
version that recorded it and its worker-seconds at its end, the moment a failed run failed). A run not yet recorded is `MISSING`, its values NaN; a run that
diverged keeps the evaluations before it.

The table is written after every run, metadata first and then the arrays, each by an atomic
rename: a recorder stopped between the two leaves arrays shorter than the design, which read as
runs still missing.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

MODELS = ("gru", "goru", "scornn", "ncgru")  # the benchmark's own; a table may hold any registered
TASK_NAMES = ("copying", "denoise")
FORMAT = 2  # format 1 (one objective for every task, settings implied) is read too
MISSING, COMPLETE, DIVERGED, FAILED = 0, 1, 2, 3
STATUS_NAMES = {MISSING: "missing", COMPLETE: "complete", DIVERGED: "diverged", FAILED: "failed"}
META, CURVES = "table.json", "curves.npz"
ARRAYS = ("objective", "seconds", "wall")  # [configuration, seed, evaluation]
RUN_ARRAYS = ("status", "version", "ended")  # [configuration, seed]


class TableMismatch(ValueError):
    """The table was recorded for other settings, another space or another code version."""


@dataclass(frozen=True)
class Settings:
    """What every trial of the benchmark shares; a recorded table is valid for these alone.

    The design: every model at one `hidden` size, or (`hidden=None`) its hidden size searched
    over its task's shipped range times `hidden_scale` (`space`)."""

    T: int = 100
    hidden: int | None = 32
    batch_size: int = 32
    valid_size: int = 200
    iterations: int = 2000
    eval_every: int = 100
    hidden_scale: float | None = None

    def __post_init__(self) -> None:
        if (self.hidden is None) == (self.hidden_scale is None):
            raise TableMismatch(
                "a table fixes the hidden size (hidden) or scales each config's range (hidden_scale), "
                f"one of them: asked hidden={self.hidden}, hidden_scale={self.hidden_scale}"
            )
        if self.hidden_scale is not None and not 0 < self.hidden_scale <= 4:
            raise TableMismatch(f"hidden_scale {self.hidden_scale} is outside (0, 4]")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def steps(self) -> np.ndarray:
        """The iterations each run reports at."""
        steps = list(range(self.eval_every, self.iterations + 1, self.eval_every))
        if steps[-1] != self.iterations:
            steps.append(self.iterations)
        return np.array(steps)

    @property
    def design(self) -> str:
        if self.hidden is not None:
            return f"every model at hidden size {self.hidden}"
        return f"hidden sizes searched over each config's range x {self.hidden_scale:g}"


@dataclass
class Curves:
    """One (task, model): its design and every run's curve."""

    designs: list[dict[str, Any]]  # {"label", "params", "config"}, in recording order
    objective: np.ndarray
    seconds: np.ndarray  # worker-seconds since the trial started: CPU time on a CPU, wall time on a GPU
    wall: np.ndarray
    status: np.ndarray
    version: np.ndarray
    ended: np.ndarray

    @classmethod
    def empty(cls, designs: list[dict[str, Any]], seeds: int, evaluations: int) -> Curves:
        shape = (len(designs), seeds, evaluations)
        return cls(
            designs,
            np.full(shape, np.nan),
            np.full(shape, np.nan),
            np.full(shape, np.nan),
            np.zeros(shape[:2], dtype=np.int8),
            np.full(shape[:2], -1, dtype=np.int8),
            np.full(shape[:2], np.nan),
        )

    def grown(self, designs: list[dict[str, Any]], seeds: int) -> Curves:
        """The same runs within a longer design or more seeds; the new runs missing."""
        bigger = Curves.empty(designs, seeds, self.objective.shape[2])
        c, s = self.status.shape
        for name in (*ARRAYS, *RUN_ARRAYS):
            getattr(bigger, name)[:c, :s] = getattr(self, name)
        return bigger

    @property
    def paper(self) -> np.ndarray:
        """Which configurations are papers' points."""
        return np.array([not d["label"].startswith("sobol ") for d in self.designs], dtype=bool)

    def first(self, configs: int) -> Curves:
        """The design up to its `configs`-th Sobol point (one or more), with its runs: the papers'
        points (which come first) and the design a table of `configs` points draws, since a
        design's first n points are its n-point design."""
        end = int(np.searchsorted(np.cumsum(~self.paper), configs)) + 1
        return Curves(self.designs[:end], *(getattr(self, name)[:end] for name in (*ARRAYS, *RUN_ARRAYS)))


@dataclass(frozen=True)
class TaskInfo:
    """What a task's runs share: its settings, the metric they report and its direction, and
    the memoryless baseline where the task has one."""

    settings: dict[str, Any]
    objective: str
    mode: str  # "min" or "max"
    baseline: float | None

    def better(self, a: float, b: float) -> bool:
        """Whether value `a` beats value `b` in the task's direction (anything beats NaN)."""
        return math.isnan(b) or (a < b if self.mode == "min" else a > b)

    def learned(self, value: float) -> bool:
        """Whether a value beats the baseline (always, for a task without one)."""
        return self.baseline is None or self.better(value, self.baseline)


@dataclass
class Table:
    settings: Settings
    seeds: int
    tasks: dict[str, TaskInfo]
    spaces: dict[str, dict[str, dict[str, str]]]  # task -> model -> parameter -> range in words
    curves: dict[str, dict[str, Curves]]  # task -> model
    versions: list[dict[str, Any]] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)  # "task/model/configuration/seed" -> why it failed

    @property
    def baselines(self) -> dict[str, float | None]:
        return {task: info.baseline for task, info in self.tasks.items()}

    def sign(self, task: str) -> float:
        """+1 where lower is better, -1 where higher is: `sign * value` is a loss."""
        return 1.0 if self.tasks[task].mode == "min" else -1.0

    @property
    def steps(self) -> np.ndarray:
        return self.settings.steps

    def holds(self, configs: int, seeds: int, tasks: list[str], models: list[str]) -> bool:
        """Whether the table's design already holds every asked (task, model), `configs` Sobol
        points each and `seeds` seeds (else it grows, with the spec's code)."""
        pairs = [self.curves.get(t, {}).get(m) for t in tasks for m in models]
        if any(c is None for c in pairs):
            return False
        return seeds <= self.seeds and all(int((~c.paper).sum()) >= configs for c in pairs)

    def counts(self) -> dict[str, int]:
        """Runs by status over the whole table."""
        statuses = np.concatenate([c.status.ravel() for m in self.curves.values() for c in m.values()])
        return {STATUS_NAMES[k]: int((statuses == k).sum()) for k in STATUS_NAMES}

    def clocks(self) -> set[str]:
        """The devices and machines the recorded runs were timed on."""
        used = {int(v) for m in self.curves.values() for c in m.values() for v in np.unique(c.version)}
        return {
            f"{self.versions[v]['device']} ({self.versions[v].get('machine', '?')})" for v in used if v >= 0
        }


def read(folder: Path) -> Table:
    meta = json.loads((folder / META).read_text())
    if meta.get("format") not in (1, FORMAT):
        raise TableMismatch(
            f"{folder / META} is format {meta.get('format')}; this code reads format {FORMAT}"
        )
    settings = Settings(**meta["settings"])
    if meta["format"] == 1:  # every task minimised one objective, at the table's T and validation size
        infos = {
            task: {
                "settings": {"T": settings.T, "valid_size": settings.valid_size},
                "objective": meta["objective"],
                "mode": "min",
                "baseline": meta["baselines"][task],
            }
            for task in meta["designs"]
        }
    else:
        infos = meta["tasks"]
    evaluations = len(settings.steps)
    arrays: dict[str, np.ndarray] = {}
    if (folder / CURVES).exists():
        with np.load(folder / CURVES) as stored:
            arrays = dict(stored)
    curves: dict[str, dict[str, Curves]] = {}
    for task, models in meta["designs"].items():
        for model, designs in models.items():
            full = Curves.empty(designs, meta["seeds"], evaluations)
            key = f"{task}.{model}."
            if key + "status" in arrays:
                stored = Curves(designs, *(arrays[key + name] for name in (*ARRAYS, *RUN_ARRAYS)))
                if stored.status.shape[0] > len(designs) or stored.status.shape[1] > meta["seeds"]:
                    raise TableMismatch(
                        f"{folder / CURVES} holds more runs of {task}/{model} than its design"
                    )
                full = stored.grown(designs, meta["seeds"])
            curves.setdefault(task, {})[model] = full
    return Table(
        settings,
        meta["seeds"],
        {task: TaskInfo(**info) for task, info in infos.items()},
        meta["spaces"],
        curves,
        meta["versions"],
        meta["reasons"],
    )


def write(table: Table, folder: Path) -> None:
    """Metadata first, then the arrays, each replaced whole (see the module's docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {
        "format": FORMAT,
        "settings": table.settings.as_dict(),
        "seeds": table.seeds,
        "tasks": {task: asdict(info) for task, info in table.tasks.items()},
        "runs": table.counts(),
        "versions": table.versions,
        "spaces": table.spaces,
        "designs": {t: {m: c.designs for m, c in models.items()} for t, models in table.curves.items()},
        "reasons": table.reasons,
    }
    _replace(folder / META, lambda path: path.write_text(json.dumps(meta, indent=1) + "\n"))
    arrays = {
        f"{task}.{model}.{name}": getattr(curves, name)
        for task, models in table.curves.items()
        for model, curves in models.items()
        for name in (*ARRAYS, *RUN_ARRAYS)
    }
    _replace(folder / CURVES, lambda path: np.savez_compressed(path, **arrays))


def _replace(path: Path, write_to: Any) -> None:
    """Write `path` whole: to a temporary file, on disk, then renamed over it."""
    temporary = path.with_name(f".{path.stem}.writing{path.suffix}")
    write_to(temporary)
    with temporary.open("rb+") as written:
        os.fsync(written.fileno())
    os.replace(temporary, path)


def check_settings(table: Table, settings: Settings) -> None:
    """Refuse to record runs of other settings into the table, naming each difference."""
    differences = [
        f"{name}: the table's {theirs}, asked {ours}"
        for name, theirs in table.settings.as_dict().items()
        if theirs != (ours := settings.as_dict()[name])
    ]
    if differences:
        raise TableMismatch("the table was recorded with other settings: " + "; ".join(differences))


def check_spaces(table: Table, spaces: dict[str, dict[str, dict[str, str]]]) -> None:
    """Refuse a table whose designs were drawn over other spaces than the benchmark's today."""
    differences = []
    for task, models in spaces.items():
        for model, space in models.items():
            recorded = table.spaces.get(task, {}).get(model, {})
            for name in sorted(set(space) | set(recorded)):
                if space.get(name) != recorded.get(name):
                    differences.append(
                        f"{task}/{model} {name}: the table's {recorded.get(name, 'absent')}, "
                        f"the benchmark's {space.get(name, 'absent')}"
                    )
    if differences:
        raise TableMismatch("the table was recorded over another space: " + "; ".join(differences))


def cut(table: Table, configs: int) -> Table:
    """The table with every (task, model) cut to its papers' points and first `configs` Sobol
    points; the runs beyond are dropped, and a later recorder grows the design back to the same
    points. Refused where a design holds fewer."""
    held = {
        f"{task}/{model}": int((~c.paper).sum())
        for task, models in table.curves.items()
        for model, c in models.items()
    }
    short = [f"{name} ({n})" for name, n in held.items() if n < configs]
    if short:
        raise TableMismatch(f"cannot cut to {configs} Sobol points: {', '.join(short)} hold fewer")
    curves = {task: {m: c.first(configs) for m, c in models.items()} for task, models in table.curves.items()}
    kept = {f"{t}/{m}/{i}" for t, ms in curves.items() for m, c in ms.items() for i in range(len(c.designs))}
    reasons = {key: why for key, why in table.reasons.items() if key.rpartition("/")[0] in kept}
    return replace(table, curves=curves, reasons=reasons)


def whole_configurations(table: Table) -> Table:
    """The table as far as every seed of a configuration is recorded: a configuration with a
    seed still missing reads as missing on every seed, so a table still being recorded replays as
    a smaller table of the same design, every configuration's truth over the same seeds."""
    curves: dict[str, dict[str, Curves]] = {}
    for task, models in table.curves.items():
        for model, c in models.items():
            partial = (c.status == MISSING).any(axis=1) & (c.status != MISSING).any(axis=1)
            if partial.any():
                runs, evaluations = partial[:, None], partial[:, None, None]
                c = replace(
                    c,
                    **{name: np.where(evaluations, np.nan, getattr(c, name)) for name in ARRAYS},
                    status=np.where(runs, MISSING, c.status).astype(np.int8),
                    ended=np.where(runs, np.nan, c.ended),
                )
            curves.setdefault(task, {})[model] = c
    return replace(table, curves=curves)


def truncated(table: Table, iterations: int) -> Table:
    """The table as if every trial ran `iterations` (a prefix of each recorded run): a run that
    diverged later is complete here."""
    s = table.settings
    if iterations > s.iterations or iterations % s.eval_every:
        raise TableMismatch(
            f"trials of {iterations} iterations are no prefix of the table's: it reports every "
            f"{s.eval_every} up to {s.iterations}"
        )
    keep = iterations // s.eval_every
    curves: dict[str, dict[str, Curves]] = {}
    for task, models in table.curves.items():
        for model, c in models.items():
            whole = np.isfinite(c.objective[:, :, :keep]).all(axis=2) & (c.status != MISSING)
            status = np.where(whole, COMPLETE, c.status).astype(np.int8)
            ended = np.where(whole, c.seconds[:, :, keep - 1], c.ended)
            cut = Curves(
                c.designs,
                c.objective[:, :, :keep],
                c.seconds[:, :, :keep],
                c.wall[:, :, :keep],
                status,
                c.version,
                ended,
            )
            curves.setdefault(task, {})[model] = cut
    return replace(table, settings=Settings(**{**s.as_dict(), "iterations": iterations}), curves=curves)

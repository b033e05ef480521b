"""The papers' published configurations as a study's first trials.

Where `trainables/reference/results.yaml` holds a run of the sweep's task and model, its values
(the row's settings in our names, with its table's readings) are mapped into the study's space:
each searched value the paper gives is fixed for that trial, the rest are drawn as usual. A point
whose value lies outside the searched range, or whose stated task settings differ from the
sweep's, is skipped with the reason; only the sequence length may differ, where the papers ran
none at the sweep's. A sweep then never ends worse than the paper's setting trained here,
and its summary says by how much the search beat it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sweeper.papers.provenance import PAPER_SETTINGS
from sweeper.papers.table_runs import row_params
from sweeper.spec.sweep import SweepSpec
from sweeper.spec.values import FRACTION_SUFFIX, Choice, FloatRange, Fraction, Grid, IntRange
from trainables.reference.published import all_tables, row_label, table_rows
from trainables.registry import TASKS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PaperPoint:
    """A published configuration as a study's trial: which row, and its values in the study's
    parameters (the ones the paper leaves out are drawn by the sampler)."""

    label: str
    params: dict[str, Any]


def paper_points(spec: SweepSpec, model: str) -> tuple[list[PaperPoint], list[str]]:
    """The distinct published configurations of `model` on the sweep's task that fit its study's
    space, and why each other one was skipped. Runs at the sweep's stated task settings come
    first; where the papers ran none, those at the sequence length nearest the sweep's stand in
    (a paper's learning rate and size are its best guess for the task, whatever T)."""
    space = spec.space(model)
    if any(isinstance(value, Grid) for value in space.values()):
        return [], ["the study walks a grid"]
    task_settings = TASKS.get(spec.task.name).settings.model_validate(dict(spec.task.settings)).model_dump()
    rows = [
        (table, ref)
        for table in all_tables()
        if table.task == spec.task.name and table.not_runnable is None
        for ref in table_rows(table)
        if ref.model == model
    ]
    points, skipped, other_length = _points(rows, task_settings, space, spec, model, same_length=True)
    if not points and other_length:
        sweep_length = task_settings.get("T", 0)
        nearest = min(abs(ref.settings["T"] - sweep_length) for _, ref in other_length)
        closest = [
            (table, ref) for table, ref in other_length if abs(ref.settings["T"] - sweep_length) == nearest
        ]
        points, more, _ = _points(closest, task_settings, space, spec, model, same_length=False)
        skipped += more
    return points, list(dict.fromkeys(skipped))


def _points(
    rows: list[tuple[Any, Any]],
    task_settings: dict[str, Any],
    space: dict[str, Any],
    spec: SweepSpec,
    model: str,
    same_length: bool,
) -> tuple[list[PaperPoint], list[str], list[tuple[Any, Any]]]:
    """The rows' distinct points, the reasons of the rows skipped, and the rows that differ from
    the sweep only in their sequence length."""
    points: dict[tuple, PaperPoint] = {}
    skipped: list[str] = []
    other_length = []
    for table, ref in rows:
        length = f", T={ref.settings['T']}" if "T" in ref.settings else ""
        label = f"{table.paper} {table.table}, {row_label(ref)}{length}"
        try:
            values = row_params(table, ref)
            if "T" in ref.settings and same_length and values.get("task.T") != task_settings.get("T"):
                other_length.append((table, ref))
                raise ValueError(
                    f"the paper's T={values.get('task.T')}, the sweep's {task_settings.get('T')}"
                )
            params = _mapped(values, ref.settings, task_settings, space, spec, model)
        except ValueError as exc:
            skipped.append(f"{label}: {exc}")
            continue
        key = tuple(sorted(params.items()))
        if key not in points:
            points[key] = PaperPoint(label, params)
    return list(points.values()), skipped, other_length


def _mapped(
    values: dict[str, Any],
    stated: Any,
    task_settings: dict[str, Any],
    space: dict[str, Any],
    spec: SweepSpec,
    model: str,
) -> dict[str, Any]:
    """The row's values as the study's parameters; ValueError says why they do not fit."""
    for paper_name, ours in PAPER_SETTINGS.items():
        name = ours.removeprefix("task.")
        stated_here = (
            ours.startswith("task.") and ours != "task.T" and paper_name in stated and name in task_settings
        )
        if stated_here and values.get(ours) != task_settings[name]:
            raise ValueError(f"the paper's {name}={values.get(ours)}, the sweep's {task_settings[name]}")
    params: dict[str, Any] = {}
    for name, searched in space.items():
        if name not in values:
            continue
        value = values[name]
        if isinstance(searched, Fraction):
            fraction = value / values["hidden_size"]
            low, high = searched.bounds
            if not low <= fraction <= high:
                raise ValueError(
                    f"{name}={value} is {fraction:.2f} of the hidden size, outside [{low}, {high}]"
                )
            params[name + FRACTION_SUFFIX] = fraction
        elif isinstance(searched, IntRange | FloatRange | Choice):
            if not _inside(searched, value):
                raise ValueError(f"{name}={value} lies outside the sweep's {_shown(searched)}")
            params[name] = value
    if not params:
        raise ValueError("it gives none of the searched values")
    declared = spec.declared(model)
    hidden = params.get("hidden_size", space.get("hidden_size", declared["hidden_size"].default))
    if "rho" in params and isinstance(hidden, int) and params["rho"] > hidden:
        raise ValueError(f"rho={params['rho']} exceeds the sweep's hidden_size {hidden}")
    return params


def _inside(searched: IntRange | FloatRange | Choice, value: Any) -> bool:
    if isinstance(searched, Choice):
        return value in searched.choice
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(searched, IntRange):
        low, high = searched.int
        on_step = searched.log or (value - low) % searched.step == 0
        return float(value).is_integer() and low <= value <= high and on_step
    low, high = searched.float
    return low <= value <= high


def _shown(searched: IntRange | FloatRange | Choice) -> str:
    if isinstance(searched, Choice):
        return f"choices {list(searched.choice)}"
    low, high = searched.int if isinstance(searched, IntRange) else searched.float
    return f"range [{low}, {high}]"


def first_points(spec: SweepSpec) -> tuple[dict[str, list[tuple[str, dict[str, Any]]]], list[str]]:
    """Each model's papers' points as its study asks for them first (none where the spec turns
    them off), and a line for each; a point skipped is logged with why."""
    first: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    lines: list[str] = []
    if not spec.sampler.paper_points:
        return first, lines
    for model in spec.models:
        points, skipped = paper_points(spec, model)
        first[model] = [(point.label, point.params) for point in points]
        for point in points:
            shown = ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in point.params.items()
            )
            lines.append(f"  {model} starts from {point.label}: {shown}")
        for why in skipped:
            log.info("%s: a paper's point skipped: %s", model, why)
    return first, lines

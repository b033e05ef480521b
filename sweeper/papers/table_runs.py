"""The runs that reproduce one published table, built from the table's own recorded settings.

Each published row becomes one run configuration: the row's settings translated to ours, the
table's readings of what the paper leaves unstated on top, then (with a profile) shrunk for a CPU.
Rows that share their task settings (a table's T = 200 and T = 400 columns do not) form one part,
run as one sweep. A row whose settings cannot be translated is kept with the reason, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from sweeper.papers.parameters import STATED, Count, count_reading, counts
from sweeper.papers.provenance import INNER_SIZE, PAPER_SETTINGS, Setting, run_settings
from sweeper.spec.sweep import SweepSpec
from trainables.catalog import load_all
from trainables.hyperparams import TRAINING, validate_values
from trainables.reference.published import PublishedTable, Reference, published_table, row_label, table_rows
from trainables.registry import MODELS, TASKS

REQUIRED = ("hidden_size", "lr", "optimizer", "batch_size", "iterations")
PROFILES = ("smoke",)
# Task settings a table gives per model (a stack's inner size, the embedding width): a row's runs
# carry them, since a sweep's task settings are one for every model.
PER_ROW_TASK = (INNER_SIZE, "task.embedding_size")
# GPU share per trial, as the paper-scale specs in configs/ measured it; smoke runs ask for none.
GPU_SHARE = {"lstm": 0.125, "gru": 0.125}
ORTHOGONAL_GPU_SHARE = 0.5
DEFAULT_GPU_SHARE = 0.125


@dataclass(frozen=True)
class Row:
    """One published number and the run configuration that reproduces it."""

    index: int  # the row's position among its table's rows, stable across runs
    reference: Reference
    model: str
    params: dict[str, Any]  # our names, every value fixed; `task.` keys are task settings
    runs_of: int  # the index of the row whose runs this one reads (itself, or an earlier row
    # with the same configuration, such as one model's validation and test numbers)
    settings: tuple[Setting, ...] = ()  # every setting of the paper-scale run, with its source
    parameters: Count | None = None  # the paper-scale network's count beside its target

    @property
    def label(self) -> str:
        return row_label(self.reference)

    @property
    def task_settings(self) -> dict[str, Any]:
        return {k.removeprefix("task."): v for k, v in self.params.items() if k.startswith("task.")}


@dataclass(frozen=True)
class Part:
    """Rows sharing their task settings: one sweep."""

    task_settings: dict[str, Any]
    rows: list[Row]

    @property
    def suffix(self) -> str:
        """The paper's sequence length, when the table has several (a profile may shrink ours)."""
        length = self.rows[0].reference.settings.get("T")
        return "" if length is None else f"-T{length}"


@dataclass(frozen=True)
class Reproduction:
    table: PublishedTable
    parts: list[Part]
    skipped: list[tuple[Reference, str]] = field(default_factory=list)
    seeds: int = 3
    profile: str | None = None

    @property
    def rows(self) -> list[Row]:
        return [row for part in self.parts for row in part.rows]


class NotReproducible(ValueError):
    """The table, or every row of it, cannot be run; the message says why."""


def plan(
    paper: str,
    table: str,
    *,
    seeds: int | None = None,
    profile: str | None = None,
    only: dict[str, Any] | None = None,
) -> Reproduction:
    """The runs of `paper`'s `table`, over `seeds` seeds (default: the paper's count, else 3).

    `only` keeps the rows whose paper settings include these values (`{"T": 200}`).
    """
    try:
        entry = published_table(paper, table)
    except KeyError as exc:
        raise NotReproducible(exc.args[0]) from None
    if entry.not_runnable is not None:
        raise NotReproducible(f"{entry.paper} {entry.table} cannot be run: {entry.not_runnable}")
    if profile is not None and profile not in PROFILES:
        raise NotReproducible(f"unknown profile {profile!r}; profiles: {', '.join(PROFILES)}")
    load_all()
    task_fields = set(TASKS.get(entry.task).settings.model_fields)
    all_rows = table_rows(entry)
    built: dict[int, tuple[Reference, dict[str, Any]]] = {}
    skipped: list[tuple[Reference, str]] = []
    for index, ref in enumerate(all_rows):
        if only and any(ref.settings.get(k) != v for k, v in only.items()):
            continue
        try:
            built[index] = ref, row_params(entry, ref)
        except ValueError as exc:
            skipped.append((ref, str(exc)))
    counted = _counts(entry, built)
    rows: list[Row] = []
    for index, (ref, full) in built.items():
        count = counted[index]
        try:
            settings = (*run_settings(entry, ref, full), *count_reading(entry, ref.model, count))
            params = _shrunk(full, profile, task_fields)
        except ValueError as exc:
            skipped.append((ref, str(exc)))
            continue
        same = next((r.index for r in rows if r.model == ref.model and r.params == params), index)
        rows.append(Row(index, ref, ref.model, params, same, settings, count))
    if not rows:
        reasons = (
            "; ".join(dict.fromkeys(f"{ref.model}: {why}" for ref, why in skipped))
            or f"no row matches {only}"
        )
        raise NotReproducible(f"no row of {entry.paper} {entry.table} can be run ({reasons})")
    parts: dict[tuple, list[Row]] = {}
    for row in rows:
        shared = {k: v for k, v in row.task_settings.items() if f"task.{k}" not in PER_ROW_TASK}
        parts.setdefault(tuple(sorted(shared.items())), []).append(row)
    stated = {ref.settings["seeds"] for ref in all_rows if "seeds" in ref.settings}
    default_seeds = 2 if profile else (max(stated) if stated else 3)
    return Reproduction(
        entry,
        [Part(dict(key), part_rows) for key, part_rows in parts.items()],
        skipped,
        seeds or default_seeds,
        profile,
    )


def _counts(entry: PublishedTable, built: dict[int, tuple[Reference, dict[str, Any]]]) -> dict[int, Count]:
    """Each row's parameter count and target, among the rows of its task settings (its sweep)
    at the paper's sizes; a model's repeated rows (its validation and test numbers) count once."""
    keys = {
        i: (ref.model, tuple(sorted(full.items())), ref.settings.get(STATED))
        for i, (ref, full) in built.items()
    }
    first = {key: i for i, key in reversed(keys.items())}
    groups: dict[tuple, dict[int, tuple[str, dict[str, Any], int | None]]] = {}
    for index in first.values():
        ref, full = built[index]
        shared = tuple(
            sorted((k, v) for k, v in full.items() if k.startswith("task.") and k not in PER_ROW_TASK)
        )
        groups.setdefault(shared, {})[index] = ref.model, full, ref.settings.get(STATED)
    counted: dict[int, Count] = {}
    for group in groups.values():
        counted.update(counts(entry.task, group))
    return {index: counted[first[key]] for index, key in keys.items()}


def stated_settings(entry: PublishedTable, ref: Reference) -> dict[str, Any]:
    """What the paper and the table's readings state for the row, in our names, before anything
    is filled in or checked against the registries; ValueError names a setting without a
    counterpart."""
    params: dict[str, Any] = {}
    for name, value in ref.settings.items():
        if name in entry.unused:
            continue
        ours = PAPER_SETTINGS.get(name)
        if ours is None:
            raise ValueError(f"the paper's setting {name!r} has no counterpart in sweeper")
        params.update(_per_layer(ours, value) if isinstance(value, tuple) else {ours: value})
    params.update(ref.model_settings)
    params.update(entry.settings)
    params.update(entry.per_model.get(ref.model, {}))
    return params


def row_params(entry: PublishedTable, ref: Reference) -> dict[str, Any]:
    """The row's settings in our names, with the table's readings on top; ValueError says what
    has no counterpart or is missing."""
    params = stated_settings(entry, ref)
    model = MODELS.get(ref.model)
    if model.orthogonal and "orth_lr" not in params and "lr" in params:
        params["orth_lr"] = params["lr"]  # one optimizer and rate for every weight unless stated
    declared = {**TRAINING, **model.all_hyperparams}
    params = {k: v for k, v in params.items() if k.startswith("task.") or k in declared}
    missing = [name for name in REQUIRED if name not in params]
    if missing:
        raise ValueError(f"the paper states no {', '.join(missing)} for this row")
    validate_values(declared, {k: v for k, v in params.items() if not k.startswith("task.")}, ref.model)
    task_settings = {k.removeprefix("task."): v for k, v in params.items() if k.startswith("task.")}
    try:
        TASKS.get(entry.task).settings.model_validate(task_settings)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"task setting {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    return params


def _per_layer(ours: str, values: tuple) -> dict[str, Any]:
    """A three-layer network's per-layer values: equal ones are one setting; sizes (a, b, a) are
    our hidden size a with an inner size b."""
    if len(set(values)) == 1:
        return {ours: values[0]}
    if ours == "hidden_size" and len(values) == 3 and values[0] == values[2]:
        return {"hidden_size": values[0], INNER_SIZE: values[1]}
    raise ValueError(f"per-layer {ours} {list(values)} has no counterpart (one value for every layer)")


def _shrunk(params: dict[str, Any], profile: str | None, task_fields: set[str]) -> dict[str, Any]:
    """The `smoke` profile: the same rows, small enough to run on a CPU in minutes."""
    if profile is None:
        return params
    small = dict(params)
    hidden = max(4, params["hidden_size"] // 8)
    if "rho" in params:
        small["rho"] = min(hidden, round(params["rho"] * hidden / params["hidden_size"]))
    small["hidden_size"] = hidden
    if INNER_SIZE in params:
        small[INNER_SIZE] = max(4, params[INNER_SIZE] // 8)
    small["iterations"] = min(params["iterations"], 40)
    small["eval_every"] = 20
    small["batch_size"] = min(params["batch_size"], 16)
    if "capacity" in params:
        small["capacity"] = max(2, params["capacity"] // 8)
    if "reset_interval" in params:
        small["reset_interval"] = min(params["reset_interval"], 10)
    if "task.T" in params:
        small["task.T"] = min(params["task.T"], 10)
    for split in ("valid_size", "test_size"):
        if split in task_fields:
            small[f"task.{split}"] = 64
    return small


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def spec_for(repro: Reproduction, part: Part, gpus: bool) -> SweepSpec:
    """The part as a sweep spec: its models with every row's values fixed (values that differ
    between one model's rows, such as NC-GRU's orthogonal weights, as choices), searched by no one:
    the rows run as confirmation runs with their own values, which also carry the per-model task
    settings (`PER_ROW_TASK`) that a spec cannot fix per model."""
    table = repro.table
    models = list(dict.fromkeys(row.model for row in part.rows))
    per_model: dict[str, dict[str, Any]] = {}
    for model in models:
        rows = [row for row in part.rows if row.model == model]
        keys = dict.fromkeys(
            k
            for row in rows
            for k in row.params
            if k not in PER_ROW_TASK
            and not (k.startswith("task.") and k.removeprefix("task.") in part.task_settings)
        )
        per_model[model] = {}
        for key in keys:
            values = list(dict.fromkeys(row.params.get(key) for row in rows))
            per_model[model][key] = values[0] if len(values) == 1 else {"choice": values}
    resources: dict[str, Any] = {"cpus": 1, "gpus": 0.0, "per_model": {}}
    if gpus:
        for model in models:
            share = (
                ORTHOGONAL_GPU_SHARE
                if MODELS.get(model).orthogonal
                else GPU_SHARE.get(model, DEFAULT_GPU_SHARE)
            )
            resources["per_model"][model] = {"gpus": share}
    rows_per_model = max(sum(row.model == model for row in part.rows) for model in models)
    return SweepSpec.model_validate(
        {
            "name": f"{table.paper}-{slug(table.table)}{part.suffix}",
            "description": f"Reproduction of {table.paper} {table.table}: {table.title}",
            "task": {"name": table.task, "settings": part.task_settings},
            "models": models,
            "objective": {"metric": table.objective, "mode": table.mode},
            "per_model": per_model,
            "sampler": {"name": "random", "transfer": False},  # the rows alone, whatever the database holds
            "scheduler": {"name": "none"},
            "budget": {"trials": repro.seeds * rows_per_model},
            "resources": resources,
            "reproduces": {
                "paper": table.paper,
                "table": table.table,
                "seeds": repro.seeds,
                "rows": {row.index: row.runs_of for row in part.rows},
            },
        }
    )


SHOWN = ("hidden_size", "rho", "optimizer", "lr", "orth_lr", "batch_size", "iterations")  # what runs


def reproduction_text(repro: Reproduction, specs: list[SweepSpec], estimate: bool) -> str:
    """The runs of a reproduction, part by part: each row's run (the main values it runs with, and
    what it costs where it is measured: one trial's start, steps and evaluations as
    `spec.trial_cost` prices them here, times its seeds), then its paper-scale settings in two
    groups, the paper's and the readings, every reading's reason after the rows. A profile shrinks
    the first line's values, never the groups."""
    table = repro.table
    runs = sum(row.runs_of == row.index for row in repro.rows) * repro.seeds
    lines = [
        f"reproduce {table.paper} {table.table}: {table.title}",
        f"  {len(repro.rows)} rows in {len(repro.parts)} sweep(s), {repro.seeds} seeds each: {runs} runs"
        + (
            f" (profile {repro.profile}: shrunk to run on a CPU; the paper's values below)"
            if repro.profile
            else ""
        ),
        f"  the paper's settings are stated in {table.stated_in}",
    ]
    total_steps, total_seconds, timed = 0, 0.0, True
    reasons: dict[str, str] = {}
    for part, spec in zip(repro.parts, specs, strict=True):
        lines.append(f"  sweep {spec.name}: task {table.task} {part.task_settings}")
        for row in part.rows:
            if row.runs_of != row.index:
                lines.append(f"    {row.label}: the runs of row {row.runs_of} ({row.reference.split} split)")
                continue
            steps = row.params["iterations"] * repro.seeds
            total_steps += steps
            cost = ""
            if estimate:
                run = _run_cost(row, spec)
                if run is None:
                    timed = False
                    cost = "; not timed (see preflight)"
                else:
                    step, seconds = run[0], run[1] * repro.seeds
                    total_seconds += seconds
                    cost = f"; {step * 1000:.0f} ms/step, {_duration(seconds)} for its seeds"
            shown = ", ".join(f"{k}={row.params[k]}" for k in SHOWN if k in row.params)
            count = f"; {row.parameters.text()}" if row.parameters else ""
            lines.append(f"    {row.label}: {shown}{count}{cost}")
            for source in ("paper", "reading"):
                shown = [s for s in row.settings if s.source == source]
                if shown:
                    values = ", ".join(f"{s.name}={s.value}" for s in shown)
                    lines.append(f"      {'paper' if source == 'paper' else 'readings'}: {values}")
            reasons.update({s.key: s.why for s in row.settings if s.source == "reading"})
    summary = f"  total: {total_steps:,} training steps"
    if estimate and timed:
        summary += f", about {_duration(total_seconds)} one run at a time on this machine"
    lines.append(summary)
    lines += [f"  reading of {name}: {why}" for name, why in sorted(reasons.items())]
    skipped = [f"  not run: {ref.model} ({ref.split}, {ref.published}): {why}" for ref, why in repro.skipped]
    return "\n".join(lines + skipped)


def _run_cost(row: Row, spec: SweepSpec) -> tuple[float, float] | None:
    """A row's run here: a step's seconds and the whole trial's (`spec.trial_cost`)."""
    from sweeper.spec.sweep import trial_config
    from sweeper.spec.trial_cost import measured

    config = trial_config(spec, row.model, row.params, 0)
    config["device"] = "cpu" if not spec.resources.for_model(row.model)["gpu"] else "auto"
    try:
        cost = measured(config)
    except (OSError, ValueError):  # data not present: preflight says which files
        return None
    iterations = config["iterations"]
    return cost.step, cost.seconds(iterations, iterations / config["eval_every"])


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

"""Our results beside the papers' tables, like with like.

A published number is compared with ours only under the same conditions: the same metric (what it
counts, e.g. accuracy over all steps or over the answer steps), split, task variant, sequence length,
number of layers and model variant. Where one differs, the row says which instead of giving a
difference. Hyperparameters that differ (hidden size, iterations, batch size, ρ) are what a sweep
searches, so they are flagged beside a difference.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, field
from typing import Any

import optuna

from sweeper.results.retrained import ConfirmedStudy, confirmed, test_metric
from sweeper.spec.loading import stored_spec
from sweeper.spec.sweep import SweepSpec, trial_config
from sweeper.store.database import Store, SweepRecord
from sweeper.store.trial_record import (
    CONFIG_ATTR,
    SEED_ATTR,
    best_trial,
    counts_toward_budget,
    final_metrics,
    parameter_count,
)
from trainables.reference.published import PublishedTable, Reference, published_table, references_for

COMPARED_SETTINGS = ("hidden_size", "iterations", "batch_size", "rho")
CONDITION_SETTINGS = {"T": "T", "layers": "layers"}  # the paper's task settings a number depends on


def row_metric(table: PublishedTable, ref: Reference) -> str:
    """Our metric for a published cell: the table's, on the test split where the cell is a test number."""
    if ref.split == "test" and table.metric.startswith("valid_"):
        return "test_" + table.metric.removeprefix("valid_")
    return table.metric


@dataclass
class ComparisonRow:
    task: str
    model: str
    paper: str | None = None
    table: str | None = None
    paper_model: dict[str, Any] = field(default_factory=dict)
    metric: str | None = None
    split: str | None = None
    published: str | None = None
    paper_value: float | None = None
    paper_std: float | None = None
    ours: float | None = None
    ours_std: float | None = None
    source: str = ""
    difference: float | None = None
    parameters: int | None = None
    compute_hours: float | None = None  # the search's training time × the devices each trial held
    compute_unit: str = ""  # GPU-h, or CPU-h for trials that held no GPU
    mismatches: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)  # why the numbers are not comparable

    @property
    def flag(self) -> str:
        return "; ".join(self.mismatches)


@dataclass
class StudyResult:
    """What we have for one study: the best trial, and confirmations if any."""

    model: str
    config: dict[str, Any] | None
    best_value: float | None
    best_number: int | None
    final_metrics: dict[str, Any]
    parameters: int | None
    confirmation: ConfirmedStudy | None
    compute_hours: float = 0.0
    compute_unit: str = "CPU-h"


def compute_spent(spec: SweepSpec, model: str, study: optuna.Study) -> tuple[float, str]:
    """Device-hours the search spent on a study: its trials' training time (those its budget
    counted) times the GPUs each held, or the CPUs where it held none."""
    reserved = spec.resources.for_model(model)
    seconds = sum(
        t.duration.total_seconds()
        for t in study.get_trials(deepcopy=False)
        if counts_toward_budget(t) and t.duration is not None
    )
    if reserved["gpu"]:
        return seconds * reserved["gpu"] / 3600, "GPU-h"
    return seconds * reserved["cpu"] / 3600, "CPU-h"


def _study_results(store: Store, record: SweepRecord) -> dict[str, StudyResult]:
    confirmations = {c.model: c for c in confirmed(store, record) if c.objectives}
    results = {}
    spec = stored_spec(record)
    for study_record in record.studies:
        study = store.study(study_record.study_name)
        best = best_trial(study)
        spent = compute_spent(spec, study_record.model, study)
        if best is None:
            results[study_record.model] = StudyResult(
                study_record.model, None, None, None, {}, None, None, *spent
            )
            continue
        results[study_record.model] = StudyResult(
            study_record.model,
            _config_of(stored_spec(record), study_record.model, best),
            best.value,
            best.number,
            final_metrics(best),
            parameter_count(best),
            confirmations.get(study_record.model),
            *spent,
        )
    return results


def _config_of(spec: SweepSpec, model: str, trial: optuna.trial.FrozenTrial) -> dict[str, Any]:
    """The config a trial trained with, as it was stored; a trial stored before configs were
    rebuilds it from the spec (which reads the model declarations)."""
    stored = trial.user_attrs.get(CONFIG_ATTR)
    return (
        stored
        if stored is not None
        else trial_config(spec, model, trial.params, trial.user_attrs.get(SEED_ATTR, 0))
    )


def _ours(
    result: StudyResult, table: PublishedTable, ref: Reference, objective: str
) -> tuple[float | None, float | None, str]:
    """Our number for a published one: confirmed mean ± std where we have it, else the best trial."""
    key = row_metric(table, ref)
    confirmation = result.confirmation
    runs = f"confirmed over {len(confirmation.objectives)} seeds" if confirmation else ""
    if table.take == "best" and key == objective:
        if confirmation is not None:
            return (*confirmation.objective, f"{runs} (best {objective})")
        return result.best_value, None, f"best trial #{result.best_number} (best {objective})"
    if confirmation is not None and key == test_metric(objective) and confirmation.tests:
        return (*confirmation.test, f"{runs} ({key})")
    return result.final_metrics.get(key), None, f"best trial #{result.best_number} ({key} at its last step)"


def conditions(
    table: PublishedTable, ref: Reference, spec: SweepSpec, config: dict[str, Any] | None, ours: float | None
) -> list[str]:
    """What makes our number and the published one measure different things."""
    found = []
    key = row_metric(table, ref)
    if ours is None and config is not None:
        found.append(f"metric: theirs is {key}, which our runs did not report")
    settings = dict(spec.task.settings)
    if config is not None:
        settings.update(config.get("task_settings") or {})
    for name, ours_name in CONDITION_SETTINGS.items():
        if name in ref.settings and settings.get(ours_name, ref.settings[name]) != ref.settings[name]:
            found.append(f"{name}: ours {settings.get(ours_name)}, theirs {ref.settings[name]}")
    variant = table.settings.get("task.variant")  # every published variant is a task's non-default
    if variant is not None and settings.get("variant") != variant:
        found.append(f"task variant: ours {settings.get('variant', 'the default')}, theirs {variant}")
    if ref.split == "test" and key.startswith("test_") and ours is None:
        found.append("split: theirs is a test number; ours has no test measurement")
    for name, theirs in ref.model_settings.items():
        if config is not None and config.get(name, theirs) != theirs:
            found.append(f"model variant: ours {name}={config.get(name)}, theirs {name}={theirs}")
    return found


def _mismatches(ref: Reference, config: dict[str, Any] | None) -> list[str]:
    if config is None:
        return []
    found = []
    for name in COMPARED_SETTINGS:
        theirs = ref.settings.get(name)
        ours = config.get(name)
        if theirs is not None and ours is not None and not isinstance(theirs, tuple) and ours != theirs:
            found.append(f"{name} {ours} vs {theirs}")
    return found


def compare(store: Store, record: SweepRecord) -> list[ComparisonRow]:
    """One row per (published number, our model), plus a row for each of our models no table covers."""
    spec = stored_spec(record)
    objective = spec.resolved_objective().metric
    filters = {"T": spec.task.settings["T"]} if "T" in spec.task.settings else {}
    references = [r for r in references_for(spec.task.name, **filters) if r.model in spec.models]
    if spec.task.name == "babi":  # the per-task rows belong to per-task sweeps; ours is the mean
        references = [r for r in references if r.settings.get("babi_task") == "mean"]
    results = _study_results(store, record)
    rows = []
    for ref in references:
        result = results[ref.model]
        table = published_table(ref.paper, ref.table)
        ours, ours_std, source = (
            _ours(result, table, ref, objective) if result.config else (None, None, "no complete trial")
        )
        unlike = conditions(table, ref, spec, result.config, ours)
        rows.append(
            ComparisonRow(
                task=spec.task.name,
                model=ref.model,
                paper=ref.paper,
                table=ref.table,
                paper_model=dict(ref.model_settings),
                metric=ref.metric,
                split=ref.split,
                published=ref.published,
                paper_value=ref.value,
                paper_std=ref.std,
                ours=ours,
                ours_std=ours_std,
                source=source,
                difference=None if ours is None or unlike else ours - ref.value,
                parameters=result.parameters,
                compute_hours=result.compute_hours,
                compute_unit=result.compute_unit,
                mismatches=_mismatches(ref, result.config),
                conditions=unlike,
            )
        )
    covered = {r.model for r in references}
    for model, result in results.items():
        if model in covered:
            continue
        ours, ours_std, source = (
            (result.best_value, None, f"best trial #{result.best_number}")
            if result.config
            else (None, None, "no complete trial")
        )
        if result.confirmation is not None:
            ours, ours_std = result.confirmation.objective
            source = f"confirmed, {len(result.confirmation.objectives)} seeds"
        rows.append(
            ComparisonRow(
                task=spec.task.name,
                model=model,
                metric=objective,
                ours=ours,
                ours_std=ours_std,
                source=source,
                parameters=result.parameters,
                compute_hours=result.compute_hours,
                compute_unit=result.compute_unit,
                mismatches=["no published number for this task and setting"],
            )
        )
    sign = 1 if spec.resolved_objective().mode == "min" else -1
    best = {model: result.best_value for model, result in results.items()}
    return sorted(rows, key=lambda r: (best.get(r.model) is None, sign * (best.get(r.model) or 0.0)))


COLUMNS = (
    "model",
    "paper",
    "published",
    "ours",
    "difference",
    "parameters",
    "compute",
    "source",
    "settings differ",
)
NARROW = ("model", "published", "ours", "difference", "parameters", "compute")  # what fits 80 columns


def _fmt(value: float | None, std: float | None = None) -> str:
    if value is None:
        return ""
    return f"{value:.5g}" + ("" if std is None else f" ± {std:.2g}")


def row_cells(row: ComparisonRow) -> list[str]:
    variant = "".join(f" {k}={v}" for k, v in row.paper_model.items())
    paper = f"{row.paper} {row.table}{variant}" if row.paper else ""
    published = f"{_fmt(row.paper_value, row.paper_std)} ({row.metric}, {row.split})" if row.paper else ""
    return [
        row.model,
        paper,
        published,
        _fmt(row.ours, row.ours_std),
        "not comparable: " + "; ".join(row.conditions)
        if row.conditions
        else ("" if row.difference is None else f"{row.difference:+.4g}"),
        "" if row.parameters is None else f"{row.parameters:,}",
        "" if row.compute_hours is None else f"{row.compute_hours:.2g} {row.compute_unit}",
        row.source,
        row.flag,
    ]


def to_markdown(rows: list[ComparisonRow], title: str) -> str:
    lines = [f"### {title}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row_cells(row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def to_json(rows: list[ComparisonRow]) -> str:
    return json.dumps([{**asdict(r), "flag": r.flag} for r in rows], indent=2)


def to_csv(rows: list[ComparisonRow]) -> str:
    buffer = io.StringIO()
    names = [f for f in asdict(rows[0])] if rows else []
    writer = csv.DictWriter(buffer, fieldnames=[*names, "flag"])
    writer.writeheader()
    for row in rows:
        data = asdict(row)
        data["paper_model"] = ", ".join(f"{k}={v}" for k, v in data["paper_model"].items())
        data["mismatches"] = "; ".join(data["mismatches"])
        data["conditions"] = "; ".join(data["conditions"])
        writer.writerow({**data, "flag": row.flag})
    return buffer.getvalue()

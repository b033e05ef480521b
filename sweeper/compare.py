"""Our results beside the papers' tables, with every difference of settings flagged.

A number is only comparable to a published one when the experiment matches; the comparison
therefore carries, per row, the settings in which our run differs from the paper's (sequence
length, hidden size, iterations, batch size, ρ, the orthogonal weights of NC-GRU).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, field
from typing import Any

import optuna

from sweeper.confirmations import ConfirmedStudy, confirmed, test_metric
from sweeper.spec import SweepSpec, trial_config
from sweeper.store import Store, SweepRecord
from sweeper.trial_record import CONFIG_ATTR, SEED_ATTR, best_trial, final_metrics, parameter_count
from trainables.reference import Reference, references_for

# The paper's metric → the suffix of ours (`valid_<suffix>` / `test_<suffix>`).
METRIC_SUFFIX = {"min_loss": "loss", "accuracy": "accuracy", "bpc": "bpc", "perplexity": "ppl", "mse": "loss"}
COMPARED_SETTINGS = ("hidden_size", "iterations", "batch_size", "rho")


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
    mismatches: list[str] = field(default_factory=list)

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


def _study_results(store: Store, record: SweepRecord) -> dict[str, StudyResult]:
    confirmations = {c.model: c for c in confirmed(store, record) if c.objectives}
    results = {}
    for study_record in record.studies:
        study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        best = best_trial(study)
        if best is None:
            results[study_record.model] = StudyResult(study_record.model, None, None, None, {}, None, None)
            continue
        results[study_record.model] = StudyResult(
            study_record.model,
            _config_of(record.spec, study_record.model, best),
            best.value,
            best.number,
            final_metrics(best),
            parameter_count(best),
            confirmations.get(study_record.model),
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


def _ours(result: StudyResult, ref: Reference, objective: str) -> tuple[float | None, float | None, str]:
    """Our number for a published one: confirmed mean ± std where we have it, else the best trial."""
    suffix = METRIC_SUFFIX.get(ref.metric)
    if suffix is None:
        return None, None, f"no metric of ours matches {ref.metric!r}"
    key = f"{'test' if ref.split == 'test' else 'valid'}_{suffix}"
    confirmation = result.confirmation
    runs = f"confirmed over {len(confirmation.objectives)} seeds" if confirmation else ""
    if ref.metric == "min_loss" or key == objective:
        if confirmation is not None:
            return (*confirmation.objective, f"{runs} (best {objective})")
        return result.best_value, None, f"best trial #{result.best_number} (best {objective})"
    if confirmation is not None and key == test_metric(objective) and confirmation.tests:
        return (*confirmation.test, f"{runs} ({key})")
    return result.final_metrics.get(key), None, f"best trial #{result.best_number} ({key} at its last step)"


def _mismatches(ref: Reference, spec: SweepSpec, config: dict[str, Any] | None) -> list[str]:
    found = []
    ours_t = spec.task.settings.get("T")
    if "T" in ref.settings and ours_t is not None and ours_t != ref.settings["T"]:
        found.append(f"T {ours_t} vs {ref.settings['T']}")
    if config is None:
        return found
    for name in COMPARED_SETTINGS:
        theirs = ref.settings.get(name)
        ours = config.get(name)
        if theirs is not None and ours is not None and not isinstance(theirs, tuple) and ours != theirs:
            found.append(f"{name} {ours} vs {theirs}")
    for name, theirs in ref.model_settings.items():
        if config.get(name, theirs) != theirs:
            found.append(f"{name} {config.get(name)} vs {theirs}")
    return found


def compare(store: Store, record: SweepRecord) -> list[ComparisonRow]:
    """One row per (published number, our model), plus a row for each of our models no table covers."""
    spec = record.spec
    objective = spec.resolved_objective().metric
    filters = {"T": spec.task.settings["T"]} if "T" in spec.task.settings else {}
    references = [r for r in references_for(spec.task.name, **filters) if r.model in spec.models]
    if spec.task.name == "babi":  # the per-task rows belong to per-task sweeps; ours is the mean
        references = [r for r in references if r.settings.get("babi_task") == "mean"]
    results = _study_results(store, record)
    rows = []
    for ref in references:
        result = results[ref.model]
        ours, ours_std, source = (
            _ours(result, ref, objective) if result.config else (None, None, "no complete trial")
        )
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
                difference=None if ours is None else ours - ref.value,
                parameters=result.parameters,
                mismatches=_mismatches(ref, spec, result.config),
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
                mismatches=["no published number for this task and setting"],
            )
        )
    return rows


COLUMNS = ("model", "paper", "published", "ours", "difference", "parameters", "source", "settings differ")


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
        "" if row.difference is None else f"{row.difference:+.4g}",
        "" if row.parameters is None else f"{row.parameters:,}",
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
        data["paper_model"] = json.dumps(data["paper_model"])
        data["mismatches"] = "; ".join(data["mismatches"])
        writer.writerow({**data, "flag": row.flag})
    return buffer.getvalue()

"""The tables the commands print, built from what they read; printing is the command's part."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from sweeper.results.retrained import ConfirmedStudy, test_metric
from sweeper.results.summaries import StudySummary, format_params, missing_models, sorted_best_first
from sweeper.spec.loading import stored_spec
from sweeper.store.credentials import redact
from sweeper.store.database import SweepRecord

WINNER = " ★"


def whole_names(table: Table, header: str, names: list[str]) -> None:
    """A column of names (models, rows of a paper's table) never shortened: at 80 columns an
    ellipsis made goru_noreset and goru_noupdate one name; the other columns wrap instead."""
    table.add_column(header, no_wrap=True, min_width=max([len(header), *map(len, names)]))


def column(table: Table, header: str, **options: Any) -> None:
    """A column no narrower than its header's longest word: a header wraps between its words,
    never inside one ("comple / te" at 80 columns)."""
    table.add_column(header, min_width=max(len(word) for word in header.split()), **options)


def status_table(record: SweepRecord, summaries: list[StudySummary], wide: bool = False) -> Table:
    """Per study, best first with the winner marked: trials by state against the budget, the time
    its finished trials spent in their workers, and the best so far; `wide` adds the training
    steps and the best parameters."""
    spec = stored_spec(record)
    budget = spec.budget
    time_part = f", {record.elapsed_s:.0f}s" + (f" of {budget.time:.0f}s" if budget.time else "")
    objective = spec.resolved_objective()
    missing = missing_models(summaries)
    title = (
        f"{record.name} ({record.status}) {spec.task.name}{time_part}; {objective.mode} {objective.metric}"
        + (f"; no complete trial: {', '.join(missing)}" if missing else "")
    )
    table = Table(
        title=title,
        title_justify="left",
        min_width=len(title),
        caption=STATUS_LEGEND + (UNTIMED_LEGEND if any(untimed(s) for s in summaries) else ""),
        caption_justify="left",
    )
    columns = ["model", "best", "done", "pruned", "failed", "live", "budget", "time"]  # `STATUS_LEGEND`
    gpu = {s.model: spec.resources.for_model(s.model)["gpu"] for s in summaries}
    if any(gpu.values()):
        columns.append("GPU")
    whole_names(table, "model", [s.model + WINNER for s in summaries])
    bests = ["" if s.best_value is None else f"{s.best_value:.5g}" for s in summaries]
    table.add_column("best", justify="right", no_wrap=True, min_width=max(map(len, ["best", *bests])))
    for header in columns[2:] + (["steps", "best parameters"] if wide else []):
        column(table, header, justify="left" if header == "best parameters" else "right", overflow="fold")
    for index, s in enumerate(sorted_best_first(summaries, objective.mode)):
        cells = [
            s.model + (WINNER if index == 0 and s.best_value is not None else ""),
            "" if s.best_value is None else f"{s.best_value:.5g}",
            str(s.counts["COMPLETE"]),
            str(s.counts["PRUNED"]),
            str(s.counts["FAIL"]) + (f" (+{s.interrupted} interrupted)" if s.interrupted else ""),
            str(s.counts["RUNNING"]),
            str(budget.trials if s.share is None else s.share) + (" (stopped)" if s.race_stopped else ""),
            time_cell(s) + (f" of {budget.study_time:.0f}s" if budget.study_time else ""),
        ]
        if any(gpu.values()):
            cells.append(gpu_cell(gpu[s.model], s.gpu_ids))
        if wide:
            cells += [
                f"{s.steps:,}" + (f" of {budget.iterations:,}" if budget.iterations else ""),
                format_params(s.best_params),
            ]
        table.add_row(*cells)
    return table


# `budget.study_time` is spent on the same measure (`sweeper.store.trial_record.worker_seconds`)
STATUS_LEGEND = (
    "done: complete trials; live: running now\n"
    "time: finished trials' own time in their workers (not their wait for one)"
)
UNTIMED_LEGEND = "\n≤: no worker time recorded; from the searcher's suggestion, a wait for one included"


def untimed(summary: StudySummary) -> bool:
    """Trials that took time with none of it recorded in their workers: a study's trials that
    never reported (every report carries the trial's own time), or one written by hand."""
    return not summary.worker_seconds and round(summary.seconds) > 0


def time_cell(summary: StudySummary) -> str:
    """The study's finished trials' own time in their workers; where none was recorded, their
    time from the searcher's suggestion, a wait for a worker included, marked as at most that."""
    if untimed(summary):
        return f"≤{summary.seconds:.0f}s"
    return f"{summary.worker_seconds:.0f}s"


def gpu_cell(share: float, ids: list[str]) -> str:
    """A model's GPU share, how many of its trials fit one GPU, and the GPUs its trials ran on."""
    if not share:
        return "-"
    packing = f"{share:g} ({int(1 / share + 1e-9)} per GPU)" if share < 1 else f"{share:g}"
    return packing + (f" on {','.join(ids)}" if ids else "")


def summary_tables(record: SweepRecord, summaries: list[StudySummary], wide: bool = False) -> list[Table]:
    """One table per task, best first with the winner marked: each model's best value, size,
    trials and hyperparameters (one per line, or on one line when `wide`)."""
    objective = stored_spec(record).resolved_objective()
    tables = []
    for task in dict.fromkeys(s.task for s in summaries):
        table = Table(
            title=f"{record.name}: {task} ({objective.mode} {objective.metric})", title_justify="left"
        )
        ranked = sorted_best_first([s for s in summaries if s.task == task], objective.mode)
        whole_names(table, "model", [s.model + WINNER for s in ranked])
        for header in ("best", "parameters", "trials", "hyperparameters"):
            column(table, header, justify="right" if header != "hyperparameters" else "left")
        for index, s in enumerate(ranked):
            table.add_row(
                s.model + (WINNER if index == 0 and s.best_value is not None else ""),
                "" if s.best_value is None else f"{s.best_value:.5g}",
                "" if s.parameters is None else f"{s.parameters:,}",
                str(s.counts["COMPLETE"] + s.counts["PRUNED"]),
                format_params(s.best_params, ", " if wide else "\n"),
            )
        tables.append(table)
    return tables


def importance_table(weights: dict[str, dict[str, float] | str]) -> Table:
    table = Table(title="parameter importances", title_justify="left")
    whole_names(table, "model", list(weights))
    table.add_column("importances")
    for model, value in weights.items():
        shown = value if isinstance(value, str) else ", ".join(f"{k} {v:.2f}" for k, v in value.items())
        table.add_row(model, shown)
    return table


def format_mean_std(mean: float | None, std: float | None) -> str:
    if mean is None:
        return ""
    return f"{mean:.5g}" + ("" if std is None else f" ± {std:.2g}")


def confirmation_table(record: SweepRecord, results: list[ConfirmedStudy]) -> Table:
    """The confirmed configurations, best mean first with the leader marked: runs (and failures),
    mean ± sd of each run's best and of its test value, and the trial it retrains with its
    parameters."""
    spec = stored_spec(record)
    objective = spec.resolved_objective()
    metric = objective.metric
    title = f"{record.name}: {spec.task.name}, confirmation over fresh seeds"
    table = Table(title=title, title_justify="left", min_width=len(title))
    sign = 1.0 if objective.mode == "min" else -1.0
    ranked = sorted(results, key=lambda r: (r.objective[0] is None, sign * (r.objective[0] or 0.0)))
    whole_names(table, "model", [r.model + WINNER for r in ranked])
    for header in ("runs", metric, test_metric(metric)):
        column(table, header, no_wrap=True)
    column(table, "trial and parameters", overflow="fold")
    for index, result in enumerate(ranked):
        table.add_row(
            result.model + (WINNER if index == 0 and result.objective[0] is not None else ""),
            str(len(result.objectives)) + (f" ({result.failed} failed)" if result.failed else ""),
            format_mean_std(*result.objective),
            format_mean_std(*result.test),
            f"#{result.source_trial}: {format_params(result.params)}",
        )
    return table


def cells_table(title: str, columns: tuple[str, ...], cells: list[list[str]]) -> Table:
    table = Table(title=title, title_justify="left")
    whole_names(table, columns[0], [row[0] for row in cells])
    for header in columns[1:]:
        column(table, header, overflow="fold")
    for row in cells:
        table.add_row(*row)
    return table


def sweeps_table(url: str, records: list[SweepRecord]) -> Table:
    table = Table(title=f"sweeps in {redact(url)}", title_justify="left")
    for header in ("name", "status", "task", "studies", "created", "elapsed", "experiment"):
        column(table, header)
    for record in records:
        table.add_row(
            record.name,
            record.status,
            record.studies[0].task if record.studies else "",
            str(len(record.studies)),
            f"{record.created_at:%Y-%m-%d %H:%M}",
            f"{record.elapsed_s:.0f}s",
            record.mlflow_experiment_id or "",
        )
    return table


def model_table(entry: Any, count: str, input_size: int, hidden_size: int) -> Table:
    """A registered model: what it is, where it is defined, its size, and its hyperparameters."""
    table = Table(
        title=f"{entry.name} ({entry.defined_in}): {entry.description} — {count} parameters at input "
        f"{input_size}, hidden {hidden_size}",
        title_justify="left",
    )
    for header in ("hyperparameter", "type", "default", "allowed", "meaning"):
        column(table, header)
    for hp in entry.all_hyperparams.values():
        table.add_row(hp.name, hp.kind, str(hp.default), hp.describe_range(), hp.help)
    return table


def hyperparameter_table(title: str, hyperparams: Any) -> Table:
    """Settings every model shares (the training loop's)."""
    table = Table(title=title, title_justify="left")
    for header in ("hyperparameter", "type", "default", "allowed", "meaning"):
        column(table, header)
    for hp in hyperparams:
        table.add_row(hp.name, hp.kind, str(hp.default), hp.describe_range(), hp.help)
    return table


def task_table(entry: Any) -> Table:
    """A registered task: what it is, where it is defined, its objective and its settings."""
    table = Table(
        title=f"{entry.name} ({entry.defined_in}): {entry.description} "
        f"(objective: {entry.mode} {entry.objective})",
        title_justify="left",
    )
    for header in ("setting", "type", "default", "meaning"):
        column(table, header)
    for name, fld in entry.settings.model_fields.items():
        annotation = getattr(fld.annotation, "__name__", str(fld.annotation))
        table.add_row(name, annotation, str(fld.default), fld.description or "")
    return table

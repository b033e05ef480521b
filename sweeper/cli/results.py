"""Commands that only read results: status, summarize, export, report, list, ui, best. They
import neither Ray nor torch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sweeper.cli.common import (
    BadInput,
    Failed,
    find_sweep,
    json_option,
    open_store,
    print_tables,
    print_verdict,
    storage_option,
    wide_option,
    writable_folder,
)
from sweeper.spec.loading import stored_spec

if TYPE_CHECKING:
    from sweeper.results.odds import Odds
    from sweeper.store.database import Store, SweepRecord


@click.command()
@click.argument("sweep", required=False)
@storage_option
@wide_option
@json_option
def status(sweep: str | None, storage: str | None, wide: bool, as_json: bool) -> None:
    """Per study of SWEEP (default: the latest), best first: trials by state and the best value,
    then the verdict, as the launch ends with it."""
    from sweeper.results.odds import sweep_odds
    from sweeper.results.summaries import recorded_baseline, study_summaries

    store = open_store(storage, sweep)
    record = find_sweep(store, sweep)
    summaries = study_summaries(store, record)
    odds = sweep_odds(store, record)
    if as_json:  # the schemas are pydantic models, a cost the tables need not pay
        from sweeper.results.json_outputs import dumped, sweep_status

        click.echo(dumped(sweep_status(record, summaries, "status", odds=odds)))
        return
    from sweeper.results.tables import status_table
    from sweeper.results.verdict import verdict

    print_tables(status_table(record, summaries, wide), wide)
    print_verdict(verdict(record, summaries, recorded_baseline(store, record), odds))


@click.command()
@click.argument("sweep", required=False)
@storage_option
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table")
@click.option("--importance", is_flag=True, help="Also print each study's parameter importances.")
@wide_option
@json_option
def summarize(
    sweep: str | None, storage: str | None, fmt: str, importance: bool, wide: bool, as_json: bool
) -> None:
    """Each model's best objective, hyperparameters and parameter count, best first, per task, of
    SWEEP (default: the latest)."""
    from sweeper.results.json_outputs import dumped, sweep_status
    from sweeper.results.summaries import (
        importances,
        render_markdown,
        search_notes,
        sorted_best_first,
        study_summaries,
    )
    from sweeper.results.tables import importance_table, summary_tables

    store = open_store(storage, sweep)
    record = find_sweep(store, sweep)
    objective = stored_spec(record).resolved_objective()
    summaries = sorted_best_first(study_summaries(store, record), objective.mode)
    weights = importances(store, record) if importance else None
    if as_json or fmt == "json":
        click.echo(dumped(sweep_status(record, summaries, "summarize", weights)))
    elif fmt == "markdown":
        click.echo(render_markdown(record, objective.metric, objective.mode, summaries, weights))
    else:
        print_tables(summary_tables(record, summaries, wide), wide)
        for summary in summaries:
            for line in search_notes(summary, objective.mode):
                click.echo(f"{summary.model}: {line}")
        if weights is not None:
            print_tables(importance_table(weights), wide)


@click.command()
@click.argument("sweep", required=False)
@storage_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output folder.")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), default="csv", show_default=True)
def export(sweep: str | None, storage: str | None, out: Path, fmt: str) -> None:
    """Write the trials, intermediate values and resolved spec of SWEEP (default: the latest) to files."""
    from sweeper.results.export import export_sweep

    store = open_store(storage, sweep)
    record = find_sweep(store, sweep)
    for path in export_sweep(store, record, writable_folder(out), fmt):
        click.echo(str(path))


@click.command()
@click.argument("sweep", required=False)
@storage_option
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Interface to serve on (loopback by default)."
)
@click.option(
    "--port", type=click.IntRange(1, 65535), default=5000, show_default=True, help="MLflow UI port."
)
@click.option("--dashboard-port", type=click.IntRange(1, 65535), default=8080, show_default=True)
def ui(sweep: str | None, storage: str | None, host: str, port: int, dashboard_port: int) -> None:
    """Serve the MLflow UI on SWEEP's tracking store (and optuna-dashboard on its studies, if installed)."""
    from sweeper.results.servers import serve_until_stopped, ui_servers

    store = open_store(storage, sweep)
    lines, commands = ui_servers(store, find_sweep(store, sweep), host, port, dashboard_port)
    for line in lines:
        click.echo(line)
    if commands:
        serve_until_stopped(commands)


@click.command()
@click.argument("sweep", required=False)
@storage_option
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json", "csv"]), default="table")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for files [default: sweeps/reports/SWEEP]",
)
@click.option("--no-figures", is_flag=True, help="Skip the figures.")
@wide_option
@json_option
def report(
    sweep: str | None,
    storage: str | None,
    fmt: str,
    out: Path | None,
    no_figures: bool,
    wide: bool,
    as_json: bool,
) -> None:
    """SWEEP (default: the latest) beside the papers' tables: published number, ours, difference,
    size, settings that differ.

    Writes the table (markdown, JSON, CSV), the figures, and report.html holding both (one file to
    open) to --out and to the sweep's MLflow experiment, in a run named `report`.
    """
    from sweeper.results.html import report_html
    from sweeper.results.json_outputs import report_json
    from sweeper.results.tables import cells_table
    from sweeper.run.tracking.tracker import open_tracker
    from sweeper.store.locations import DEFAULT_HOME

    store = open_store(storage, sweep)
    record = find_sweep(store, sweep)
    out = writable_folder(out or DEFAULT_HOME / "reports" / record.name)
    if stored_spec(record).reproduces is not None:
        report = _reproduction_report(store, record)
        no_figures = True  # a reproduction's runs are not an Optuna study's trials
    else:
        report = _comparison_report(store, record)
    rendered = {
        **report.rendered,
        "json": report_json(
            record.name,
            report.title,
            report.rendered["json"],
            report.odds,
            report.notes if report.odds else [],
        ),
    }
    if as_json or fmt == "json":
        click.echo(rendered["json"])
    elif fmt == "table":
        columns = report.columns if wide else report.narrow
        kept = [report.columns.index(column) for column in columns]
        print_tables(cells_table(report.title, columns, [[r[i] for i in kept] for r in report.cells]), wide)
    else:
        click.echo(rendered[fmt])
    files = []
    for name, suffix in (("markdown", "md"), ("json", "json"), ("csv", "csv")):
        path = out / f"report.{suffix}"
        path.write_text(rendered[name])
        files.append(path)
    tracker = open_tracker(record.tracking_uri) if record.tracking_uri else None
    figures = []
    if not no_figures:
        from sweeper.results.figures import write_figures

        figures = write_figures(store, record, out, tracker.client if tracker else None)
    page = out / "report.html"
    page.write_text(
        report_html(report.title, report.columns, report.cells, figures, report.notes, report.best_row)
    )
    files += [page, *figures]
    if tracker is not None and record.mlflow_experiment_id:
        tracker.log_report(record.mlflow_experiment_id, files)
    click.echo(f"report in {page}", err=True)


@dataclass
class _Report:
    """A report's table in every form: files, terminal (all columns, or the `narrow` ones), HTML."""

    title: str
    rendered: dict[str, str]  # markdown, json, csv
    columns: tuple[str, ...]
    narrow: tuple[str, ...]
    cells: list[list[str]]
    notes: list[str]
    best_row: int | None = None  # the winner's row, where the rows are ranked
    odds: Odds | None = None  # a comparison's verdict odds


def _comparison_report(store: Store, record: SweepRecord) -> _Report:
    """A sweep beside the papers' numbers, its best model first."""
    from sweeper.results.odds import sweep_odds
    from sweeper.results.paper_tables import COLUMNS, NARROW, compare, row_cells, to_csv, to_json, to_markdown
    from sweeper.results.summaries import format_params, study_summaries
    from sweeper.results.verdict import answer_notes

    spec = stored_spec(record)
    title = f"{record.name}: {spec.task.name} ({format_params(dict(spec.task.settings))})"
    rows = compare(store, record)
    odds = sweep_odds(store, record)
    said = answer_notes(record, study_summaries(store, record), odds)
    flags = {row.flag for row in rows}
    if len(flags) == 1 and rows[0].flag:  # said once, not on every row
        said = [*said, f"every row: {rows[0].flag}"]
        rows = [dataclasses.replace(row, mismatches=[]) for row in rows]
    markdown = to_markdown(rows, title) + "".join(f"\n{line}\n" for line in said)
    rendered = {"markdown": markdown, "json": to_json(rows), "csv": to_csv(rows)}
    best = 0 if rows and rows[0].ours is not None else None
    return _Report(title, rendered, COLUMNS, NARROW, [row_cells(row) for row in rows], said, best, odds)


def _reproduction_report(store: Store, record: SweepRecord) -> _Report:
    """A reproduction's report: ours beside the published table, in each format."""
    from sweeper.papers.outcome import COLUMNS, notes, rendered, reproduced, row_cells

    table, rows = reproduced(store, record)
    title = f"{record.name}: ours beside {table.paper} {table.table}"
    files = rendered(table, rows, title, record.profile)
    cells = [row_cells(row) for row in rows]
    return _Report(title, files, COLUMNS, COLUMNS, cells, notes(table, record.profile))


@click.command(name="list")
@storage_option
@wide_option
@json_option
def list_sweeps(storage: str | None, wide: bool, as_json: bool) -> None:
    """Every sweep in the study database."""
    from sweeper.results.json_outputs import dumped, sweep_list
    from sweeper.results.tables import sweeps_table

    store = open_store(storage)
    if as_json:
        click.echo(dumped(sweep_list(store.url, store.list_sweeps())))
        return
    print_tables(sweeps_table(store.url, store.list_sweeps()), wide)


@click.command()
@click.argument("sweep", required=False)
@storage_option
@click.option("--model", help="Only this model's study.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output folder.")
def best(sweep: str | None, storage: str | None, model: str | None, out: Path) -> None:
    """Fetch the trained weights of each study's best trial of SWEEP (default: the latest) into
    OUT/<model>: MLflow PyTorch models, read by `mlflow.pytorch.load_model` and by
    `sweeper train --init-from OUT/<model>`."""
    from sweeper.results.kept_weights import fetch_best
    from sweeper.results.summaries import study_summaries
    from sweeper.run.tracking.tracker import open_tracker
    from sweeper.store.locations import resolve_tracking_uri

    store = open_store(storage, sweep)
    record = find_sweep(store, sweep)
    writable_folder(out)
    summaries = [s for s in study_summaries(store, record) if model is None or s.model == model]
    if not summaries:
        known = ", ".join(s.model for s in study_summaries(store, record))
        raise BadInput(f"--model {model}: sweep {record.name} has no study of it (its models: {known})")
    tracker = open_tracker(record.tracking_uri) if record.tracking_uri else None
    if tracker is None or not record.mlflow_experiment_id:
        raise Failed(f"sweep {record.name} has no MLflow experiment to keep weights in")
    studies = [(s.model, s.study, s.best_trial) for s in summaries]
    uri = resolve_tracking_uri(record.tracking_uri)
    fetched = fetch_best(tracker.client, uri, record.mlflow_experiment_id, studies, out)
    for item in fetched:
        if item.folder is not None:
            click.echo(
                f"{item.model}: trial {item.trial}, {item.value:.5g}, run {item.run_id} -> {item.folder}"
            )
        else:
            click.echo(f"{item.model}: no weights ({item.missing})", err=True)
    if not any(item.folder is not None for item in fetched):
        raise Failed(f"no weights fetched from sweep {record.name}")

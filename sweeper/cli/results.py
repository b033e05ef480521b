"""Commands that only read results: status, summarize, export, report, list, ui. They import
neither Ray nor torch."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sweeper.cli.common import console, find_sweep, open_store, storage_option
from sweeper.spec.loading import stored_spec

if TYPE_CHECKING:
    from sweeper.store.database import Store, SweepRecord


@click.command()
@click.argument("sweep", required=False)
@storage_option
def status(sweep: str | None, storage: str | None) -> None:
    """Per study of SWEEP (default: the latest), trials by state and the best value with its parameters."""
    from sweeper.results.summaries import study_summaries
    from sweeper.results.tables import status_table

    store = open_store(storage, sweep)
    record = find_sweep(store, sweep)
    summaries = study_summaries(store, record)
    console.print(status_table(record, summaries))
    for summary in summaries:
        if summary.race_stopped:
            click.echo(f"{summary.model}: {summary.race_stopped}")


@click.command()
@click.argument("sweep")
@storage_option
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table")
@click.option("--importance", is_flag=True, help="Also print each study's parameter importances.")
def summarize(sweep: str, storage: str | None, fmt: str, importance: bool) -> None:
    """Each model's best objective, hyperparameters and parameter count, best first, per task."""
    from sweeper.results.summaries import (
        importances,
        render_json,
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
    if fmt == "json":
        click.echo(render_json(record, objective.metric, objective.mode, summaries, weights))
    elif fmt == "markdown":
        click.echo(render_markdown(record, objective.metric, objective.mode, summaries, weights))
    else:
        for table in summary_tables(record, summaries):
            console.print(table)
        for summary in summaries:
            for line in search_notes(summary, objective.mode):
                click.echo(f"{summary.model}: {line}")
        if weights is not None:
            console.print(importance_table(weights))


@click.command()
@click.argument("sweep")
@storage_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output folder.")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), default="csv", show_default=True)
def export(sweep: str, storage: str | None, out: Path, fmt: str) -> None:
    """Write SWEEP's trials, intermediate values and resolved spec to files."""
    from sweeper.results.export import export_sweep

    store = open_store(storage, sweep)
    for path in export_sweep(store, find_sweep(store, sweep), out, fmt):
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
@click.argument("sweep")
@storage_option
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json", "csv"]), default="table")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for files [default: sweeps/reports/SWEEP]",
)
@click.option("--no-figures", is_flag=True, help="Skip the figures.")
def report(sweep: str, storage: str | None, fmt: str, out: Path | None, no_figures: bool) -> None:
    """SWEEP beside the papers' tables: published number, ours, difference, size, settings that differ.

    Writes the table (markdown, JSON, CSV) and the figures to --out and to the sweep's MLflow
    experiment, in a run named `report`.
    """
    from sweeper.results.paper_tables import compare, to_csv, to_json, to_markdown
    from sweeper.results.tables import comparison_table
    from sweeper.run.tracking import open_tracker
    from sweeper.store.locations import DEFAULT_HOME

    store = open_store(storage, sweep)
    record = find_sweep(store, sweep)
    spec = stored_spec(record)
    title = f"{record.name}: {spec.task.name} {spec.task.settings}"
    if spec.reproduces is not None:
        rendered, shown = _reproduction_report(store, record)
        no_figures = True  # a reproduction's runs are not an Optuna study's trials
    else:
        rows = compare(store, record)
        rendered = {"markdown": to_markdown(rows, title), "json": to_json(rows), "csv": to_csv(rows)}
        shown = comparison_table(title, rows)
    if fmt == "table":
        console.print(shown)
    else:
        click.echo(rendered[fmt])
    out = out or DEFAULT_HOME / "reports" / record.name
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name, suffix in (("markdown", "md"), ("json", "json"), ("csv", "csv")):
        path = out / f"report.{suffix}"
        path.write_text(rendered[name])
        files.append(path)
    tracker = open_tracker(record.tracking_uri) if record.tracking_uri else None
    if not no_figures:
        from sweeper.results.figures import write_figures

        files += write_figures(store, record, out, tracker.client if tracker else None)
    if tracker is not None and record.mlflow_experiment_id:
        tracker.log_report(record.mlflow_experiment_id, files)
    click.echo(f"report files in {out}", err=True)


def _reproduction_report(store: Store, record: SweepRecord) -> tuple[dict[str, str], Any]:
    """A reproduction's report: ours beside the published table, in each format."""
    from sweeper.papers.outcome import rendered, reproduced, reproduction_table

    table, rows = reproduced(store, record)
    title = f"{record.name}: ours beside {table.paper} {table.table}"
    return rendered(table, rows, title, record.profile), reproduction_table(title, rows)


@click.command(name="list")
@storage_option
def list_sweeps(storage: str | None) -> None:
    """Every sweep in the study database."""
    from sweeper.results.tables import sweeps_table

    store = open_store(storage)
    console.print(sweeps_table(store.url, store.list_sweeps()))

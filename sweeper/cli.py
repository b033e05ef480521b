"""The `sweeper` command line: launch, resume, status, summarize, list, models, tasks, train.

Bad input (a spec, a storage URL, an unknown sweep) exits with code 2 and a message naming what
is wrong, before anything is written.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path
from typing import Any

import click
import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from sweeper.spec import SpecError, SweepSpec, load_spec, parse_duration
from sweeper.store import DEFAULT_HOME, Store, StoreError, SweepRecord, default_storage_url, redact
from sweeper.tracking import default_tracking_uri, resolve_tracking_uri, ui_command

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

console = Console()


class BadInput(click.ClickException):
    """A usage error without Click's usage banner: the message already says what to fix."""

    exit_code = EXIT_BAD_INPUT

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


storage_option = click.option(
    "--storage",
    envvar="SWEEPER_STORAGE",
    help="SQLAlchemy URL of the study database [env SWEEPER_STORAGE; default: sqlite under ./sweeps/]",
)
tracking_option = click.option(
    "--tracking-uri",
    envvar="SWEEPER_TRACKING_URI",
    help="MLflow tracking URI [env SWEEPER_TRACKING_URI; default: a local store under ./sweeps/]",
)
address_option = click.option(
    "--address",
    envvar="SWEEPER_RAY_ADDRESS",
    help="Ray cluster to join: 'auto' or ray://host:port [env SWEEPER_RAY_ADDRESS; default: start a local Ray]",
)
results_option = click.option(
    "--results",
    envvar="SWEEPER_RESULTS",
    help="Where Ray Tune keeps trial results: a path every node shares, or s3://... "
    "[env SWEEPER_RESULTS; default: ./sweeps/ray_results]",
)
verbose_option = click.option("--verbose", is_flag=True, help="Show Ray's own logs and Tune's trial table.")


def _open_store(url: str | None) -> Store:
    try:
        return Store(url or default_storage_url())
    except StoreError as exc:
        raise BadInput(str(exc)) from None


def _load(path: str, profile: str | None) -> SweepSpec:
    try:
        return load_spec(path, profile)
    except SpecError as exc:
        raise BadInput("invalid sweep spec\n  " + "\n  ".join(exc.errors)) from None


def _find_sweep(store: Store, name: str | None) -> SweepRecord:
    try:
        if name is None:
            record = store.latest_sweep()
            if record is None:
                raise StoreError(
                    f"no sweeps in {redact(store.url)} yet; start one with `sweeper launch CONFIG`"
                )
            return record
        return store.get_sweep(name)
    except StoreError as exc:
        raise BadInput(str(exc)) from None


@click.group()
@click.version_option(package_name="sweeper")
def main() -> None:
    """Hyperparameter sweeps of gated and orthogonal RNNs on Ray, Optuna and MLflow."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


@main.command()
@click.argument("configs", nargs=-1, required=True)
@address_option
@storage_option
@tracking_option
@click.option("--max-trials", type=click.IntRange(min=1), help="Trials per study (overrides budget.trials).")
@click.option("--time-budget", help="Wall-clock budget per sweep, e.g. 30m or 2h (overrides budget.time).")
@click.option("--profile", help="Apply a named profile of overrides from each config (e.g. smoke).")
@click.option("--dry-run", is_flag=True, help="Print the resolved plan and start nothing.")
@click.option("--no-gpus", is_flag=True, help="Train every trial on the CPU, whatever resources.gpus says.")
@results_option
@verbose_option
def launch(
    configs: tuple[str, ...],
    address: str | None,
    storage: str | None,
    tracking_uri: str | None,
    max_trials: int | None,
    time_budget: str | None,
    profile: str | None,
    dry_run: bool,
    no_gpus: bool,
    results: str | None,
    verbose: bool,
) -> None:
    """Run a sweep for each CONFIG: one Optuna study per (task, model), trials on Ray."""
    from sweeper.launch import create_sweep, plan_text, run_sweep, with_budget, without_gpus
    from sweeper.matching import resolve_matching

    seconds = None
    if time_budget is not None:
        try:
            seconds = parse_duration(time_budget)
        except ValueError as exc:
            raise BadInput(f"--time-budget: {exc}") from None
    specs = [with_budget(_load(path, profile), max_trials, seconds) for path in configs]
    if no_gpus:
        try:
            specs = [without_gpus(spec) for spec in specs]
        except ValidationError as exc:
            raise BadInput(f"--no-gpus: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    targets = []
    for index, spec in enumerate(specs):
        url = storage or spec.storage or default_storage_url()
        uri = tracking_uri or spec.tracking_uri or default_tracking_uri()
        targets.append((url, uri))
        try:
            specs[index], derived = resolve_matching(spec)
        except SpecError as exc:
            if not dry_run:
                raise BadInput(f"{configs[index]}: " + "; ".join(exc.errors)) from None
            derived = {"(all)": exc.errors[0]}
        if dry_run:
            click.echo(plan_text(specs[index], url, uri, address))
            for model, (hidden, count) in ((m, d) for m, d in derived.items() if isinstance(d, tuple)):
                click.echo(f"  matched {model}: hidden_size {hidden} ({count:,} parameters)")
            for model, reason in ((m, d) for m, d in derived.items() if isinstance(d, str)):
                click.echo(f"  matching {model}: derived at launch ({reason})")
    if dry_run:
        return
    worst = 0
    for spec, (url, uri) in zip(specs, targets, strict=True):
        override = "add --no-gpus to train on the CPU"
        if url.startswith("sqlite"):  # refused on a multi-node cluster before its file is made
            _connect(address, url, verbose, specs, override)
            store = _open_store(url)
        else:  # an unreachable server is reported before any Ray starts
            store = _open_store(url)
            _connect(address, url, verbose, specs, override)
        record = create_sweep(spec, store, uri, profile, address)
        click.echo(f"sweep {record.name}: {len(record.studies)} studies in {redact(url)}")
        click.echo(f"  MLflow UI: {ui_command(uri)}")
        outcome = run_sweep(store, record, address=address, verbose=verbose, results=results)
        worst = max(worst, _report_outcome(store, outcome))
    sys.exit(worst)


STORED_GPUS = "the stored spec cannot change; run it where Ray has GPUs"


def _connect(
    address: str | None, storage_url: str, verbose: bool, specs: list[SweepSpec], override: str = STORED_GPUS
) -> None:
    """Start or join Ray; refuse a multi-node SQLite sweep, and GPU trials on a local Ray without GPUs."""
    from sweeper.launch import MissingGPUs, connect_ray, refuse_missing_gpus
    from sweeper.workers import local_cpus

    try:
        connect_ray(address, storage_url, verbose, local_cpus(specs))
        if address is None:
            refuse_missing_gpus(specs, override)
    except (StoreError, MissingGPUs) as exc:
        raise BadInput(str(exc)) from None


def _report_outcome(store: Store, outcome: Any) -> int:
    from sweeper.search import DATABASE_ERRORS

    click.echo(
        f"sweep {outcome.sweep}: {outcome.status}" + (f" ({outcome.message})" if outcome.message else "")
    )
    try:
        _print_status(store, store.get_sweep(outcome.sweep))
    except DATABASE_ERRORS:
        click.echo(f"  (no status: the study database {redact(store.url)} is unreachable)")
    if outcome.status == "interrupted":
        click.echo(f"  continue with: sweeper resume {outcome.sweep}")
        return EXIT_INTERRUPTED
    return 1 if outcome.status == "failed" else 0


@main.command()
@click.argument("sweep")
@address_option
@storage_option
@results_option
@verbose_option
def resume(sweep: str, address: str | None, storage: str | None, results: str | None, verbose: bool) -> None:
    """Continue SWEEP toward its budgets; finished trials are kept, unfinished ones rerun."""
    from sweeper.launch import reconcile, run_sweep

    store = _open_store(storage)
    record = _find_sweep(store, sweep)
    _connect(address, store.url, verbose, [load_record_spec(record)])
    fixed = reconcile(store, record)
    if fixed:
        click.echo(
            f"sweep {record.name}: {fixed} trial(s) left running by a stopped driver marked interrupted"
        )
    outcome = run_sweep(store, record, address=address, verbose=verbose, results=results)
    sys.exit(_report_outcome(store, outcome))


def _print_status(store: Store, record: SweepRecord) -> None:
    from sweeper.report import format_params, study_summaries

    spec = load_record_spec(record)
    budget = spec.budget
    time_part = f", {record.elapsed_s:.0f}s elapsed" + (f" of {budget.time:.0f}s" if budget.time else "")
    objective = spec.resolved_objective()
    table = Table(
        title=f"{record.name} ({record.status}) {spec.task.name}{time_part}; {objective.mode} {objective.metric}",
        title_justify="left",
    )
    for column in (
        "model",
        "complete",
        "pruned",
        "failed",
        "running",
        "budget",
        "steps",
        "train time",
        "best",
        "best parameters",
    ):
        table.add_column(column)
    for s in study_summaries(store, record):
        table.add_row(
            s.model,
            str(s.counts["COMPLETE"]),
            str(s.counts["PRUNED"]),
            str(s.counts["FAIL"]) + (f" (+{s.interrupted} interrupted)" if s.interrupted else ""),
            str(s.counts["RUNNING"]),
            str(budget.trials),
            f"{s.steps:,}" + (f" of {budget.iterations:,}" if budget.iterations else ""),
            f"{s.seconds:.0f}s" + (f" of {budget.study_time:.0f}s" if budget.study_time else ""),
            "" if s.best_value is None else f"{s.best_value:.5g}",
            format_params(s.best_params),
        )
    console.print(table)


def load_record_spec(record: SweepRecord) -> SweepSpec:
    from sweeper.spec import parse_spec

    return parse_spec(record.spec_yaml, f"sweep {record.name}")


@main.command()
@click.argument("sweep", required=False)
@storage_option
def status(sweep: str | None, storage: str | None) -> None:
    """Per study of SWEEP (default: the latest), trials by state and the best value with its parameters."""
    store = _open_store(storage)
    _print_status(store, _find_sweep(store, sweep))


@main.command()
@click.argument("sweep")
@storage_option
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table")
@click.option("--importance", is_flag=True, help="Also print each study's parameter importances.")
def summarize(sweep: str, storage: str | None, fmt: str, importance: bool) -> None:
    """Each model's best objective, hyperparameters and parameter count, best first, per task."""
    from sweeper.report import (
        format_params,
        importances,
        render_json,
        render_markdown,
        sorted_best_first,
        study_summaries,
    )

    store = _open_store(storage)
    record = _find_sweep(store, sweep)
    objective = load_record_spec(record).resolved_objective()
    summaries = sorted_best_first(study_summaries(store, record, with_parameters=True), objective.mode)
    weights = importances(store, record) if importance else None
    if fmt == "json":
        click.echo(render_json(record, objective.metric, objective.mode, summaries, weights))
        return
    if fmt == "markdown":
        click.echo(render_markdown(record, objective.metric, summaries, weights))
        return
    for task in dict.fromkeys(s.task for s in summaries):
        table = Table(
            title=f"{record.name}: {task} ({objective.mode} {objective.metric})", title_justify="left"
        )
        for column in ("model", "best", "parameters", "trials", "hyperparameters"):
            table.add_column(column)
        for s in summaries:
            if s.task == task:
                table.add_row(
                    s.model,
                    "" if s.best_value is None else f"{s.best_value:.5g}",
                    "" if s.parameters is None else f"{s.parameters:,}",
                    str(s.counts["COMPLETE"] + s.counts["PRUNED"]),
                    format_params(s.best_params),
                )
        console.print(table)
    if weights is not None:
        table = Table(title="parameter importances", title_justify="left")
        table.add_column("model")
        table.add_column("importances")
        for model, value in weights.items():
            shown = value if isinstance(value, str) else ", ".join(f"{k} {v:.2f}" for k, v in value.items())
            table.add_row(model, shown)
        console.print(table)


@main.command()
@click.argument("sweep")
@storage_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output folder.")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), default="csv", show_default=True)
def export(sweep: str, storage: str | None, out: Path, fmt: str) -> None:
    """Write SWEEP's trials, intermediate values and resolved spec to files."""
    from sweeper.export import export_sweep

    store = _open_store(storage)
    for path in export_sweep(store, _find_sweep(store, sweep), out, fmt):
        click.echo(str(path))


@main.command()
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
    import shutil

    store = _open_store(storage)
    record = _find_sweep(store, sweep)
    uri = resolve_tracking_uri(record.tracking_uri or default_tracking_uri())
    commands = []
    suffix = f"/#/experiments/{record.mlflow_experiment_id}" if record.mlflow_experiment_id else ""
    if uri.startswith(("http://", "https://")):
        click.echo(f"MLflow UI: {uri.rstrip('/')}{suffix}")
    else:
        command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri]
        commands.append([*command, "--host", host, "--port", str(port)])
        click.echo(f"MLflow UI: http://{host}:{port}{suffix}")
    dashboard = shutil.which("optuna-dashboard")
    if dashboard:
        commands.append([dashboard, store.url, "--host", host, "--port", str(dashboard_port)])
        click.echo(f"Optuna dashboard: http://{host}:{dashboard_port}")
    else:
        click.echo("Optuna dashboard: not installed (pip install optuna-dashboard)")
    if commands:
        _serve_until_stopped(commands)


def _serve_until_stopped(commands: list[list[str]]) -> None:
    """Run the servers until Ctrl-C or SIGTERM, then stop them with all their workers.

    `mlflow server` forks uvicorn workers: each server gets a process group of its own, and the
    whole group is stopped, so no server outlives the command that started it.
    """
    import os
    import signal
    import subprocess

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for command in commands:  # one by one: a server that fails to start still stops the others
            processes.append(subprocess.Popen(command, start_new_session=True))
        for process in processes:
            process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def format_mean_std(mean: float | None, std: float | None) -> str:
    if mean is None:
        return ""
    return f"{mean:.5g}" + ("" if std is None else f" ± {std:.2g}")


@main.command()
@click.argument("sweep")
@click.option(
    "--seeds", type=click.IntRange(1, 1000), default=3, show_default=True, help="Fresh seeds per study."
)
@click.option("--task", help="Only the studies of this task.")
@click.option("--model", help="Only the studies of this model.")
@address_option
@storage_option
@results_option
@verbose_option
def confirm(
    sweep: str,
    seeds: int,
    task: str | None,
    model: str | None,
    address: str | None,
    storage: str | None,
    results: str | None,
    verbose: bool,
) -> None:
    """Retrain each study's best configuration with fresh seeds, unpruned, and report mean ± std."""
    from sweeper.confirm import confirmed, run_confirmation, select_studies, test_metric

    store = _open_store(storage)
    record = _find_sweep(store, sweep)
    if not select_studies(record, task, model):
        known = ", ".join(f"{s.task}/{s.model}" for s in record.studies)
        raise BadInput(f"no study of {record.name} matches --task/--model (studies: {known})")
    _connect(address, store.url, verbose, [load_record_spec(record)])
    outcome, notes = run_confirmation(
        store, record, seeds=seeds, task=task, model=model, address=address, verbose=verbose, results=results
    )
    for note in notes:
        click.echo(note)
    spec = load_record_spec(record)
    metric = spec.resolved_objective().metric
    table = Table(title=f"{record.name}: confirmation over fresh seeds", title_justify="left")
    for column in (
        "task",
        "model",
        "runs",
        f"best {metric}",
        test_metric(metric),
        "failed",
        "trial",
        "parameters",
    ):
        table.add_column(column)
    from sweeper.report import format_params

    for result in confirmed(store, record, spec):
        table.add_row(
            result.task,
            result.model,
            str(len(result.objectives)),
            format_mean_std(*result.objective),
            format_mean_std(*result.test),
            str(result.failed),
            str(result.source_trial),
            format_params(result.params),
        )
    console.print(table)
    click.echo(
        f"confirmation of {record.name}: {outcome.status}"
        + (f" ({outcome.message})" if outcome.message else "")
    )
    sys.exit(EXIT_INTERRUPTED if outcome.status == "interrupted" else 1 if outcome.status == "failed" else 0)


@main.command()
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
    from sweeper.compare import COLUMNS, compare, row_cells, to_csv, to_json, to_markdown
    from sweeper.figures import write_figures
    from sweeper.launch import open_tracker

    store = _open_store(storage)
    record = _find_sweep(store, sweep)
    spec = load_record_spec(record)
    rows = compare(store, record)
    title = f"{record.name}: {spec.task.name} {spec.task.settings}"
    rendered = {"markdown": to_markdown(rows, title), "json": to_json(rows), "csv": to_csv(rows)}
    if fmt == "table":
        table = Table(title=title, title_justify="left")
        for column in COLUMNS:
            table.add_column(column)
        for row in rows:
            table.add_row(*row_cells(row))
        console.print(table)
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
        files += write_figures(store, record, spec, out, tracker.client if tracker else None)
    if tracker is not None and record.mlflow_experiment_id:
        tracker.log_report(record.mlflow_experiment_id, files)
    click.echo(f"report files in {out}", err=True)


@main.command(name="sync-mlflow")
@click.argument("sweep")
@storage_option
@click.option("--tracking-uri", help="Sync to this MLflow instead of the sweep's (and record it).")
def sync_mlflow_command(sweep: str, storage: str | None, tracking_uri: str | None) -> None:
    """Back-fill MLflow from SWEEP's studies (after a tracking outage, or onto a new server)."""
    from sweeper.sync import SyncError, sync_mlflow
    from sweeper.tracking import Tracker

    store = _open_store(storage)
    record = _find_sweep(store, sweep)
    uri = tracking_uri or resolve_tracking_uri(record.tracking_uri or default_tracking_uri())
    try:
        counts = sync_mlflow(store, record, Tracker(uri))
    except SyncError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"{record.name} -> {redact(uri)}: {counts.experiments} experiment, {counts.parents} parent runs, "
        f"{counts.created} trial runs created, {counts.completed} trial runs completed, {counts.points} points added"
    )


@main.group()
def data() -> None:
    """Data sets of the file-based tasks (PTB, WikiText-2, bAbI; TIMIT is local only)."""


@data.command()
@click.argument("task")
@click.option(
    "--data-dir", required=True, type=click.Path(path_type=Path), help="Folder to download and verify into."
)
def fetch(task: str, data_dir: Path) -> None:
    """Download TASK's public data set into --data-dir and verify it."""
    from trainables.data import DataError
    from trainables.data import fetch as fetch_data

    try:
        path = fetch_data(task, data_dir)
    except DataError as exc:
        raise BadInput(str(exc)) from None
    click.echo(f"{task}: data ready in {path}")


@main.command(name="list")
@storage_option
def list_sweeps(storage: str | None) -> None:
    """Every sweep in the study database."""
    store = _open_store(storage)
    table = Table(title=f"sweeps in {redact(store.url)}", title_justify="left")
    for column in ("name", "status", "task", "studies", "created", "elapsed", "experiment"):
        table.add_column(column)
    for record in store.list_sweeps():
        task = record.studies[0].task if record.studies else ""
        table.add_row(
            record.name,
            record.status,
            task,
            str(len(record.studies)),
            f"{record.created_at:%Y-%m-%d %H:%M}",
            f"{record.elapsed_s:.0f}s",
            record.mlflow_experiment_id or "",
        )
    console.print(table)


@main.command()
@click.option("--hidden-size", type=click.IntRange(min=1), default=128, show_default=True)
@click.option("--input-size", type=click.IntRange(min=1), default=10, show_default=True)
def models(hidden_size: int, input_size: int) -> None:
    """Registered models, their hyperparameters, and parameter counts at a hidden size."""
    from trainables.registry import MODELS, load_all

    load_all()
    for spec in MODELS:
        try:
            count = f"{spec.parameter_count(input_size, hidden_size):,}"
        except ValueError as exc:
            count = f"n/a ({exc})"
        table = Table(
            title=f"{spec.name}: {spec.description} — {count} parameters at input {input_size}, hidden {hidden_size}",
            title_justify="left",
        )
        for column in ("hyperparameter", "type", "default", "allowed", "meaning"):
            table.add_column(column)
        for hp in spec.all_hyperparams.values():
            table.add_row(hp.name, hp.kind, str(hp.default), hp.describe_range(), hp.help)
        console.print(table)


@main.command()
def tasks() -> None:
    """Registered tasks and their settings."""
    from trainables.registry import TASKS, load_all

    load_all()
    for spec in TASKS:
        task_cls = spec.task_class
        table = Table(
            title=f"{spec.name}: {spec.description} (objective: {task_cls.mode} {task_cls.objective})",
            title_justify="left",
        )
        for column in ("setting", "type", "default", "meaning"):
            table.add_column(column)
        for name, fld in spec.settings.model_fields.items():
            annotation = getattr(fld.annotation, "__name__", str(fld.annotation))
            table.add_row(name, annotation, str(fld.default), fld.description or "")
        console.print(table)


def _parse_assignments(values: tuple[str, ...]) -> dict[str, Any]:
    parsed = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise BadInput(f"--set {item!r}: expected NAME=VALUE")
        parsed[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
    return parsed


@main.command()
@click.option("--task", required=True, help="Registered task name.")
@click.option("--model", required=True, help="Registered model name.")
@click.option("--set", "assignments", multiple=True, help="NAME=VALUE: a hyperparameter or a task setting.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda, cuda:1, ...")
def train(task: str, model: str, assignments: tuple[str, ...], seed: int, device: str) -> None:
    """Run one training run in this process, without Ray, printing metrics as it goes."""
    from trainables.registry import TASKS, load_all
    from trainables.train import TrialConfig
    from trainables.train import train as run_training

    load_all()
    values = _parse_assignments(assignments)
    try:
        settings_fields = TASKS.get(task).settings.model_fields
    except KeyError as exc:
        raise BadInput(f"--task: {exc.args[0]}") from None
    task_settings = {k: values.pop(k) for k in list(values) if k in settings_fields}
    config = {
        "task": task,
        "model": model,
        "task_settings": task_settings,
        "seed": seed,
        "device": device,
        **values,
    }
    try:
        TrialConfig.from_mapping(config).check_runnable()
    except (ValueError, KeyError) as exc:
        raise BadInput(str(exc.args[0] if isinstance(exc, KeyError) else exc)) from None

    def report(step: int, metrics: dict[str, float | str]) -> None:
        shown = "  ".join(f"{k}={v}" if isinstance(v, str) else f"{k}={v:.5g}" for k, v in metrics.items())
        click.echo(f"step {step:>7}  {shown}")

    run_training(config, report)


if __name__ == "__main__":
    main()

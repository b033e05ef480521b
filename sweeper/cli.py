"""The `sweeper` command line. Each command parses its options, calls one module, and prints.

Bad input (a spec, a storage URL, an unknown sweep, an option Click rejects) is a usage error:
exit code 2 and one line per problem, `error: ...`, naming what to fix, before anything is
written. A command that could not do its work for another reason exits 1 the same way. The
commands that only read results (`status`, `list`, `summarize`, `export`, `report`, `--help`)
import neither Ray nor torch.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import yaml
from pydantic import ValidationError
from rich.console import Console

from sweeper.spec import SpecError, SweepSpec, load_spec, parse_duration
from sweeper.status import SweepStatus

if TYPE_CHECKING:
    from sweeper.store import Store, SweepRecord

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

# Tables as wide as their content where the output is a file or a pipe, not a terminal's width
console = Console(width=None if sys.stdout.isatty() else 10_000)


class BadInput(click.ClickException):
    """A usage error: the message says what to fix."""

    exit_code = EXIT_BAD_INPUT

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class Failed(BadInput):
    """The input was right, but the work could not be done (an unreachable tracking server)."""

    exit_code = EXIT_FAILED


class SweeperGroup(click.Group):
    """Click's own usage errors (a missing argument, an unknown option) in sweeper's style too:
    one line, exit 2, and where to read the command's options."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        try:
            returned = super().main(*args, standalone_mode=False, **kwargs)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx else "sweeper"
            click.echo(f"error: {exc.format_message()} (see `{where} --help`)", err=True)
            code = EXIT_BAD_INPUT
        except click.ClickException as exc:
            exc.show()
            code = exc.exit_code
        except click.Abort:
            click.echo("Aborted!", err=True)
            code = EXIT_FAILED
        else:
            code = returned if isinstance(returned, int) else 0
        if not standalone_mode:
            return code
        sys.exit(code)


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


def _open_store(url: str | None, sweep: str | None = None) -> Store:
    """The study database of existing sweeps: never created by a command that only reads."""
    from sweeper.store import NoDatabase, Store, StoreError, default_storage_url

    try:
        return Store(url or default_storage_url(), create=False)
    except NoDatabase as exc:
        raise BadInput(f"{f'no sweep named {sweep!r}' if sweep else 'no sweeps'}: {exc}") from None
    except StoreError as exc:
        raise BadInput(str(exc)) from None


def _load(path: str, profile: str | None) -> SweepSpec:
    try:
        return load_spec(path, profile)
    except SpecError as exc:
        raise BadInput("invalid sweep spec\n  " + "\n  ".join(exc.errors)) from None


def _find_sweep(store: Store, name: str | None) -> SweepRecord:
    from sweeper.store import StoreError, redact

    try:
        if name is None:
            record = store.latest_sweep()
            if record is None:
                raise StoreError(
                    f"no sweeps in {redact(store.url)} yet; start one with `sweeper launch CONFIG`, "
                    "or point to another database with --storage or SWEEPER_STORAGE"
                )
            return record
        return store.get_sweep(name)
    except StoreError as exc:
        raise BadInput(str(exc)) from None


def _where(
    storage_url: str,
    tracking_uri: str,
    address: str | None,
    results: str | None,
    verbose: bool,
) -> Any:
    from sweeper.launch import Where

    return Where(storage_url, tracking_uri, address, results, verbose)


def _refused(exc: Exception) -> BadInput:
    """A setup that cannot run these trials (SQLite across nodes, GPUs that are not there)."""
    return BadInput(str(exc))


@click.group(cls=SweeperGroup, name="sweeper")
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
    from sweeper.launch import register, run_sweep, with_budget, without_gpus
    from sweeper.matching import resolve_matching
    from sweeper.plan import matching_text, plan_text
    from sweeper.preflight import preflight
    from sweeper.runtime import MissingGPUs
    from sweeper.store import StoreError, default_storage_url, redact
    from sweeper.tracking import default_tracking_uri, runs_page, ui_command

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
    places, problems = [], []
    for index, spec in enumerate(specs):
        url = storage or spec.storage or default_storage_url()
        uri = tracking_uri or spec.tracking_uri or default_tracking_uri()
        places.append(_where(url, uri, address, results, verbose))
        found = [f"{configs[index]}: {p}" for p in preflight(spec, url, local=address is None)]
        try:
            specs[index], derived = resolve_matching(spec)
        except SpecError as exc:
            if not dry_run:
                raise BadInput(f"{configs[index]}: " + "; ".join(exc.errors)) from None
            derived = {"(all)": exc.errors[0]}
        if dry_run:
            click.echo(plan_text(specs[index], url, uri, address))
            if derived:
                click.echo(matching_text(derived))
            click.echo("  preflight: " + ("would stop here, see below" if found else "ok"))
        problems += found
    if problems:
        raise BadInput("\n".join(problems))
    if dry_run:
        return
    worst = 0
    for index, (spec, where) in enumerate(zip(specs, places, strict=True)):
        try:
            store, record = register(spec, where, profile, specs)
        except (StoreError, MissingGPUs) as exc:
            raise _refused(exc) from None
        click.echo(f"sweep {record.name}: {len(record.studies)} studies in {redact(where.storage_url)}")
        page = runs_page("http://127.0.0.1:5000", record.mlflow_experiment_id)
        click.echo(
            f"  MLflow UI: sweeper ui {record.name}  (or {ui_command(where.tracking_uri)}, then {page})"
        )
        with _resumable(record.name, last=index == len(specs) - 1):
            worst = max(worst, _print_end(store, run_sweep(store, record, where)))
    sys.exit(worst)


@contextlib.contextmanager
def _resumable(sweep: str, last: bool = True) -> Iterator[None]:
    """A second Ctrl-C aborts at once, wherever the driver is: say how to continue. After the
    `last` sweep of the command, Ray is shut down deaf to Ctrl-C (see `stop_ray`)."""
    from sweeper.runtime import stop_ray

    try:
        yield
    except KeyboardInterrupt:
        click.echo(f"\nsweep {sweep}: aborted; continue with: sweeper resume {sweep}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        if last:
            stop_ray()


def _print_end(store: Store, end: Any) -> int:
    """How a sweep's run ended: its studies best first, the verdict and the next commands, and
    the exit code that goes with it (a sweep whose every trial failed is a failure)."""
    from sweeper.report import recorded_baseline, sorted_best_first, study_summaries
    from sweeper.store import DATABASE_ERRORS, redact
    from sweeper.tables import status_table
    from sweeper.verdict import all_failed, verdict

    click.echo("")
    click.echo(f"sweep {end.sweep}: {end.status}" + (f" ({end.message})" if end.message else ""))
    failed = end.status == SweepStatus.FAILED
    try:
        record = store.get_sweep(end.sweep)
        summaries = study_summaries(store, record)
        ranked = sorted_best_first(summaries, record.spec.resolved_objective().mode)
        console.print(status_table(record, ranked))
        for line in verdict(record, summaries, recorded_baseline(store, record)):
            click.echo(line)
        failed = failed or all_failed(summaries)
    except DATABASE_ERRORS:
        click.echo(f"  (no status: the study database {redact(store.url)} is unreachable)")
    if end.status == SweepStatus.INTERRUPTED:
        click.echo(f"  continue with: sweeper resume {end.sweep}")
        return EXIT_INTERRUPTED
    return EXIT_FAILED if failed else 0


@main.command()
@click.argument("paper")
@click.argument("table")
@click.option(
    "--seeds", type=click.IntRange(1, 1000), help="Runs per row [default: the paper's count, else 3]."
)
@click.option("--profile", type=click.Choice(["smoke"]), help="Shrink every run to minutes on a CPU.")
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="NAME=VALUE",
    help="Only the rows with this paper setting, e.g. --only T=200 (repeatable).",
)
@click.option("--dry-run", is_flag=True, help="Print the runs and their estimated cost; start nothing.")
@click.option("--estimate/--no-estimate", default=True, help="Time a few steps of each run for --dry-run.")
@click.option("--no-gpus", is_flag=True, help="Train every run on the CPU.")
@address_option
@storage_option
@tracking_option
@results_option
@verbose_option
def reproduce(
    paper: str,
    table: str,
    seeds: int | None,
    profile: str | None,
    only: tuple[str, ...],
    dry_run: bool,
    estimate: bool,
    no_gpus: bool,
    address: str | None,
    storage: str | None,
    tracking_uri: str | None,
    results: str | None,
    verbose: bool,
) -> None:
    """Run PAPER's TABLE at its published settings over seeds, and set ours beside theirs.

    PAPER is goru2019 or ncgru; TABLE is as printed ("Table 2", or 2). Each row's runs are built from
    the table's recorded settings; every setting the paper does not state is a reading, listed.
    """
    from sweeper.preflight import preflight
    from sweeper.reproduction import NotReproducible, plan, spec_for
    from sweeper.store import StoreError, default_storage_url
    from sweeper.tracking import default_tracking_uri

    try:
        repro = plan(paper, table, seeds=seeds, profile=profile, only=_settings(only))
    except NotReproducible as exc:
        raise BadInput(str(exc)) from None
    gpus = not (no_gpus or profile)
    specs = [spec_for(repro, part, gpus) for part in repro.parts]
    url = storage or default_storage_url()
    uri = tracking_uri or default_tracking_uri()
    problems = [p for spec in specs for p in preflight(spec, url, local=address is None)]
    if dry_run:
        from sweeper.plan import reproduction_text

        click.echo(reproduction_text(repro, specs, estimate))
        click.echo("  preflight: " + ("would stop here, see below" if problems else "ok"))
    if problems:
        raise BadInput("\n".join(dict.fromkeys(problems)))
    if dry_run:
        return
    from sweeper.reproduce import register_parts, run_reproduction
    from sweeper.runtime import MissingGPUs

    where = _where(url, uri, address, results, verbose)
    try:
        registered = register_parts(repro, specs, where)
    except (StoreError, MissingGPUs) as exc:
        raise _refused(exc) from None
    worst = 0
    for index, (store, record) in enumerate(registered):
        click.echo(f"sweep {record.name}: {record.spec.description}, {repro.seeds} seeds per row")
        with _resumable(record.name, last=index == len(registered) - 1):
            worst = max(worst, _print_reproduction(store, run_reproduction(store, record, where)))
    sys.exit(worst)


def _settings(pairs: tuple[str, ...]) -> dict[str, Any]:
    """NAME=VALUE pairs, values read as YAML scalars (so T=200 is a number)."""
    found: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise BadInput(f"--only {pair!r}: expected NAME=VALUE, e.g. T=200")
        found[name] = yaml.safe_load(value)
    return found


def _print_reproduction(store: Store, end: Any) -> int:
    """A reproduction's ending: ours beside theirs, the readings, and the exit code."""
    from sweeper.reproduced import notes, reproduced
    from sweeper.tables import reproduction_table

    click.echo(f"sweep {end.sweep}: {end.status}" + (f" ({end.message})" if end.message else ""))
    record = store.get_sweep(end.sweep)
    table, rows = reproduced(store, record)
    console.print(reproduction_table(f"{record.name}: ours beside {table.paper} {table.table}", rows))
    for line in notes(table, record.profile):
        click.echo(f"  {line}")
    if end.status == SweepStatus.INTERRUPTED:
        click.echo(f"  continue with: sweeper resume {end.sweep}")
        return EXIT_INTERRUPTED
    return EXIT_FAILED if end.status == SweepStatus.FAILED or not any(r.values for r in rows) else 0


@main.command()
@click.argument("sweep")
@address_option
@storage_option
@results_option
@verbose_option
def resume(sweep: str, address: str | None, storage: str | None, results: str | None, verbose: bool) -> None:
    """Continue SWEEP toward its budgets; finished trials are kept, unfinished ones rerun."""
    from sweeper.launch import resume as resume_sweep
    from sweeper.report import study_summaries
    from sweeper.runtime import MissingGPUs
    from sweeper.store import StoreError
    from sweeper.tables import status_table
    from sweeper.tracking import default_tracking_uri

    store = _open_store(storage, sweep)
    record = _find_sweep(store, sweep)
    if record.status == SweepStatus.FINISHED:  # its budgets are met: nothing to start Ray for
        click.echo(f"sweep {record.name} is finished: its budgets are met, nothing is left to run")
        console.print(status_table(record, study_summaries(store, record)))
        return
    where = _where(store.url, record.tracking_uri or default_tracking_uri(), address, results, verbose)
    if record.spec.reproduces is not None:
        from sweeper.reproduce import run_reproduction

        with _resumable(record.name):
            try:
                end = run_reproduction(store, record, where)
            except (StoreError, MissingGPUs) as exc:
                raise _refused(exc) from None
            sys.exit(_print_reproduction(store, end))
    with _resumable(record.name):
        try:
            fixed, end = resume_sweep(store, record, where)
        except (StoreError, MissingGPUs) as exc:
            raise _refused(exc) from None
        if fixed:
            click.echo(
                f"sweep {record.name}: {fixed} trial(s) left running by a stopped driver marked interrupted"
            )
        sys.exit(_print_end(store, end))


@main.command()
@click.argument("sweep", required=False)
@storage_option
def status(sweep: str | None, storage: str | None) -> None:
    """Per study of SWEEP (default: the latest), trials by state and the best value with its parameters."""
    from sweeper.report import study_summaries
    from sweeper.tables import status_table

    store = _open_store(storage, sweep)
    record = _find_sweep(store, sweep)
    console.print(status_table(record, study_summaries(store, record)))


@main.command()
@click.argument("sweep")
@storage_option
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table")
@click.option("--importance", is_flag=True, help="Also print each study's parameter importances.")
def summarize(sweep: str, storage: str | None, fmt: str, importance: bool) -> None:
    """Each model's best objective, hyperparameters and parameter count, best first, per task."""
    from sweeper.report import importances, render_json, render_markdown, sorted_best_first, study_summaries
    from sweeper.tables import importance_table, summary_tables

    store = _open_store(storage, sweep)
    record = _find_sweep(store, sweep)
    objective = record.spec.resolved_objective()
    summaries = sorted_best_first(study_summaries(store, record), objective.mode)
    weights = importances(store, record) if importance else None
    if fmt == "json":
        click.echo(render_json(record, objective.metric, objective.mode, summaries, weights))
    elif fmt == "markdown":
        click.echo(render_markdown(record, objective.metric, summaries, weights))
    else:
        for table in summary_tables(record, summaries):
            console.print(table)
        if weights is not None:
            console.print(importance_table(weights))


@main.command()
@click.argument("sweep")
@storage_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output folder.")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), default="csv", show_default=True)
def export(sweep: str, storage: str | None, out: Path, fmt: str) -> None:
    """Write SWEEP's trials, intermediate values and resolved spec to files."""
    from sweeper.export import export_sweep

    store = _open_store(storage, sweep)
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
    from sweeper.servers import serve_until_stopped, ui_servers

    store = _open_store(storage, sweep)
    lines, commands = ui_servers(store, _find_sweep(store, sweep), host, port, dashboard_port)
    for line in lines:
        click.echo(line)
    if commands:
        serve_until_stopped(commands)


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
    from sweeper.confirm import run_confirmation, select_studies
    from sweeper.confirmations import confirmed
    from sweeper.runtime import MissingGPUs
    from sweeper.store import StoreError
    from sweeper.tables import confirmation_table
    from sweeper.tracking import default_tracking_uri

    store = _open_store(storage, sweep)
    record = _find_sweep(store, sweep)
    if not select_studies(record, task, model):
        known = ", ".join(f"{s.task}/{s.model}" for s in record.studies)
        raise BadInput(f"no study of {record.name} matches --task/--model (studies: {known})")
    where = _where(store.url, record.tracking_uri or default_tracking_uri(), address, results, verbose)
    try:
        end, notes = run_confirmation(store, record, where, seeds=seeds, task=task, model=model)
    except (StoreError, MissingGPUs) as exc:
        raise _refused(exc) from None
    for note in notes:
        click.echo(note)
    console.print(confirmation_table(record, confirmed(store, record)))
    click.echo(f"confirmation of {record.name}: {end.status}" + (f" ({end.message})" if end.message else ""))
    sys.exit(
        EXIT_INTERRUPTED
        if end.status == SweepStatus.INTERRUPTED
        else EXIT_FAILED
        if end.status == SweepStatus.FAILED
        else 0
    )


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
    from sweeper.compare import compare, to_csv, to_json, to_markdown
    from sweeper.store import DEFAULT_HOME
    from sweeper.tables import comparison_table
    from sweeper.tracking import open_tracker

    store = _open_store(storage, sweep)
    record = _find_sweep(store, sweep)
    spec = record.spec
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
        from sweeper.figures import write_figures

        files += write_figures(store, record, out, tracker.client if tracker else None)
    if tracker is not None and record.mlflow_experiment_id:
        tracker.log_report(record.mlflow_experiment_id, files)
    click.echo(f"report files in {out}", err=True)


def _reproduction_report(store: Store, record: SweepRecord) -> tuple[dict[str, str], Any]:
    """A reproduction's report: ours beside the published table, in each format."""
    from sweeper.reproduced import rendered, reproduced
    from sweeper.tables import reproduction_table

    table, rows = reproduced(store, record)
    title = f"{record.name}: ours beside {table.paper} {table.table}"
    return rendered(table, rows, title, record.profile), reproduction_table(title, rows)


@main.command(name="sync-mlflow")
@click.argument("sweep")
@storage_option
@click.option("--tracking-uri", help="Sync to this MLflow instead of the sweep's (and record it).")
def sync_mlflow_command(sweep: str, storage: str | None, tracking_uri: str | None) -> None:
    """Back-fill MLflow from SWEEP's studies (after a tracking outage, or onto a new server)."""
    from sweeper.store import redact
    from sweeper.sync import SyncError, sync_mlflow
    from sweeper.tracking import Tracker, default_tracking_uri, resolve_tracking_uri

    store = _open_store(storage, sweep)
    record = _find_sweep(store, sweep)
    uri = tracking_uri or resolve_tracking_uri(record.tracking_uri or default_tracking_uri())
    try:
        counts = sync_mlflow(store, record, Tracker(uri))
    except SyncError as exc:
        raise Failed(str(exc)) from None
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
    from sweeper.tables import sweeps_table

    store = _open_store(storage)
    console.print(sweeps_table(store.url, store.list_sweeps()))


@main.command()
@click.option("--hidden-size", type=click.IntRange(min=1), default=128, show_default=True)
@click.option("--input-size", type=click.IntRange(min=1), default=10, show_default=True)
def models(hidden_size: int, input_size: int) -> None:
    """Registered models, where each is defined, its hyperparameters and its size at a hidden size;
    then the training settings every model shares."""
    from sweeper.tables import hyperparameter_table, model_table
    from trainables.catalog import load_all
    from trainables.hyperparams import TRAINING_HYPERPARAMS
    from trainables.registry import MODELS
    from trainables.sizing import model_parameters

    load_all()
    for entry in MODELS:
        try:
            count = f"{model_parameters(entry.name, input_size, hidden_size):,}"
        except ValueError as exc:
            count = f"n/a ({exc})"
        console.print(model_table(entry, count, input_size, hidden_size))
    console.print(hyperparameter_table("shared by every model (training)", TRAINING_HYPERPARAMS))


@main.command()
def tasks() -> None:
    """Registered tasks, where each is defined, and their settings."""
    from sweeper.tables import task_table
    from trainables.catalog import load_all
    from trainables.registry import TASKS

    load_all()
    for entry in TASKS:
        console.print(task_table(entry))


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
    from trainables.data import DataError
    from trainables.train import TrialConfig, TrialDiverged, TrialOutOfMemory, config_from_settings
    from trainables.train import train as run_training

    try:
        config = config_from_settings(task, model, _parse_assignments(assignments), seed, device)
        TrialConfig.from_mapping(config).check_runnable()
    except KeyError as exc:  # an unknown task or model, named with the registered ones
        raise BadInput(exc.args[0]) from None
    except ValueError as exc:
        raise BadInput(str(exc)) from None

    def report(step: int, metrics: dict[str, float | str]) -> None:
        shown = "  ".join(f"{k}={v}" if isinstance(v, str) else f"{k}={v:.5g}" for k, v in metrics.items())
        click.echo(f"step {step:>7}  {shown}")

    def early(step: int, loss: float, seconds: float) -> None:
        click.echo(f"step {step:>7}  train_loss={loss:.5g}  wall_time={seconds:.3g}")

    try:
        run_training(config, report, progress=early)
    except (TrialDiverged, TrialOutOfMemory) as exc:
        raise Failed(f"the run stopped: {exc}") from None
    except DataError as exc:  # the task's files are not here: what to fetch, and from where
        raise BadInput(str(exc)) from None


from sweeper.job_commands import job  # noqa: E402  (sweeper job ...; it imports this module's errors lazily)

main.add_command(job)

if __name__ == "__main__":
    main()

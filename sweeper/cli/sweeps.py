"""Commands that run sweeps on Ray: launch, resume, confirm, and the MLflow back-fill."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click
from pydantic import ValidationError

from sweeper.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    BadInput,
    Failed,
    address_option,
    console,
    find_sweep,
    open_store,
    print_tables,
    print_verdict,
    read_spec,
    read_submitted_spec,
    refused,
    results_option,
    resumable,
    storage_option,
    tracking_option,
    verbose_option,
    where_to_run,
)
from sweeper.cli.papers import print_reproduction
from sweeper.spec.loading import SpecError, stored_spec
from sweeper.spec.values import parse_duration
from sweeper.store.states import SweepStatus

if TYPE_CHECKING:
    from sweeper.store.database import Store


@click.command()
@click.argument("configs", nargs=-1, required=True)
@address_option
@storage_option
@tracking_option
@click.option("--max-trials", type=click.IntRange(min=1), help="Trials per study (overrides budget.trials).")
@click.option("--time-budget", help="Wall-clock budget per sweep, e.g. 30m or 2h (overrides budget.time).")
@click.option("--profile", help="Apply a named profile of overrides from each config (e.g. smoke).")
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    help="The sweep's seed: its samplers' and its trials' (overrides seed).",
)
@click.option("--dry-run", is_flag=True, help="Print the resolved plan and its price, and start nothing.")
@click.option(
    "--calibrate",
    is_flag=True,
    help="With --address: time each model on a worker of the cluster and read its size (else the "
    "price rests on recorded GPU figures, and a --dry-run starts nothing on the cluster).",
)
@click.option(
    "--no-price",
    is_flag=True,
    help="Time no model before starting: the sweep starts at once, unpriced (status then has no "
    "prediction to set beside what it spent).",
)
@click.option("--no-gpus", is_flag=True, help="Train every trial on the CPU, whatever resources.gpus says.")
@click.option(
    "--warm-start",
    "warm_from",
    metavar="SWEEP",
    help="Begin each study with the finished trials of SWEEP (same task and model) that fit its space.",
)
@click.option(
    "--submitted-spec",
    is_flag=True,
    help="Read CONFIG's text from this Ray job's metadata, where `sweeper job submit` ships a local spec.",
)
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
    seed: int | None,
    dry_run: bool,
    calibrate: bool,
    no_price: bool,
    no_gpus: bool,
    warm_from: str | None,
    results: str | None,
    verbose: bool,
    submitted_spec: bool,
) -> None:
    """Run a sweep for each CONFIG: one Optuna study per (task, model), trials on Ray."""
    from sweeper.papers.points import first_points
    from sweeper.run.launch import register, run_sweep, with_budget, with_seed, without_gpus
    from sweeper.run.pricing import other_gpu_kind, sweep_price
    from sweeper.run.search.portfolio import first_trials_text
    from sweeper.run.search.warm_start import warm_start
    from sweeper.run.tune.runtime import MissingGPUs
    from sweeper.spec.matching import resolve_matching
    from sweeper.spec.plan import matching_text, plan_text
    from sweeper.spec.preflight import preflight
    from sweeper.spec.price import price_text
    from sweeper.store.credentials import redact
    from sweeper.store.database import StoreError
    from sweeper.store.locations import default_storage_url, default_tracking_uri, runs_page, ui_command

    seconds = None
    if time_budget is not None:
        try:
            seconds = parse_duration(time_budget)
        except ValueError as exc:
            raise BadInput(f"--time-budget: {exc}") from None
    read = read_submitted_spec if submitted_spec else read_spec
    specs = [with_seed(with_budget(read(path, profile), max_trials, seconds), seed) for path in configs]
    if no_gpus:
        try:
            specs = [without_gpus(spec) for spec in specs]
        except ValidationError as exc:
            raise BadInput(f"--no-gpus: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    if calibrate and address is None:
        raise BadInput("--calibrate times a cluster's worker: give the cluster's --address")
    if calibrate and no_price:
        raise BadInput("--calibrate prices the sweep on a worker; --no-price prices nothing: give one")
    places, problems, prices = [], [], []
    for index, spec in enumerate(specs):
        url = storage or spec.storage or default_storage_url()
        uri = tracking_uri or spec.tracking_uri or default_tracking_uri()
        places.append(where_to_run(url, uri, address, results, verbose))
        found = [f"{configs[index]}: {p}" for p in preflight(spec, url, local=address is None)]
        try:
            specs[index], derived = resolve_matching(spec)
        except SpecError as exc:
            if not dry_run:
                raise BadInput(f"{configs[index]}: " + "; ".join(exc.errors)) from None
            derived = {"(all)": exc.errors[0]}
        priced, unpriced = None, "not asked (--no-price)" if no_price else None
        if (dry_run or not found) and not no_price:  # a dry run prices what a launch here would refuse
            try:  # said while it times a configuration: a spec's first price here waits for it
                priced = sweep_price(
                    specs[index], address, calibrate, say=lambda what: click.echo(f"  {what} ...", err=True)
                )
            except Exception as exc:  # what cannot be timed here leaves the sweep unpriced, said why
                unpriced = f"not measured here ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        prices.append(None if priced is None else priced[0])
        if unpriced is not None and not no_price and not dry_run and not found:
            click.echo(f"{configs[index]}: price {unpriced}; the sweep starts unpriced")
        if dry_run:
            click.echo(plan_text(specs[index], url, uri, address))
            click.echo(first_trials_text(specs[index], url))
            if derived:
                click.echo(matching_text(derived))
            if priced is not None:
                click.echo(price_text(priced[0], priced[1]))
            elif unpriced is not None:
                click.echo(f"  price: {unpriced}")
            click.echo("  preflight: " + ("would stop here, see below" if found else "ok"))
        problems += found
    if problems:
        raise BadInput("\n".join(problems))
    if dry_run:
        return
    earlier = None
    if warm_from is not None:  # refused before anything is written
        if len(specs) > 1:
            raise BadInput("--warm-start SWEEP seeds one sweep: give one CONFIG")
        earlier_store = open_store(places[0].storage_url, warm_from)
        earlier = find_sweep(earlier_store, warm_from)
        earlier_store.dispose()
        if any(stored_spec(earlier).task != spec.task for spec in specs):
            raise BadInput(
                f"--warm-start {warm_from}: it ran another task or task settings than {configs[0]}"
            )
    worst = 0
    for index, (spec, where) in enumerate(zip(specs, places, strict=True)):
        first_trials, starts = first_points(spec)
        try:
            store, record = register(spec, where, profile, specs, first_trials, prices[index])
        except (StoreError, MissingGPUs) as exc:
            raise refused(exc) from None
        click.echo(f"sweep {record.name}: {len(record.studies)} studies in {redact(where.storage_url)}")
        if address is not None and prices[index] is not None and not calibrate:
            other = other_gpu_kind(spec)
            if other is not None:
                click.echo(f"  warning: {other}", err=True)
        for line in starts:
            click.echo(line)
        if earlier is not None:
            for started in warm_start(store, record, store.get_sweep(earlier.name)):
                unfit = f" ({started.unfit} outside this space)" if started.unfit else ""
                click.echo(f"  {started.model} starts from {started.reused} trials of {earlier.name}{unfit}")
        page = runs_page("http://127.0.0.1:5000", record.mlflow_experiment_id)
        click.echo(
            f"  MLflow UI: sweeper ui {record.name}  (or {ui_command(where.tracking_uri)}, then {page})"
        )
        with resumable(record.name, last=index == len(specs) - 1):
            worst = max(worst, print_end(store, run_sweep(store, record, where)))
    sys.exit(worst)


def print_end(store: Store, end: Any) -> int:
    """How a sweep's run ended: its studies best first, the verdict and the next commands, and
    the exit code that goes with it (a sweep whose every trial failed is a failure)."""
    from sweeper.results.odds import sweep_odds
    from sweeper.results.summaries import recorded_baseline, study_summaries
    from sweeper.results.tables import status_table
    from sweeper.results.verdict import all_failed, verdict
    from sweeper.store.credentials import redact
    from sweeper.store.database import DATABASE_ERRORS

    click.echo("")
    click.echo(f"sweep {end.sweep}: {end.status}" + (f" ({end.message})" if end.message else ""))
    failed = end.status == SweepStatus.FAILED
    try:
        record = store.get_sweep(end.sweep)
        summaries = study_summaries(store, record)
        print_tables(status_table(record, summaries))
        odds = sweep_odds(store, record)
        print_verdict(verdict(record, summaries, recorded_baseline(store, record), odds))
        failed = failed or all_failed(summaries)
    except DATABASE_ERRORS:
        click.echo(f"  (no status: the study database {redact(store.url)} is unreachable)")
    if end.status == SweepStatus.INTERRUPTED:
        click.echo(f"  continue with: sweeper resume {end.sweep}")
        return EXIT_INTERRUPTED
    return EXIT_FAILED if failed else 0


@click.command()
@click.argument("sweep", required=False)
@address_option
@storage_option
@results_option
@verbose_option
def resume(
    sweep: str | None, address: str | None, storage: str | None, results: str | None, verbose: bool
) -> None:
    """Continue SWEEP (default: the latest) toward its budgets; finished trials are kept,
    unfinished ones rerun."""
    from sweeper.results.summaries import study_summaries
    from sweeper.results.tables import status_table
    from sweeper.run.launch import resume as resume_sweep
    from sweeper.run.launch import withdrawn_allocation
    from sweeper.run.tune.runtime import MissingGPUs
    from sweeper.store.database import StoreError
    from sweeper.store.locations import default_tracking_uri

    store = open_store(storage, sweep)
    record = find_sweep(store, sweep)
    if record.status == SweepStatus.FINISHED:  # its budgets are met: nothing to start Ray for
        click.echo(f"sweep {record.name} is finished: its budgets are met, nothing is left to run")
        print_tables(status_table(record, study_summaries(store, record)))
        return
    where = where_to_run(store.url, record.tracking_uri or default_tracking_uri(), address, results, verbose)
    if stored_spec(record).reproduces is not None:
        from sweeper.papers.running import run_reproduction

        with resumable(record.name):
            try:
                end = run_reproduction(store, record, where)
            except (StoreError, MissingGPUs) as exc:
                raise refused(exc) from None
            sys.exit(print_reproduction(store, end))
    if note := withdrawn_allocation(stored_spec(record)):  # a stored sweep's: it runs as equal
        click.echo(f"sweep {record.name}: {note}")
    with resumable(record.name):
        try:
            fixed, end = resume_sweep(store, record, where)
        except (StoreError, MissingGPUs) as exc:
            raise refused(exc) from None
        if fixed:
            click.echo(
                f"sweep {record.name}: {fixed} trial(s) left running by a stopped driver marked interrupted"
            )
        sys.exit(print_end(store, end))


@click.command()
@click.argument("sweep", required=False)
@click.option(
    "--seeds",
    type=click.IntRange(1, 1000),
    help="Fresh seeds per study: the most each leader runs until the claim is made "
    "[default: what the verdict suggests, 5 at first; 3 with --every, --task or --model].",
)
@click.option(
    "--claim",
    type=click.Choice(["ahead", "margin", "tie"]),
    default="ahead",
    show_default=True,
    help="Stop once this is shown at --level: ahead (the best mean's model is better than every "
    "other leader), margin (better by more than the tie margin) or tie (every pair within it).",
)
@click.option(
    "--level",
    type=click.FloatRange(0.5, 1.0, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="The level every claim holds at, whatever the look.",
)
@click.option("--every", is_flag=True, help="Every study's best, each with all --seeds seeds.")
@click.option("--task", help="Only the studies of this task (implies --every).")
@click.option("--model", help="Only the studies of this model (implies --every).")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON (docs/json.md).")
@address_option
@storage_option
@results_option
@verbose_option
def confirm(
    sweep: str | None,
    seeds: int | None,
    claim: str,
    level: float,
    every: bool,
    task: str | None,
    model: str | None,
    as_json: bool,
    address: str | None,
    storage: str | None,
    results: str | None,
    verbose: bool,
) -> None:
    """Retrain the best configurations of SWEEP (default: the latest) with fresh seeds, unpruned,
    and report mean ± std: the leaders' (the verdict's tie, else the two best) one seed more at a
    time until --claim is shown at --level whatever the look (or ruled out, or --seeds each are
    spent), saying where the other claims stand; or with --every each study's, --seeds each."""
    from sweeper.results.json_outputs import confirm_output, dumped
    from sweeper.results.retrained import confirmed
    from sweeper.results.tables import confirmation_table
    from sweeper.run.confirm import run_confirmation, select_studies
    from sweeper.run.confirm_leaders import confirm_leaders
    from sweeper.run.tune.runtime import MissingGPUs
    from sweeper.store.database import StoreError
    from sweeper.store.locations import default_tracking_uri

    store = open_store(storage, sweep)
    record = find_sweep(store, sweep)
    if not select_studies(record, task, model):
        known = ", ".join(f"{s.task}/{s.model}" for s in record.studies)
        raise BadInput(f"no study of {record.name} matches --task/--model (studies: {known})")
    where = where_to_run(store.url, record.tracking_uri or default_tracking_uri(), address, results, verbose)
    decided = False
    try:
        if every or task or model:
            end, notes = run_confirmation(store, record, where, seeds=seeds or 3, task=task, model=model)
        else:
            outcome = confirm_leaders(store, record, where, cap=seeds, level=level, claim=claim)
            end, notes, decided = outcome.end, outcome.notes, outcome.decision is not None
    except (StoreError, MissingGPUs) as exc:
        raise refused(exc) from None
    if as_json:
        record = store.get_sweep(record.name)
        click.echo(dumped(confirm_output(record, str(end.status), confirmed(store, record), notes, decided)))
    else:
        for note in notes:
            click.echo(note)
        console.print(confirmation_table(record, confirmed(store, record)))
        click.echo(
            f"confirmation of {record.name}: {end.status}" + (f" ({end.message})" if end.message else "")
        )
    sys.exit(
        EXIT_INTERRUPTED
        if end.status == SweepStatus.INTERRUPTED
        else EXIT_FAILED
        if end.status == SweepStatus.FAILED
        else 0
    )


@click.command(name="sync-mlflow")
@click.argument("sweep", required=False)
@storage_option
@click.option("--tracking-uri", help="Sync to this MLflow instead of the sweep's (and record it).")
def sync_mlflow_command(sweep: str | None, storage: str | None, tracking_uri: str | None) -> None:
    """Back-fill MLflow from SWEEP's studies (default: the latest sweep's), after a tracking outage
    or onto a new server."""
    from sweeper.run.tracking.sync import SyncError, sync_mlflow
    from sweeper.run.tracking.tracker import Tracker
    from sweeper.store.credentials import redact
    from sweeper.store.locations import default_tracking_uri, resolve_tracking_uri

    store = open_store(storage, sweep)
    record = find_sweep(store, sweep)
    uri = tracking_uri or resolve_tracking_uri(record.tracking_uri or default_tracking_uri())
    try:
        counts = sync_mlflow(store, record, Tracker(uri))
    except SyncError as exc:
        raise Failed(str(exc)) from None
    click.echo(
        f"{record.name} -> {redact(uri)}: {counts.experiments} experiment, {counts.parents} parent runs, "
        f"{counts.created} trial runs created, {counts.completed} trial runs completed, {counts.points} points added"
    )

"""`sweeper reproduce`: a published table's runs, run over seeds, beside the paper's numbers."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click
import yaml

from sweeper.cli.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    BadInput,
    address_option,
    console,
    refused,
    results_option,
    resumable,
    storage_option,
    tracking_option,
    verbose_option,
    where_to_run,
)
from sweeper.spec.loading import stored_spec
from sweeper.store.states import SweepStatus

if TYPE_CHECKING:
    from sweeper.store.database import Store


@click.command()
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
    from sweeper.papers.table_runs import NotReproducible, plan, spec_for
    from sweeper.spec.preflight import preflight
    from sweeper.store.database import StoreError
    from sweeper.store.locations import default_storage_url, default_tracking_uri

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
        from sweeper.papers.table_runs import reproduction_text

        click.echo(reproduction_text(repro, specs, estimate))
        click.echo("  preflight: " + ("would stop here, see below" if problems else "ok"))
    if problems:
        raise BadInput("\n".join(dict.fromkeys(problems)))
    if dry_run:
        return
    from sweeper.papers.running import register_parts, run_reproduction
    from sweeper.run.tune.runtime import MissingGPUs

    where = where_to_run(url, uri, address, results, verbose)
    try:
        registered = register_parts(repro, specs, where)
    except (StoreError, MissingGPUs) as exc:
        raise refused(exc) from None
    worst = 0
    for index, (store, record) in enumerate(registered):
        click.echo(f"sweep {record.name}: {stored_spec(record).description}, {repro.seeds} seeds per row")
        with resumable(record.name, last=index == len(registered) - 1):
            worst = max(worst, print_reproduction(store, run_reproduction(store, record, where)))
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


def print_reproduction(store: Store, end: Any) -> int:
    """A reproduction's ending: ours beside theirs, the readings, and the exit code."""
    from sweeper.papers.outcome import notes, reproduced, reproduction_table

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

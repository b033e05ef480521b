"""`sweeper job ...`: sweeps submitted to a running Ray cluster as Ray jobs (`sweeper.run.jobs`).

The driver runs on the cluster's head, so a sweep outlives the terminal that submitted it; these
commands submit, follow, list, stop and resume, and say the next command each time, in the error
style of `sweeper.cli.common`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from sweeper.cli.common import BadInput, Failed, print_tables, read_spec, read_spec_text, wide_option
from sweeper.run.jobs import SPEC_METADATA, JobError, Jobs, JobSummary, cluster_spec, submission_id

EXIT_BY_STATUS = {"SUCCEEDED": 0, "STOPPED": 130}  # as `sweeper launch` exits: interrupted is 130

address_option = click.option(
    "--address",
    envvar="RAY_ADDRESS",
    help="The cluster's Ray dashboard, e.g. http://127.0.0.1:8265 [env RAY_ADDRESS]; "
    "its token, if it wants one, in RAY_AUTH_TOKEN",
)


def _refused(exc: JobError) -> click.ClickException:

    return (BadInput if exc.bad_input else Failed)(str(exc))


def _jobs(address: str | None) -> Jobs:
    try:
        return Jobs(address)
    except JobError as exc:
        raise _refused(exc) from None


def _next_commands(job_id: str) -> None:
    click.echo(f"  follow: sweeper job logs {job_id} --follow")
    click.echo(f"  stop:   sweeper job stop {job_id}   (running trials are marked interrupted)")
    click.echo("  resume: sweeper job resume SWEEP   (the sweep's name is in the logs)")


def _start(
    address: str | None, entrypoint: list[str], job_id: str, metadata: dict[str, str] | None = None
) -> None:
    jobs = _jobs(address)
    try:
        jobs.submit(entrypoint, job_id, metadata)
    except JobError as exc:
        raise _refused(exc) from None
    click.echo(f"submitted {job_id} to {jobs.address}: {' '.join(entrypoint)}")
    _next_commands(job_id)


@click.group("job")
def job() -> None:
    """Sweeps as Ray jobs on a running cluster: the driver runs on its head, not in this terminal."""


@job.command(context_settings={"ignore_unknown_options": True})
@click.argument("config")
@click.argument("launch_options", nargs=-1, type=click.UNPROCESSED)
@address_option
def submit(config: str, launch_options: tuple[str, ...], address: str | None) -> None:
    """Run `sweeper launch CONFIG LAUNCH_OPTIONS...` on the cluster's head.

    CONFIG is a spec file here, validated here and shipped with the job, so the driver runs exactly
    it; else the name of a spec in configs/ (`denoise`: the copy the manifests mount on the head)
    or a path on the head. LAUNCH_OPTIONS are launch's own (`--profile smoke`, `--max-trials 8`).
    """
    local = Path(config)
    if local.is_file():
        text = read_spec_text(str(local))
        # a bad spec stops here, naming its file and line; the driver parses the same text
        spec = read_spec(str(local), _option_value(launch_options, "--profile"), text)
        entrypoint = ["sweeper", "launch", local.name, "--submitted-spec", *launch_options]
        click.echo(f"validated {local} (spec {spec.name}), shipped with the job", err=True)
        _start(address, entrypoint, submission_id("sweep", local.stem), {SPEC_METADATA: text})
        return
    spec_path = cluster_spec(config)
    name = spec_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    _start(address, ["sweeper", "launch", spec_path, *launch_options], submission_id("sweep", name))


def _option_value(options: tuple[str, ...], name: str) -> str | None:
    """The value given to `name` among options passed through (`--profile smoke`, `--profile=smoke`)."""
    for index, option in enumerate(options):
        if option == name and index + 1 < len(options):
            return options[index + 1]
        if option.startswith(f"{name}="):
            return option.split("=", 1)[1]
    return None


@job.command()
@click.argument("sweep")
@address_option
def resume(sweep: str, address: str | None) -> None:
    """Run `sweeper resume SWEEP` on the cluster's head: finished trials are kept."""
    _start(address, ["sweeper", "resume", sweep], submission_id("resume", sweep))


@job.command()
@click.argument("job_id", metavar="SUBMISSION_ID")
@click.option("--follow", "-f", is_flag=True, help="Follow until the job ends; exit 0 only if it succeeded.")
@address_option
def logs(job_id: str, follow: bool, address: str | None) -> None:
    """The output of a submitted sweep; with --follow, as it comes."""
    jobs = _jobs(address)
    try:
        if follow:
            jobs.follow(job_id, lambda chunk: click.echo(chunk, nl=False))
        else:
            click.echo(jobs.logs(job_id), nl=False)
        end = jobs.status(job_id)
    except KeyboardInterrupt:
        click.echo(
            f"\nstopped following; {job_id} goes on (stop it with: sweeper job stop {job_id})", err=True
        )
        sys.exit(130)
    except JobError as exc:
        raise _refused(exc) from None
    click.echo(f"job {job_id}: {end.status}" + (f" ({end.message})" if end.message else ""), err=True)
    if follow:
        sys.exit(EXIT_BY_STATUS.get(end.status, 1))


def _when(summary: JobSummary) -> str:
    if summary.start_time is None:
        return "-"
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.start_time))
    minutes = ((summary.end_time or time.time()) - summary.start_time) / 60
    return f"{started} ({minutes:.0f} min)"


@job.command(name="list")
@address_option
@wide_option
def list_jobs(address: str | None, wide: bool) -> None:
    """Every sweep submitted to the cluster, oldest first, with its status."""
    from rich.table import Table

    jobs = _jobs(address)
    try:
        submitted = jobs.submitted()
    except JobError as exc:
        raise _refused(exc) from None
    table = Table(title=f"jobs on {jobs.address}")
    longest = max((len(summary.submission_id) for summary in submitted), default=0)
    table.add_column("submission id", no_wrap=True, min_width=longest)  # whole, to copy into `logs`
    for column in ("status", "started (duration)", "entrypoint"):
        table.add_column(column)
    for summary in submitted:
        table.add_row(summary.submission_id, summary.status, _when(summary), summary.entrypoint)
    print_tables(table, wide)


@job.command()
@click.argument("job_id", metavar="SUBMISSION_ID")
@address_option
def stop(job_id: str, address: str | None) -> None:
    """Stop a submitted sweep: its driver marks the running trials interrupted, to be resumed."""
    jobs = _jobs(address)
    try:
        stopping = jobs.stop(job_id)
        status = jobs.status(job_id).status
    except JobError as exc:
        raise _refused(exc) from None
    if stopping:
        click.echo(f"stopping {job_id} ({status}); continue the sweep later with: sweeper job resume SWEEP")
    else:
        click.echo(f"{job_id} had already ended: {status}")

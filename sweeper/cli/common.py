"""What every command shares: the error style (exit 2 for bad input, 1 for work that could not
be done, one line each), the options that name where sweeps live, and finding a sweep."""

from __future__ import annotations

import contextlib
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from sweeper.spec.loading import SpecError, parse_spec, spec_text
from sweeper.spec.sweep import SweepSpec

if TYPE_CHECKING:
    from sweeper.store.database import Store, SweepRecord

EXIT_FAILED = 1


EXIT_BAD_INPUT = 2


EXIT_INTERRUPTED = 130


console = Console()  # the terminal's width, COLUMNS, or 80 columns when piped


def print_tables(tables: Any, wide: bool = False) -> None:
    """Tables fit the terminal (80 columns when piped), wrapping their cells; `wide` never wraps."""
    target = Console(width=10_000) if wide else console
    for table in tables if isinstance(tables, list) else [tables]:
        target.print(table)


def print_verdict(lines: list[str]) -> None:
    """The verdict's sentences wrapped to the terminal (80 columns when piped); its commands whole,
    to be copied."""
    for line in lines:
        if line.lstrip().startswith("sweeper "):
            click.echo(line)
        else:
            click.echo(
                textwrap.fill(line, width=console.width, subsequent_indent="  ", break_on_hyphens=False)
            )


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


wide_option = click.option("--wide", is_flag=True, help="Every column in full, however wide.")
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print JSON instead (its schema: docs/json.md)."
)
verbose_option = click.option("--verbose", is_flag=True, help="Show Ray's own logs and Tune's trial table.")


def open_store(url: str | None, sweep: str | None = None) -> Store:
    """The study database of existing sweeps: never created by a command that only reads."""
    from sweeper.store.database import NoDatabase, Store, StoreError
    from sweeper.store.locations import default_storage_url

    try:
        return Store(url or default_storage_url(), create=False)
    except NoDatabase as exc:
        raise BadInput(f"{f'no sweep named {sweep!r}' if sweep else 'no sweeps'}: {exc}") from None
    except StoreError as exc:
        raise BadInput(str(exc)) from None


def read_spec(path: str, profile: str | None, text: str | None = None) -> SweepSpec:
    """The spec in file `path`, or `text` named so (a spec shipped with a Ray job); a bad one is a
    usage error listing every problem with its file, line and key."""
    try:
        return parse_spec(spec_text(path) if text is None else text, path, profile)
    except SpecError as exc:
        raise BadInput("invalid sweep spec\n  " + "\n  ".join(exc.errors)) from None


def read_spec_text(path: str) -> str:
    """A spec file's text, as `read_spec` reads it (a missing or unreadable file is a usage error)."""
    try:
        return spec_text(path)
    except SpecError as exc:
        raise BadInput(exc.errors[0]) from None


def read_submitted_spec(name: str, profile: str | None) -> SweepSpec:
    """The spec `sweeper job submit` shipped with this Ray job, named as its file was."""
    from sweeper.run.jobs import SPEC_METADATA, job_metadata

    text = job_metadata().get(SPEC_METADATA)
    if text is None:
        raise BadInput(
            f"--submitted-spec: this driver is not a Ray job that `sweeper job submit` gave {name}"
        )
    return read_spec(name, profile, text)


def find_sweep(store: Store, name: str | None) -> SweepRecord:
    from sweeper.store.credentials import redact
    from sweeper.store.database import StoreError

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


def where_to_run(
    storage_url: str,
    tracking_uri: str,
    address: str | None,
    results: str | None,
    verbose: bool,
) -> Any:
    from sweeper.run.launch import Where

    return Where(storage_url, tracking_uri, address, results, verbose)


def writable_folder(path: Path, option: str = "--out") -> Path:
    """`path` made (with its parents) and writable, checked before anything is written into it;
    else a one-line error naming it (exit 2)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"{option} {path}: cannot make this folder ({exc.strerror or exc})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise BadInput(f"{option} {path}: this user cannot write into this folder")
    return path


def refused(exc: Exception) -> BadInput:
    """A setup that cannot run these trials (SQLite across nodes, GPUs that are not there)."""
    return BadInput(str(exc))


@contextlib.contextmanager
def resumable(sweep: str, last: bool = True) -> Iterator[None]:
    """A second Ctrl-C aborts at once, wherever the driver is: say how to continue, shut Ray down
    and leave without the interpreter's finalization, where threads of Ray's and Tune's still
    running at the moment of the abort can take the GIL of a finalizing interpreter and kill the
    process with SIGABRT instead of exit status 130 (what is stored is committed by then). After
    the `last` sweep of the command, Ray is shut down deaf to Ctrl-C (see `stop_ray`)."""
    from sweeper.run.tune.runtime import lost_interrupts_delivered, stop_ray

    try:
        with lost_interrupts_delivered():
            yield
    except KeyboardInterrupt:
        click.echo(f"\nsweep {sweep}: aborted; continue with: sweeper resume {sweep}", err=True)
        stop_ray()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)
    finally:
        if last:
            stop_ray()

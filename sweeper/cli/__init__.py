"""The `sweeper` command line. Each command parses its options, calls one module, and prints.

Bad input (a spec, a storage URL, an unknown sweep, an option Click rejects) is a usage error:
exit code 2 and one line per problem, `error: ...`, naming what to fix, before anything is
written. A command that could not do its work for another reason exits 1 the same way. The
commands that only read results (`status`, `list`, `summarize`, `export`, `report`, `best`, `--help`)
import neither Ray nor torch.

One module per command family (`sweeps`, `papers`, `results`, `catalog`, `jobs`) and what they
share (`common`); the top of the package, it may import every other subpackage. A command's module
is imported when that command runs (`COMMANDS`): `sweeper status` loads none of the modules of
`launch`, `train` or `job` (issue 89: a read command's start is mostly imports).
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import sys

import click

from sweeper.cli.common import SweeperGroup

COMMANDS = {  # each command's name: its module in this package, and the Click command there
    "launch": ("sweeps", "launch"),
    "resume": ("sweeps", "resume"),
    "confirm": ("sweeps", "confirm"),
    "sync-mlflow": ("sweeps", "sync_mlflow_command"),
    "reproduce": ("papers", "reproduce"),
    "status": ("results", "status"),
    "summarize": ("results", "summarize"),
    "export": ("results", "export"),
    "ui": ("results", "ui"),
    "report": ("results", "report"),
    "list": ("results", "list_sweeps"),
    "best": ("results", "best"),
    "data": ("catalog", "data"),
    "models": ("catalog", "models"),
    "tasks": ("catalog", "tasks"),
    "train": ("catalog", "train"),
    "job": ("jobs", "job"),
}


class LazyGroup(SweeperGroup):
    """The `sweeper` group, importing a command's module only when the command is asked for: the
    read commands start without the modules of the commands that run sweeps."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            # for a name that is no command, every one: Click suggests the nearest of those it holds
            for name in [cmd_name] if cmd_name in COMMANDS else COMMANDS:
                self.add_command(_command(name), name)
        return super().get_command(ctx, cmd_name)


def _command(name: str) -> click.Command:
    module, attribute = COMMANDS[name]
    command: click.Command = getattr(importlib.import_module(f"sweeper.cli.{module}"), attribute)
    return command


@click.group(cls=LazyGroup, name="sweeper")
@click.version_option(package_name="sweeper")
def main() -> None:
    """Hyperparameter sweeps of gated and orthogonal RNNs on Ray, Optuna and MLflow."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


def run() -> None:
    """The console script (`sweeper`, `python -m sweeper`): `main`, then an exit without the
    interpreter's teardown once the command has ended with a status of its own.

    Freeing the modules a launch has loaded (torch, Ray, MLflow, SQLAlchemy) takes about 2 s after
    its last line is printed, and holds the caller (a shell, a script, a test) that long for
    nothing. The command's threads are joined and every exit handler registered after this one
    (MLflow's, Ray's, temporary folders') has run by then; logging and the standard streams are
    flushed here. An exit that is not the command's own (a traceback, a signal) keeps the teardown.
    """
    ended: list[int] = []

    def leave() -> None:
        if ended:
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(ended[0])

    atexit.register(leave)  # handlers run last-registered first: this one after the command's
    try:
        main()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            ended.append(exc.code or 0)
        raise

"""The `sweeper` command line. Each command parses its options, calls one module, and prints.

Bad input (a spec, a storage URL, an unknown sweep, an option Click rejects) is a usage error:
exit code 2 and one line per problem, `error: ...`, naming what to fix, before anything is
written. A command that could not do its work for another reason exits 1 the same way. The
commands that only read results (`status`, `list`, `summarize`, `export`, `report`, `best`, `--help`)
import neither Ray nor torch.

One module per command family (`sweeps`, `papers`, `results`, `catalog`, `jobs`) and what they
share (`common`); the top of the package, it may import every other subpackage.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys

import click

from sweeper.cli import catalog, jobs, papers, results, sweeps
from sweeper.cli.common import SweeperGroup


@click.group(cls=SweeperGroup, name="sweeper")
@click.version_option(package_name="sweeper")
def main() -> None:
    """Hyperparameter sweeps of gated and orthogonal RNNs on Ray, Optuna and MLflow."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


for command in (
    sweeps.launch,
    sweeps.resume,
    sweeps.confirm,
    sweeps.sync_mlflow_command,
    papers.reproduce,
    results.status,
    results.summarize,
    results.export,
    results.ui,
    results.report,
    results.list_sweeps,
    results.best,
    catalog.data,
    catalog.models,
    catalog.tasks,
    catalog.train,
    jobs.job,
):
    main.add_command(command)


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

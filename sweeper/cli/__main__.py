"""`python -m sweeper.cli`: the `sweeper` command, as subprocesses and benchmarks start it."""

from sweeper.cli import run

run()

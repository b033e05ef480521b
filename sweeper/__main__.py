"""`python -m sweeper`: the `sweeper` command."""

from sweeper.cli import run

run()

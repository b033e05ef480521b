"""`python -m sweeper`: the `sweeper` command."""

from sweeper.cli import main

main()

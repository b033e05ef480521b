"""Replayed sweeps as plain data, for the tests that compare the replay with and without one of
its speed-ups trial by trial."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.simulator import Replay

Job = tuple[str, str, int, int]  # task, strategy, workers, seed


def replayed(table: tables.Table, jobs: list[Job], trials: int = 12) -> list[dict[str, Any]]:
    """Each job's trace, less the searcher's own CPU time (the one figure that differs)."""
    out = []
    for task, strategy, workers, seed in jobs:
        trace = asdict(Replay(table, task, strategy, seed, workers, trials).run())
        trace.pop("searcher_seconds")
        out.append(trace)
    return out

"""The portfolio learned from the recorded tables: a task held out is learned from no table's runs
of it, each entry lowers the mean best rank, and the shipped one is what the script learns."""

from __future__ import annotations

import json

from benchmarks.search_tables import portfolio
from sweeper.run.search.portfolio import SHIPPED


def test_a_held_out_task_is_learned_from_no_tables_runs_of_it() -> None:
    for model in ("gru", "ncgru"):
        entries = portfolio.learned(model, without="copying")
        assert len(entries) == portfolio.ENTRIES
        assert not any("/copying " in e["from"] for e in entries)
        reached = [e["mean_best_rank"] for e in entries]
        assert reached == sorted(reached, reverse=True) and 0.0 <= reached[-1] < reached[0] <= 1.0


def test_the_shipped_portfolio_is_what_the_script_learns_from_every_task() -> None:
    shipped = json.loads(SHIPPED.read_text())
    assert shipped["command"].startswith("python -m benchmarks.search_tables.portfolio")
    assert shipped["without"] is None and shipped["tables"]
    for model, entries in shipped["models"].items():
        assert entries == portfolio.learned(model)

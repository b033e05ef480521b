"""A table as the replays read it: its design spaces checked against this code's, on one clock."""

from __future__ import annotations

from pathlib import Path

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.clock import on_one_clock, read_timing


def load(folder: Path, iterations: int | None) -> tables.Table:
    """The table as the replay reads it: its configurations recorded on every seed, checked
    against this benchmark, on the clock of its retiming where it has one (`clock`), cut to
    `iterations`."""
    from benchmarks.search_tables.design import base_spec, space_text

    table = tables.whole_configurations(tables.read(folder))
    spaces = {}
    for task, models in table.curves.items():
        spec = base_spec(task, table.settings, list(models))
        spaces[task] = {m: space_text(spec, m) for m in models}
    tables.check_spaces(table, spaces)
    timing = read_timing(folder, table)
    if timing.sittings:
        table = on_one_clock(table, timing)
    elif len(clocks := table.clocks()) > 1:
        raise tables.TableMismatch(
            f"the table's runs were timed on {' and '.join(sorted(clocks))}: their clocks differ"
        )
    return table if iterations is None else tables.truncated(table, iterations)

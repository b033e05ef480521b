"""The replays page's tables (`replays.md`): the service's searches as it runs now, replayed on
each recorded table, and the full replays of every strategy from before (`benchmarks.readme_tables`
places them)."""

from __future__ import annotations

from typing import Any

import benchmarks.readme_format as fmt
from benchmarks.readme_search_tables import SEARCH_TABLES, replay_cells

NOW = {  # each recorded table's replays of the service as it runs now, on the same paired seeds
    "first": ("search-offered.json", "search-first.json", "search-candidates.json"),
    "second": ("search-hidden-offered.json", "search-hidden-first.json", "search-hidden-candidates.json"),
    "third": (
        "search-algorithmic-offered.json",
        "search-algorithmic-first.json",
        "search-algorithmic-candidates.json",
    ),
}
SAID = {  # what a user sets for each search replayed now (the spec's defaults where nothing)
    "transfer-indep": "the default",
    "transfer": "sampler.multivariate: true",
    "race-indep": "budget.allocate: race",
    "random-points": "sampler.name: random",
    "gp-points": "sampler.name: gp",
    "points-indep": "sampler.transfer: false",
    "first-sweep": "the default, in a database without other tasks",
    "first-points-last": "the same, its papers' points after the portfolio's; the benchmark's own",
    "first-unpriced": "the same, launched with --no-price",
    "default": "the former default: multivariate TPE, no transfer",
    "old": "independent TPE alone",
    "points-judged": "the former default, scheduler.judge_paper_points: true",
    "+points": "independent TPE, the papers' points first",
    "+tpe": "multivariate TPE alone",
}


def _figure(row: dict[str, Any], b_hours: float | None) -> str:
    """A strategy's 90%-right point in B with its interval (in hours where random never gives a
    B), its standing against `default` where the replay judged one, and a race's drops that
    stopped a true co-winner, of all its drops."""
    standing = (row.get("versus_default") or {}).get("standing")
    if b_hours is not None:
        point = fmt.point(row["ratio_90"], row["ratio_90_interval"])
    else:  # no B to read it in: the hours themselves
        point = "never" if row["hours_90"] is None else f"{fmt.sig(row['hours_90'])} h"
    if standing is not None:
        point += f", {standing}"
    dropped = row["drops"]
    return point + (
        f"; {fmt.of(dropped['co_winners_dropped'], dropped['drops'])}" if dropped["drops"] else ""
    )


def current(label: str) -> str:
    """One table's replays of the service as it runs now: B, then every search a user can set,
    a first sweep's variants and the former candidates for the default, each read in the B of its
    own replay (random is replayed alike in each: the same B)."""
    replays = [fmt.load(name) for name in NOW[label]]
    cells = replay_cells(replays[0])
    rows = [["B (worker-hours)", *(_b_text(replays[0]["tasks"][t][f"W={w}"]) for t, w in cells)]]
    for strategy, said in SAID.items():
        replay = next(r for r in replays if strategy in r["settings"]["strategies"])
        judged = [replay["tasks"][t][f"W={w}"] for t, w in cells]
        rows.append(
            [f"`{strategy}` ({said})", *(_figure(c["strategies"][strategy], c["B_hours"]) for c in judged)]
        )
    return fmt.table([f"{label} table, now", *(fmt.cell(t, w) for t, w in cells)], rows)


def _b_text(cell: dict[str, Any]) -> str:
    return "none: random never 90% right" if cell["B_hours"] is None else fmt.sig(cell["B_hours"])


def _floors_text(cell: dict[str, Any]) -> str:
    """The floors in B, or in worker-hours where random never gives a B."""
    hours = (cell["floor"]["any_sweep"], cell["floor"]["busy_sweep"], cell["racing_floor_hours"])
    if cell["B_hours"] is None:
        return " / ".join(f"{fmt.sig(h)} h" for h in hours)
    return " / ".join(fmt.times(h / cell["B_hours"]) for h in hours)


def replayed(label: str) -> str:
    """One table's replay: per (task, W) its B and floors, the scale every point is read on, then
    each strategy's 90%-right point in B with its interval and standing against the default (in
    hours where random is never 90% right, so that there is no B), and for a race that dropped
    models, the drops that stopped a true co-winner of all its drops."""
    replay = fmt.load(SEARCH_TABLES[label])
    cells = [replay["tasks"][t][f"W={w}"] for t, w in replay_cells(replay)]
    rows = [
        ["B (worker-hours)", *(_b_text(c) for c in cells)],
        ["floors: any sweep / W busy / racing", *(_floors_text(c) for c in cells)],
    ]

    for strategy in cells[0]["strategies"]:
        rows.append([f"`{strategy}`", *(_figure(c["strategies"][strategy], c["B_hours"]) for c in cells)])
    return fmt.table([f"{label} table", *(fmt.cell(t, w) for t, w in replay_cells(replay))], rows)

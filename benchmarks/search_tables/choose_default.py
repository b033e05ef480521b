"""The service's default search, chosen by a rule written down before the figures it reads.

The rule, over the replays of every recorded table (`replay --out`, one JSON per table) and every
(table, task, W) they hold:
1. a candidate is behind random in a cell where the 95% interval of its 90%-right point, in B,
   has its lower end above 1.0, or where it is never 90% right within the budget (no point, or no
   lower end); in a cell where random itself is never 90% right (no B), only where the candidate
   is never 90% right either;
2. among the candidates behind random in no cell, the default is the one with the lowest median
   90%-right point over the cells with a B (a cell where it is never right counts as infinite);
3. where every candidate is behind random somewhere, the one behind in the fewest cells, then by
   the same median; the result says so;
4. between candidates equal on both (medians within 1e-9: replays of the same sweeps agree to about
   1e-15, not exactly), the one given first.
The rule chooses twice: the default with transfer (`CANDIDATES`), and the default for a first
sweep, whose database holds no other task to transfer from (`FIRST_CANDIDATES`: the searches a
spec can set that need no other task's sweep, `first-sweep` the default's portfolio).
A (recorded table, task, W) is read once, from the first replay given that holds the candidate
there: a replay of a few strategies beside the full one (`--strategies`) adds its candidates, and
repeats the others' cells (to about 1e-15: the sweeps are seeded alike).
Each task is judged by the replay with every choice made without it (the verdict's fallback noise
learned on the other tasks; a transfer's earlier sweeps are the other tasks'), so the rule picks on
figures no candidate was tuned on.

    python -m benchmarks.search_tables.choose_default benchmarks/results/search-offered.json \\
        benchmarks/results/search-hidden-offered.json benchmarks/results/search-algorithmic-offered.json \\
        benchmarks/results/search-candidates.json benchmarks/results/search-hidden-candidates.json \\
        benchmarks/results/search-algorithmic-candidates.json --out benchmarks/results/default-choice.json
    python -m benchmarks.search_tables.choose_default benchmarks/results/search-first.json \\
        benchmarks/results/search-hidden-first.json benchmarks/results/search-algorithmic-first.json \\
        benchmarks/results/search-candidates.json benchmarks/results/search-hidden-candidates.json \\
        benchmarks/results/search-algorithmic-candidates.json --first --out benchmarks/results/default-choice-first.json
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks import figures_file

CANDIDATES = ("default", "old", "points-judged", "transfer", "+points", "+tpe", "transfer-indep")
FIRST_CANDIDATES = ("default", "points-judged", "+tpe", "points-indep", "first-sweep")


def cells(replays: dict[str, dict[str, Any]], candidate: str) -> list[dict[str, Any]]:
    """The candidate's 90%-right point and its interval's lower end in every (table, task, W)."""
    out, seen = [], set()
    for table, replay in replays.items():
        recorded = Path(replay.get("settings", {}).get("table", table)).name  # however it was written
        for task, judged in replay["tasks"].items():
            for key, verdict in judged.items():
                if not key.startswith("W=") or candidate not in verdict.get("strategies", {}):
                    continue
                if (recorded, task, key) in seen:
                    continue
                seen.add((recorded, task, key))
                row = verdict["strategies"][candidate]
                interval = row.get("ratio_90_interval") or [None, None]
                ratio = row.get("ratio_90")
                out.append(
                    {
                        "table": table,
                        "task": task,
                        "W": key,
                        "ratio_90": ratio,
                        "lower": interval[0],
                        "behind_random": row.get("hours_90") is None
                        if verdict.get("B_hours") is None
                        else ratio is None or interval[0] is None or interval[0] > 1.0,
                        # no B: random itself is never 90% right there, so no point reads in B; the
                        # rule counts the cell as behind for every candidate, and this tells apart
                        # those that were 90% right within their budget all the same
                        "random_never_right": verdict.get("B_hours") is None,
                        "hours_90": row.get("hours_90"),
                    }
                )
    return out


def judged(replays: dict[str, dict[str, Any]], candidates: tuple[str, ...]) -> dict[str, Any]:
    """Every candidate's cells and standing, and the one the rule chooses."""
    standings = {}
    for candidate in candidates:
        mine = cells(replays, candidate)
        if not mine:
            continue
        ratios = [
            c["ratio_90"] if c["ratio_90"] is not None else math.inf
            for c in mine
            if not c["random_never_right"]
        ]
        median = statistics.median(ratios) if ratios else math.inf
        standings[candidate] = {
            "cells": mine,
            "behind_random": sum(c["behind_random"] for c in mine),
            "median_ratio_90": median
            if math.isfinite(median)
            else None,  # None: never right in half its cells or more
        }
    if not standings:
        raise ValueError("no candidate was replayed in the tables given")

    def median(candidate: str) -> float:
        value = standings[candidate]["median_ratio_90"]
        return math.inf if value is None else value

    fewest = min(standings[c]["behind_random"] for c in standings)
    pool = [c for c in standings if standings[c]["behind_random"] == fewest]
    lowest = min(median(c) for c in pool)
    chosen = next(c for c in pool if median(c) <= lowest + 1e-9)  # the first given among those equal
    return {
        "chosen": chosen,
        "behind_random_nowhere": standings[chosen]["behind_random"] == 0,
        "candidates": standings,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("replays", nargs="+", type=Path, help="a replay's JSON per recorded table")
    parser.add_argument(
        "--candidates", nargs="+", help="default: CANDIDATES, or FIRST_CANDIDATES with --first"
    )
    parser.add_argument("--first", action="store_true", help="choose the default for a first sweep")
    parser.add_argument("--out", type=Path, help="write the choice and every candidate's cells here")
    args = parser.parse_args(argv)
    missing = [str(path) for path in args.replays if not path.is_file()]
    if missing:
        print(f"error: no replay at {', '.join(missing)}", file=sys.stderr)
        return 2
    replays = {path.stem: json.loads(path.read_text()) for path in args.replays}
    try:
        candidates = args.candidates or (FIRST_CANDIDATES if args.first else CANDIDATES)
        result = judged(replays, tuple(candidates))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for candidate, standing in result["candidates"].items():
        print(
            f"{candidate:>14}: behind random in {standing['behind_random']} of {len(standing['cells'])} cells, "
            + (
                "never 90% right in half its cells or more"
                if standing["median_ratio_90"] is None
                else f"median 90%-right point {standing['median_ratio_90']:.2f}x B"
            )
        )
    nowhere = (
        "behind random nowhere"
        if result["behind_random_nowhere"]
        else "behind random somewhere: none is nowhere"
    )
    print(f"chosen: {result['chosen']} ({nowhere})")
    if args.out is not None:
        command = ["python", "-m", "benchmarks.search_tables.choose_default", *(argv or sys.argv[1:])]
        # read from the replays: the choice is theirs on any machine; named as every results file is
        written = {"command": shlex.join(command), "machine": figures_file.machine("cpu"), **result}
        args.out.write_text(json.dumps(written, indent=1, allow_nan=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Two replays' figures side by side (`replay --out` files of two tables): whether the order of
the strategies holds from one table to the other.

Per (task, W) that both files hold: each strategy's 90%-right point in each table's own B, with
its interval, its standing against the default there (the replay's paired bootstrap: ahead, level
or behind), and its rank among the strategies there (a strategy never 90% right within the
budget ranks last, tied with the others that never are); then Kendall's tau-b between the two
tables' ranks, the share of strategy pairs not swapped (a pair tied in either table is no swap), and
which pairs swap beyond the intervals (ahead in one table and behind in the other, each time with
the intervals of the two 90%-right points apart). B differs
between tables (each is random search's own), so the ranks, not the ratios, are what compare.

    python -m benchmarks.search_tables.side_by_side benchmarks/results/search.json \\
        benchmarks/results/search-hidden.json --out benchmarks/results/search-side-by-side.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import shlex
import sys
from pathlib import Path
from typing import Any

from benchmarks import figures_file


def points(replay: dict[str, Any], task: str, workers: int) -> dict[str, dict[str, Any]]:
    """Each strategy's 90%-right point in B (None: never within the budget) and its interval."""
    cell = replay["tasks"].get(task, {}).get(f"W={workers}")
    if cell is None:
        return {}
    return {
        name: {
            "ratio_90": s["ratio_90"],
            "interval": s["ratio_90_interval"],
            "versus_default": (s.get("versus_default") or {}).get("standing"),
        }
        for name, s in cell["strategies"].items()
    }


def ranks(ratios: dict[str, float | None]) -> dict[str, float]:
    """1 for the fastest; tied values (the never-right ones among them) share their mean rank."""
    ordered = sorted(ratios, key=lambda name: _key(ratios[name]))
    out: dict[str, float] = {}
    for _, group in itertools.groupby(ordered, key=lambda name: _key(ratios[name])):
        names = list(group)
        mean = len(out) + (len(names) + 1) / 2
        out.update(dict.fromkeys(names, mean))
    return out


def kendall_tau_b(first: dict[str, float], second: dict[str, float]) -> float | None:
    """Kendall's tau-b of two rankings of the same names (ties counted as tau-b counts them)."""
    concordant = discordant = ties_first = ties_second = 0
    for a, b in itertools.combinations(sorted(first), 2):
        x, y = first[a] - first[b], second[a] - second[b]
        if x == 0 and y == 0:
            continue
        if x == 0:
            ties_first += 1
        elif y == 0:
            ties_second += 1
        elif (x > 0) == (y > 0):
            concordant += 1
        else:
            discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_first) * (concordant + discordant + ties_second))
    return None if denominator == 0 else (concordant - discordant) / denominator


def compare(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Per (task, W) in both replays: each strategy's point in both, the ranks' agreement and the
    pairs whose order swaps (strictly, in opposite directions)."""
    cells: dict[str, Any] = {}
    workers = sorted(set(first["settings"]["workers"]) & set(second["settings"]["workers"]))
    tasks = [t for t in first["settings"]["tasks"] if t in second["settings"]["tasks"]]
    for task, w in itertools.product(tasks, workers):
        one, two = points(first, task, w), points(second, task, w)
        names = [n for n in one if n in two]
        if len(names) < 2:
            continue
        r1 = ranks({n: one[n]["ratio_90"] for n in names})
        r2 = ranks({n: two[n]["ratio_90"] for n in names})
        pairs = list(itertools.combinations(names, 2))
        swapped = [f"{a}/{b}" for a, b in pairs if (r1[a] - r1[b]) * (r2[a] - r2[b]) < 0]
        clear = [f"{a}/{b}" for a, b in pairs if _order(one[a], one[b]) * _order(two[a], two[b]) < 0]
        cells[f"{task} W={w}"] = {
            "strategies": {
                n: {"first": one[n], "second": two[n], "rank_first": r1[n], "rank_second": r2[n]}
                for n in names
            },
            "kendall_tau_b": kendall_tau_b(r1, r2),
            "pairs_unswapped": 1 - len(swapped) / len(pairs),
            "swapped": swapped,
            "swapped_beyond_intervals": clear,
            "standing_changed": [
                f"{n}: {one[n]['versus_default']} → {two[n]['versus_default']}"
                for n in names
                if one[n]["versus_default"] != two[n]["versus_default"]
            ],
        }
    return {"first": first["settings"]["table"], "second": second["settings"]["table"], "cells": cells}


def markdown(result: dict[str, Any]) -> str:
    """The table the README holds: a row per strategy, per (task, W) the two tables' points."""
    cells = result["cells"]
    if not cells:
        return "the two replays share no (task, W)"
    names = list(next(iter(cells.values()))["strategies"])
    header = "| strategy | " + " | ".join(f"{cell}: first → second" for cell in cells) + " |"
    lines = [header, "|---" * (len(cells) + 1) + "|"]
    for name in names:
        row = [
            f"{_point(c['strategies'][name]['first'])} → {_point(c['strategies'][name]['second'])}"
            if name in c["strategies"]
            else "-"
            for c in cells.values()
        ]
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    taus = [
        f"{cell}: tau-b {_num(c['kendall_tau_b'])}, {c['pairs_unswapped']:.0%} of pairs in the same order or tied in one"
        for cell, c in cells.items()
    ]
    return "\n".join([*lines, "", *taus])


def _order(p: dict[str, Any], q: dict[str, Any]) -> int:
    """-1 where p is ahead of q beyond their intervals (p's upper end below q's lower end), 1 where
    q is so ahead of p, else 0."""
    lows = [0.0 if x["interval"][0] is None else x["interval"][0] for x in (p, q)]
    highs = [_key(x["interval"][1]) for x in (p, q)]
    if highs[0] < lows[1]:
        return -1
    if highs[1] < lows[0]:
        return 1
    return 0


def _key(ratio: float | None) -> float:
    return math.inf if ratio is None else ratio


def _point(p: dict[str, Any]) -> str:
    low, high = p["interval"]
    if p["ratio_90"] is None:
        return "never"
    return f"{p['ratio_90']:.2f}x ({_num(low)}–{'∞' if high is None else f'{high:.2f}'})"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("first", type=Path, help="one table's replay (`replay --out`)")
    parser.add_argument("second", type=Path, help="the other table's")
    parser.add_argument("--out", type=Path, help="write the comparison here (JSON)")
    args = parser.parse_args(argv)
    try:
        first, second = (json.loads(path.read_text()) for path in (args.first, args.second))
        result = compare(first, second)
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        print(f"error: not two replays' figures ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 2
    print(markdown(result))
    for cell, c in result["cells"].items():
        if c["standing_changed"]:
            print(f"{cell}: against the default (paired), {'; '.join(c['standing_changed'])}")
        clear = c["swapped_beyond_intervals"]
        print(
            f"{cell}: {len(c['swapped'])} pairs swap their ranks, {len(clear)} beyond both tables' intervals"
            + (f": {', '.join(clear)}" if clear else "")
        )
    if args.out is not None:
        command = ["python", "-m", "benchmarks.search_tables.side_by_side", *(argv or sys.argv[1:])]
        # read from the replays: the figures are theirs on any machine; named as every results file is
        written = {"command": shlex.join(command), "machine": figures_file.machine("cpu"), **result}
        args.out.write_text(json.dumps(written, indent=1) + "\n")
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

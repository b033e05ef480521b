"""The verdict's stated odds made to match their hit rate: a recalibration learned from the replayed
sweeps' verdicts (`stated_odds` records, every offered search, a quarter, half and all of each
sweep) and judged leave-one-task-out, then learned from every recorded task and shipped with the
service (`sweeper/results/odds_calibration.json`, read by `sweeper.results.calibration`).

The map is a logistic regression of whether an end-of-sweep verdict was right on the logit of the
chance it stated, whether it named a tie, and the search it came from
(`sweeper.results.calibration.FEATURES`), with a weak ridge; as the service does, it replaces the
stated chance at a sweep's end only, and mid-sweep verdicts keep the odds' own. Judging a task, it is learned
from every other task's verdicts on every table, never from any table's runs of the task judged.
Per (table, task, W, offered search), at the sweep's end and mid-way: the verdicts, their mean
stated chance before and after, the share right with its 95% Wilson interval, whether the stated
mean lies within `CLOSE` of it or inside that interval, the same in every reliability bin with
`BIN_VERDICTS` verdicts or more, and how often verdicts stating 0.9 or more were right.

    python -m benchmarks.search_tables.odds_calibration benchmarks/results/search-offered.json \\
        benchmarks/results/search-hidden-offered.json benchmarks/results/search-algorithmic-offered.json \\
        --out benchmarks/results/odds-calibration.json --ship sweeper/results/odds_calibration.json
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

import numpy as np
from scipy.optimize import minimize

from benchmarks import figures_file
from benchmarks.search_tables.record import ROOT
from benchmarks.search_tables.stated_odds import FRACTIONS
from benchmarks.search_tables.strategies import OFFERED
from sweeper.results.calibration import FEATURES, features

CLOSE = 0.1  # the mean stated chance this close to the share right passes, or inside its interval
BIN_VERDICTS = 30  # a reliability bin judged where it holds this many verdicts
BINS = (0.0, 0.5, 0.7, 0.9, 0.95, 1.0 + 1e-9)
RIDGE = 1e-2
SEARCH_OF = {strategy: setting for setting, strategy in OFFERED.items()}


def verdicts(paths: list[Path]) -> list[dict[str, Any]]:
    """Every offered search's verdicts in the replays, one row each, with where it came from."""
    rows = []
    for path in paths:
        data = json.loads(path.read_text())
        table = Path(data["settings"]["table"]).name
        for task, entry in data["tasks"].items():
            if not isinstance(entry, dict) or "truth" not in entry:
                continue
            for key, verdict in entry.items():
                if not key.startswith("W="):
                    continue
                for strategy, row in verdict["strategies"].items():
                    if strategy not in SEARCH_OF or "stated_odds" not in row:
                        continue
                    kept = row["stated_odds"]
                    for k in range(len(kept["stated"])):
                        rows.append(
                            {
                                "table": table,
                                "task": task,
                                "workers": int(key[2:]),
                                "search": SEARCH_OF[strategy],
                                **{name: kept[name][k] for name in kept},
                            }
                        )
    return rows


def design(rows: list[dict[str, Any]]) -> np.ndarray:
    return np.array([features(r["stated"], r["fraction"], r["search"]) for r in rows])


def fit(rows: list[dict[str, Any]]) -> np.ndarray:
    """The map's coefficients (`FEATURES`), by penalised maximum likelihood."""
    x, y = design(rows), np.array([r["right"] for r in rows])

    def loss(beta: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ beta
        nll = float(np.sum(np.logaddexp(0.0, z) - y * z))
        grad = x.T @ (1 / (1 + np.exp(-z)) - y)
        penalty = RIDGE * float(beta[1:] @ beta[1:])
        return nll + penalty, grad + 2 * RIDGE * np.r_[0.0, beta[1:]]

    return minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B").x


def apply(beta: np.ndarray, rows: list[dict[str, Any]]) -> np.ndarray:
    return 1 / (1 + np.exp(-(design(rows) @ beta)))


def wilson(right: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of a share right."""
    if n == 0:
        return (0.0, 1.0)
    z, p = 1.96, right / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def agrees(stated: np.ndarray, right: np.ndarray) -> dict[str, Any]:
    n, hits = len(right), int(right.sum())
    low, high = wilson(hits, n)
    mean = float(stated.mean()) if n else None
    share = hits / n if n else None
    ok = n == 0 or abs(mean - share) <= CLOSE or low <= mean <= high  # type: ignore[operator]
    return {"verdicts": n, "mean_stated": mean, "right": share, "interval": [low, high], "agrees": bool(ok)}


def bins(stated: np.ndarray, right: np.ndarray) -> list[dict[str, Any]]:
    out = []
    for low, high in itertools.pairwise(BINS):
        mine = (stated >= low) & (stated < high)
        cell = agrees(stated[mine], right[mine])
        cell["stated_bin"] = [low, min(high, 1.0)]
        cell["judged"] = cell["verdicts"] >= BIN_VERDICTS
        out.append(cell)
    return out


def judge(rows: list[dict[str, Any]], calibrated: np.ndarray) -> list[dict[str, Any]]:
    """Per (table, task, W, search): before and after, at the end and mid-way."""
    cells = []
    keys = sorted({(r["table"], r["task"], r["workers"], r["search"]) for r in rows})
    raw = np.array([r["stated"] for r in rows])
    right = np.array([r["right"] for r in rows])
    fraction = np.array([r["fraction"] for r in rows])
    for table, task, workers, search in keys:
        mine = np.array(
            [
                (r["table"], r["task"], r["workers"], r["search"]) == (table, task, workers, search)
                for r in rows
            ]
        )
        cell: dict[str, Any] = {"table": table, "task": task, "workers": workers, "search": search}
        for f in FRACTIONS:
            at = mine & (fraction == f)
            cell[f"at {f:g}"] = {
                "before": agrees(raw[at], right[at]),
                "after": agrees(calibrated[at], right[at]),
            }
        mine = mine & (fraction == 1.0)  # below: the verdicts sweeps end with
        sure = mine & (calibrated >= 0.9)
        cell["stated_at_least_0.9"] = {
            "verdicts": int(sure.sum()),
            "right": float(right[sure].mean()) if sure.any() else None,
            "before": {
                "verdicts": int((mine & (raw >= 0.9)).sum()),
                "right": float(right[mine & (raw >= 0.9)].mean()) if (mine & (raw >= 0.9)).any() else None,
            },
        }
        cell["bins"] = bins(calibrated[mine], right[mine])
        cells.append(cell)
    return cells


def warned(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per task, the sweeps' end verdicts with and without the word that the search may have
    missed a rival's best (`sweeper.results.odds.few_draws`): how many, and how often right."""
    out = {}
    for task in sorted({r["task"] for r in rows}):
        ended = [r for r in rows if r["task"] == task and r["fraction"] == 1.0]
        out[task] = {
            side: {
                "verdicts": len(mine),
                "right": float(np.mean([r["right"] for r in mine])) if mine else None,
            }
            for side, mine in (
                ("warned", [r for r in ended if r["warned"]]),
                ("not warned", [r for r in ended if not r["warned"]]),
            )
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("replays", nargs="+", type=Path, help="replay JSONs holding the offered searches")
    parser.add_argument("--out", type=Path, help="write the judged cells here (JSON)")
    parser.add_argument("--ship", type=Path, help="write the map learned from every task here (JSON)")
    args = parser.parse_args(argv)
    rows = verdicts(args.replays)
    if not rows:
        print("error: the replays hold no offered search's stated odds", file=sys.stderr)
        return 2
    tasks = sorted({r["task"] for r in rows})
    ends = [r for r in rows if r["fraction"] == 1.0]
    calibrated = np.array([r["stated"] for r in rows])  # mid-sweep: the odds' own
    maps = {}
    for task in tasks:  # leave one task out: learned from every other task, on every table
        beta = fit([r for r in ends if r["task"] != task])
        mine = [k for k, r in enumerate(rows) if r["task"] == task and r["fraction"] == 1.0]
        calibrated[mine] = apply(beta, [rows[k] for k in mine])
        maps[task] = beta.tolist()
    cells = judge(rows, calibrated)
    ended = [c["at 1"] for c in cells]
    summary = {
        "cells": len(cells),
        "agree_before": sum(e["before"]["agrees"] for e in ended),
        "agree_after": sum(e["after"]["agrees"] for e in ended),
        "bins_judged": sum(b["judged"] for c in cells for b in c["bins"]),
        "bins_agreeing": sum(b["judged"] and b["agrees"] for c in cells for b in c["bins"]),
        "worst_gap_before": max(
            abs(e["before"]["mean_stated"] - e["before"]["right"]) for e in ended if e["before"]["verdicts"]
        ),
        "worst_gap_after": max(
            abs(e["after"]["mean_stated"] - e["after"]["right"]) for e in ended if e["after"]["verdicts"]
        ),
    }
    summary["warned"] = warned(rows)
    command = shlex.join(
        ["python", "-m", "benchmarks.search_tables.odds_calibration", *(argv or sys.argv[1:])]
    )
    for c in cells:
        end = c["at 1"]
        print(
            f"{c['table']:>22} {c['task']:>13} W={c['workers']} {c['search']:<28} "
            f"stated {end['before']['mean_stated']:.2f} -> {end['after']['mean_stated']:.2f}, right {end['after']['right']:.2f} "
            f"({end['after']['verdicts']}){'' if end['after']['agrees'] else '  OFF'}"
        )
    print(json.dumps(summary))
    if args.out is not None:
        args.out.write_text(
            json.dumps(
                {
                    "command": command,
                    # read from the replays: the figures are theirs on any machine; named as every
                    # results file is
                    "machine": figures_file.machine("cpu"),
                    "features": list(FEATURES),
                    "left_out_maps": maps,
                    "summary": summary,
                    "cells": cells,
                },
                indent=1,
            )
            + "\n"
        )
    if args.ship is not None:
        shipped = {
            "command": command,
            "replays": [
                str(p.resolve().relative_to(ROOT)) if p.resolve().is_relative_to(ROOT) else str(p)
                for p in args.replays
            ],
            "tasks": tasks,
            "verdicts": len(ends),
            "features": list(FEATURES),
            "coefficients": fit(ends).tolist(),
        }
        args.ship.write_text(json.dumps(shipped, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

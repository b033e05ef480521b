"""How often `sweeper confirm`'s claims are wrong: its decision (`sweeper.results.separation`)
simulated round by round, as `confirm_until_separated` takes it, against leaders of known value.

Each cell: 2 or 3 leaders, the first best and every other behind it by a true gap of 0, 0.5, 1 or 2
tie margins; seed noise drawn either normal or from the recorded tables' repeated seeds (each
configuration's runs about their mean, relative to it as a loss, pooled over every configuration
that learned, rescaled to one seed spread), so the tails are the tables' own; two fresh seeds
each, then one more each per round up to the cap. Per cell:
- `separated`, `wrong_separated`: the share of repetitions that end "separated", and those wrong
  (a claimed gap beyond the margin that is not there: every one at gaps up to the margin, a wrong
  leader beyond it); the wrong ones at most 1 - level, plus Monte-Carlo error, where the rule is
  valid;
- `tied`, `wrong_tied`: the share ending "tie confirmed", and those wrong (a true gap over the margin);
- `seeds`: the mean seeds each leader ran.
Beside it, the rule `confirm` stated before (the two leaders' odds, a normal around σ estimated
from their runs, stopping at the first look where one is ahead with probability `level`, no
margin): its "separated" claims, all wrong at gap 0.

    python -m benchmarks.search_tables.confirm_calibration --out benchmarks/results/confirm-calibration.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import shlex
import sys
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.record import ROOT
from benchmarks.search_tables.verdicts import run_bests
from sweeper.results.separation import FIRST_LOOK, TIED, decide

TABLES = (ROOT / "benchmarks/results/blackbox", ROOT / "benchmarks/results/blackbox-hidden")
GAPS = (0.0, 0.5, 1.0, 2.0)  # in tie margins
CAPS = (2, 3, 6, 10)
LEVELS = (0.9, 0.95)
LEADERS = (2, 3)


def table_residuals(folders: tuple[Path, ...]) -> np.ndarray:
    """Every repeated seed's deviation from its configuration's mean (corrected for the mean's
    own share of it, √(n / (n - 1))), over the configurations that learned (beat the baseline),
    each task's in units of its own spread, pooled."""
    pooled = []
    for folder in folders:
        table = tables.read(folder)
        for task, models in table.curves.items():
            info, residuals = table.tasks[task], []
            for curves in models.values():
                for runs in run_bests(curves, info.mode):
                    runs = runs[np.isfinite(runs)]
                    if len(runs) < 2 or not info.learned(float(np.mean(runs))):
                        continue
                    residuals.extend((runs - np.mean(runs)) * math.sqrt(len(runs) / (len(runs) - 1)))
            pooled.extend(np.array(residuals) / np.std(residuals))
    return np.array(pooled)


def simulate(
    leaders: int,
    gap: float,
    cap: int,
    level: float,
    noise: np.ndarray | None,
    repetitions: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """One cell: the rule and the earlier one on the same draws (σ = 1, so the margin is TIED)."""
    truth = np.array([0.0, *[gap * TIED] * (leaders - 1)])

    def draw(size: int) -> np.ndarray:
        shocks = rng.standard_normal((size, leaders)) if noise is None else rng.choice(noise, (size, leaders))
        return truth + shocks

    names = [str(k) for k in range(leaders)]
    separated = wrong_separated = tied = wrong_tied = 0
    earlier_separated = earlier_wrong = 0
    seeds_spent = 0
    for _ in range(repetitions):
        runs = draw(cap)
        outcome, look = "undecided", FIRST_LOOK
        for look in range(FIRST_LOOK, max(cap, FIRST_LOOK) + 1):
            decision = decide({m: list(runs[:look, k]) for k, m in enumerate(names)}, "min", level, look)
            outcome = decision.outcome
            if outcome != "undecided":
                break
        seeds_spent += look
        separated += outcome == "separated"
        if outcome == "separated" and (gap <= 1.0 or decision.winner != "0"):
            wrong_separated += 1
        if outcome == "tied":
            tied += 1
            wrong_tied += gap > 1.0
        claimed, right = earlier_rule(runs[:, :2], cap, level)
        earlier_separated += claimed
        earlier_wrong += claimed and (gap == 0.0 or not right)
    n = repetitions
    return {
        "leaders": leaders,
        "gap_margins": gap,
        "cap": cap,
        "level": level,
        "noise": "normal" if noise is None else "tables",
        "repetitions": n,
        "separated": separated / n,
        "wrong_separated": wrong_separated / n,
        "monte_carlo_error": math.sqrt((1 - level) * level / n),
        "tied": tied / n,
        "wrong_tied": wrong_tied / n,
        "seeds": seeds_spent / n,
        "earlier_rule": {"separated": earlier_separated / n, "wrong": earlier_wrong / n},
    }


def earlier_rule(runs: np.ndarray, cap: int, level: float) -> tuple[bool, bool]:
    """The rule `confirm` used before: the two leaders' P(ahead) from a normal around a σ
    estimated from their runs, stopping at the first look (2 seeds each, then one more) where it
    reaches `level`: (claimed separated, named the better of the two)."""
    normal = NormalDist()
    for look in range(FIRST_LOOK, max(cap, FIRST_LOOK) + 1):
        a, b = runs[:look, 0], runs[:look, 1]
        dof = 2 * (look - 1)
        sigma = math.sqrt((np.sum((a - a.mean()) ** 2) + np.sum((b - b.mean()) ** 2)) / dof)
        gap = float(b.mean() - a.mean())
        p = 1.0 if sigma == 0 else normal.cdf(abs(gap) / (sigma * math.sqrt(2 / look)))
        if p >= level:
            return True, gap > 0
    return False, False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repetitions", type=int, default=2000, help="per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the cells here (JSON)")
    args = parser.parse_args(argv)
    if args.repetitions < 1:
        print("error: --repetitions must be 1 or more", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    residuals = table_residuals(TABLES)
    cells = []
    for noise, leaders, gap, cap, level in itertools.product((None, residuals), LEADERS, GAPS, CAPS, LEVELS):
        cell = simulate(leaders, gap, cap, level, noise, args.repetitions, rng)
        cells.append(cell)
        print(
            f"{cell['noise']:>6} {leaders} leaders, gap {gap:g} margins, cap {cap:>2}, level {level}: "
            f"wrong separated {cell['wrong_separated']:.3f} (earlier rule {cell['earlier_rule']['wrong']:.3f}), "
            f"tied {cell['tied']:.3f}, seeds {cell['seeds']:.2f}",
            flush=True,
        )
    worst = max(c["wrong_separated"] - (1 - c["level"]) - 2 * c["monte_carlo_error"] for c in cells)
    result = {
        "command": shlex.join(
            ["python", "-m", "benchmarks.search_tables.confirm_calibration", *(argv or sys.argv[1:])]
        ),
        "tie_margin_seed_spreads": TIED,
        "table_residuals": {
            "tables": [str(f.relative_to(ROOT)) for f in TABLES],
            "runs": len(residuals),
            "kurtosis": float(np.mean(residuals**4)),
        },
        "valid_in_every_cell": bool(worst <= 0),
        "cells": cells,
    }
    print(f"valid in every cell (within 2 Monte-Carlo errors): {result['valid_in_every_cell']}")
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

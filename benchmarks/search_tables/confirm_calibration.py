"""How often `sweeper confirm`'s claims are made and how often they are wrong: its decision
(`sweeper.results.separation.decide`) simulated look by look, as `confirm_leaders` takes
it, against leaders of known value.

Each cell: 2, 3 or 5 leaders, the first best and every other behind it by a true gap of 0, 0.5, 1,
1.5, 2 or 3 tie margins (`TIED` seed spreads, the best's and a rival's pooled: the verdict's
margin, right about the noise, as `confirm` is handed it); two fresh seeds
each, then one more each per look, up to a cap of 3, 5, 10 or 20 seeds each; levels 0.9 and 0.95.
Seed noise:
- `normal`: one seed spread σ = 1 for every leader;
- `t3`: Student's t with 3 degrees of freedom, scaled to σ = 1 (heavy tails);
- `tables`: the recorded tables' repeated seeds, each run's deviation from its configuration's
  mean relative to that mean as a loss, over the configurations that learned, each task's in
  units of its own spread, pooled, drawn independently;
- `unequal`: normal, the best leader's spread 1 and every other's 2 (the pooled test's weakest case).
Per cell and claim (ahead, margin: ahead by more than the tie margin, tie: tie confirmed):
`made` the share of repetitions where the claim is made at some look up to the cap, `wrong` the
share where it is made and false (ahead: some other leader is not worse; margin: some other leader
lies within the margin; tie: some pair lies a margin or more apart; a gap of exactly one margin
makes both of the last two false); `seeds` the mean seeds each leader runs when that claim is the
one asked for (confirmation stops at it, or at the claim that rules it out, or at the cap). A rule
is valid where every claim is wrong at most 1 - level, plus two Monte-Carlo errors, in every cell.

Beside it, on the same draws, the rule `confirm` used before (`todays_rule`: a noncentral t on σ
pooled over the leaders, its one "separated" claim ahead by more than the margin, look s spending
(1 - level) / ((s - 1) s)): how often it separated, tied, was wrong, and crashed (scipy's noncentral
t returning NaN, which its root finder refused).

    python -m benchmarks.search_tables.confirm_calibration --jobs 2 \
        --out benchmarks/results/confirm-calibration.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import shlex
import sys
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import figures_file
from benchmarks.search_tables import table as tables
from benchmarks.search_tables.record import ROOT
from benchmarks.search_tables.verdicts import run_bests
from sweeper.results.loss_scale import as_loss
from sweeper.results.separation import CLAIMS, FIRST_LOOK, RULES_OUT, TIED, decide

TABLES = (
    ROOT / "benchmarks/results/blackbox",
    ROOT / "benchmarks/results/blackbox-hidden",
    ROOT / "benchmarks/results/blackbox-algorithmic",
)
GAPS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)  # in tie margins
CAPS = (3, 5, 10, 20)
LEVELS = (0.9, 0.95)
LEADERS = (2, 3, 5)
NOISES = ("normal", "t3", "tables", "unequal")
WIDER = 2.0  # the `unequal` noise's spread of every leader but the best


def table_residuals(folders: tuple[Path, ...]) -> np.ndarray:
    """Every repeated seed's deviation from its configuration's mean, relative to that mean as a
    loss (corrected for the mean's own share of it, √(n / (n - 1))), over the configurations that
    learned (beat the baseline), each task's in units of its own spread, pooled."""
    pooled = []
    for folder in folders:
        table = tables.read(folder)
        for task, models in table.curves.items():
            info, residuals = table.tasks[task], []
            for curves in models.values():
                for runs in run_bests(curves, info.mode):
                    runs = runs[np.isfinite(runs)]
                    mean = float(np.mean(runs)) if len(runs) else math.nan
                    if len(runs) < 2 or not info.learned(mean):
                        continue
                    losses = np.array([as_loss(float(v), info.mode) for v in runs])
                    relative = (losses - losses.mean()) / losses.mean()
                    residuals.extend(relative * math.sqrt(len(runs) / (len(runs) - 1)))
            pooled.extend(np.array(residuals) / np.std(residuals))
    return np.array(pooled)


def spreads(noise: str, leaders: int) -> np.ndarray:
    return np.array([1.0, *[WIDER if noise == "unequal" else 1.0] * (leaders - 1)])


def tie_margin(sigma: np.ndarray) -> float:
    """The margin `confirm` tests: `TIED` seed spreads, the best's and a rival's pooled."""
    return TIED * math.sqrt((sigma[0] ** 2 + sigma[1] ** 2) / 2)


def wrong(claim: str, winner: int, truth: np.ndarray, margin: float) -> bool:
    """Whether `claim`, made for `winner` (the tie: for all), is false of the true values."""
    others = [j for j in range(len(truth)) if j != winner]
    if claim == "ahead":
        return any(truth[j] <= truth[winner] for j in others)
    if claim == "margin":
        return any(truth[j] - truth[winner] <= margin for j in others)
    return any(abs(truth[a] - truth[b]) >= margin for a, b in itertools.combinations(range(len(truth)), 2))


def shocks(noise: str, rng: np.random.Generator, shape: tuple[int, ...], residuals: np.ndarray) -> np.ndarray:
    if noise == "t3":
        return rng.standard_t(3, shape) / math.sqrt(3.0)
    if noise == "tables":
        return rng.choice(residuals, shape)
    return rng.standard_normal(shape)


def simulate(
    leaders: int, gap: float, level: float, noise: str, repetitions: int, seed: int, residuals: np.ndarray
) -> list[dict[str, Any]]:
    """One (leaders, gap, level, noise): every repetition looked at up to the largest cap (the
    decision at a look does not depend on the cap), read at each cap."""
    rng = np.random.default_rng(seed)
    sigma = spreads(noise, leaders)
    margin = tie_margin(sigma)
    truth = np.array([0.0, *[gap * margin] * (leaders - 1)])
    names = [str(k) for k in range(leaders)]
    top = max(CAPS)
    never = top + 1
    first = {c: np.full(repetitions, never) for c in CLAIMS}  # the look each claim is first made
    false = {c: np.zeros(repetitions, bool) for c in CLAIMS}  # ... and whether it was wrong then
    today = {k: np.full(repetitions, never) for k in ("separated", "tied", "crashed")}
    today_false = np.zeros(repetitions, bool)
    for rep in range(repetitions):
        runs = truth + sigma * shocks(noise, rng, (top, leaders), residuals)
        columns = [runs[:, k].tolist() for k in range(leaders)]
        for look in range(FIRST_LOOK, top + 1):
            decision = decide({m: columns[k][:look] for k, m in enumerate(names)}, "min", level, margin)
            for claim in CLAIMS:
                if decision.made[claim] and first[claim][rep] == never:
                    first[claim][rep] = look
                    false[claim][rep] = wrong(claim, int(decision.winner), truth, margin)
        outcome, look, winner = todays_rule(runs, level, top)
        today[outcome][rep] = look
        if outcome == "separated":
            today_false[rep] = wrong("margin", winner, truth, margin)
        elif outcome == "tied":
            today_false[rep] = wrong("tie", winner, truth, margin)
    cells = []
    error = math.sqrt((1 - level) * level / repetitions)
    for cap in CAPS:
        claims = {}
        for claim in CLAIMS:
            ends = first[claim].copy()
            if claim in RULES_OUT:
                ends = np.minimum(ends, first[RULES_OUT[claim]])
            made = first[claim] <= cap
            claims[claim] = {
                "made": float(made.mean()),
                "wrong": float((made & false[claim]).mean()),
                "seeds": float(np.minimum(ends, cap).mean()),
            }
        ended = np.minimum.reduce([today[k] for k in today])
        right = (today["separated"] <= cap) | (today["tied"] <= cap)
        cells.append(
            {
                "leaders": leaders,
                "gap_margins": gap,
                "cap": cap,
                "level": level,
                "noise": noise,
                "repetitions": repetitions,
                "monte_carlo_error": error,
                "claims": claims,
                "todays_rule": {
                    "separated": float((today["separated"] <= cap).mean()),
                    "tied": float((today["tied"] <= cap).mean()),
                    "wrong": float((right & today_false).mean()),
                    "crashed": float((today["crashed"] <= cap).mean()),
                    "seeds": float(np.minimum(ended, cap).mean()),
                },
            }
        )
    return cells


def todays_rule(runs: np.ndarray, level: float, cap: int) -> tuple[str, int, int]:
    """The rule `confirm` used before, looked at up to `cap`: ("separated" | "tied" | "crashed" |
    "undecided", the look it ended at, the leader it named best)."""
    leaders = runs.shape[1]
    for look in range(FIRST_LOOK, cap + 1):
        x = runs[:look]
        means = x.mean(axis=0)
        dof = leaders * (look - 1)
        sigma = math.sqrt(float(np.sum((x - means) ** 2)) / dof)
        winner = int(np.argmin(means))
        error = (1.0 - level) / ((look - 1) * look)
        scale = sigma * math.sqrt(2 / look)
        try:
            if all(
                (means[m] - means[winner]) / scale > _ahead_critical(dof, look, error / leaders)
                for m in range(leaders)
                if m != winner
            ):
                return "separated", look, winner
            if all(
                abs(means[a] - means[b]) / scale < _tie_critical(dof, look, error)
                for a, b in itertools.combinations(range(leaders), 2)
            ):
                return "tied", look, winner
        except ValueError:
            return "crashed", look, winner
    return "undecided", cap + 1, 0


@cache
def _ahead_critical(dof: int, look: int, error: float) -> float:
    from scipy.stats import nct

    return float(nct.ppf(1.0 - error, dof, TIED / math.sqrt(2 / look)))


@cache
def _tie_critical(dof: int, look: int, error: float) -> float:
    from scipy.optimize import brentq
    from scipy.stats import nct

    delta = TIED / math.sqrt(2 / look)

    def inside(c: float) -> float:
        return float(nct.cdf(c, dof, delta) - nct.cdf(-c, dof, delta)) - error

    if inside(0.0) >= 0:
        return 0.0
    high = delta
    while inside(high) < 0:
        high *= 2
    return float(brentq(inside, 0.0, high, xtol=1e-10))


def goals(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's goal cells: two leaders, normal noise, level 0.95."""

    def at(gap: float, claim: str) -> dict[str, float]:
        picked = [
            c
            for c in cells
            if (c["leaders"], c["noise"], c["level"], c["gap_margins"]) == (2, "normal", 0.95, gap)
        ]
        return {str(c["cap"]): c["claims"][claim]["made"] for c in picked}

    def today(gap: float, key: str) -> dict[str, float]:
        picked = [
            c
            for c in cells
            if (c["leaders"], c["noise"], c["level"], c["gap_margins"]) == (2, "normal", 0.95, gap)
        ]
        return {str(c["cap"]): c["todays_rule"][key] for c in picked}

    return {
        "ahead_at_two_margins": at(2.0, "ahead"),
        "margin_at_two_margins": at(2.0, "margin"),
        "tie_at_zero": at(0.0, "tie"),
        "todays_separated_at_two_margins": today(2.0, "separated"),
        "todays_tied_at_zero": today(0.0, "tied"),
    }


def _run(args: tuple[int, int, float, float, str, int, int, np.ndarray]) -> list[dict[str, Any]]:
    _, leaders, gap, level, noise, repetitions, seed, residuals = args
    return simulate(leaders, gap, level, noise, repetitions, seed, residuals)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repetitions", type=int, default=4000, help="per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="processes")
    parser.add_argument("--out", type=Path, help="write the cells here (JSON)")
    args = parser.parse_args(argv)
    if args.repetitions < 1 or args.jobs < 1:
        print("error: --repetitions and --jobs must be 1 or more", file=sys.stderr)
        return 2
    residuals = table_residuals(TABLES)
    grid = list(itertools.product(NOISES, LEADERS, GAPS, LEVELS))
    work = [
        (k, leaders, gap, level, noise, args.repetitions, args.seed * 1_000 + k, residuals)
        for k, (noise, leaders, gap, level) in enumerate(grid)
    ]
    cells: list[dict[str, Any]] = []
    with ProcessPoolExecutor(args.jobs) as pool:
        for found in pool.map(_run, work):
            cells.extend(found)
            last = found[-1]
            claims = last["claims"]
            print(
                f"{last['noise']:>7} {last['leaders']} leaders, gap {last['gap_margins']:g} margins, "
                f"level {last['level']}, cap {last['cap']}: made (wrong) "
                + ", ".join(f"{c} {claims[c]['made']:.3f} ({claims[c]['wrong']:.4f})" for c in CLAIMS)
                + f"; today's rule crashed {last['todays_rule']['crashed']:.3f}",
                flush=True,
            )
    excess = [
        c["claims"][claim]["wrong"] - (1 - c["level"]) - 2 * c["monte_carlo_error"]
        for c in cells
        for claim in CLAIMS
    ]
    worst = max(  # the claim wrong most often against what its level allows
        (
            c["claims"][claim]["wrong"] / (1 - c["level"]),
            c["claims"][claim]["wrong"],
            c["level"],
            claim,
            c["noise"],
            c["leaders"],
            c["gap_margins"],
            c["cap"],
        )
        for c in cells
        for claim in CLAIMS
    )
    result = {
        "command": shlex.join(
            ["python", "-m", "benchmarks.search_tables.confirm_calibration", *(argv or sys.argv[1:])]
        ),
        # simulated: the figures are the seed's on any machine; named as every results file is
        "machine": figures_file.machine("cpu"),
        "tie_margin_seed_spreads": TIED,
        "table_residuals": {
            "tables": [str(f.relative_to(ROOT)) for f in TABLES],
            "runs": len(residuals),
            "kurtosis": float(np.mean(residuals**4)),
        },
        "valid_in_every_cell": bool(max(excess) <= 0),
        "worst_wrong": dict(
            zip(
                ("of_allowed", "wrong", "level", "claim", "noise", "leaders", "gap_margins", "cap"),
                worst,
                strict=True,
            )
        ),
        "todays_rule_worst_wrong": max(c["todays_rule"]["wrong"] / (1 - c["level"]) for c in cells),
        "todays_rule_crashed": max(c["todays_rule"]["crashed"] for c in cells),
        "goals": goals(cells),
        "cells": cells,
    }
    print(f"valid in every cell, every claim (within 2 Monte-Carlo errors): {result['valid_in_every_cell']}")
    print(f"worst wrong share: {result['worst_wrong']}")
    print(json.dumps(result["goals"], indent=1))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

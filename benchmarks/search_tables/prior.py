"""Learn the curves race's prior (`sweeper.run.search.curve_prior`) and the verdict's fallback
seed noise (`sweeper.results.odds`) from recorded tables.

For each table and task: many random sweeps, each drawing `--budget` recorded runs per model
(configuration and seed at random, as random search would); at each of the race's rungs and for
a few numbers of trials measured so far, every pair of models where the first is behind the
second by more than the race's `LEVEL` at that rung gives one example: its log gap there beyond
`LEVEL` (each side's best so far on the race's scale: clipped at the task's baseline and at the
tie margin of zero, `CurveRace.clipped`), the trials behind it, the rung's share of a trial, and
whether the first model's best after the whole budget ends level with the second's (within
`LEVEL`) or ahead. A logistic fit to those examples is the prior; it records the trials measured
and the shares of a trial it saw, outside which the race does not use it. The race states its odds
with the shipped one, learned from every recorded task; the replay judges a task with one learned
from the other tasks only (`learned`).

The seed noise is one run's best value's spread between its seeds relative to its mean as a loss,
the median over each (task, model)'s five best configurations.

    python -m benchmarks.search_tables.prior --tables benchmarks/results/blackbox \
        benchmarks/results/blackbox-hidden --out sweeper/run/search/curve_prior.json \
        --noise-out sweeper/results/seed_noise.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.search_tables import table as tables
from sweeper.results.loss_scale import as_loss, resolved
from sweeper.results.odds import shipped_relative
from sweeper.run.search.curve_prior import CurvePrior, features
from sweeper.run.search.curve_race import LEVEL, solved_scale

TRIALS_MEASURED = (1, 2, 3, 4, 6, 8, 12)
L2 = 1e-3  # keeps the fit finite where a task separates its models perfectly


def rung_indices(table: tables.Table, reduction: float = 3.0) -> list[int]:
    """The evaluations at the race's rungs in a replayed sweep of the table (ASHA's grace period
    at the first report, the benchmark's reduction factor), and the last."""
    steps = list(table.steps)
    rung, out = float(steps[0]), []
    while rung < steps[-1]:
        out.append(int(np.argmin(np.abs(np.array(steps) - rung))))
        rung *= reduction
    return sorted({*out, len(steps) - 1})


def examples(
    table: tables.Table, task: str, budget: int, sweeps: int, relative: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(features, ended level or ahead) over random sweeps of one task: see the module's docstring."""
    info = table.tasks[task]
    level = solved_scale(info.baseline, info.mode, relative)
    runs = {}
    for model, c in table.curves[task].items():
        loss = np.vectorize(lambda v: level(as_loss(v, info.mode)) if np.isfinite(v) else np.nan)(c.objective)
        best = np.fmin.accumulate(np.where(np.isnan(loss), np.inf, loss), axis=2)
        recorded = np.argwhere(c.status != tables.MISSING)
        final = np.where(c.status == tables.COMPLETE, best[:, :, -1], np.inf)
        runs[model] = (best, final, recorded)
    rungs = rung_indices(table)
    steps = table.steps
    rows, labels = [], []
    for _ in range(sweeps):
        drawn = {}
        for model, (best, final, recorded) in runs.items():
            pick = recorded[rng.choice(len(recorded), min(budget, len(recorded)), replace=False)]
            drawn[model] = (best[pick[:, 0], pick[:, 1]], final[pick[:, 0], pick[:, 1]].min())
        for e in rungs:
            for n in TRIALS_MEASURED:
                if n >= budget:
                    continue
                front = {m: float(np.min(b[:n, e])) for m, (b, _) in drawn.items()}
                for f in drawn:
                    for g in drawn:
                        if f == g or not (math.isfinite(front[f]) and math.isfinite(front[g])):
                            continue
                        gap = front[f] - front[g] - LEVEL
                        if gap <= 0:
                            continue
                        rows.append(features(gap, n, float(steps[e] / steps[-1])))
                        labels.append(drawn[f][1] <= drawn[g][1] + LEVEL)
    return np.array(rows), np.array(labels, dtype=float)


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Logistic regression by Newton's method, with a small ridge."""
    w = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -50, 50)))
        hessian = x.T @ (x * (p * (1 - p))[:, None]) + L2 * np.eye(len(w))
        step = np.linalg.solve(hessian, x.T @ (y - p) - L2 * w)
        w += step
        if np.abs(step).max() < 1e-8:
            break
    return w


def learned(
    sources: list[tuple[str, tables.Table]],
    tasks: list[str] | None = None,
    budget: int = 24,
    sweeps: int = 300,
    seed: int = 0,
) -> CurvePrior:
    """The prior learned from the named tables, on `tasks` only where given (their relative seed
    spread sets the tie margin of zero the race clips at)."""
    rng = np.random.default_rng(seed)
    try:
        relative = seed_spread(sources, tasks)["relative"]
    except tables.TableMismatch:  # no repeated seeds to learn it from: the shipped one
        relative = shipped_relative()[0]
    xs, ys, used, progress = [], [], [], []
    for name, table in sources:
        for task in table.curves:
            if tasks is not None and task not in tasks:
                continue
            x, y = examples(table, task, budget, sweeps, relative, rng)
            xs.append(x)
            ys.append(y)
            used.append(f"{name}/{task}")
            progress += [float(table.steps[e] / table.steps[-1]) for e in rung_indices(table)]
    if not xs or not sum(len(y) for y in ys):
        raise tables.TableMismatch(
            f"no task with families apart at a rung to learn from in {', '.join(name for name, _ in sources)}"
        )
    x, y = np.concatenate(xs), np.concatenate(ys)
    measured = [n for n in TRIALS_MEASURED if n < budget]
    return CurvePrior(
        tuple(float(w) for w in fit(x, y)),
        {
            "tables": used,
            "examples": len(y),
            "budget": budget,
            "sweeps": sweeps,
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        },
        (min(measured), max(measured)),
        (min(progress), max(progress)),
        relative,
    )


def seed_spread(
    sources: list[tuple[str, tables.Table]], tasks: list[str] | None = None, top: int = 5
) -> dict:
    """One run's best value's spread between seeds relative to its mean as a loss (`loss_scale`;
    the median over each (task, model)'s `top` best configurations with two seeds or more)."""
    from benchmarks.search_tables.verdicts import run_bests

    relative, used = [], []
    for name, table in sources:
        for task, models in table.curves.items():
            if tasks is not None and task not in tasks:
                continue
            sign = table.sign(task)
            for c in models.values():
                bests = run_bests(c, table.tasks[task].mode)
                counts = np.isfinite(bests).sum(axis=1)
                means = np.nansum(np.where(np.isfinite(bests), bests, 0), axis=1) / np.maximum(counts, 1)
                order = np.argsort(np.where(counts > 0, sign * means, np.inf))
                for design in order[:top]:
                    runs = bests[design][np.isfinite(bests[design])]
                    if len(runs) >= 2:
                        mode = table.tasks[task].mode
                        scale = resolved(as_loss(float(np.mean(runs)), mode), mode)
                        relative.append(float(np.std(runs, ddof=1) / scale))
            used.append(f"{name}/{task}")
    if not relative:
        raise tables.TableMismatch("no configuration with two seeds to learn the seed noise from")
    return {"relative": float(np.median(relative)), "configurations": len(relative), "tables": used}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tables", nargs="+", type=Path, default=[Path("benchmarks/results/blackbox")])
    parser.add_argument("--tasks", nargs="+", help="learn from these tasks only")
    parser.add_argument("--budget", type=int, default=24, help="trials per model in a drawn sweep")
    parser.add_argument("--sweeps", type=int, default=300, help="random sweeps drawn per task")
    parser.add_argument("--out", type=Path, help="write the prior here (JSON)")
    parser.add_argument("--noise-out", type=Path, help="write the seed noise here (JSON)")
    args = parser.parse_args(argv)
    from benchmarks.search_tables.loading import load

    try:
        sources = [(f.name, load(f, None)) for f in args.tables]
        prior = learned(sources, args.tasks, args.budget, args.sweeps)
        noise = seed_spread(sources, args.tasks)
    except tables.TableMismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for data, path in ((prior.as_dict(), args.out), (noise, args.noise_out)):
        text = json.dumps(data, indent=1) + "\n"
        print(text, end="")
        if path is not None:
            path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The figures that judge racing families and the verdict's stated odds, from replayed sweeps
(`verdicts` holds the truth and each sweep's timeline).

- the wall time a user waits until the named winner is right for good (W workers);
- the normalized regret of the named winner's best configuration, (y - best) / (worst - best) as
  Syne Tune reports it (best: the truth's best; worst: the task's memoryless baseline, or the
  table's worst configuration where the task has none; 1 until a winner is named), summarised
  over seeds by its interquartile mean with a bootstrap 95% interval;
- every drop a race made, judged against the truth: the share that stopped a true co-winner;
- the verdict each sweep ends with and its stated odds (the service's own `sweeper.results.odds`
  on the sweep's complete trials: the noise from trials of one configuration on different seeds,
  else the recorded tables' relative seed spread learned without the task judged), binned by the
  stated chance against how often it was right (a reliability table): a verdict naming one model
  states P(it is the best) and is right when it is a co-winner of the truth; one naming a tie
  states P(the tie holds) and is right when every model it names is a co-winner;
- the racing floor: W times the winner's fastest complete run, sooner than which no sweep can be
  right for good; and the paired standing of a strategy against the default (ahead or behind
  beyond the interval of their 90%-right points' difference, else level).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.verdicts import (
    Timeline,
    Truth,
    answer_at,
    quantile,
    right_for_good,
    wall_right_for_good,
)
from sweeper.results.loss_scale import as_loss, resolved
from sweeper.results.odds import Estimate, Noise, Odds, odds, search_spread, seed_noise, with_search

FRACTIONS = (0.1, 0.25, 0.5, 1.0)
BINS = (0.0, 0.5, 0.7, 0.9, 0.95, 1.0000001)
BOOTSTRAP = 2000


def iqm(values: np.ndarray) -> float:
    """The interquartile mean: the mean of the middle half."""
    ordered = np.sort(values)
    n = len(ordered)
    return float(np.mean(ordered[n // 4 : n - n // 4])) if n >= 4 else float(np.mean(ordered))


def iqm_interval(values: np.ndarray, rng: np.random.Generator) -> list[float]:
    samples = [iqm(values[rng.integers(0, len(values), len(values))]) for _ in range(BOOTSTRAP)]
    return [float(np.quantile(samples, 0.025)), float(np.quantile(samples, 0.975))]


def worst_value(table: tables.Table, task: str, truth: Truth) -> float:
    """The regret's worst: the baseline, or the table's worst configuration without one."""
    baseline = table.tasks[task].baseline
    if baseline is not None:
        return baseline
    finite = [v[np.isfinite(v)] for v in truth.objective.values()]
    values = np.concatenate(finite)
    return float(values.max() if truth.sign > 0 else values.min())


def normalized_regret(line: Timeline, truth: Truth, worst: float, hours: float) -> float:
    model, design = answer_at(line, hours)
    if not model:
        return 1.0
    span = truth.sign * (worst - truth.table_best)
    return float(np.clip(truth.regret(model, design) / span, 0.0, 1.0)) if span > 0 else 0.0


def regret_curve(
    lines: list[Timeline], truth: Truth, worst: float, budget: float, rng: np.random.Generator
) -> dict[str, Any]:
    """The normalized regret's IQM over seeds, with its interval, at fractions of B."""
    out = {}
    for fraction in FRACTIONS:
        values = np.array([normalized_regret(line, truth, worst, fraction * budget) for line in lines])
        out[str(fraction)] = {"iqm": iqm(values), "interval": iqm_interval(values, rng)}
    return out


def wall_90(lines: list[Timeline], truth: Truth) -> float | None:
    """Wall-clock hours by which 90% of the sweeps are right for good."""
    value = quantile(np.array([wall_right_for_good(line, truth) for line in lines]), 0.9)
    return value if math.isfinite(value) else None


DROP_GOAL = 0.05  # the most of an allocation's drops that may stop a true co-winner


def judged_drops(traces: list[dict[str, Any]], truth: Truth) -> dict[str, Any]:
    """Every family an allocation dropped, how many of those were true co-winners, and whether
    that share is within `DROP_GOAL` (an allocation that drops nothing meets it)."""
    dropped = [model for trace in traces for _, model in trace["race_stops"]]
    wrong = sum(model in truth.co_winners for model in dropped)
    share = wrong / len(dropped) if dropped else None
    return {
        "drops": len(dropped),
        "co_winners_dropped": wrong,
        "share": share,
        "met": share is None or share <= DROP_GOAL,
    }


def stated_odds(trace: dict[str, Any], info: tables.TaskInfo, relative_noise: float) -> Odds | None:
    """The odds the service states at the sweep's end, from its complete trials: the noise from
    its trials of one configuration on different seeds, else the relative spread given."""
    best: dict[str, float] = {}
    runs: dict[tuple[str, int], dict[int, float]] = {}
    values: dict[str, list[float]] = {}
    for t in trace["trials"]:
        if t["state"] != "COMPLETE":
            continue
        if info.better(t["value"], best.get(t["model"], math.nan)):
            best[t["model"]] = t["value"]
        runs.setdefault((t["model"], t["design"]), {})[t["seed"]] = t["value"]
        values.setdefault(t["model"], []).append(t["value"])
    if not best:
        return None
    pairs = [a - b for values in runs.values() for a, b in _pairs(list(values.values()))]
    winner = min(best.values(), key=lambda v: v if info.mode == "min" else -v)
    loss = resolved(as_loss(winner, info.mode), info.mode)
    fallback = Noise(relative_noise * loss, "the recorded tables of the other tasks")
    noise = seed_noise([], pairs, winner, info.mode, fallback)
    estimates = {m: Estimate(v, 1, "its best trial") for m, v in best.items()}
    spreads = {m: search_spread(v, info.mode) for m, v in values.items()}
    return odds(with_search(estimates, spreads), noise, info.mode)


def _pairs(values: list[float]) -> list[tuple[float, float]]:
    return [(a, b) for i, a in enumerate(values) for b in values[i + 1 :]]


def verdict_outcome(said: Odds | None, info: tables.TaskInfo, truth: Truth) -> dict[str, Any] | None:
    """The verdict's claim (its stated chance to be right) and whether it was; None where the
    sweep names no winner (nothing learned beyond the baseline)."""
    if said is None or not info.learned(said.estimates[said.winner].value):
        return None
    named = said.co_winners
    stated = said.p_tie if said.tie else said.p_winner
    return {"tie": said.tie, "stated": stated, "right": all(m in truth.co_winners for m in named)}


def reliability(outcomes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Verdicts binned by their stated chance to be right, against how often they were."""
    rows = []
    for low, high in itertools.pairwise(BINS):
        mine = [o for o in outcomes if low <= o["stated"] < high]
        rows.append(
            {
                "stated": [low, min(high, 1.0)],
                "verdicts": len(mine),
                "ties": sum(o["tie"] for o in mine),
                "mean_stated": float(np.mean([o["stated"] for o in mine])) if mine else None,
                "right": float(np.mean([o["right"] for o in mine])) if mine else None,
            }
        )
    return rows


def racing_floor(table: tables.Table, task: str, truth: Truth, workers: int) -> float | None:
    """W times the winner's fastest complete run, in worker-hours: no sweep that keeps its W
    workers on the winner can be right for good sooner."""
    curves = table.curves[task][truth.winner]
    ended = curves.ended[curves.status == tables.COMPLETE]
    return workers * float(ended.min()) / 3600 if ended.size else None


def paired_difference(
    ours: list[Timeline], theirs: list[Timeline], truth: Truth, rng: np.random.Generator
) -> list[float]:
    """The 95% interval of (our 90%-right point - theirs) over seeds resampled in pairs; inf
    where a resample of ours never gets there."""
    a = np.array([right_for_good(line, truth) for line in ours])
    b = np.array([right_for_good(line, truth) for line in theirs])
    differences = []
    for _ in range(BOOTSTRAP):
        pick = rng.integers(0, len(a), len(a))
        differences.append(quantile(a[pick], 0.9) - quantile(b[pick], 0.9))
    clean = np.nan_to_num(np.array(differences), nan=0.0, posinf=np.inf, neginf=-np.inf)
    return [quantile(clean, 0.025), quantile(clean, 0.975)]


def standing(interval: list[float]) -> str:
    """Ahead, behind or level, beyond the interval of the paired difference."""
    low, high = interval
    return "ahead" if high < 0 else "behind" if low > 0 else "level"


def problem_table(table: tables.Table, task: str, number: int, share: float = 0.6) -> tables.Table:
    """Calibration problem `number` of a task: a random subset of its models (two or more) and of
    each model's Sobol configurations (`share`, the papers' points kept), a table of its own with
    its own truth."""
    rng = np.random.default_rng([number, 20261128])
    names = list(table.curves[task])
    models = sorted(rng.choice(names, size=int(rng.integers(2, len(names) + 1)), replace=False))
    curves = {}
    for model in models:
        c = table.curves[task][model]
        sobol = np.flatnonzero(~c.paper)
        keep = np.sort(
            np.concatenate(
                [np.flatnonzero(c.paper), rng.choice(sobol, round(share * len(sobol)), replace=False)]
            )
        )
        curves[model] = tables.Curves(
            [c.designs[i] for i in keep], *(getattr(c, n)[keep] for n in (*tables.ARRAYS, *tables.RUN_ARRAYS))
        )
    return tables.Table(
        table.settings,
        table.seeds,
        {task: table.tasks[task]},
        {task: {m: table.spaces[task][m] for m in models}},
        {task: curves},
        table.versions,
        {},
    )


def held_out(table: tables.Table) -> int | None:
    """The training seed a table of three or more holds out of the truth and the judged sweeps,
    for the earlier sweeps warm starts take their trials from."""
    return table.seeds - 1 if table.seeds >= 3 else None


def judged_seeds(table: tables.Table) -> tuple[int, ...] | None:
    held = held_out(table)
    return None if held is None else tuple(s for s in range(table.seeds) if s != held)


def problem_of(task: str) -> tuple[str, int | None]:
    """`copying#3` is calibration problem 3 of copying (`racing.problem_table`)."""
    name, _, number = task.partition("#")
    return name, int(number) if number else None

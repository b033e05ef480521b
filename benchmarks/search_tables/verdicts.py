"""Judging replayed sweeps against the table's ground truth.

Ground truth. A configuration's objective is the mean over its complete recorded runs of each
run's best validation value (the value a study records for a complete trial). A model's best is
its best configuration's; the right winner is the model with the best (the lowest, or the highest
for a maximised objective such as an accuracy). Models whose best lies
within the tie margin of it (`separation.tie_margin`: 2σ, two standard errors of the difference
of two-seed means, σ the seed spread pooled over every model's five best configurations) are
co-winners: naming any of them is right. The verdict and `sweeper confirm` use the same margin.

A sweep names, at any moment, the model whose best complete trial is best, once every model
has completed a trial or been stopped by a race and that best beats the task's memoryless
baseline (the service's verdict says "no model learned more than the baseline" otherwise, and a
researcher takes no winner from it); before that it names none (which is not right). A task
without a memoryless baseline (parenthesis, shortest path) has no such bar: its sweep names its
leader as soon as every model has completed a trial or been raced out.
Its cost by then is its busy worker-hours. Per sweep:
- the worker-hours from which its named winner is right and stays right to its end (inf if it
  ends naming another);
- the named model and configuration at any budget, and that configuration's regret: its
  objective minus the table's best.
Over paired seeds: B, the worker-hours by which 90% of random's sweeps are right for good; each
strategy's share of seeds naming a right winner at fractions of B, with bootstrap intervals; and
its own 90% point against B.

Floors. No sweep names a winner before every model has completed a trial, and a model's trial
costs at least its fastest complete recorded run: the sum of those runs is the floor of any sweep.
A sweep that keeps its W workers busy until then (random search does; so do the equal-allocation
strategies while their studies have trials left) spends at least W times the slowest of them.
Where that floor is above a third of B, no such strategy can reach the goal at that W; each
strategy's own first answer (`hours_first_named`) shows how close it comes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.simulator import Trace
from sweeper.results.separation import tie_margin

FRACTIONS = (0.25, 0.33, 0.5, 1.0)
TOP = 5  # configurations per model that the seed noise is pooled over
BOOTSTRAP = 2000


@dataclass(frozen=True)
class Truth:
    objective: dict[str, np.ndarray]  # per model, each configuration's seed-averaged objective
    best: dict[str, float]
    sign: float  # +1 where lower is better, -1 where higher is
    winner: str
    co_winners: tuple[str, ...]  # the winner and the models within seed noise of it
    noise: float  # σ, the pooled seed spread of one run's best value
    margin: float

    @property
    def table_best(self) -> float:
        return self.best[self.winner]

    def regret(self, model: str, design: int) -> float:
        """How much worse the configuration is than the table's best (>= 0)."""
        return self.sign * (float(self.objective[model][design]) - self.table_best)


def run_bests(curves: tables.Curves, mode: str = "min") -> np.ndarray:
    """[configuration, seed]: each complete run's best value, NaN for every other run."""
    complete = curves.status == tables.COMPLETE
    sign = 1.0 if mode == "min" else -1.0
    with np.errstate(all="ignore"):
        best = np.where(
            complete,
            np.nanmin(np.where(complete[..., None], sign * curves.objective, np.inf), axis=2),
            np.nan,
        )
    return sign * best


def ground_truth(table: tables.Table, task: str, seeds: tuple[int, ...] | None = None) -> Truth:
    """The table's truth, from its runs of `seeds` only where given (a seed held out for warm
    starts stays out of the truth)."""
    objective, variances = {}, []
    sign = table.sign(task)
    for model, curves in table.curves[task].items():
        bests = run_bests(curves, table.tasks[task].mode)
        if seeds is not None:
            bests = bests[:, list(seeds)]
        counts = (~np.isnan(bests)).sum(axis=1)
        objective[model] = np.where(counts > 0, np.nansum(bests, axis=1) / np.maximum(counts, 1), np.nan)
        ranked = np.argsort(np.where(np.isnan(objective[model]), np.inf, sign * objective[model]))
        for design in ranked[:TOP]:
            runs = bests[design][~np.isnan(bests[design])]
            if len(runs) >= 2:
                variances.append(float(np.var(runs, ddof=1)))
    best = {
        m: sign * float(np.nanmin(sign * v)) if np.isfinite(v).any() else sign * math.inf
        for m, v in objective.items()
    }
    winner = min(best, key=lambda m: sign * best[m])
    noise = math.sqrt(float(np.mean(variances))) if variances else 0.0

    margin = tie_margin(noise)
    co = tuple(m for m in best if sign * (best[m] - best[winner]) <= margin)
    return Truth(objective, best, sign, winner, co, noise, margin)


@dataclass(frozen=True)
class Timeline:
    """A sweep's answer after each event: the worker-hours spent by then, the model it names
    ('' for none yet) and the configuration of that model's best trial."""

    hours: np.ndarray
    named: list[str]
    design: list[int]
    total_hours: float
    wall: np.ndarray = field(default_factory=lambda: np.zeros(0))  # hours since the sweep started


def timeline(trace: Trace, models: tuple[str, ...] | list[str], task: tables.TaskInfo) -> Timeline:
    """The sweep's answer after each trial's end and each race's drop (see the module's docstring)."""
    events = sorted(
        [(x["end"], "complete", x) for x in trace.trials if x["state"] == "COMPLETE"]
        + [(t, "race", {"model": m}) for t, m in trace.race_stops],
        key=lambda e: e[0],
    )
    starts = np.array([x["start"] for x in trace.trials])
    ends = np.array([x["end"] for x in trace.trials])
    best: dict[str, tuple[float, int]] = {}
    out: set[str] = set()
    hours, named, design, wall = [], [], [], []
    for t, kind, x in events:
        if kind == "race":
            out.add(x["model"])
        elif task.better(x["value"], best.get(x["model"], (math.nan, -1))[0]):
            best[x["model"]] = (x["value"], x["design"])
        answered = all(m in best or m in out for m in models) and best
        leader = ""
        for model in best if answered else ():
            if not leader or task.better(best[model][0], best[leader][0]):
                leader = model
        leader = leader if leader and task.learned(best[leader][0]) else ""
        hours.append(float(np.clip(t - starts, 0.0, ends - starts).sum()) / 3600)
        named.append(leader)
        design.append(best[leader][1] if leader else -1)
        wall.append(t / 3600)
    return Timeline(np.array(hours), named, design, trace.busy / 3600, np.array(wall))


def first_named(line: Timeline) -> float:
    """Worker-hours at which the sweep first names a winner, right or not (inf if never)."""
    return next((float(h) for h, named in zip(line.hours, line.named, strict=True) if named), math.inf)


def floors(table: tables.Table, task: str, workers: int) -> dict[str, float | None]:
    """The worker-hours below which no sweep (`any_sweep`), and no sweep that keeps its `workers`
    busy (`busy_sweep`), can name a winner: see the module's docstring."""
    fastest = []
    for curves in table.curves[task].values():
        ended = curves.ended[curves.status == tables.COMPLETE]
        if ended.size == 0:  # a model that never completes is never answered: no floor to state
            return {"any_sweep": None, "busy_sweep": None}
        fastest.append(float(ended.min()))
    return {
        "any_sweep": sum(fastest) / 3600,
        "busy_sweep": max(workers * max(fastest), sum(fastest)) / 3600,
    }


def right_since(line: Timeline, truth: Truth) -> int | None:
    """The event from which the sweep names a right winner to its end; None if it ends wrong."""
    if not line.named or line.named[-1] not in truth.co_winners:
        return None
    since = len(line.named) - 1
    while since > 0 and line.named[since - 1] in truth.co_winners:
        since -= 1
    return since


def right_for_good(line: Timeline, truth: Truth) -> float:
    """Worker-hours from which the sweep names a right winner to its end; inf if it ends wrong."""
    since = right_since(line, truth)
    return math.inf if since is None else float(line.hours[since])


def wall_right_for_good(line: Timeline, truth: Truth) -> float:
    """The same moment in hours of the sweep's wall clock: what its user waits."""
    since = right_since(line, truth)
    return math.inf if since is None else float(line.wall[since])


def answer_at(line: Timeline, hours: float) -> tuple[str, int]:
    """The model and configuration the sweep names once it has spent `hours` (its last answer
    after it ended)."""
    index = int(np.searchsorted(line.hours, hours, side="right")) - 1
    if index < 0:
        return "", -1
    return line.named[index], line.design[index]


def share_right(lines: list[Timeline], truth: Truth, hours: float) -> np.ndarray:
    """Per seed: 1 when the sweep names a right winner at `hours`."""
    return np.array([answer_at(line, hours)[0] in truth.co_winners for line in lines], dtype=float)


def regrets(lines: list[Timeline], truth: Truth, hours: float) -> np.ndarray:
    """Per seed: the regret of the configuration named at `hours` (inf when none is named)."""
    out = []
    for line in lines:
        model, design = answer_at(line, hours)
        out.append(truth.regret(model, design) if model else math.inf)
    return np.array(out)


def quantile(values: np.ndarray, q: float) -> float:
    """The q-quantile with infinities (sweeps never right) ranked last: inf when more than 1 - q
    of them never got there."""
    ordered = np.sort(values)
    index = math.ceil(q * len(ordered)) - 1
    return float(ordered[max(index, 0)])


def ratio(ours: float, theirs: float) -> float:
    """Hours to 90% right against the reference's, in a resample where either may never get
    there: never against never is never (inf), anything against never is 0 (sooner)."""
    if math.isinf(ours):
        return math.inf
    return 0.0 if math.isinf(theirs) else ours / max(theirs, 1e-12)


def interval(samples: np.ndarray) -> tuple[float, float]:
    """The bootstrap's 95% interval (inf-aware, as `quantile`)."""
    return quantile(samples, 0.025), quantile(samples, 0.975)


def judge(
    lines: dict[str, list[Timeline]], truth: Truth, reference: str = "random", seed: int = 0
) -> dict[str, Any]:
    """Every strategy's verdict at one (task, W), its sweeps paired by seed with `reference`'s."""
    rng = np.random.default_rng(seed)
    ref = np.array([right_for_good(line, truth) for line in lines[reference]])
    n = len(ref)
    if n == 0:
        return {"B_hours": None, "strategies": {}}
    resamples = rng.integers(0, n, size=(BOOTSTRAP, n))
    budget = quantile(ref, 0.9)
    verdicts: dict[str, Any] = {"B_hours": _finite(budget), "strategies": {}}
    for name, mine in lines.items():
        hours = np.array([right_for_good(line, truth) for line in mine])
        first = np.array([first_named(line) for line in mine])
        own90 = quantile(hours, 0.9)
        row: dict[str, Any] = {
            "seeds": len(mine),
            "hours_right_for_good": _distribution(hours),
            "hours_90": _finite(own90),
            "hours_first_named": _distribution(first),
            "spent_hours": _distribution(np.array([line.total_hours for line in mine])),
        }
        if math.isfinite(budget) and len(mine) == n:
            ratios = np.array([ratio(quantile(hours[r], 0.9), quantile(ref[r], 0.9)) for r in resamples])
            row["ratio_90"] = _finite(own90 / budget)
            row["first_named_90_ratio"] = _finite(quantile(first, 0.9) / budget)
            row["ratio_90_interval"] = [_finite(v) for v in interval(ratios)]
            row["at_B"] = {}
            for fraction in FRACTIONS:
                right = share_right(mine, truth, fraction * budget)
                regret = regrets(mine, truth, fraction * budget)
                shares = right[resamples].mean(axis=1)
                row["at_B"][str(fraction)] = {
                    "right": float(right.mean()),
                    "right_interval": [float(np.quantile(shares, 0.025)), float(np.quantile(shares, 0.975))],
                    "regret_median": _finite(float(np.median(regret))),
                    "regret_mean": _finite(float(np.mean(regret))),
                }
        verdicts["strategies"][name] = row
    return verdicts


def goal(verdict: dict[str, Any], strategy: str = "default", reference: str = "random") -> dict[str, Any]:
    """The issue's goal for one (task, W): the strategy reaches 90% right in at most a third of
    the reference's worker-hours (the upper end of the bootstrap interval), and at a third of B
    names a right winner at least as often as the reference at B, with no worse regret. Where
    the verdict holds the floors, `reachable` says whether a sweep that keeps its workers busy
    could meet the first part at all."""
    row, ref = verdict["strategies"].get(strategy), verdict["strategies"].get(reference)
    if row is None or ref is None:
        return {"met": False, "why": f"{strategy} and {reference} were not both replayed"}
    if "at_B" not in row:
        return {"met": False, "why": f"{reference} never reaches 90% right within its budget"}
    upper = row["ratio_90_interval"][1]
    ours, theirs = row["at_B"]["0.33"], ref["at_B"]["1.0"]
    checks = {
        "ratio_90_upper": upper,
        "ratio_ok": upper is not None and upper <= 0.33,
        "right_at_third": ours["right"],
        "random_right_at_B": theirs["right"],
        "right_ok": ours["right"] >= theirs["right"],
        "regret_at_third": ours["regret_median"],
        "random_regret_at_B": theirs["regret_median"],
        "regret_ok": _not_worse(ours["regret_median"], theirs["regret_median"]),
    }
    checks["met"] = bool(checks["ratio_ok"] and checks["right_ok"] and checks["regret_ok"])
    busy = verdict.get("floor", {}).get("busy_sweep_ratio")
    if busy is not None:
        checks["busy_floor_ratio"] = busy
        checks["reachable"] = busy <= 0.33
    return checks


def _not_worse(ours: float | None, theirs: float | None) -> bool:
    if ours is None:
        return theirs is None
    return theirs is None or ours <= theirs + 1e-12


def _distribution(values: np.ndarray) -> dict[str, Any]:
    """Quartiles over seeds, a seed never right ranked last (None where it falls among those)."""
    return {
        "q25": _finite(quantile(values, 0.25)),
        "median": _finite(quantile(values, 0.5)),
        "q75": _finite(quantile(values, 0.75)),
        "never": int((~np.isfinite(values)).sum()),
    }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None

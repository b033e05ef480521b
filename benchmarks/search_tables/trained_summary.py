"""What the sweeps `trained` ran say: per task and strategy, the iterations until each model first
reached the target, until the sweep named its final winner and matched random's answer, and how
often it was right (the medians over seeds, each as a ratio to random's)."""

from __future__ import annotations

import argparse
import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from benchmarks.search_tables.table import MODELS
from trainables.catalog import load_all
from trainables.registry import TASKS


@dataclass
class Report:
    sweep_iterations: int  # trained by the whole sweep so far
    model: str
    model_iterations: int  # trained by this model's study so far
    value: float
    complete: bool = False  # the last report of a trial that ran to the end: the study's value
    seconds: float = (
        0.0  # the whole sweep's worker-seconds so far (its trials' CPU time), as the table's clock counts
    )


@dataclass
class Sweep:
    task: str
    strategy: str
    seed: int
    reports: list[Report] = field(default_factory=list)
    paper_points: int = 0
    reused: int = 0
    race_stops: dict[str, str] = field(default_factory=dict)


def reached(sweep: Sweep, model: str, target: float) -> float:
    """The iterations the model's study trained until a report first reached the target."""
    return next(
        (r.model_iterations for r in sweep.reports if r.model == model and r.value <= target), math.inf
    )


def standings(sweep: Sweep) -> list[tuple[int, dict[str, float]]]:
    """Each model's best complete trial after each improvement, from when every model that
    completes a trial in the sweep has completed one: before that the sweep cannot say which
    model wins, whatever order it tried them in."""
    entrants = {r.model for r in sweep.reports if r.complete}
    best: dict[str, float] = {}
    kept = []
    for r in sweep.reports:
        if r.complete and r.value < best.get(r.model, math.inf):
            best[r.model] = r.value
            if set(best) == entrants:
                kept.append((r.sweep_iterations, dict(best)))
    return kept


def leaders(sweep: Sweep) -> list[tuple[int, str]]:
    """The model the sweep would name after each improvement (its best complete trial lowest)."""
    return [(iterations, min(best, key=best.__getitem__)) for iterations, best in standings(sweep)]


def named_at(sweep: Sweep, winner: str) -> float:
    """The sweep's iterations when it named `winner` for good; inf if it ended naming another."""
    named = leaders(sweep)
    if not named or named[-1][1] != winner:
        return math.inf
    since = len(named) - 1
    while since > 0 and named[since - 1][1] == winner:
        since -= 1
    return named[since][0]


def matched(sweep: Sweep, winner: str, answer: float) -> float:
    """The sweep's iterations when it first named `winner` with a best complete trial at least as
    good as `answer` (random's answer, model and value); inf if never."""
    return next(
        (
            iterations
            for iterations, best in standings(sweep)
            if min(best, key=best.__getitem__) == winner and best[winner] <= answer
        ),
        math.inf,
    )


def summarise(sweeps: list[Sweep], args: argparse.Namespace) -> dict[str, Any]:
    load_all()  # the tasks' baselines, also where `--summarise` reads logs without training
    tasks: dict[str, Any] = {}
    for task in args.tasks:
        mine = [s for s in sweeps if s.task == task and s.seed < args.seeds and s.strategy in args.strategies]
        reference = [r for s in mine if s.strategy == "random" for r in s.reports if r.complete]
        if not reference:
            continue
        baseline = TASKS.get(task).sized({"T": args.T}).baseline
        target = baseline * args.target
        winner = min(reference, key=lambda r: r.value).model
        answer = statistics.median(
            min(r.value for r in s.reports if r.complete) for s in mine if s.strategy == "random"
        )
        rows: dict[str, Any] = {}
        for name in ["random", *[n for n in args.strategies if n != "random"]]:
            runs = [s for s in mine if s.strategy == name]
            if not runs:
                continue
            to_target = {m: statistics.median(reached(s, m, target) for s in runs) for m in MODELS}
            to_winner = statistics.median(named_at(s, winner) for s in runs)
            rows[name] = {
                "iterations_to_target": to_target,
                "iterations_to_winner": to_winner,
                "right_winner": sum(named_at(s, winner) < math.inf for s in runs),
                "iterations_to_answer": statistics.median(matched(s, winner, answer) for s in runs),
                "seeds": len(runs),
                "iterations": statistics.median(
                    s.reports[-1].sweep_iterations if s.reports else 0 for s in runs
                ),
                "paper_points": statistics.median(s.paper_points for s in runs),
                "reused": statistics.median(s.reused for s in runs),
            }
        random = rows["random"]
        for row in rows.values():
            row["target_ratio"] = {
                m: _ratio(row["iterations_to_target"][m], random["iterations_to_target"][m]) for m in MODELS
            }
            row["winner_ratio"] = _ratio(row["iterations_to_winner"], random["iterations_to_winner"])
            row["answer_ratio"] = _ratio(row["iterations_to_answer"], random["iterations_to_answer"])
            row["spent_ratio"] = _ratio(row["iterations"], random["iterations"])
        tasks[task] = {
            "baseline": baseline, "target": target, "winner": winner, "answer": answer, "strategies": rows
        }  # fmt: skip
    return tasks


def _ratio(value: float, baseline: float) -> float | None:
    if not (math.isfinite(value) and math.isfinite(baseline)) or baseline == 0:
        return None
    return value / baseline


def _shown(value: float | None, ratio: float | None = None) -> str:
    if value is None or not math.isfinite(value):
        return "never"
    return f"{value:.0f}" + ("" if ratio is None else f" ({ratio:.2f}x)")


def print_summary(tasks: dict[str, Any], args: argparse.Namespace) -> None:
    for task, result in tasks.items():
        print(
            f"\n{task} T={args.T}: target {result['target']:.4f} (baseline {result['baseline']:.4f} x "
            f"{args.target}); winner {result['winner']}, random's answer {result['answer']:.4f}; "
            "medians over the seeds run; iterations (ratio to random)"
        )
        print(
            f"{'strategy':>8}  {'spent':>13}  "
            + "  ".join(f"{m:>14}" for m in MODELS)
            + f"  {'winner named':>14}  {'answer':>14}  right"
        )
        for name, row in result["strategies"].items():
            cells = "  ".join(
                f"{_shown(row['iterations_to_target'][m], row['target_ratio'][m]):>14}" for m in MODELS
            )
            print(
                f"{name:>8}  {_shown(row['iterations'], row['spent_ratio']):>13}  {cells}  "
                f"{_shown(row['iterations_to_winner'], row['winner_ratio']):>14}  "
                f"{_shown(row['iterations_to_answer'], row['answer_ratio']):>14}  "
                f"{row['right_winner']}/{row['seeds']}"
            )


def finite(value: Any) -> Any:
    """JSON without infinities: a target never reached is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value

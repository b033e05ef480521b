"""The replay's figures, from the sweeps it logged: per task and W, each strategy's verdict
against the table's truth (`verdicts`: B, the 90%-right point with its interval, shares right at
fractions of B, regret, the floors) and the racing figures (`racing`: the wall time a user waits,
normalized regret with its interquartile mean, every drop judged, the standing of each strategy
against the default); per task, the verdicts' stated odds against how often they were right over
many calibration problems; and, on a table that searches hidden sizes, the sizes judged
(`sizes`)."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import numpy as np

from benchmarks.search_tables import racing, sizes, stated_odds
from benchmarks.search_tables import table as tables
from benchmarks.search_tables.prior import seed_spread
from benchmarks.search_tables.racing import problem_of
from benchmarks.search_tables.strategies import STRATEGIES
from benchmarks.search_tables.verdicts import floors, goal, ground_truth, judge, timeline

CALIBRATION_GOAL = 0.9  # verdicts stating at least this are right at least this often


def paired(
    traces: list[dict[str, Any]], task: str, workers: int, args: argparse.Namespace
) -> dict[str, list[dict[str, Any]]]:
    """Each strategy's sweeps at one (task, W), on the seeds every strategy has run (below
    --seeds), in seed order: the k-th sweep of each strategy is seed k's."""
    by_seed = {
        strategy: {
            t["seed"]: t
            for t in traces
            if (t["task"], t["strategy"], t["workers"]) == (task, strategy, workers)
            and t["seed"] < args.seeds
        }
        for strategy in args.strategies
    }
    seeds = sorted(set.intersection(*(set(mine) for mine in by_seed.values())))
    if not seeds:
        return {}
    return {strategy: [mine[seed] for seed in seeds] for strategy, mine in by_seed.items()}


def summarise(traces: list[dict[str, Any]], args: argparse.Namespace, table: tables.Table) -> dict[str, Any]:
    from benchmarks.search_tables.simulator import Trace

    result: dict[str, Any] = {}
    seeds = racing.judged_seeds(table)
    for task in args.tasks:
        info = table.tasks[task]
        truth = ground_truth(table, task, seeds)
        relative = _relative_noise(table, task)
        worst = racing.worst_value(table, task, truth)
        models = tuple(table.curves[task])
        searched = stated_odds.searched_values(table, task, args.trials)
        entry: dict[str, Any] = {
            "baseline": table.baselines[task],
            "truth": {
                "winner": truth.winner,
                "co_winners": list(truth.co_winners),
                "best": {m: (v if math.isfinite(v) else None) for m, v in truth.best.items()},
                "noise": truth.noise,
                "margin": truth.margin,
                "seeds": list(seeds) if seeds is not None else list(range(table.seeds)),
            },
            "fallback_relative_noise": relative,
        }
        outcomes: list[dict[str, Any]] = []
        for workers in args.workers:
            sweeps = paired(traces, task, workers, args)
            if not sweeps:
                continue
            lines = {
                strategy: [timeline(Trace(**t), models, info) for t in mine]
                for strategy, mine in sweeps.items()
            }
            verdict = judge(lines, truth)
            verdict["seeds"] = len(sweeps["random"])
            verdict["floor"] = _floor(table, task, workers, verdict["B_hours"])
            verdict["racing_floor_hours"] = racing.racing_floor(table, task, truth, workers)
            rng = np.random.default_rng(workers)
            for strategy, mine in sweeps.items():
                row = verdict["strategies"][strategy]
                row["searcher_seconds_per_sweep"] = sum(t["searcher_seconds"] for t in mine) / len(mine)
                row["wall_90_hours"] = racing.wall_90(lines[strategy], truth)
                if verdict["B_hours"]:
                    row["regret_normalized"] = racing.regret_curve(
                        lines[strategy], truth, worst, verdict["B_hours"], rng
                    )
                row["drops"] = racing.judged_drops(mine, truth)
                if STRATEGIES[strategy].warm:
                    row["warm_start_cost_hours"] = float(np.median([t["earlier_hours"] for t in mine]))
                if STRATEGIES[strategy].transfer:  # the other tasks' earlier sweeps it learned from
                    row["transfer_cost_hours"] = float(np.median([t["earlier_hours"] for t in mine]))
                if strategy != "default" and "default" in lines:
                    interval = racing.paired_difference(lines[strategy], lines["default"], truth, rng)
                    row["versus_default"] = {
                        "hours_90_difference": interval,
                        "standing": racing.standing(interval),
                    }
                row["stated_odds"] = stated_odds.records(mine, info, truth, relative, searched)
                row["stated_by_fraction"] = stated_odds.by_fraction(row["stated_odds"])
                said = [
                    racing.verdict_outcome(racing.stated_odds(t, info, relative), info, truth) for t in mine
                ]
                said = [o for o in said if o is not None]
                row["verdicts"] = {
                    "named": len(said),
                    "right": float(np.mean([o["right"] for o in said])) if said else None,
                    "mean_stated": float(np.mean([o["stated"] for o in said])) if said else None,
                }
                outcomes += said
            entry[f"W={workers}"] = verdict
            entry[f"goal W={workers}"] = goal(verdict) if "default" in lines else None
        entry["calibration"] = {
            "replayed_sweeps": racing.reliability(outcomes),
            **_problems(traces, table, task, seeds, relative),
        }
        result[task] = entry
    judged = [
        t
        for t in traces
        if t["seed"] < args.seeds and t["workers"] in args.workers and t["strategy"] in args.strategies
    ]
    hidden = sizes.findings(judged, table, args.tasks, seeds)
    if hidden:
        result["sizes"] = hidden
    return result


def _relative_noise(table: tables.Table, task: str) -> float:
    """The verdict's fallback seed spread, learned from the table's other tasks; the shipped one
    (learned from every recorded task, this one too) where the table holds no other."""
    from sweeper.results.odds import shipped_noise

    others = [t for t in table.curves if t != task]
    try:
        return (
            seed_spread([("table", table)], others)["relative"] if others else shipped_noise(1.0, "min").sigma
        )
    except tables.TableMismatch:  # the other tasks hold no configuration with two seeds
        return shipped_noise(1.0, "min").sigma


def _problems(
    traces: list[dict[str, Any]],
    table: tables.Table,
    task: str,
    seeds: tuple[int, ...] | None,
    relative: float,
) -> dict[str, Any]:
    """The stated odds against how often they were right over the task's calibration problems,
    each judged by its own truth."""
    mine = [t for t in traces if problem_of(t["task"])[0] == task and problem_of(t["task"])[1] is not None]
    truths: dict[int, Any] = {}
    outcomes = []
    for trace in mine:
        number = problem_of(trace["task"])[1]
        if number not in truths:
            truths[number] = ground_truth(racing.problem_table(table, task, number), task, seeds)
        said = racing.verdict_outcome(
            racing.stated_odds(trace, table.tasks[task], relative), table.tasks[task], truths[number]
        )
        if said is not None:
            outcomes.append(said)
    sure = [o for o in outcomes if o["stated"] >= CALIBRATION_GOAL]
    right = float(np.mean([o["right"] for o in sure])) if sure else None
    return {
        "problems": len(truths),
        "problem_sweeps": len(mine),
        "reliability": racing.reliability(outcomes),
        "stated_at_least_0.9": {
            "verdicts": len(sure),
            "right": right,
            "met": right is not None and right >= CALIBRATION_GOAL,
        },
    }


def _floor(table: tables.Table, task: str, workers: int, budget: float | None) -> dict[str, Any]:
    """The floors in worker-hours and as fractions of B."""
    hours = floors(table, task, workers)
    shares = {f"{name}_ratio": None if h is None or not budget else h / budget for name, h in hours.items()}
    return {**hours, **shares}


def print_summary(result: dict[str, Any], args: argparse.Namespace) -> None:
    for task in args.tasks:
        entry = result[task]
        truth = entry["truth"]
        ranked = sorted(truth["best"].items(), key=lambda kv: math.inf if kv[1] is None else kv[1])
        best = ", ".join(f"{m} {_num(v, 4)}" for m, v in ranked)
        print(
            f"\n{task}: right winner {' or '.join(truth['co_winners'])} (best per model: {best}; "
            f"seed noise {truth['noise']:.4f}, co-winners within {truth['margin']:.4f})"
        )
        for workers in args.workers:
            verdict = entry.get(f"W={workers}")
            if verdict is None:
                print(f"  W={workers}: no sweep replayed on every strategy's seeds")
                continue
            budget = verdict["B_hours"]
            shown_b = "never (random is not 90% right)" if budget is None else f"{budget:.2f} worker-hours"
            print(f"  W={workers}: B = {shown_b}")
            floor = verdict["floor"]
            if floor["busy_sweep"] is not None:
                print(
                    f"  no sweep names a winner before {floor['any_sweep']:.3f} worker-hours "
                    f"({_num(floor['any_sweep_ratio'])}x B), none with every worker busy before "
                    f"{floor['busy_sweep']:.3f} ({_num(floor['busy_sweep_ratio'])}x B)"
                )
            print(
                f"  {'strategy':>11} {'90% right at':>26} "
                + " ".join(f"{f'{f}B':>8}" for f in (0.25, 0.33, 0.5, 1.0))
                + f" {'regret@B':>9} {'spent h':>8} {'wall 90%':>9} {'drops':>9} {'vs default':>10}"
            )
            for name, row in verdict["strategies"].items():
                ratio = row.get("ratio_90")
                low, high = row.get("ratio_90_interval", [None, None])
                own = "never" if row["hours_90"] is None else f"{row['hours_90']:.2f} h"
                if ratio is not None:
                    own += f" ({ratio:.2f}x, {_num(low)}-{_num(high)})"
                shares = " ".join(
                    f"{row['at_B'][str(f)]['right']:>8.0%}" if "at_B" in row else f"{'-':>8}"
                    for f in (0.25, 0.33, 0.5, 1.0)
                )
                regret = row["at_B"]["1.0"]["regret_median"] if "at_B" in row else None
                drops = row["drops"]
                dropped = f"{drops['co_winners_dropped']}/{drops['drops']}" if drops["drops"] else "-"
                standing = row.get("versus_default", {}).get("standing", "")
                print(
                    f"  {name:>11} {own:>26} {shares} {_num(regret, 4):>9} "
                    f"{_num(row['spent_hours']['median']):>8} {_num(row['wall_90_hours']):>9} "
                    f"{dropped:>9} {standing:>10}"
                )
            met = entry.get(f"goal W={workers}")
            if met is not None:
                print(f"  goal (default): {'met' if met['met'] else 'not met'} {json.dumps(met)}")
        calibration = entry["calibration"]
        sure = calibration["stated_at_least_0.9"]
        print(
            f"  calibration over {calibration['problems']} problems ({calibration['problem_sweeps']} sweeps): "
            f"verdicts stating P >= 0.9 right in {_share(sure['right'])} of {sure['verdicts']}"
        )
        for row in calibration["reliability"]:
            if row["verdicts"]:
                print(
                    f"    stated {row['stated'][0]:.2f}-{row['stated'][1]:.2f}: {row['verdicts']} verdicts "
                    f"({row['ties']} ties), mean stated {row['mean_stated']:.2f}, right {row['right']:.0%}"
                )
    if "sizes" in result:
        sizes.print_findings(result["sizes"])


def _num(value: float | None, digits: int = 2) -> str:
    return "inf" if value is None else f"{value:.{digits}f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"

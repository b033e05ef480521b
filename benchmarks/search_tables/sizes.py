"""Which hidden sizes win per model, and whether a search spends its worker-hours where they do.

A table that searches hidden sizes (`record --hidden-scale`) draws each model's size over its
range with the rest of the configuration. Per (task, model) the sizes its drawn configurations
span are cut into thirds on a log scale (small, middle, large; the papers' points, entering at
their sizes scaled into the range, form a row of their own) and each third is judged by the
table's truth: its configurations' values (the mean over the judged seeds), how many of the
model's top tenth it holds, what a run there costs (every recorded run, a failed or diverged one
at what it spent before it ended), and so how many top configurations a worker-hour of runs drawn
there finds. The third with the most top configurations per worker-hour is where a cost-aware
search would spend; beside it, each replayed strategy's share of that model's busy worker-hours
spent in each third (random's share is what drawing sizes uniformly spends).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.verdicts import ground_truth

THIRDS = ("small", "middle", "large")
TOP_SHARE = 0.1  # the model's top configurations: this share of its design, at least one


def thirds(curves: tables.Curves) -> tuple[np.ndarray, tuple[float, float]] | None:
    """Each configuration's third of the sizes its model's drawn configurations span (-1 for a
    papers' point) and that span; None where the design holds one hidden size."""
    sizes = np.array([float(d["params"].get("hidden_size", math.nan)) for d in curves.designs])
    drawn = sizes[~curves.paper]
    if np.isnan(drawn).any() or drawn.size == 0 or drawn.min() == drawn.max():
        return None
    low, high = float(drawn.min()), float(drawn.max())
    cut = np.log(low) + (np.log(high) - np.log(low)) * np.array([1 / 3, 2 / 3])
    which = np.searchsorted(cut, np.log(sizes), side="right")
    return np.where(curves.paper, -1, which), (low, high)


def model_sizes(
    table: tables.Table, task: str, model: str, values: np.ndarray, seeds: tuple[int, ...] | None
) -> dict[str, Any] | None:
    """One model's thirds judged by the truth (`values`: each configuration's truth value, NaN
    where no run of it completed); None where its design holds one size or nothing completed."""
    curves = table.curves[task][model]
    cut = thirds(curves)
    finite = np.isfinite(values)
    if cut is None or not finite.any():
        return None
    which, (low, high) = cut
    sign = table.sign(task)
    order = np.argsort(np.where(finite, sign * values, np.inf))
    top_count = max(1, math.ceil(TOP_SHARE * int(finite.sum())))
    top = np.zeros(len(values), dtype=bool)
    top[order[:top_count]] = True
    judged = slice(None) if seeds is None else list(seeds)
    recorded = curves.status[:, judged] != tables.MISSING
    ended = np.where(recorded, curves.ended[:, judged], 0.0)
    run_seconds = np.where(
        recorded.any(axis=1), ended.sum(axis=1) / np.maximum(recorded.sum(axis=1), 1), np.nan
    )
    rows = []
    for third in (0, 1, 2, -1):
        mine = (which == third) & recorded.any(axis=1)
        if not mine.any():
            continue
        sizes = [int(d["params"]["hidden_size"]) for d, m in zip(curves.designs, mine, strict=True) if m]
        hours = float(run_seconds[mine].sum()) / 3600
        found = int(top[mine].sum())
        mine_values = values[mine][finite[mine]]
        rows.append(
            {
                "third": THIRDS[third] if third >= 0 else "papers",
                "sizes": [min(sizes), max(sizes)],
                "configs": int(mine.sum()),
                "completed": int(mine_values.size),
                "best": float(sign * np.min(sign * mine_values)) if mine_values.size else None,
                "median": float(np.median(mine_values)) if mine_values.size else None,
                "top": found,
                "run_seconds": float(np.median(run_seconds[mine])),
                "hours": hours,  # a run of each of its configurations
                "top_per_hour": found / hours if hours > 0 else None,
            }
        )
    drawn = [r for r in rows if r["third"] != "papers" and r["top_per_hour"] is not None]
    aware = max(drawn, key=lambda r: (r["top_per_hour"], -r["run_seconds"]))["third"] if drawn else None
    best = order[0]
    return {
        "range": [low, high],
        "top_count": top_count,
        "best_size": int(curves.designs[best]["params"]["hidden_size"]),
        "best_third": THIRDS[which[best]] if which[best] >= 0 else "papers",
        "cost_aware_third": aware,
        "thirds": rows,
    }


def spending(
    traces: list[dict[str, Any]], table: tables.Table, task: str, model: str
) -> dict[str, dict[str, float]]:
    """Per strategy, the share of the model's busy worker-hours spent in each third (and on the
    papers' points), over every sweep of the task it replayed (calibration problems left out: their
    designs are subsets)."""
    cut = thirds(table.curves[task][model])
    if cut is None:
        return {}
    which = cut[0]
    spent: dict[str, dict[str, float]] = {}
    for trace in traces:
        if trace["task"] != task:
            continue
        mine = spent.setdefault(trace["strategy"], dict.fromkeys((*THIRDS, "papers"), 0.0))
        for trial in trace["trials"]:
            if trial["model"] == model:
                third = which[trial["design"]]
                mine[THIRDS[third] if third >= 0 else "papers"] += trial["end"] - trial["start"]
    return {
        strategy: {k: v / total for k, v in mine.items()}
        for strategy, mine in spent.items()
        if (total := sum(mine.values())) > 0
    }


def findings(
    traces: list[dict[str, Any]], table: tables.Table, tasks: list[str], seeds: tuple[int, ...] | None
) -> dict[str, Any]:
    """Per task and model, its thirds judged and each strategy's spending; per task and strategy,
    the mean over models of its share of a model's worker-hours spent in that model's cost-aware
    third (over the models it spent on). Empty for a table whose design fixes the hidden size."""
    result: dict[str, Any] = {}
    for task in tasks:
        models = table.curves[task]
        truth = ground_truth(table, task, seeds)
        judged_models: dict[str, Any] = {}
        aware_hours: dict[str, list[float]] = {}
        for model in models:
            judged = model_sizes(table, task, model, truth.objective[model], seeds)
            if judged is None:
                continue
            judged["spending"] = spending(traces, table, task, model)
            judged_models[model] = judged
            if judged["cost_aware_third"] is None:
                continue
            for strategy, shares in judged["spending"].items():
                aware_hours.setdefault(strategy, []).append(shares[judged["cost_aware_third"]])
        if judged_models:
            result[task] = {
                "models": judged_models,
                "in_cost_aware_third": {s: float(np.mean(v)) for s, v in aware_hours.items()},
            }
    return result


def print_findings(result: dict[str, Any]) -> None:
    """The findings as the replay prints them after its verdicts."""
    for task, entry in result.items():
        print(f"\n{task}: hidden sizes by third of each model's range (top = its best {TOP_SHARE:.0%})")
        for model, judged in entry["models"].items():
            print(
                f"  {model}: best at {judged['best_size']} ({judged['best_third']}); "
                f"most top configurations per worker-hour: {judged['cost_aware_third']}"
            )
            for row in judged["thirds"]:
                spent = ", ".join(
                    f"{s} {shares[row['third']]:.0%}" for s, shares in judged["spending"].items()
                )
                print(
                    f"    {row['third']:>7} {row['sizes'][0]:>4}-{row['sizes'][1]:<4} "
                    f"{row['configs']:>3} configs ({row['completed']} completed), best {_num(row['best'])}, median {_num(row['median'])}, "
                    f"top {row['top']}, run {_num(row['run_seconds'], 1)} s, "
                    f"{_num(row['top_per_hour'], 1)} top/h; spent: {spent or '-'}"
                )
        shares = ", ".join(f"{s} {v:.0%}" for s, v in entry["in_cost_aware_third"].items())
        print(f"  hours spent in each model's cost-aware third (mean over models): {shares}")


def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"

"""Do sweeps trained for real fall inside the replayed distribution? The check of the simulator
against `benchmarks/search_tables/trained.py`'s sweeps (its JSON): replayed at the same settings (trial
length, trials per model, one worker), each real sweep's best complete value per model is placed
among the replayed sweeps' of the same strategy (its percentile; inside when between 2.5% and
97.5%), and its named winner among theirs. Where the real sweeps kept their worker-seconds, the
clock is checked too: each sweep's worker-seconds against the replayed sweeps' median of the same
strategy. Real sweeps ran on another machine than the one the table's clock was timed on, so
one ratio for every strategy and task (that machine's speed against the clock's) says the clock
prices strategies as training does; ratios that differ between strategies say it does not.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np


def real_sweeps(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The trained benchmark's settings, and per sweep its best complete value per model and its
    worker-seconds (None where the log kept none)."""
    data = json.loads(path.read_text())
    sweeps = []
    for sweep in data["sweeps"]:
        best: dict[str, float] = {}
        for report in sweep["reports"]:
            if report["complete"] and report["value"] is not None:
                best[report["model"]] = min(best.get(report["model"], math.inf), report["value"])
        seconds = sweep["reports"][-1].get("seconds") if sweep["reports"] else None
        sweeps.append(
            {
                "task": sweep["task"],
                "strategy": sweep["strategy"],
                "seed": sweep["seed"],
                "best": best,
                "seconds": seconds or None,
            }
        )
    return data["settings"], sweeps


def check_settings(path: Path, iterations: int | None, trials: int, workers: list[int]) -> None:
    """Refuse to compare with replays at other settings than the trained sweeps ran at."""
    settings, _ = real_sweeps(path)
    asked = {"iterations": iterations, "trials": trials, "workers": workers}
    ran = {"iterations": settings["iterations"], "trials": settings["trials"], "workers": [1]}
    differences = [f"--{k} {ran[k]} (asked {asked[k]})" for k in ran if asked[k] != ran[k]]
    if differences:
        raise SystemExit(f"{path.name} ran one trial at a time; replay it with " + ", ".join(differences))


def replayed_bests(trace: dict[str, Any]) -> dict[str, float]:
    best: dict[str, float] = {}
    for trial in trace["trials"]:
        if trial["state"] == "COMPLETE":
            best[trial["model"]] = min(best.get(trial["model"], math.inf), trial["value"])
    return best


def winner(best: dict[str, float]) -> str:
    return min(best, key=best.__getitem__) if best else ""


def compare(path: Path, traces: list[dict[str, Any]]) -> dict[str, Any]:
    """Per task and strategy the real sweeps' percentiles among the replayed ones, and the share
    of their values inside the replayed 95% range."""
    _, sweeps = real_sweeps(path)
    out: dict[str, Any] = {}
    inside = total = 0
    ratios: list[float] = []
    for task, strategy in sorted({(s["task"], s["strategy"]) for s in sweeps}):
        theirs = [t for t in traces if (t["task"], t["strategy"]) == (task, strategy)]
        mine = [replayed_bests(t) for t in theirs]
        busy = [sum(x["end"] - x["start"] for x in t["trials"]) for t in theirs]
        if not mine:
            continue
        rows = []
        for sweep in (s for s in sweeps if (s["task"], s["strategy"]) == (task, strategy)):
            percentiles = {}
            for model, value in sweep["best"].items():
                replayed = np.array([b[model] for b in mine if model in b])
                if len(replayed):
                    percentile = float((replayed < value).mean() + 0.5 * (replayed == value).mean())
                    percentiles[model] = percentile
                    inside += 0.025 <= percentile <= 0.975
                    total += 1
            named = winner(sweep["best"])
            replayed_seconds = float(np.median(busy))
            rows.append(
                {
                    "seed": sweep["seed"],
                    "percentiles": percentiles,
                    "winner": named,
                    "replayed_share_naming_it": float(np.mean([winner(b) == named for b in mine])),
                    "worker_seconds": sweep["seconds"],
                    "replayed_worker_seconds_median": replayed_seconds,
                    "clock_ratio": None if sweep["seconds"] is None else sweep["seconds"] / replayed_seconds,
                }
            )
            if sweep["seconds"] is not None:
                ratios.append(sweep["seconds"] / replayed_seconds)
        out.setdefault(task, {})[strategy] = {"replayed_sweeps": len(mine), "trained_sweeps": rows}
    clock = {"sweeps": len(ratios)}
    if ratios:
        clock.update(median_ratio=float(np.median(ratios)), min_ratio=min(ratios), max_ratio=max(ratios))
    return {"inside_95": inside, "values": total, "tasks": out, "clock": clock}

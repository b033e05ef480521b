"""Do sweeps trained for real fall inside the replayed distribution? The check of the simulator
against `benchmarks/search_trained.py`'s sweeps (its JSON): replayed at the same settings (trial
length, trials per model, one worker), each real sweep's best complete value per model is placed
among the replayed sweeps' of the same strategy (its percentile; inside when between 2.5% and
97.5%), and its named winner among theirs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np


def real_sweeps(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The trained benchmark's settings, and per sweep its best complete value per model."""
    data = json.loads(path.read_text())
    sweeps = []
    for sweep in data["sweeps"]:
        best: dict[str, float] = {}
        for report in sweep["reports"]:
            if report["complete"] and report["value"] is not None:
                best[report["model"]] = min(best.get(report["model"], math.inf), report["value"])
        sweeps.append(
            {"task": sweep["task"], "strategy": sweep["strategy"], "seed": sweep["seed"], "best": best}
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
    for task, strategy in sorted({(s["task"], s["strategy"]) for s in sweeps}):
        mine = [replayed_bests(t) for t in traces if (t["task"], t["strategy"]) == (task, strategy)]
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
            rows.append(
                {
                    "seed": sweep["seed"],
                    "percentiles": percentiles,
                    "winner": named,
                    "replayed_share_naming_it": float(np.mean([winner(b) == named for b in mine])),
                }
            )
        out.setdefault(task, {})[strategy] = {"replayed_sweeps": len(mine), "trained_sweeps": rows}
    return {"inside_95": inside, "values": total, "tasks": out}

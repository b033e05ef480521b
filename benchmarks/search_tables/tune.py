"""The defaults retuned on the table: the default strategy replayed beside random under each
candidate setting (`replay --set`), the goal's figures of each side by side.

Each candidate is one replay of random and the default, 50 paired seeds, W = 4 and 8, its sweeps
logged under the replay's work folder like any replay (a rerun goes on from there).

    python -m benchmarks.search_tables.tune --out benchmarks/results/search-tuning.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import figures_file
from benchmarks.search_tables import replay

CANDIDATES: dict[str, list[str]] = {
    "as shipped": [],
    "race": ["budget.allocate=race"],
    "race, first rung 2": ["budget.allocate=race", "budget.race_rung=2"],
    "race, first rung 4": ["budget.allocate=race", "budget.race_rung=4"],
    "ASHA reduction factor 2": ["scheduler.reduction_factor=2"],
    "ASHA reduction factor 4": ["scheduler.reduction_factor=4"],
    "startup trials 4": ["sampler.startup_trials=4"],
    "startup trials 12": ["sampler.startup_trials=12"],
    "GP": ["sampler.name=gp"],
    "no papers' points": ["sampler.paper_points=false"],
    "no early stopping": ["scheduler.name=none"],
}


def tune(names: list[str], replay_args: list[str], work: Path) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for name in names:
        out = work / f"{len(rows)}.json"
        settings = [arg for pair in CANDIDATES[name] for arg in ("--set", pair)]
        with contextlib.redirect_stdout(io.StringIO()):
            code = replay.main(
                ["--strategies", "random", "default", *settings, *replay_args, "--out", str(out)]
            )
        if code:
            raise SystemExit(code)
        rows[name] = {"set": CANDIDATES[name], "tasks": _default_side(json.loads(out.read_text()))}
        print(_line(name, rows[name]["tasks"]), flush=True)
    return rows


def _default_side(result: dict[str, Any]) -> dict[str, Any]:
    """Per task and W: the default's 90%-right ratio with its interval, its share right at a
    third of B and at B, its regret there, the whole sweep's worker-hours, and whether the goal
    was met."""
    out: dict[str, Any] = {}
    for task, entry in result["tasks"].items():
        for key, verdict in entry.items():
            if not key.startswith("W="):
                continue
            mine = verdict["strategies"]["default"]
            third, whole = mine["at_B"]["0.33"], mine["at_B"]["1.0"]
            out[f"{task} {key}"] = {
                "B_hours": verdict["B_hours"],
                "ratio_90": mine["ratio_90"],
                "ratio_90_interval": mine["ratio_90_interval"],
                "right_at_third": third["right"],
                "right_at_B": whole["right"],
                "regret_at_third": third["regret_median"],
                "spent_hours": mine["spent_hours"]["median"],
                "goal_met": entry[f"goal {key}"]["met"],
            }
    return out


def _line(name: str, tasks: dict[str, Any]) -> str:
    def cell(where: str, v: dict[str, Any]) -> str:
        low, high = v["ratio_90_interval"] or [None, None]
        ratio = "never" if v["ratio_90"] is None else f"{v['ratio_90']:.2f}x ({_n(low)}-{_n(high)})"
        return f"{where}: {ratio}, {v['right_at_third']:.0%} at B/3"

    return f"{name}: " + "; ".join(cell(where, v) for where, v in tasks.items())


def _n(value: float | None) -> str:
    return "inf" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--candidates", nargs="+", choices=list(CANDIDATES), default=list(CANDIDATES))
    parser.add_argument("--out", type=Path, help="write every candidate's figures here (JSON)")
    args, replay_args = parser.parse_known_args(argv)
    print("the default under each candidate: 90% right at x B (95% interval), its share right at B/3")
    with tempfile.TemporaryDirectory() as work:
        rows = tune(args.candidates, replay_args, Path(work))
    if args.out is not None:
        command = [
            "python",
            "-m",
            "benchmarks.search_tables.tune",
            *(argv if argv is not None else sys.argv[1:]),
        ]
        # the replays' figures are the seeds' on any machine; named as every results file is
        document = {"command": " ".join(command), "machine": figures_file.machine("cpu"), "candidates": rows}
        args.out.write_text(json.dumps(document, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The benchmarks README's figures, rendered from the results' JSON files.

Figures typed by hand drift from the files that hold them, so the README types none: each of its
tables between `<!-- table: NAME -->` and `<!-- /table -->` is what `TABLES[NAME]()` renders from
`benchmarks/results/`. After a benchmark writes new figures, rewrite the tables; the tests check
that none is stale.

    python -m benchmarks.readme_tables          # rewrite every marked table in place
    python -m benchmarks.readme_tables --check  # exit 1 naming the stale tables
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchmarks.readme_format as fmt

README = Path(__file__).parent / "README.md"
MARKED = re.compile(r"^<!-- table: (?P<name>[\w-]+) -->\n(?P<body>.*?)^<!-- /table -->$", re.M | re.S)

SEARCH_TABLES = {"first": "search.json", "second": "search-hidden.json"}  # each recorded table's replay
TASKS = ("copying", "denoise")  # the tasks of the first two tables, which `search-tuning.json` retuned on
CELLS = tuple((task, workers) for task in TASKS for workers in (4, 8))


def _replay_cells(replay: dict[str, Any]) -> list[tuple[str, int]]:
    """A replay's (task, W), in its own order: each table holds its own tasks."""
    return [
        (task, int(key.removeprefix("W=")))
        for task, judged in replay["tasks"].items()
        if "calibration" in judged
        for key in judged
        if key.startswith("W=")
    ]


def recorded_tables() -> str:
    """What each recorded search table holds: its design and how much of it is recorded."""
    rows = []
    for folder in ("blackbox", "blackbox-hidden", "blackbox-algorithmic", "blackbox-cuda"):
        table = fmt.load(f"{folder}/table.json")
        designs = table["designs"]
        points = [
            [d["label"].startswith("sobol") for d in ds] for task in designs.values() for ds in task.values()
        ]
        papers = sorted({len(p) - sum(p) for p in points})
        settings = table["settings"]
        hidden = settings["hidden"] or f"searched, the config's range x {settings['hidden_scale']}"
        models = next(iter(designs.values()))
        rows.append(
            [
                f"`results/{folder}/`",
                ", ".join(designs),
                ", ".join(models),
                str(hidden),
                f"{sum(points[0])} + {papers[0]}-{papers[-1]}",
                str(table["seeds"]),
                f"{settings['iterations']:,}",
                fmt.of(table["runs"]["complete"], sum(table["runs"].values())),
            ]
        )
    header = ["table", "tasks", "models", "hidden units", "Sobol + papers' points", "seeds", "iterations"]
    return fmt.table([*header, "runs recorded"], rows)


def budgets() -> str:
    """B and the floors of every (table, task, W): the scale every 90%-right point is read on."""
    rows = []
    for label, name in SEARCH_TABLES.items():
        replay = fmt.load(name)
        for task, workers in _replay_cells(replay):
            cell = replay["tasks"][task][f"W={workers}"]
            budget, floor = cell["B_hours"], cell["floor"]
            rows.append(
                [
                    label,
                    fmt.cell(task, workers),
                    fmt.sig(budget),
                    fmt.times(floor["any_sweep_ratio"]),
                    fmt.times(floor["busy_sweep_ratio"]),
                    fmt.times(cell["racing_floor_hours"] / budget),
                ]
            )
    header = ["table", "task, W", "B (worker-hours)", "any sweep", "W busy", "racing floor"]
    return fmt.table(header, rows)


def _by_strategy(
    label: str,
    cell: Callable[[dict[str, Any]], str],
    keep: Callable[[dict[str, Any]], bool] | None = None,
) -> str:
    """One row per strategy, one column per (task, W) of one table's replay: `cell` of the
    strategy's figures there; only the strategies `keep` holds for somewhere, where given."""
    replay = fmt.load(SEARCH_TABLES[label])
    columns = _replay_cells(replay)
    first, workers = columns[0]
    rows = []
    for strategy in replay["tasks"][first][f"W={workers}"]["strategies"]:
        figures = [replay["tasks"][t][f"W={w}"]["strategies"][strategy] for t, w in columns]
        if keep is None or any(map(keep, figures)):
            rows.append([f"`{strategy}`", *map(cell, figures)])
    return fmt.table([f"strategy ({label} table)", *(fmt.cell(t, w) for t, w in columns)], rows)


def ninety(label: str) -> str:
    """Each strategy's 90%-right point in B with its interval, and its standing against the default."""

    def cell(row: dict[str, Any]) -> str:
        standing = (row.get("versus_default") or {}).get("standing")
        point = fmt.point(row["ratio_90"], row["ratio_90_interval"])
        return point if standing is None else f"{point}, {standing}"

    return _by_strategy(label, cell)


def drops(label: str) -> str:
    """Every race's drops that stopped a true co-winner, of all its drops."""
    return _by_strategy(
        label,
        lambda row: (
            fmt.of(row["drops"]["co_winners_dropped"], row["drops"]["drops"])
            if row["drops"]["drops"]
            else "none"
        ),
        keep=lambda row: row["drops"]["drops"] > 0,
    )


def odds() -> str:
    """How often verdicts stating P >= 0.9 were right, over each task's calibration problems."""
    rows = []
    for label, name in SEARCH_TABLES.items():
        replay = fmt.load(name)
        for task in dict(_replay_cells(replay)):
            calibration = replay["tasks"][task]["calibration"]
            stated = calibration["stated_at_least_0.9"]
            rows.append(
                [
                    label,
                    task,
                    str(calibration["problems"]),
                    str(stated["verdicts"]),
                    fmt.percent(stated["right"]),
                ]
            )
    return fmt.table(["table", "task", "calibration problems", "verdicts stating P >= 0.9", "right"], rows)


def side_by_side() -> str:
    """Whether the strategies' order on the first table holds on the second."""
    cells = fmt.load("search-side-by-side.json")["cells"]
    rows = [
        [
            cell.replace(" W=", ", W = "),
            f"{compared['kendall_tau_b']:.2f}",
            fmt.percent(compared["pairs_unswapped"]),
            ", ".join(compared["swapped_beyond_intervals"]) or "none",
            "; ".join(compared["standing_changed"]) or "none",
        ]
        for cell, compared in cells.items()
    ]
    header = ["task, W", "Kendall's tau-b", "pairs in the same order", "swapped beyond both intervals"]
    return fmt.table([*header, "standing against the default, first → second"], rows)


def sizes() -> str:
    """On the second table, each model's best size and the third of its size range a cost-aware
    search would spend in."""
    judged = fmt.load("search-hidden.json")["tasks"]["sizes"]
    models = list(judged[TASKS[0]]["models"])
    rows = [
        [
            task,
            *(
                f"{m['best_size']} ({m['best_third']}) / {m['cost_aware_third']}"
                for m in (judged[task]["models"][name] for name in models)
            ),
        ]
        for task in TASKS
    ]
    return fmt.table(["best size (its third) / most top configurations per worker-hour", *models], rows)


def tuning() -> str:
    """The default retuned: its 90%-right point and share right at B/3 under each candidate setting."""
    candidates = fmt.load("search-tuning.json")["candidates"]
    rows = []
    for candidate, tried in candidates.items():
        cells = [
            f"{fmt.point(c['ratio_90'], c['ratio_90_interval'])}, {fmt.percent(c['right_at_third'])}"
            for c in (tried["tasks"][f"{t} W={w}"] for t, w in CELLS)
        ]
        rows.append([candidate, " ".join(f"`{s}`" for s in tried["set"]), *cells])
    return fmt.table(["candidate", "`--set`", *(fmt.cell(t, w) for t, w in CELLS)], rows)


def against() -> str:
    """Sweeps trained for real against their replay: their best values within the replayed 95%
    range, and their worker-seconds over the replay's, where they kept them."""
    rows = []
    for name in ("search-against.json", "search-clock.json"):
        checked = fmt.load(name)["against_trained"]
        clock = checked.get("clock")
        rows.append(
            [
                f"`results/{name}`",
                f"{fmt.of(checked['inside_95'], checked['values'])} ({fmt.percent(checked['inside_95'] / checked['values'])})",
                "not kept"
                if clock is None
                else f"{clock['median_ratio']:.2f} {fmt.interval([clock['min_ratio'], clock['max_ratio']])}, "
                f"{clock['sweeps']} sweeps",
            ]
        )
    return fmt.table(
        ["replay", "best values inside the replayed 95% range", "real over replayed worker-seconds"], rows
    )


def confirm() -> str:
    """How often `sweeper confirm` is wrong, beside the rule it replaced, and what it costs in power."""
    cells = fmt.load("confirm-calibration.json")["cells"]
    rows = []
    for noise in ("normal", "tables"):
        for level in (0.9, 0.95):
            mine = [c for c in cells if c["noise"] == noise and c["level"] == level]
            equal = [c for c in mine if c["gap_margins"] == 0]
            last = [c for c in mine if c["leaders"] == 2 and c["cap"] == max(m["cap"] for m in mine)]
            rows.append(
                [
                    noise,
                    str(level),
                    fmt.percent(max(c["wrong_separated"] for c in equal), 1),
                    fmt.percent(max(c["earlier_rule"]["wrong"] for c in equal)),
                    fmt.percent(max(c["wrong_separated"] for c in mine), 1),
                    fmt.percent(next(c["separated"] for c in last if c["gap_margins"] == 2)),
                    fmt.percent(next(c["tied"] for c in last if c["gap_margins"] == 0)),
                ]
            )
    header = ["seed noise", "level", "equal leaders separated", "the earlier rule", "wrong, any gap"]
    return fmt.table([*header, "2 apart separated, cap 10", "equal confirmed tied, cap 10"], rows)


def _acceptance() -> dict[str, Any]:
    """The GPU acceptance's figures: its latest run, on the fused builds and the captured step."""
    return fmt.load("gpu_acceptance-cuda-captured.json")["figures"]


def gpu_cells() -> str:
    """Each fused orthogonal cell's forward+backward against cuDNN's GRU (full float32)."""
    figures = _acceptance()
    shapes = list(figures["gru"])
    timed = [c for c in figures["cells"] if c["precision"] == "ieee"]
    models = list(dict.fromkeys(c["model"] for c in timed))
    times = {(c["model"], ",".join(map(str, c["shape"]))): c for c in timed}
    rows = [["GRU, ms", *(f"{figures['gru'][s]:.2f}" for s in shapes)]]
    rows += [
        [m, *(fmt.times(times[m, s]["times_gru"]) if (m, s) in times else "" for s in shapes)] for m in models
    ]
    targets = {s: c["target"] for (_, s), c in times.items()}
    rows.append(["target", *(f"≤ {fmt.times(targets[s])}" for s in shapes)])
    return fmt.table(["model", *(f"({s.replace(',', ', ')})" for s in shapes)], rows)


def gpu_trials() -> str:
    """Per model on the GPU: its paper-scale denoise trial through `sweeper train`, the step captured
    and not; where the uncaptured step's time goes (`gpu/step_profile.py`: the device's idle share,
    the largest kernel's share of the busy time); and how far the pace rule's prediction was off,
    on the shapes each left out of its fit and on this trial (uncaptured)."""
    profiled = {r["model"]: r for r in fmt.load("step_profile-cuda.json")["figures"]["rows"]}
    rules = fmt.load("gpu-pace-rule.json")["models"]
    rows = []
    for t in _acceptance()["trials"]:
        step, rule = profiled.get(t["model"]), rules[t["model"]]  # the profile leaves the GORU ablations out
        profile = ["", ""]
        if step is not None:
            idle = 1 - step["busy_ms_per_step"] / step["wall_ms_per_step"]
            profile = [fmt.percent(idle), fmt.percent(step["top"][0]["share"])]
        rows.append(
            [
                t["model"],
                str(t["hidden_size"]),
                f"{t['ms_per_iteration']:.2f}",
                f"{t['uncaptured_ms_per_iteration']:.2f}",
                fmt.times(t["times_gru"]),
                *profile,
                fmt.interval(rule["within"]),
                fmt.times(rule["paper_trial"]["ratio"]),
            ]
        )
    header = ["model", "units", "ms/iteration, captured", "uncaptured", "captured, x GRU", "device idle"]
    return fmt.table([*header, "largest kernel", "rule: shapes left out", "rule: this trial"], rows)


def gpu_packing() -> str:
    """Trials per hour with k trials side by side on one GPU, the loop alone and with each process's start."""
    packing = _acceptance()["packing"]
    models = list(dict.fromkeys(p["model"] for p in packing))
    rows = []
    for k in dict.fromkeys(p["per_gpu"] for p in packing):
        cells = []
        for model in models:
            p = next(p for p in packing if p["model"] == model and p["per_gpu"] == k)
            cells += [
                f"{fmt.sig(p['trials_per_hour'], 3)} ({fmt.times(p['times_one_per_gpu'])})",
                fmt.sig(p["trials_per_hour_with_startup"], 3),
            ]
        rows.append([str(k), *cells])
    header = [f"{m}: {what}" for m in models for what in ("loop only", "with its start")]
    return fmt.table(["trials per GPU", *header], rows)


def price() -> str:
    """A sweep's price at launch against what its trials spent in their workers."""
    rows = []
    for name in ("price-smoke.json", "price-copying-smoke.json", "price-denoise-12.json"):
        checked = fmt.load(name)
        low, high = (3600 * h for h in checked["priced_worker_hours"])
        rows.append(
            [
                f"`{checked['command']}`",
                f"{low:.0f}-{high:.0f}",
                f"{3600 * checked['in_workers_hours']:.0f}",
                fmt.times(checked["in_workers_over_high"]),
                fmt.of(checked["studies_in_range"], len(checked["studies"])),
            ]
        )
    header = ["sweep", "priced (worker-s)", "spent in workers", "spent over the high end", "studies within"]
    return fmt.table(header, rows)


def startup() -> str:
    """The read-side commands' start-up against `import click`, beside another checkout's."""
    figures = fmt.load("startup.json")["figures"]
    timed = {(f["checkout"], f["command"]): f for f in figures}
    rows = [
        [
            f"`{command}`",
            f"{now['median_s']:.2f}",
            fmt.times(now["ratio"]),
            f"{before['median_s']:.2f}",
            fmt.times(before["ratio"]),
            fmt.times(before["median_s"] / now["median_s"]),
        ]
        for (checkout, command), now in timed.items()
        if checkout == "now" and command != "import click"
        for before in [timed["before", command]]
    ]
    return fmt.table(["command", "now s", "x import click", "before s", "x import click", "faster"], rows)


TABLES: dict[str, Callable[[], str]] = {
    "recorded-tables": recorded_tables,
    "budgets": budgets,
    **{f"ninety-{label}": functools.partial(ninety, label) for label in SEARCH_TABLES},
    **{f"drops-{label}": functools.partial(drops, label) for label in SEARCH_TABLES},
    "odds": odds,
    "side-by-side": side_by_side,
    "sizes": sizes,
    "tuning": tuning,
    "against": against,
    "confirm": confirm,
    "gpu-cells": gpu_cells,
    "gpu-trials": gpu_trials,
    "gpu-packing": gpu_packing,
    "price": price,
    "startup": startup,
}


def render(text: str) -> str:
    """`text` with every marked table replaced by what its JSON gives (an unknown name fails)."""
    return MARKED.sub(lambda m: f"<!-- table: {m['name']} -->\n{TABLES[m['name']]()}<!-- /table -->", text)


def check(readme: Path = README) -> list[str]:
    """The names of the marked tables in `readme` that differ from what their JSON gives."""
    return [m["name"] for m in MARKED.finditer(readme.read_text()) if m["body"] != TABLES[m["name"]]()]


def main(argv: list[str] | None = None) -> int:
    """Rewrite the README's tables, or with `--check` exit 1 naming the stale ones (CI's way)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 naming the stale tables, change nothing")
    parser.add_argument("--readme", type=Path, default=README)
    args = parser.parse_args(argv)
    if args.check:
        names = check(args.readme)
        if names:
            print(f"{args.readme}: stale tables (run python -m benchmarks.readme_tables): {', '.join(names)}")
        return 1 if names else 0
    args.readme.write_text(render(args.readme.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

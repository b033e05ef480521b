"""The benchmarks README's tables of the search: what each recorded table holds, and what its
replay, the confirmations and the trained sweeps measured (`benchmarks.readme_tables` places them)."""

from __future__ import annotations

from typing import Any

import benchmarks.readme_format as fmt
from sweeper.results.separation import CLAIMS

SEARCH_TABLES = {  # each recorded table's replay
    "first": "search.json",
    "second": "search-hidden.json",
    "third": "search-algorithmic.json",
}
DEFAULT = "transfer-indep"  # the service's default search, replayed beside `default` in its own run
TASKS = ("copying", "denoise")  # the tasks of the first two tables, which `search-tuning.json` retuned on
CELLS = tuple((task, workers) for task in TASKS for workers in (4, 8))


def replay_cells(replay: dict[str, Any]) -> list[tuple[str, int]]:
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


def odds() -> str:
    """How often verdicts stating P >= 0.9 were right, over each task's calibration problems."""
    rows = []
    for label, name in SEARCH_TABLES.items():
        replay = fmt.load(name)
        for task in dict(replay_cells(replay)):
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


TABLE_LABELS = {"blackbox": "first", "blackbox-hidden": "second", "blackbox-algorithmic": "third"}


def odds_offered() -> str:
    """Per table, task and offered search, at each sweep's end (both W): the verdicts, their mean
    stated chance as the odds' model said it and as the service states it (recalibrated, judged
    leave-one-task-out), how often they were right, and how often those stating 0.9 or more were."""
    cells = fmt.load("odds-calibration.json")["cells"]
    rows = []
    order = list(TABLE_LABELS)
    keys = dict.fromkeys((c["table"], c["task"], c["search"]) for c in cells)
    for key in sorted(keys, key=lambda k: (order.index(k[0]) if k[0] in order else len(order), k[1], k[2])):
        mine = [c for c in cells if (c["table"], c["task"], c["search"]) == key]
        ends = [c["at 1"] for c in mine]
        n = sum(e["after"]["verdicts"] for e in ends)
        if not n:
            continue

        def mean(field: str, side: str, ends: list = ends, n: int = n) -> float:
            return sum(e[side][field] * e[side]["verdicts"] for e in ends if e[side]["verdicts"]) / n

        sure = [c["stated_at_least_0.9"] for c in mine]
        sure_n = sum(x["verdicts"] for x in sure)
        sure_right = sum(x["right"] * x["verdicts"] for x in sure if x["verdicts"])
        rows.append(
            [
                TABLE_LABELS.get(key[0], key[0]),
                key[1],
                f"`{key[2]}`",
                str(n),
                f"{mean('mean_stated', 'before'):.2f}",
                f"{mean('mean_stated', 'after'):.2f}",
                fmt.percent(mean("right", "after")),
                f"{fmt.percent(sure_right / sure_n)} of {sure_n}" if sure_n else "none",
            ]
        )
    header = ["table", "task", "search", "verdicts", "stated: modelled", "stated", "right"]
    return fmt.table([*header, "right, stating >= 0.9"], rows)


OFFERED_REPLAYS = {  # each recorded table's replay of the offered searches
    "first": "search-offered.json",
    "second": "search-hidden-offered.json",
    "third": "search-algorithmic-offered.json",
}


def _point_90(row: dict[str, Any], b_hours: float | None) -> str:
    """A strategy's 90%-right point in B, or in hours where random never gives a B."""
    if b_hours is not None:
        return "never" if row["ratio_90"] is None else fmt.times(row["ratio_90"])
    return "never" if row["hours_90"] is None else f"{fmt.sig(row['hours_90'])} h"


def race_drops() -> str:
    """Per table, task and W: the share of the race's drops that stopped a true co-winner, when it
    halved by rank (`race` in the full replays) and now that it stops a model only on its odds and
    its distance behind (`race-indep`, the default's other settings, in the offered searches'
    replays), with its 90%-right point beside the default's on the same paired seeds."""
    rows = []
    for label, name in SEARCH_TABLES.items():
        before, after = fmt.load(name)["tasks"], fmt.load(OFFERED_REPLAYS[label])["tasks"]
        for task, workers in replay_cells(fmt.load(name)):
            cells = []
            for tasks, strategy in ((before, "race"), (after, "race-indep")):
                drops = tasks[task][f"W={workers}"]["strategies"][strategy]["drops"]
                cells.append(
                    f"{fmt.of(drops['co_winners_dropped'], drops['drops'])}" if drops["drops"] else "none"
                )
            offered = after[task][f"W={workers}"]
            met = offered["strategies"]["race-indep"]["drops"]["met"]
            points = " / ".join(
                _point_90(offered["strategies"][strategy], offered["B_hours"])
                for strategy in ("race-indep", DEFAULT)
            )
            rows.append([label, fmt.cell(task, workers), *cells, "met" if met else "missed", points])
    header = ["table", "task, W", "co-winners stopped, by rank", "on its odds and distance", "at most 5%"]
    header.append(f"90% right: race / `{DEFAULT}`")
    return fmt.table(header, rows)


def odds_summary() -> str:
    """The recalibration judged leave-one-task-out, over every (table, task, W, offered search)."""
    summary = fmt.load("odds-calibration.json")["summary"]
    rows = [
        [
            str(summary["cells"]),
            f"{summary['agree_before']} → {summary['agree_after']}",
            f"{summary['worst_gap_before']:.2f} → {summary['worst_gap_after']:.2f}",
            fmt.of(summary["bins_agreeing"], summary["bins_judged"]),
        ]
    ]
    header = ["cells", "stated within 0.1 of right (or its interval)", "worst gap", "bins agreeing"]
    return fmt.table(header, rows)


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
    """How often each of `sweeper confirm`'s claims is wrong at worst (over leaders, gaps and caps),
    beside the rule it replaced, and how often it decides a clear case (two leaders)."""
    cells = fmt.load("confirm-calibration.json")["cells"]
    rows = []
    for noise in dict.fromkeys(c["noise"] for c in cells):
        for level in sorted({c["level"] for c in cells}):
            mine = [c for c in cells if c["noise"] == noise and c["level"] == level]

            def made(gap: float, cap: int, claim: str, mine: list = mine) -> str:
                (cell,) = [c for c in mine if (c["leaders"], c["gap_margins"], c["cap"]) == (2, gap, cap)]
                return fmt.percent(cell["claims"][claim]["made"])

            rows.append(
                [
                    noise,
                    str(level),
                    *(fmt.percent(max(c["claims"][claim]["wrong"] for c in mine), 1) for claim in CLAIMS),
                    fmt.percent(max(c["todays_rule"]["wrong"] for c in mine), 1)
                    + f", {fmt.percent(max(c['todays_rule']['crashed'] for c in mine))}",
                    made(2.0, 5, "ahead"),
                    made(2.0, 10, "margin"),
                    made(0.0, 10, "tie"),
                ]
            )
    header = ["seed noise", "level", "wrong at most: ahead", "margin", "tie", "rule replaced: wrong, crashed"]
    return fmt.table([*header, "2 margins apart: ahead by 5", "margin by 10", "equal: tie by 10"], rows)


def default_choice() -> str:
    """The rule's standing of every candidate for the default, over every (table, task, W) its
    replays hold, and the one it chose: with transfer, and for a first sweep."""
    rows = []
    for said, name in (
        ("with transfer", "default-choice.json"),
        ("a first sweep", "default-choice-first.json"),
    ):
        choice = fmt.load(name)
        for candidate, standing in choice["candidates"].items():
            tables = ", ".join(dict.fromkeys(c["table"] for c in standing["cells"]))
            median = standing["median_ratio_90"]
            unmeasured = [c for c in standing["cells"] if c["random_never_right"]]
            rows.append(
                [
                    said,
                    f"`{candidate}`" + (" (chosen)" if candidate == choice["chosen"] else ""),
                    fmt.of(standing["behind_random"], len(standing["cells"])),
                    "never, in half its cells or more" if median is None else fmt.times(median),
                    fmt.of(sum(c["hours_90"] is not None for c in unmeasured), len(unmeasured))
                    if unmeasured
                    else "none such",
                    tables,
                ]
            )
    header = [
        "default for",
        "candidate",
        "cells behind random",
        "median 90%-right point (B)",
        "90% right where random never is",
        "replays read",
    ]
    return fmt.table(header, rows)

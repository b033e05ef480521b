"""The benchmarks README's figures, rendered from the results' JSON files.

Figures typed by hand drift from the files that hold them, so the README types none: each of its
tables between `<!-- table: NAME -->` and `<!-- /table -->` is what `TABLES[NAME]()` renders from
`benchmarks/results/`. After a benchmark writes new figures, rewrite the tables; the tests check
that none is stale.

    python -m benchmarks.readme_tables          # rewrite every marked table in place, in every page
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
from benchmarks.readme_replays import NOW, current, replayed
from benchmarks.readme_search_tables import (
    SEARCH_TABLES,
    against,
    confirm,
    default_choice,
    odds,
    odds_offered,
    odds_summary,
    race_drops,
    recorded_tables,
    side_by_side,
    sizes,
    tuning,
)

README = Path(__file__).parent / "README.md"
PAGES = (
    README,
    *(Path(__file__).parent / page for page in ("odds.md", "replays.md")),
)  # the README and the generated pages it links
MARKED = re.compile(r"^<!-- table: (?P<name>[\w-]+) -->\n(?P<body>.*?)^<!-- /table -->$", re.M | re.S)


GPU_FIGURES = ("gpu_acceptance-cuda-captured.json", "step_profile-cuda.json")  # the GPU tables' own


def gpu_machine() -> str:
    """Which machine the GPU tables were measured on, read from each file's `machine` (the pace
    rule's from the files it was fitted to): a GPU figure compares only with one from the same GPU,
    so the README names it from the files rather than in words that outlive a new run."""
    fitted = [Path(name).name for name in fmt.load("gpu-pace-rule.json")["figures"]]
    files: dict[str, list[str]] = {}
    for name in (*GPU_FIGURES, *fitted):
        document = fmt.load(name)
        described = document["machine"]
        where = (
            f"one {described['gpu']} (CUDA {described['cuda']}, torch {document['versions']['torch']}, "
            f"{described['cpus']} CPU cores)"
        )
        files.setdefault(where, []).append(f"`results/{name}`")
    return "".join(f"Measured on {where}: {', '.join(names)}.\n" for where, names in files.items())


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
    table = fmt.table(["command", "now s", "x import click", "before s", "x import click", "faster"], rows)
    loop = timed["machine", "10^7 empty loop iterations"]["median_s"]
    return f"{table}\nOn the machine that timed them, 10^7 empty loop iterations took {loop:.2f} s.\n"


def suite_cpu() -> str:
    """The suite's wall time and cores busy, machine-wide and in pytest's own processes, and the
    test modules that took the most CPU."""
    document = fmt.load("suite-cpu.json")
    f = document["figures"]
    rows = [
        [
            "the whole suite",
            f"{f['wall_s']:.0f} s",
            f"{f['cpu_s']:.0f}",
            f"{f['cores_busy']:.2f} of {f['cores']} ({f['cores_busy_before']:.2f} before it ran)",
            f"{f['pytest_tree_cores_busy']:.2f}",
        ],
        *(["`" + m["module"] + "`", "", f"{m['cpu_s']:.0f}", "", ""] for m in f["modules"][:4]),
    ]
    table = fmt.table(["", "wall", "CPU-s", "cores busy", "in pytest's processes"], rows)
    said = f"On {document['machine']['cpu']} (10^7 empty loop iterations: {f['loop_s']:.2f} s); "
    said += f"{f['unattributed_cpu_s']:.0f} CPU-s went where no test ran (collection, starts, gaps)."
    return f"{table}\n{said}\n"


TABLES: dict[str, Callable[[], str]] = {
    "recorded-tables": recorded_tables,
    **{f"replayed-{label}": functools.partial(replayed, label) for label in SEARCH_TABLES},
    **{f"now-{label}": functools.partial(current, label) for label in NOW},
    "odds": odds,
    "odds-offered": odds_offered,
    "odds-summary": odds_summary,
    "race-drops": race_drops,
    "side-by-side": side_by_side,
    "default-choice": default_choice,
    "sizes": sizes,
    "tuning": tuning,
    "against": against,
    "confirm": confirm,
    "gpu-machine": gpu_machine,
    "gpu-cells": gpu_cells,
    "gpu-trials": gpu_trials,
    "gpu-packing": gpu_packing,
    "price": price,
    "startup": startup,
    "suite-cpu": suite_cpu,
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
    parser.add_argument("--readme", type=Path, help="only this page [default: every one, PAGES]")
    args = parser.parse_args(argv)
    if args.check:
        stale = {page: check(page) for page in ((args.readme,) if args.readme is not None else PAGES)}
        for page, names in stale.items():
            if names:
                print(f"{page}: stale tables (run python -m benchmarks.readme_tables): {', '.join(names)}")
        return 1 if any(stale.values()) else 0
    for page in (args.readme,) if args.readme is not None else PAGES:
        page.write_text(render(page.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

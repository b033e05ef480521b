"""Replay search strategies against the recorded table and judge them (`verdicts`).

Each (task, strategy, W, seed) is one sweep of the service's own search on the simulated clock
(`simulator`). Seeds are paired across strategies: seed k seeds every strategy's samplers alike,
so their random draws (random search's, and TPE's and GP's first ones) take the same recorded
configurations; the recorded training seeds are drawn per trial, as the strategies' trials
differ. A warm-started strategy starts from the random sweep of the next seed at the same W,
replayed in the same process (its trials read the same table, and their cost is not counted).
Sweeps run in `--jobs` processes and each finished one is appended to a log under --work, in a
folder named by the table's content, the replayed code (this package, the service's search,
Optuna's and Ray's versions) and the replay's settings, which holds the copy of the table every
process reads: a rerun goes on from there, and a grown table or changed code starts afresh.

    python -m benchmarks.search_tables.replay --strategies random default       # the goal's comparison
    python -m benchmarks.search_tables.replay                                   # every strategy
    python -m benchmarks.search_tables.replay --set scheduler.reduction_factor=2 --out /tmp/rf2.json
    python -m benchmarks.search_tables.replay --iterations 600 --workers 1 --trials 6   # the old quick sweeps
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import shlex
import sys
import tempfile
import time
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from benchmarks import figures_file
from benchmarks.search_tables import table as tables
from benchmarks.search_tables.clock import (
    TIMING,
    TIMING_META,
    clock_noise,
    clock_text,
)
from benchmarks.search_tables.loading import load
from benchmarks.search_tables.racing import held_out, judged_seeds, problem_of, problem_table
from benchmarks.search_tables.record import DEFAULT_TABLE, ROOT
from benchmarks.search_tables.strategies import STRATEGIES
from benchmarks.search_tables.summary import print_summary, summarise

Job = tuple[str, str, int, int]  # task (or task#problem), strategy, workers, seed
PROBLEM_STRATEGIES = ("default",)  # replayed on the calibration problems
PROBLEM_SEEDS = 2
_STATE: dict[str, Any] = {}


def _start(folder: Path, iterations: int | None) -> None:
    import optuna
    import torch

    from benchmarks.search_tables import fast_tpe, uncopied

    fast_tpe.install()
    uncopied.install()
    torch.set_num_threads(1)  # GP's fits: one process per core, as `--jobs` is set
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")
    _STATE["table"] = load(folder, iterations)
    _STATE["snappers"] = {}
    _STATE["pace_noise"] = clock_noise(folder)


def replay_one(job: Job, trials: int, overrides: dict[str, Any]) -> dict[str, Any]:
    """One sweep (and, for a warm start, the random sweep it starts from, whose busy hours the
    trace keeps: what a warm start cost before this sweep began)."""
    from benchmarks.search_tables.simulator import Replay

    task, strategy, workers, seed = job
    name, problem = problem_of(task)
    table: tables.Table = _STATE["table"]
    if problem is not None:
        table = problem_table(table, name, problem)
    extra = {} if strategy == "random" else overrides
    cache = problem is None
    pace = _STATE["pace_noise"]
    earlier, earlier_hours = None, 0.0
    if STRATEGIES[strategy].warm:
        held = held_out(table)
        source = Replay(
            table,
            name,
            "random",
            seed + 1,
            workers,
            trials,
            snappers=_snappers(name, {}) if cache else None,
            run_seeds=None if held is None else (held,),
            pace_noise=pace,
        )
        earlier_hours = source.run().busy / 3600
        earlier = source.studies
    transfer_from: dict[str, dict[str, Any]] = {}
    for other in table.curves if STRATEGIES[strategy].transfer and not STRATEGIES[strategy].first else ():
        if other == name:
            continue
        done = Replay(
            table,
            other,
            "default",
            seed + 1,
            workers,
            trials,
            snappers=_snappers(other, {}) if cache else None,
            run_seeds=judged_seeds(table),
            pace_noise=pace,
        )
        earlier_hours += done.run().busy / 3600
        transfer_from[other] = done.studies
    sweep = Replay(
        table,
        name,
        strategy,
        seed,
        workers,
        trials,
        earlier,
        _snappers(name, extra) if cache else None,
        judged_seeds(table),
        pace,
        transfer_from,
        _portfolio(name, list(table.curves[name])) if STRATEGIES[strategy].first else None,
        **extra,
    )
    if cache:
        _STATE["snappers"][(name, json.dumps(extra, sort_keys=True))] = sweep.snappers
    trace = sweep.run()
    trace.task, trace.earlier_hours = task, earlier_hours
    return asdict(trace)


def _portfolio(task: str, models: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each model's portfolio learned from every recorded table's runs but of `task` (kept per
    process: the same for every seed)."""
    from benchmarks.search_tables.portfolio import learned

    kept = _STATE.setdefault("portfolios", {})
    if task not in kept:
        kept[task] = {model: learned(model, without=task) for model in models}
    return kept[task]


def _snappers(task: str, extra: dict[str, Any]) -> Any:
    """The snappers built for the same task and spec overrides in this process, if any."""
    return _STATE["snappers"].get((task, json.dumps(extra, sort_keys=True)))


def _replay_job(args: tuple[Job, int, dict[str, Any]]) -> dict[str, Any]:
    return replay_one(*args)


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """`section.key=value` pairs as spec entries: {"scheduler": {"reduction_factor": 2}}."""
    overrides: dict[str, Any] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        section, _, key = name.partition(".")
        if not key or not value:
            raise SystemExit(f"--set {pair}: expected SECTION.KEY=VALUE, e.g. scheduler.reduction_factor=2")
        overrides.setdefault(section, {})[key] = yaml.safe_load(value)
    return overrides


# what a replayed sweep reads besides the table: the service's code and data (its search, spec,
# papers' points and their YAML, the store's trial records, the shipped seed noise), the
# registries' and the papers' reference data, and this package
REPLAYED_CODE = (
    "benchmarks/search_tables",
    "sweeper",
    "configs",
    "trainables/hyperparams.py",
    "trainables/registry.py",
    "trainables/catalog.py",
    "trainables/reference",
)
REPLAYED_SUFFIXES = (".py", ".yaml", ".json")


def code_digest() -> str:
    """A digest of what a replayed sweep depends on besides the table (`REPLAYED_CODE`), Optuna's
    and Ray's versions."""
    import optuna
    import ray

    digest = hashlib.sha256(f"optuna {optuna.__version__} ray {ray.__version__}".encode())
    for name in REPLAYED_CODE:
        where = ROOT / name
        if not where.exists():
            raise FileNotFoundError(f"REPLAYED_CODE names {name}, which is not in the repository")
        paths = (
            [where]
            if where.is_file()
            else sorted(p for p in where.rglob("*") if p.suffix in REPLAYED_SUFFIXES)
        )
        for path in paths:
            digest.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    return digest.hexdigest()


def snapshot(args: argparse.Namespace) -> Path:
    """The work folder of this table, code and replay settings, holding a copy of the table that
    every process of the replay reads: a recorder may rewrite the table meanwhile."""
    if not (args.table / tables.META).is_file():
        raise tables.TableMismatch(f"{args.table} holds no table (no {tables.META})")
    names = (tables.META, tables.CURVES, TIMING_META, TIMING)
    files = {name: (args.table / name).read_bytes() for name in names if (args.table / name).exists()}
    digest = hashlib.sha256(b"".join(files.values()) + code_digest().encode())
    digest.update(json.dumps([args.trials, args.iterations, args.overrides], sort_keys=True).encode())
    folder = args.work / digest.hexdigest()[:16]
    copy = folder / "table"
    copy.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        if not (copy / name).exists():
            (copy / f".{name}").write_bytes(data)
            (copy / f".{name}").replace(copy / name)
    return folder


def read_log(log: Path) -> list[dict[str, Any]]:
    """The sweeps a log holds; a last line cut short by a stopped replay is left out."""
    traces = []
    for line in log.read_text().splitlines() if log.exists() else []:
        try:
            traces.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return traces


def run(args: argparse.Namespace, folder: Path) -> list[dict[str, Any]]:
    log = folder / "sweeps.jsonl"
    traces = read_log(log)
    done = {(t["task"], t["strategy"], t["workers"], t["seed"]) for t in traces}
    jobs = [
        (task, strategy, workers, seed)
        for task in args.tasks
        for workers in args.workers
        for strategy in args.strategies
        for seed in range(args.seeds)
        if (task, strategy, workers, seed) not in done
    ]
    jobs += [  # the calibration problems: the verdicts' stated odds judged by each problem's truth
        (f"{task}#{number}", strategy, args.workers[0], seed)
        for task in args.tasks
        for number in range(args.problems)
        for strategy in PROBLEM_STRATEGIES
        if strategy in args.strategies
        for seed in range(PROBLEM_SEEDS)
        if (f"{task}#{number}", strategy, args.workers[0], seed) not in done
    ]
    if args.summarise or not jobs:
        return traces
    print(f"{len(jobs)} sweeps to replay ({len(done)} logged in {folder})", flush=True)
    started = time.monotonic()
    context = multiprocessing.get_context("spawn")
    with (
        context.Pool(args.jobs, initializer=_start, initargs=(folder / "table", args.iterations)) as pool,
        log.open("a") as out,
    ):
        for n, trace in enumerate(
            pool.imap_unordered(_replay_job, [(j, args.trials, args.overrides) for j in jobs]), 1
        ):
            out.write(json.dumps(trace) + "\n")
            out.flush()
            traces.append(trace)
            if n % 50 == 0 or n == len(jobs):
                print(f"{n}/{len(jobs)} sweeps, {time.monotonic() - started:.0f} s", flush=True)
    return traces


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--table", type=Path, default=DEFAULT_TABLE)
    parser.add_argument("--tasks", nargs="+", help="the table's tasks to replay (default: every one)")
    parser.add_argument("--strategies", nargs="+", choices=list(STRATEGIES), default=list(STRATEGIES))
    parser.add_argument(
        "--workers", nargs="+", type=int, default=[4, 8], help="W, the sweep's concurrent trials"
    )
    parser.add_argument("--seeds", type=int, default=50, help="paired seeds per strategy")
    parser.add_argument("--trials", type=int, default=24, help="each study's budget (trials per model)")
    parser.add_argument(
        "--problems",
        type=int,
        default=0,
        help="calibration problems per task (models and configurations subsampled, each its own truth)",
    )
    parser.add_argument(
        "--iterations", type=int, help="replay trials of this length (a prefix of the table's)"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        help="SECTION.KEY=VALUE for every strategy but random",
    )
    parser.add_argument("--jobs", type=int, default=2, help="processes replaying sweeps")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "sweeper-replay")
    parser.add_argument("--summarise", action="store_true", help="only judge the sweeps already logged")
    parser.add_argument(
        "--against",
        type=Path,
        help="search_trained.py's JSON: place its sweeps among the replayed ones (replay at its settings)",
    )
    parser.add_argument("--out", type=Path, help="write the verdicts here (JSON), and the figure beside it")
    args = parser.parse_args(argv)
    args.strategies = ["random", *[s for s in args.strategies if s != "random"]]
    args.overrides = parse_overrides(args.overrides)
    try:
        folder = snapshot(args)
        table = load(folder / "table", args.iterations)
        args.tasks = args.tasks or list(table.curves)
        unknown = [t for t in args.tasks if t not in table.curves]
        if unknown:
            raise tables.TableMismatch(
                f"the table holds no {', '.join(unknown)} (its tasks: {', '.join(table.curves)})"
            )
    except tables.TableMismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.against is not None:
        from benchmarks.search_tables.against import check_settings

        check_settings(args.against, args.iterations, args.trials, args.workers)
    clock = clock_text(folder / "table")
    print(f"clock: {clock}")
    started = time.monotonic()
    traces = run(args, folder)
    seconds = time.monotonic() - started
    result = summarise(traces, args, table)
    print_summary(result, args)
    checked = None
    if args.against is not None:
        from benchmarks.search_tables.against import compare

        checked = compare(
            args.against, [t for t in traces if t["seed"] < args.seeds and t["workers"] in args.workers]
        )
        print(
            f"\n{args.against.name}: {checked['inside_95']} of {checked['values']} trained sweeps' best values per "
            "model lie within the replayed 95% range of their strategy"
        )
    if args.out is not None:
        from benchmarks.search_tables.figure import anytime_figure, regret_figure

        settings = {
            k: (str(v) if isinstance(v, Path) else v)
            for k, v in vars(args).items()
            if k not in ("work", "out")
        }
        settings["table"] = (
            str(args.table.resolve().relative_to(ROOT))
            if args.table.resolve().is_relative_to(ROOT)
            else str(args.table)
        )
        data = {
            "command": shlex.join(
                ["python", "-m", "benchmarks.search_tables.replay", *(argv or sys.argv[1:])]
            ),
            "settings": settings,
            "machine": figures_file.machine("cpu"),  # where it replayed: `replay_seconds` is its timing
            "table": {
                "runs": table.counts(),
                "seeds": table.seeds,
                "settings": table.settings.as_dict(),
                "versions": [{k: v for k, v in e.items() if k != "files"} for e in table.versions],
                "clock": clock,
            },
            "replay_seconds": seconds,
            "tasks": result,
            "against_trained": checked,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(data, indent=1) + "\n")
        anytime_figure(traces, args, table, args.out.with_suffix(".png"))
        regret = args.out.with_name(f"{args.out.stem}-regret.png")
        regret_figure(result, args, regret)
        print(f"\nwrote {args.out}, {args.out.with_suffix('.png')} and {regret}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

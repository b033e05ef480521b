"""Record the table: every (task, model, configuration, seed) of the design trained through
`trainables.train.train`, the function every trial runs, each evaluation kept.

Resumable: a run already in the table is skipped, and the table is rewritten after every run,
so a recorder stopped at any point (Ctrl-C, `--minutes`, a lost machine) keeps what finished.
Runs go in design order, every (task, model) at once (the papers' points, then Sobol point 0 of
each, then 1, ...), so the part recorded so far is a balanced smaller table.

Worker processes each run many configurations (no process start per run): `--jobs N` on the
CPU, one torch thread each; `--device cuda --per-gpu K` packs K on one GPU. A run's clock is its
worker-seconds since the trial started: its process's CPU time on a CPU (what a dedicated worker
would spend, though other work on the machine still inflates it through shared cores and caches),
its wall time on a GPU; wall time is kept too. A table recorded over several sessions holds
several machines' clocks: `retime` puts it on one.

Any registered task whose data is generated and any registered model can be recorded; a table
grows by a task, a model, Sobol points or seeds without re-recording what it holds (each task
named gains each model named). The design's space is `space`'s: every model at one hidden size
(the first table), or hidden sizes searched over each task's config scaled (`--hidden-scale`).
The table's design is drawn once, with the spec's code (Optuna, pydantic); a recorder that only
runs it (a bare GPU machine) needs torch, numpy and `trainables` alone. Recording with other
training code than the table's (another digest of `trainables/`, device or torch) is refused,
naming what differs, unless `--new-code-version` says the runs may be mixed: record from a
checkout of the commit the table names (a git worktree), so edits elsewhere neither stop nor mix
it.

    python -m benchmarks.search_tables.record --jobs 2
    python -m benchmarks.search_tables.record --table benchmarks/results/blackbox-hidden --hidden-scale 0.25 \
        --configs 64 --seeds 3 --models gru goru scornn ncgru lstm eurnn --jobs 2
    python -m benchmarks.search_tables.record --device cuda --per-gpu 8 --minutes 8
    python -m benchmarks.search_tables.record --status
    python -m benchmarks.search_tables.record --table benchmarks/results/blackbox-hidden --cut-to 48
"""

from __future__ import annotations

import argparse
import fcntl
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures import TimeoutError as FuturesTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.search_tables import table as tables
from benchmarks.search_tables.code_version import code_version
from benchmarks.search_tables.table import MODELS, TASK_NAMES, Settings

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TABLE = ROOT / "benchmarks" / "results" / "blackbox"


@dataclass(frozen=True)
class Run:
    task: str
    model: str
    index: int  # in the (task, model)'s design
    seed: int

    @property
    def key(self) -> str:
        return f"{self.task}/{self.model}/{self.index}/{self.seed}"


@dataclass
class Outcome:
    run: Run
    status: int
    objective: list[float]
    seconds: list[float]
    wall: list[float]
    ended: float
    reason: str | None = None


def version_index(table: tables.Table, version: dict[str, Any], allow_new: bool) -> int:
    """The table's entry for this code version, added when new; refused when the table holds runs
    of other training code and `allow_new` is not set."""
    same = ("trainables", "device", "torch", "machine")  # a clock in CPU seconds is its machine's
    for index, known in enumerate(table.versions):
        if all(known[k] == version[k] for k in same):
            return index
    recorded = table.counts()["missing"] < sum(
        c.status.size for m in table.curves.values() for c in m.values()
    )
    if recorded and table.versions and not allow_new:
        last = table.versions[-1]
        changed = sorted(
            f
            for f in set(last["files"]) | set(version["files"])
            if last["files"].get(f) != version["files"].get(f)
        )
        differences = [
            f"{k}: {last[k]} -> {version[k]}" for k in ("device", "torch", "machine") if last[k] != version[k]
        ]
        if changed:
            differences.append("changed since: " + ", ".join(changed))
        raise tables.TableMismatch(
            "the table was recorded by other training code or elsewhere (" + "; ".join(differences) + "); "
            "check that its curves still hold and pass --new-code-version to record beside them"
        )
    table.versions.append(version)
    return len(table.versions) - 1


def pending(table: tables.Table, tasks: list[str], models: list[str]) -> Iterator[Run]:
    """Runs still missing, in design order across every (task, model)."""
    pairs = [(t, m) for t in tasks for m in models if m in table.curves.get(t, {})]
    longest = max((len(table.curves[t][m].designs) for t, m in pairs), default=0)
    for index in range(longest):
        for seed in range(table.seeds):
            for task, model in pairs:
                curves = table.curves[task][model]
                if index < len(curves.designs) and curves.status[index, seed] == tables.MISSING:
                    yield Run(task, model, index, seed)


_WORKER: dict[str, Any] = {}


def _start_worker(device: str) -> None:
    import torch

    torch.set_num_threads(1)
    _WORKER["device"] = device


def worker_clock(device: str) -> Callable[[], float]:
    """Worker-seconds from now: this process's CPU time on a CPU, wall time on a GPU."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if device == "cpu":
        return lambda: time.process_time() - cpu0
    return lambda: time.perf_counter() - wall0


def run_one(run: Run, config: dict[str, Any], objective: str) -> Outcome:
    """Train one run in this worker process; its failure is data, never an exception."""
    from trainables.train import TrialDiverged, train

    device = _WORKER.get("device", "cpu")
    values: list[float] = []
    seconds: list[float] = []
    wall: list[float] = []
    wall0 = time.perf_counter()
    clock = worker_clock(device)

    def report(step: int, metrics: dict[str, Any]) -> None:
        values.append(float(metrics[objective]))
        seconds.append(clock())
        wall.append(time.perf_counter() - wall0)

    try:
        train({**config, "seed": run.seed, "device": device}, report)
    except TrialDiverged as exc:
        return Outcome(run, tables.DIVERGED, values, seconds, wall, clock(), f"TrialDiverged: {exc}")
    except Exception as exc:  # a run that cannot train is recorded as failed, with why
        return Outcome(run, tables.FAILED, values, seconds, wall, clock(), f"{type(exc).__name__}: {exc}")
    if device == "cuda":
        import torch

        torch.cuda.empty_cache()
    return Outcome(run, tables.COMPLETE, values, seconds, wall, clock())


def store(table: tables.Table, outcome: Outcome, version: int) -> None:
    run = outcome.run
    curves = table.curves[run.task][run.model]
    n = len(outcome.objective)
    for name in tables.ARRAYS:
        getattr(curves, name)[run.index, run.seed, :] = np.nan
        getattr(curves, name)[run.index, run.seed, :n] = getattr(outcome, name)
    curves.status[run.index, run.seed] = outcome.status
    curves.version[run.index, run.seed] = version
    curves.ended[run.index, run.seed] = outcome.ended
    if outcome.reason is not None:
        table.reasons[run.key] = outcome.reason[:500]


def record(args: argparse.Namespace) -> int:
    folder: Path = args.table
    if args.status:  # reads only: beside a running recorder too
        exists = (folder / tables.META).exists()
        print(status_text(tables.read(folder) if exists else opened(args, folder)[0]))
        return 0
    if args.cut_to is not None and not (folder / tables.META).exists():
        raise tables.TableMismatch(f"{folder} holds no table (no {tables.META}) to cut")
    if not (folder / tables.META).exists():
        opened(args, folder)  # a design that cannot be drawn is refused before anything is written
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".recording").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise tables.TableMismatch(f"another recorder is writing {folder}") from None
        return _record(args, folder)


def asked_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line, for a new table or checked against the table's."""
    asked: dict[str, Any] = {
        k: v for k, v in (("iterations", args.iterations), ("eval_every", args.eval_every)) if v is not None
    }
    if args.hidden_scale is not None:
        asked.update(hidden=None, hidden_scale=args.hidden_scale)
    return asked


def opened(args: argparse.Namespace, folder: Path) -> tuple[tables.Table, list[str], list[str]]:
    """The table in `folder` (a new one where there is none) holding every asked (task, model),
    with the tasks and models to record."""
    asked = asked_settings(args)
    if (folder / tables.META).exists():
        table = tables.read(folder)
        tables.check_settings(table, Settings(**{**table.settings.as_dict(), **asked}))
        tasks = args.tasks or list(table.curves)
        models = args.models or list(dict.fromkeys(m for ms in table.curves.values() for m in ms))
        if not table.holds(args.configs, args.seeds, tasks, models):
            from benchmarks.search_tables.design import extended

            table = extended(table, args.configs, args.seeds, tasks, models)
        return table, tasks, models
    from benchmarks.search_tables.design import new_table

    tasks, models = args.tasks or list(TASK_NAMES), args.models or list(MODELS)
    return new_table(Settings(**asked), args.configs, args.seeds, tasks, models), tasks, models


def _cut(folder: Path, configs: int) -> int:
    """Cut the table's design to its first `configs` Sobol points, before it is timed again."""
    from benchmarks.search_tables.clock import TIMING_META

    if (folder / TIMING_META).exists():
        raise tables.TableMismatch(
            f"{folder / TIMING_META} times the whole design: cut the table before `retime`"
        )
    whole = tables.read(folder)
    table = tables.cut(whole, configs)
    tables.write(table, folder)
    before, after = whole.counts(), table.counts()
    print(
        f"cut to {configs} Sobol points per (task, model): {sum(after.values())} of "
        f"{sum(before.values())} runs kept, {before['complete'] - after['complete']} recorded runs dropped"
    )
    print(status_text(table))
    return 0


def _record(args: argparse.Namespace, folder: Path) -> int:
    if args.cut_to is not None:
        return _cut(folder, args.cut_to)
    table, tasks, models = opened(args, folder)
    version = version_index(table, code_version(args.device), args.new_code_version)
    tables.write(table, folder)
    runs = list(pending(table, tasks, models))
    processes = args.per_gpu if args.device == "cuda" else args.jobs
    print(
        f"{len(runs)} runs to record in {folder.name}/ with {processes} processes on {table.versions[version]['device']}"
    )
    deadline = None if args.minutes is None else time.monotonic() + 60 * args.minutes
    started, done, code = time.monotonic(), 0, 0
    pool = ProcessPoolExecutor(
        processes,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(args.device,),
    )
    futures = [
        pool.submit(
            run_one,
            run,
            table.curves[run.task][run.model].designs[run.index]["config"],
            table.tasks[run.task].objective,
        )
        for run in runs
    ]
    try:
        for future in as_completed(
            futures, None if deadline is None else max(0.0, deadline - time.monotonic())
        ):
            outcome = future.result()
            store(table, outcome, version)
            tables.write(table, folder)
            done += 1
            best = max if table.tasks[outcome.run.task].mode == "max" else min
            print(
                f"{done}/{len(runs)} {outcome.run.key} {tables.STATUS_NAMES[outcome.status]}, "
                f"best {best(outcome.objective) if outcome.objective else float('nan'):.4f}, "
                f"{outcome.wall[-1] if outcome.wall else 0:.0f} s",
                flush=True,
            )
    except FuturesTimeout:
        print(f"--minutes {args.minutes} reached: runs still training are left for the next recorder")
    except BrokenProcessPool:
        print("a worker process died (out of memory?): the runs left are for the next recorder")
        code = 1
    except KeyboardInterrupt:
        print("stopped: every finished run is in the table")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        for child in multiprocessing.active_children():
            child.terminate()
    hours = (time.monotonic() - started) / 3600
    print(f"recorded {done} runs in {hours * 60:.1f} min ({done / max(hours, 1e-9):.0f} runs/hour)")
    print(status_text(table))
    return code


def status_text(table: tables.Table) -> str:
    lines = [
        f"{'task':>13} {'model':>13} {'configs':>8} {'complete':>9} {'diverged':>9} {'failed':>7} {'missing':>8}"
    ]
    for task, models in table.curves.items():
        for model, curves in models.items():
            counts = [int((curves.status == k).sum()) for k in (1, 2, 3, 0)]
            lines.append(
                f"{task:>13} {model:>13} {len(curves.designs):>8} " + " ".join(f"{n:>8}" for n in counts)
            )
    return "\n".join(lines)


def design_options(parser: argparse.ArgumentParser) -> None:
    """The options that name a table and the design to record into it."""
    parser.add_argument("--table", type=Path, default=DEFAULT_TABLE, help="the table's folder")
    parser.add_argument("--configs", type=int, default=96, help="Sobol points per (task, model)")
    parser.add_argument("--seeds", type=int, default=2, help="training seeds per configuration")
    parser.add_argument(
        "--tasks",
        nargs="+",
        help=f"registered tasks with generated data (default: the table's; a new table's: {' '.join(TASK_NAMES)})",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        help=f"registered models (default: the table's; a new table's: {' '.join(MODELS)})",
    )
    parser.add_argument("--iterations", type=int, help=f"a new table's trial length ({Settings.iterations})")
    parser.add_argument(
        "--eval-every", type=int, help=f"a new table's report interval ({Settings.eval_every})"
    )
    parser.add_argument(
        "--hidden-scale",
        type=float,
        help="a new table's design: hidden sizes searched over each config's range times this (else all at 32)",
    )


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count of Sobol points (1 or more)")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    design_options(parser)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes on the CPU")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--per-gpu", type=int, default=8, help="worker processes packed on the GPU")
    parser.add_argument("--minutes", type=float, help="stop after this long; unfinished runs are left")
    parser.add_argument(
        "--new-code-version", action="store_true", help="record beside runs of other training code"
    )
    parser.add_argument("--status", action="store_true", help="print what the table holds and stop")
    parser.add_argument(
        "--cut-to",
        type=_positive,
        metavar="N",
        help="cut every design to its papers' points and first N Sobol points, dropping the runs "
        "beyond (a later --configs grows it back to the same points), and stop",
    )
    args = parser.parse_args(argv)
    try:
        return record(args)
    except tables.TableMismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

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

The table's design is drawn once, with the spec's code (Optuna, pydantic); a recorder that only
runs it (a bare GPU machine) needs torch, numpy and `trainables` alone. Recording with other
training code than the table's (another digest of `trainables/`, device or torch) is refused,
naming what differs, unless `--new-code-version` says the runs may be mixed.

    python -m benchmarks.blackbox.record --jobs 2
    python -m benchmarks.blackbox.record --device cuda --per-gpu 8 --minutes 8
    python -m benchmarks.blackbox.record --status
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import multiprocessing
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures import TimeoutError as FuturesTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.blackbox import table as tables
from benchmarks.blackbox.table import MODELS, TASK_NAMES, Settings

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


def code_version(device: str) -> dict[str, Any]:
    """What decides a run's curve: the training code (a digest of `trainables/`, per file), the
    device and torch; with the commit, machine and date it was first used."""
    import torch

    files = sorted(p for p in (ROOT / "trainables").rglob("*") if p.suffix == ".py")
    digests = {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in files}
    whole = hashlib.sha256("".join(f"{k}={v}\n" for k, v in digests.items()).encode()).hexdigest()[:16]
    return {
        "trainables": whole,
        "device": device_name(device),
        "torch": torch.__version__,
        "commit": _commit(),
        "machine": _machine(),
        "python": platform.python_version(),
        "first_run": datetime.now(UTC).strftime("%Y-%m-%d"),
        "files": digests,
    }


def device_name(device: str) -> str:
    import torch

    if device == "cuda":
        return f"cuda: {torch.cuda.get_device_name()}"
    return "cpu"


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _machine() -> str:
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores"


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


def new_table(settings: Settings, configs: int, seeds: int) -> tables.Table:
    """A table with its design and nothing recorded (needs the spec's code)."""
    from benchmarks.blackbox.design import base_spec, paper_design, sobol_design, space_text
    from trainables.registry import TASKS

    curves: dict[str, dict[str, tables.Curves]] = {}
    spaces: dict[str, dict[str, dict[str, str]]] = {}
    baselines, objective = {}, ""
    evaluations = len(tables.Table(settings, seeds, "", {}, {}, {}).steps)
    for task in TASK_NAMES:
        spec = base_spec(task, settings)
        objective = spec.resolved_objective().metric
        baselines[task] = TASKS.get(task).sized({"T": settings.T}).baseline
        for model in MODELS:
            designs = [*paper_design(spec, model), *sobol_design(spec, model, configs)]
            curves.setdefault(task, {})[model] = tables.Curves.empty(
                [{"label": d.label, "params": d.params, "config": d.config} for d in designs],
                seeds,
                evaluations,
            )
            spaces.setdefault(task, {})[model] = space_text(spec, model)
    return tables.Table(settings, seeds, objective, baselines, spaces, curves)


def extended(table: tables.Table, configs: int, seeds: int) -> tables.Table:
    """The table with its Sobol design extended to `configs` points and `seeds` seeds, refused
    where the benchmark's space or papers' points have changed since the design was drawn."""
    from benchmarks.blackbox.design import base_spec, paper_design, sobol_design, space_text

    seeds = max(seeds, table.seeds)
    specs = {task: base_spec(task, table.settings) for task in table.curves}
    tables.check_spaces(
        table, {t: {m: space_text(specs[t], m) for m in models} for t, models in table.curves.items()}
    )
    for task, models in table.curves.items():
        spec = specs[task]
        for model, curves in models.items():
            papers = [{"label": d.label, "params": d.params} for d in paper_design(spec, model)]
            recorded = [
                {"label": d["label"], "params": d["params"]}
                for d, p in zip(curves.designs, curves.paper, strict=True)
                if p
            ]
            if papers != recorded:
                raise tables.TableMismatch(
                    f"{task}/{model}: the papers' points changed since the table's design"
                )
            have = sum(not p for p in curves.paper)
            more = sobol_design(spec, model, configs, offset=have) if configs > have else []
            designs = curves.designs + [
                {"label": d.label, "params": d.params, "config": d.config} for d in more
            ]
            if more or seeds > table.seeds:
                models[model] = curves.grown(designs, seeds)
    table.seeds = seeds
    return table


def pending(table: tables.Table, tasks: list[str], models: list[str]) -> Iterator[Run]:
    """Runs still missing, in design order across every (task, model)."""
    longest = max(len(table.curves[t][m].designs) for t in tasks for m in models)
    for index in range(longest):
        for seed in range(table.seeds):
            for task in tasks:
                for model in models:
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
    if args.status and (folder / tables.META).exists():  # reads only: beside a running recorder too
        print(status_text(tables.read(folder)))
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".recording").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise tables.TableMismatch(f"another recorder is writing {folder}") from None
        return _record(args, folder)


def _record(args: argparse.Namespace, folder: Path) -> int:
    asked = {
        k: v for k, v in (("iterations", args.iterations), ("eval_every", args.eval_every)) if v is not None
    }
    if (folder / tables.META).exists():
        table = tables.read(folder)
        tables.check_settings(table, Settings(**{**table.settings.as_dict(), **asked}))
        if args.configs > _sobol_count(table) or args.seeds > table.seeds:
            table = extended(table, args.configs, args.seeds)
    else:
        table = new_table(Settings(**asked), args.configs, args.seeds)
    if args.status:
        print(status_text(table))
        return 0
    version = version_index(table, code_version(args.device), args.new_code_version)
    tables.write(table, folder)
    runs = list(pending(table, args.tasks, args.models))
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
            run_one, run, table.curves[run.task][run.model].designs[run.index]["config"], table.objective_name
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
            print(
                f"{done}/{len(runs)} {outcome.run.key} {tables.STATUS_NAMES[outcome.status]}, "
                f"best {np.nanmin(outcome.objective) if outcome.objective else float('nan'):.4f}, "
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


def _sobol_count(table: tables.Table) -> int:
    return min(int((~c.paper).sum()) for m in table.curves.values() for c in m.values())


def status_text(table: tables.Table) -> str:
    lines = [
        f"{'task':>8} {'model':>7} {'configs':>8} {'complete':>9} {'diverged':>9} {'failed':>7} {'missing':>8}"
    ]
    for task, models in table.curves.items():
        for model, curves in models.items():
            counts = [int((curves.status == k).sum()) for k in (1, 2, 3, 0)]
            lines.append(
                f"{task:>8} {model:>7} {len(curves.designs):>8} " + " ".join(f"{n:>8}" for n in counts)
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--table", type=Path, default=DEFAULT_TABLE, help="the table's folder")
    parser.add_argument("--configs", type=int, default=96, help="Sobol points per (task, model)")
    parser.add_argument("--seeds", type=int, default=2, help="training seeds per configuration")
    parser.add_argument("--tasks", nargs="+", choices=TASK_NAMES, default=list(TASK_NAMES))
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--jobs", type=int, default=2, help="worker processes on the CPU")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--per-gpu", type=int, default=8, help="worker processes packed on the GPU")
    parser.add_argument("--minutes", type=float, help="stop after this long; unfinished runs are left")
    parser.add_argument("--iterations", type=int, help=f"a new table's trial length ({Settings.iterations})")
    parser.add_argument(
        "--eval-every", type=int, help=f"a new table's report interval ({Settings.eval_every})"
    )
    parser.add_argument(
        "--new-code-version", action="store_true", help="record beside runs of other training code"
    )
    parser.add_argument("--status", action="store_true", help="print what the table holds and stop")
    args = parser.parse_args(argv)
    try:
        return record(args)
    except tables.TableMismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""Measure every configuration's pace again, on one clock (`clock`): its first evaluations
trained through `trainables.train.train`, as the recorder trains them, then stopped.

A sitting starts by timing the anchor (the table's first configuration) once in each worker
process, after each has trained it briefly to warm up; the sitting's measurements are scaled onto
the first sitting's by the anchors' paces, so a retiming stopped and resumed elsewhere stays on
one clock. Resumable like the recorder: a configuration measured is skipped, and the timing is
written after each.

    python -m benchmarks.search_tables.retime --jobs 2
    python -m benchmarks.search_tables.retime --again 0-7          # a stretch timed beside other work
    python -m benchmarks.search_tables.retime --status
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures import TimeoutError as FuturesTimeout
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.search_tables import record
from benchmarks.search_tables import table as tables
from benchmarks.search_tables.clock import Timing, read_timing, write_timing
from benchmarks.search_tables.code_version import code_version


class _Measured(Exception):
    """Raised from the report once enough evaluations are timed: the run stops there."""


def _start_worker(device: str, warm_up: dict[str, Any]) -> None:
    record._start_worker(device)
    measure(warm_up, 1)  # first-call costs (imports, allocator, kernels) land here


def measure(config: dict[str, Any], evaluations: int, seed: int = 0) -> tuple[list[float], str | None]:
    """Worker-seconds at each of the run's first `evaluations` reports, and why it stopped short."""
    from trainables.train import train

    device = record._WORKER.get("device", "cpu")
    seconds: list[float] = []
    clock = record.worker_clock(device)

    def report(step: int, metrics: dict[str, Any]) -> None:
        seconds.append(clock())
        if len(seconds) == evaluations:
            raise _Measured

    try:
        train({**config, "seed": seed, "device": device}, report)
    except _Measured:
        return seconds, None
    except Exception as exc:  # a run that stops short is data: its reason is kept
        return seconds, f"{type(exc).__name__}: {exc}"
    return seconds, f"the run ended after {len(seconds)} evaluations"


def _anchor(table: tables.Table) -> tuple[str, str, int]:
    task = next(iter(table.curves))
    return task, next(iter(table.curves[task])), 0


def retime(args: argparse.Namespace) -> int:
    table = tables.read(args.table)
    timing = read_timing(args.table, table)
    if args.again is not None:  # timed while something else ran: measured afresh in this sitting
        for models in timing.sitting.values():
            for sittings in models.values():
                sittings[args.again[0] : args.again[1] + 1] = -1
    todo = timing.pending(table)
    if args.status or not todo:
        print(status_text(timing, table))
        return 0
    version = {k: v for k, v in code_version(args.device).items() if k != "files"}
    first = timing.sittings[0] if timing.sittings else None
    if first is not None and (first["trainables"], first["device"]) != (
        version["trainables"],
        version["device"],
    ):
        print(
            f"error: the timing was begun with trainables {first['trainables']} on {first['device']}; "
            f"this is trainables {version['trainables']} on {version['device']}: remove "
            f"{args.table / 'timing.json'} to measure every configuration afresh",
            file=sys.stderr,
        )
        return 2
    task, model, index = _anchor(table)
    anchor_config = table.curves[task][model].designs[index]["config"]
    deadline = None if args.minutes is None else time.monotonic() + 60 * args.minutes
    pool = ProcessPoolExecutor(
        args.jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(args.device, anchor_config),
    )
    started, done = time.monotonic(), 0
    try:
        anchors = [pool.submit(measure, anchor_config, timing.evaluations) for _ in range(args.jobs)]
        paces = [_pace(f.result()[0]) for f in anchors]
        version["anchor"] = f"{task}/{model}/{index}"
        version["anchor_pace"] = statistics.median(paces)
        version["anchor_paces"] = paces
        timing.sittings.append(version)
        sitting = len(timing.sittings) - 1
        print(
            f"sitting {sitting}: anchor {version['anchor']} at {version['anchor_pace']:.3f} s per evaluation "
            f"({', '.join(f'{p:.3f}' for p in paces)}); {len(todo)} configurations to time with {args.jobs} processes",
            flush=True,
        )
        futures = {
            pool.submit(measure, table.curves[t][m].designs[i]["config"], timing.evaluations): (t, m, i)
            for t, m, i in todo
        }
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        for future in as_completed(futures, remaining):
            t, m, i = futures[future]
            seconds, reason = future.result()
            _store(timing, t, m, i, seconds, reason, sitting)
            write_timing(timing, args.table)
            done += 1
            print(f"{done}/{len(todo)} {t}/{m}/{i} {', '.join(f'{s:.2f}' for s in seconds)} s", flush=True)
    except FuturesTimeout:
        print(f"--minutes {args.minutes} reached: the configurations left are for the next sitting")
    except KeyboardInterrupt:
        print("stopped: every configuration timed is kept")
    finally:
        stopped = done < len(todo)
        pool.shutdown(wait=not stopped, cancel_futures=True)
        if stopped:  # a run still training is not waited for
            for child in multiprocessing.active_children():
                child.terminate()
    print(f"timed {done} configurations in {(time.monotonic() - started) / 60:.1f} min")
    print(status_text(timing, table))
    return 0


def _pace(seconds: list[float]) -> float:
    return (seconds[-1] - seconds[0]) / (len(seconds) - 1)


def _store(
    timing: Timing, task: str, model: str, index: int, seconds: list[float], reason: str | None, sitting: int
) -> None:
    """A configuration is timed once two evaluations are (a pace needs one interval); one that
    stops sooner keeps its reason and stays to be timed."""
    key = f"{task}/{model}/{index}"
    if len(seconds) < 2:
        timing.reasons[key] = (reason or "no evaluation")[:500]
        return
    row = np.full(timing.evaluations, np.nan)
    row[: len(seconds)] = seconds
    if len(seconds) < timing.evaluations:  # the pace of what was timed carries it to the end
        row[len(seconds) :] = seconds[-1] + _pace(seconds) * np.arange(
            1, timing.evaluations - len(seconds) + 1
        )
    timing.measured[task][model][index] = row
    timing.sitting[task][model][index] = sitting
    timing.reasons.pop(key, None)


def status_text(timing: Timing, table: tables.Table) -> str:
    recorded = {
        (t, m): (c.status != tables.MISSING).any(axis=1)
        for t, ms in table.curves.items()
        for m, c in ms.items()
    }
    total = sum(int(r.sum()) for r in recorded.values())
    timed = sum(int((timing.sitting[t][m][r] >= 0).sum()) for (t, m), r in recorded.items())
    lines = [f"{timed} of {total} recorded configurations timed in {len(timing.sittings)} sittings"]
    lines += [
        f"  sitting {k}: {s['machine']}, {s['device']}, {s['first_run']}, anchor {s['anchor_pace']:.3f} s per evaluation"
        for k, s in enumerate(timing.sittings)
    ]
    lines += [f"  not timed: {key}: {why}" for key, why in timing.reasons.items()]
    return "\n".join(lines)


def _indices(text: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    try:
        return int(first), int(last or first)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not FIRST-LAST, e.g. 0-7") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--table", type=Path, default=record.DEFAULT_TABLE)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes on the CPU")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument(
        "--minutes", type=float, help="stop after this long; the rest is for the next sitting"
    )
    parser.add_argument(
        "--again",
        type=_indices,
        metavar="FIRST-LAST",
        help="time these design indices afresh, in every task and model (a stretch timed beside other work)",
    )
    parser.add_argument("--status", action="store_true", help="print what is timed and stop")
    args = parser.parse_args(argv)
    try:
        return retime(args)
    except tables.TableMismatch as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

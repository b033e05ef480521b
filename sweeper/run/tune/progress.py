"""Progress of a run as it goes: a live table in a terminal, plain log lines anywhere else.

Redirected to a file (nohup, a batch job's log), a live table would be written once, at the end;
there the driver writes one line at a steady cadence instead: trials finished, running, and the
best value so far per model.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from ray.tune import Callback
from rich.console import Console
from rich.live import Live
from rich.table import Table

from sweeper.run.tune.driver_state import driver_only_state

Rows = list[dict[str, Any]]  # per model: complete, pruned, fail, running, budget, best
PLAIN_EVERY_S = 30.0


def progress_table(rows: Rows, elapsed: float, budget: float | None, title: str) -> Table:
    remaining = "" if budget is None else f", {max(0.0, budget - elapsed):.0f}s of time budget left"
    table = Table(title=f"{title}: {elapsed:.0f}s elapsed{remaining}", title_justify="left")
    for column in ("model", "complete", "pruned", "failed", "running", "budget", "best"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for row in rows:
        best = "" if row["best"] is None else f"{row['best']:.5g}"
        table.add_row(
            row["model"],
            str(row["complete"]),
            str(row["pruned"]),
            str(row["fail"]),
            str(row["running"]),
            str(row["budget"]),
            best,
        )
    return table


def progress_line(rows: Rows, elapsed: float, title: str) -> str:
    finished = sum(r["complete"] + r["pruned"] + r["fail"] for r in rows)
    budget = sum(r["budget"] for r in rows)
    running = sum(r["running"] for r in rows)
    failed = sum(r["fail"] for r in rows)
    best = ", ".join(f"{r['model']} {r['best']:.5g}" for r in rows if r["best"] is not None) or "none yet"
    return (
        f"{time.strftime('%H:%M:%S')} {title}: {elapsed:.0f}s, {finished} of {budget} trials finished "
        f"({failed} failed), {running} running; best: {best}"
    )


class ProgressDisplay:
    """Shows `rows()` as the run goes: live on a terminal, else a line every `every` seconds."""

    def __init__(
        self,
        title: str,
        rows: Callable[[], Rows],
        elapsed: Callable[[], float],
        budget: float | None = None,
        stream: TextIO | None = None,
        every: float = PLAIN_EVERY_S,
    ) -> None:
        self.title, self.rows, self.elapsed, self.budget, self.every = title, rows, elapsed, budget, every
        self.stream = stream or sys.stderr
        self.live = (
            Live(console=Console(file=self.stream), auto_refresh=False, transient=False)
            if self.stream.isatty()
            else None
        )
        self._last = 0.0

    def __enter__(self) -> ProgressDisplay:
        if self.live is not None:
            self.live.__enter__()
        self.refresh(force=True)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.refresh(force=True)
        if self.live is not None:
            self.live.__exit__(*exc)

    def refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.live is not None:
            self.live.update(
                progress_table(self.rows(), self.elapsed(), self.budget, self.title), refresh=True
            )
        elif force or now - self._last >= self.every:
            print(progress_line(self.rows(), self.elapsed(), self.title), file=self.stream, flush=True)
        else:
            return
        self._last = now


class ProgressCallback(Callback):
    """Has Tune refresh the display as it steps (the display itself keeps its cadence)."""

    def __init__(self, display: ProgressDisplay, interval: float = 0.5) -> None:
        self.display = display
        self.interval = interval
        self._last = 0.0

    def __getstate__(self) -> dict[str, Any]:
        return driver_only_state(self)

    def on_step_end(self, iteration: int, trials: list[Any], **info: Any) -> None:
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            self.display.refresh()

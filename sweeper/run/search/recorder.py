"""What every sweeper searcher shares: a trial's progress, why it ended, and its MLflow writes.

A searcher lives in the driver and is the one place that knows why a trial ended: the sweep's
`MultiStudySearcher` (`search`) and the confirmation runs' searcher (`confirm`) both build on
`ResultRecorder`. Its hooks survive short database outages (`database_guarded`).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ray.tune.result import AUTO_RESULT_KEYS
from ray.tune.search import Searcher

from sweeper.run.tracking.tracker import RunRef, Tracker, TrialWriter
from sweeper.run.tune.driver_state import driver_only_state
from sweeper.spec.sweep import SweepSpec
from sweeper.store.database import DATABASE_ERRORS
from sweeper.store.states import TrialEnd
from trainables.hyperparams import TRAINING

RUN_ID_WAIT_S = 5.0  # how long a trial's end waits for MLflow to have created its run
RAY_KEYS = {*AUTO_RESULT_KEYS, "done", "trial_id", "experiment_tag", "step", "fail_reason", "fail_traceback"}
TRACEBACK_CHARS = 20_000  # a traceback's end, where the error is, as the study keeps it
log = logging.getLogger(__name__)


def database_guarded(default: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Retry a searcher hook through short database outages; past them, stop the sweep cleanly.

    A hook that still fails sets `stop_reason` (the sweep ends as interrupted) and returns
    `default`. Its trial stays RUNNING in the study, so `resume` reconciles and reruns it once
    the database is back: nothing is silently dropped, and Tune never sees the exception.
    """

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def guarded(self: ResultRecorder, *args: Any, **kwargs: Any) -> Any:
            for attempt in range(self.database_retries + 1):
                try:
                    return method(self, *args, **kwargs)
                except DATABASE_ERRORS as exc:
                    if attempt == self.database_retries:
                        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
                        self.stop_reason = (
                            self.stop_reason or f"interrupted: the study database is unreachable ({reason})"
                        )
                        log.error(
                            "%s; stopping the sweep, resume it once the database is back", self.stop_reason
                        )
                        return default
                    time.sleep(self.database_backoff * 2**attempt)
            return default

        return guarded

    return wrap


@dataclass
class Progress:
    """What one running Tune trial has shown so far."""

    iterations: int
    run: RunRef | None
    last_step: int = 0
    best: float | None = None
    fail_reason: str | None = None
    fail_traceback: str | None = None  # the trial code's own, where it raised
    metrics: dict[str, float] = field(default_factory=dict)


class ResultRecorder(Searcher):
    """Bookkeeping shared by sweeper's searchers: results, best values, and why a trial ended."""

    def __init__(self, spec: SweepSpec, tracker: Tracker | None) -> None:
        objective = spec.resolved_objective()
        super().__init__(metric=objective.metric, mode=objective.mode)
        self.spec = spec
        self.tracker = TrialWriter(tracker) if tracker is not None else None
        self.stop_reason: str | None = None
        self.database_retries = 3
        self.database_backoff = 1.0  # seconds, doubled per retry: 1 + 2 + 4 before giving up

    def better(self, current: float | None, value: float | None) -> float | None:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return current
        if current is None:
            return value
        return min(current, value) if self.mode == "min" else max(current, value)

    def progress_of(self, trial_id: str) -> Progress | None:
        raise NotImplementedError

    def fail(self, trial_id: str, reason: str) -> None:
        """Record why a trial is being stopped (time limit), so it ends as FAIL, not PRUNED."""
        progress = self.progress_of(trial_id)
        if progress is not None:
            progress.fail_reason = reason

    def new_progress(self, config: dict[str, Any], run: RunRef | None) -> Progress:
        return Progress(config.get("iterations", TRAINING["iterations"].default), run)

    def flush_tracking(self) -> None:
        """Wait for the queued MLflow writes: before the sweep's summary, or a test's look."""
        if self.tracker is not None:
            self.tracker.flush()

    def observe(self, progress: Progress, result: dict[str, Any]) -> tuple[int, float] | None:
        """Take one result; return (step, objective) for a new step with a finite objective.

        Tune may hand the last result to `on_trial_complete` only, or to both hooks: a step is
        taken once.
        """
        if result.get("fail_reason"):
            progress.fail_reason = str(result["fail_reason"])
            if result.get("fail_traceback"):
                progress.fail_traceback = str(result["fail_traceback"])[-TRACEBACK_CHARS:]
            return None
        if "step" not in result or int(result["step"]) <= progress.last_step:
            return None
        step = int(result["step"])
        progress.last_step = step
        progress.metrics = {
            k: v for k, v in result.items() if k not in RAY_KEYS and not k.startswith("config/")
        }
        if self.tracker is not None:
            self.tracker.log_metrics(progress.run, step, progress.metrics)
        value = result.get(self.metric)
        if value is None or not math.isfinite(value):
            return None
        progress.best = self.better(progress.best, value)
        return step, value

    def outcome(self, progress: Progress, error: bool) -> tuple[TrialEnd, str | None]:
        if progress.fail_reason is not None:
            return TrialEnd.FAIL, progress.fail_reason
        if error:
            return TrialEnd.FAIL, "the trial's worker process crashed (see the Ray logs)"
        if progress.last_step >= progress.iterations:
            if progress.best is None:
                return TrialEnd.FAIL, f"no finite {self.metric} was reported"
            return TrialEnd.COMPLETE, None
        if self.stop_reason is not None:
            return TrialEnd.INTERRUPTED, self.stop_reason
        return TrialEnd.PRUNED, None

    def __getstate__(self) -> dict[str, Any]:
        return driver_only_state(self)

    def keep_final_weights(self, trial_id: str, checkpoint: Any | None) -> None:
        """A finished trial's last checkpoint, before it is deleted: sweeps keep their studies'
        best networks (`MultiStudySearcher`); other runs keep none."""
        return None

    # The database holds the state; Tune's own copy would only go stale.
    def save(self, checkpoint_path: str) -> None:
        return None

    def restore(self, checkpoint_path: str) -> None:
        return None

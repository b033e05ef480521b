"""Early stopping, which compares a trial only with trials of its own study: the sweep's Tune
scheduler (ASHA per study, Optuna's median or Hyperband pruner per study, or none).

Ray Tune runs one scheduler per Tuner, and the Tuner here serves every model's study at once.
A single ASHA would rank an LSTM trial against GRU trials and starve whichever model is weaker
early on, which biases the very comparison a sweep exists to make. So each study gets its own
ASHA instance, created on first use, and this wrapper routes every event to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import optuna
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from sweeper.spec.rungs import first_report, max_iterations, rungs
from sweeper.spec.sweep import SweepSpec
from sweeper.store.trial_record import PAPER_POINT_ATTR


class PerStudyScheduler(FIFOScheduler):
    """Routes each trial's events to the scheduler of its study (the trial's `model`)."""

    def __init__(self, make: Callable[[], TrialScheduler], key: str = "model") -> None:
        super().__init__()
        self._make = make
        self._key = key
        self._schedulers: dict[str, TrialScheduler] = {}

    def _of(self, trial: Any) -> TrialScheduler:
        study = trial.config[self._key]
        if study not in self._schedulers:
            self._schedulers[study] = self._make()
        return self._schedulers[study]

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        return True  # each study's scheduler is built with its metric and mode

    def on_trial_add(self, tune_controller: Any, trial: Any) -> None:
        self._of(trial).on_trial_add(tune_controller, trial)

    def on_trial_error(self, tune_controller: Any, trial: Any) -> None:
        self._of(trial).on_trial_error(tune_controller, trial)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        return self._of(trial).on_trial_result(tune_controller, trial, result)

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> None:
        self._of(trial).on_trial_complete(tune_controller, trial, result)

    def on_trial_remove(self, tune_controller: Any, trial: Any) -> None:
        self._of(trial).on_trial_remove(tune_controller, trial)

    def debug_string(self) -> str:
        return "; ".join(f"{study}: {s.debug_string()}" for study, s in self._schedulers.items())


class OptunaPrunerScheduler(FIFOScheduler):
    """Stops a trial when its study's Optuna pruner says so (median or Hyperband).

    The searcher owns the Optuna trials, so the decision is delegated to it; the trial then ends
    before its last step and is recorded as PRUNED with its intermediate values.
    """

    def __init__(self, searcher: Any) -> None:
        super().__init__()
        self.searcher = searcher

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        return True

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        if self.searcher.should_prune(trial.trial_id, result):
            return TrialScheduler.STOP
        return TrialScheduler.CONTINUE

    def __getstate__(self) -> dict[str, Any]:
        return {}


class Wrapped(FIFOScheduler):
    """A scheduler that hands every event to `inner`, for a subclass to overrule one decision."""

    def __init__(self, inner: Any, searcher: Any) -> None:
        super().__init__()
        self.inner = inner
        self.searcher = searcher

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        return self.inner.set_search_properties(metric, mode, **spec)

    def on_trial_add(self, tune_controller: Any, trial: Any) -> None:
        self.inner.on_trial_add(tune_controller, trial)

    def on_trial_error(self, tune_controller: Any, trial: Any) -> None:
        self.inner.on_trial_error(tune_controller, trial)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        return self.inner.on_trial_result(tune_controller, trial, result)

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> None:
        self.inner.on_trial_complete(tune_controller, trial, result)

    def on_trial_remove(self, tune_controller: Any, trial: Any) -> None:
        self.inner.on_trial_remove(tune_controller, trial)

    def debug_string(self) -> str:
        return self.inner.debug_string()


class PaperPointStops(Wrapped):
    """Tune's scheduler, with ASHA's judgement of a papers' point made when the trials to judge it
    by have arrived. A study's first trials are its papers' points, and ASHA goes on with the
    first trial at every rung, having nothing to compare it with: each point ran to the end
    whatever it showed, at a full trial's price. Here a point stops at its next report once, at a
    rung it has passed (not the last), it trails: it had not left the task's memoryless baseline
    there while at least a 1/η share of its study's trials recorded there had, or, on a task
    without one, it lies below the 1 - 1/η quantile of them (ASHA's own rule, η of them at least).
    Every other decision is the wrapped scheduler's."""

    def __init__(self, inner: Any, searcher: Any, spec: SweepSpec, baseline: float | None) -> None:
        super().__init__(inner, searcher)
        self.rungs = rungs(spec)[:-1]
        self.eta = spec.scheduler.reduction_factor
        self.baseline = baseline
        objective = spec.resolved_objective()
        self.watched, self.direction = objective.metric, objective.mode

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        decision = self.inner.on_trial_result(tune_controller, trial, result)
        point = self.searcher.trial_of(trial.trial_id)
        if decision == TrialScheduler.STOP or point is None or PAPER_POINT_ATTR not in point.user_attrs:
            return decision
        return TrialScheduler.STOP if self._trails(point) else decision

    def _trails(self, point: optuna.Trial) -> bool:
        """Whether the point trails its study's trials at a rung it has passed (on the loss scale,
        lower better; its reports as the study holds them)."""
        sign = 1.0 if self.direction == "min" else -1.0
        trials = point.study.get_trials(deepcopy=False)
        mine = next((t.intermediate_values for t in trials if t.number == point.number), {})
        for rung in self.rungs:
            if rung not in mine:
                continue
            own = min(sign * v for step, v in mine.items() if step <= rung)
            others = [
                sign * t.intermediate_values[rung]
                for t in trials
                if t.number != point.number and rung in t.intermediate_values
            ]
            if self.baseline is not None:
                learned = sum(v < sign * self.baseline for v in others)
                if own >= sign * self.baseline and learned and learned >= len(others) / self.eta:
                    return True
            elif len(others) >= self.eta and own > float(np.percentile(others, 100 / self.eta)):
                return True
        return False


def make_pruner(spec: SweepSpec) -> optuna.pruners.BasePruner:
    """The study's Optuna pruner: it acts only under the `median` and `hyperband` schedulers."""
    warmup = spec.scheduler.grace_period or first_report(spec)
    if spec.scheduler.name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=warmup)
    if spec.scheduler.name == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=warmup,
            max_resource=max_iterations(spec),
            reduction_factor=max(2, round(spec.scheduler.reduction_factor)),
        )
    return optuna.pruners.NopPruner()


def make_scheduler(spec: SweepSpec, searcher: Any, baseline: float | None) -> Any:
    """Tune's scheduler for the sweep: ASHA per study, Optuna's pruner per study, or none; with
    `scheduler.judge_paper_points`, a papers' point that trails its study at a rung stops
    (`PaperPointStops`)."""
    inner = _study_scheduler(spec, searcher)
    if spec.scheduler.judge_paper_points and spec.scheduler.name != "none":
        inner = PaperPointStops(inner, searcher, spec, baseline)
    return inner


def _study_scheduler(spec: SweepSpec, searcher: Any) -> Any:
    from ray.tune.schedulers import ASHAScheduler

    if spec.scheduler.name == "none":
        return FIFOScheduler()
    if spec.scheduler.name in ("median", "hyperband"):
        return OptunaPrunerScheduler(searcher)
    objective = spec.resolved_objective()
    max_t = max_iterations(spec)
    grace = min(spec.scheduler.grace_period or first_report(spec), max_t)
    return PerStudyScheduler(
        lambda: ASHAScheduler(
            time_attr="step",
            metric=objective.metric,
            mode=objective.mode,
            max_t=max_t,
            grace_period=grace,
            reduction_factor=spec.scheduler.reduction_factor,
        )
    )

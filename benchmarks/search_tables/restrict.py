"""A replayed study's samplers, restricted to the configurations the table recorded, as tabular
benchmarks restrict them (Syne Tune's `restrict_configurations`): the study then records the
configuration that is replayed, so TPE and GP model what was measured, not a neighbour of it.

- `RecordedSampler` stands in for Optuna's `RandomSampler`, as random search's sampler and as
  the draws TPE and GP make before they model a study: each trial takes one recorded
  configuration uniformly, without replacement while any is left.
- `SnappingSampler` wraps TPE or GP: each proposal they make is replaced by the nearest recorded
  configuration (`Snapper`) before the study records it.

Only the Sobol design is drawn from and snapped to; a papers' point is a trial of its own, asked
for by the strategies that take the papers' points.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import FixedTrial

from benchmarks.search_tables import table as tables
from sweeper.spec.space import suggest_params
from sweeper.spec.sweep import SweepSpec


class Snapper:
    """The nearest recorded configuration of one model to a proposal, in the space's transformed
    coordinates: each number scaled to [0, 1] of its range (through the logarithm where the range
    is logarithmic), each choice 0 when equal and 1 when not; Euclidean. Only configurations with
    a recorded run are candidates."""

    def __init__(self, spec: SweepSpec, model: str, curves: tables.Curves) -> None:
        fixed = FixedTrial(curves.designs[0]["params"])
        suggest_params(fixed, spec, model)
        self.distributions = dict(sorted(fixed.distributions.items()))
        self.params = [d["params"] for d in curves.designs]
        self.labels = [d["label"] for d in curves.designs]
        self.recorded = (curves.status != tables.MISSING).any(axis=1)
        self.sobol = self.recorded & ~curves.paper
        if not self.recorded.any():
            raise ValueError(f"{model}: the table holds no run of it yet")
        if not self.sobol.any():  # only papers' points recorded so far
            self.sobol = self.recorded
        self.columns = {  # per parameter, every design's coordinate
            name: np.array([self._coordinate(name, p[name]) for p in self.params])
            for name in self.distributions
        }

    def _coordinate(self, name: str, value: Any) -> float:
        d = self.distributions[name]
        if isinstance(d, CategoricalDistribution):
            return float(d.to_internal_repr(value))
        low, high, value = float(d.low), float(d.high), float(value)
        if getattr(d, "log", False):
            low, high, value = math.log(low), math.log(high), math.log(value)
        return 0.0 if high == low else (value - low) / (high - low)

    def distances(self, params: dict[str, Any]) -> np.ndarray:
        """Squared, from `params` (all of a configuration's, or some) to every design."""
        distances = np.zeros(len(self.params))
        for name in sorted(set(params) & set(self.distributions)):
            here = self._coordinate(name, params[name])
            if isinstance(self.distributions[name], CategoricalDistribution):
                distances += self.columns[name] != here
            else:
                distances += (self.columns[name] - here) ** 2
        return distances

    def labelled(self, label: str) -> int:
        """The recorded papers' point of this label (a papers' point fixes what the run reads)."""
        for index, design in enumerate(self.labels):
            if design == label and self.recorded[index]:
                return index
        raise ValueError(f"the papers' point {label} is not recorded")

    def nearest(self, params: dict[str, Any], among: np.ndarray | None = None) -> int:
        distances = self.distances(params)
        distances[~(self.recorded if among is None else among)] = np.inf
        return int(np.argmin(distances))


class RecordedSampler(optuna.samplers.BaseSampler):
    """Draws a recorded configuration uniformly for each trial, each once while any is left."""

    def __init__(self, params: list[dict[str, Any]], seed: int | list[int]) -> None:
        self.params = params
        self.rng = np.random.default_rng(seed)
        self.unused = list(range(len(params)))
        self.chosen: dict[int, int] = {}

    def infer_relative_search_space(self, study: optuna.Study, trial: Any) -> dict[str, Any]:
        return {}

    def sample_relative(
        self, study: optuna.Study, trial: Any, search_space: dict[str, Any]
    ) -> dict[str, Any]:
        return {}

    def sample_independent(
        self, study: optuna.Study, trial: Any, param_name: str, param_distribution: Any
    ) -> Any:
        if trial.number not in self.chosen:
            pool = self.unused or list(range(len(self.params)))
            pick = pool[int(self.rng.integers(len(pool)))]
            if self.unused:
                self.unused.remove(pick)
            self.chosen[trial.number] = pick
        return self.params[self.chosen[trial.number]][param_name]


class SnappingSampler(optuna.samplers.BaseSampler):
    """TPE or GP with each proposal replaced by the nearest recorded Sobol configuration, every
    parameter of it: the study records the configuration replayed, so TPE's constant liar is told
    what runs, not the proposal before it was snapped. Where TPE proposes nothing jointly, its first
    independent draw picks the nearest configuration."""

    def __init__(self, inner: optuna.samplers.BaseSampler, snapper: Snapper) -> None:
        self.inner = inner
        self.snapper = snapper
        self.snaps: list[float] = []  # how far each proposal moved, in the distance's units
        self.chosen: dict[int, int] = {}  # trial number -> the recorded configuration it takes

    def _snap(self, number: int, proposal: dict[str, Any]) -> int:
        distances = self.snapper.distances(proposal)
        distances[~self.snapper.sobol] = np.inf
        index = int(np.argmin(distances))
        self.snaps.append(float(math.sqrt(distances[index])))
        self.chosen[number] = index
        return index

    def infer_relative_search_space(self, study: optuna.Study, trial: Any) -> dict[str, Any]:
        return self.inner.infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: optuna.Study, trial: Any, search_space: dict[str, Any]
    ) -> dict[str, Any]:
        proposal = self.inner.sample_relative(study, trial, search_space)
        if not proposal:
            return proposal
        index = self._snap(trial.number, proposal)
        return {name: self.snapper.params[index][name] for name in proposal}

    def sample_independent(
        self, study: optuna.Study, trial: Any, param_name: str, param_distribution: Any
    ) -> Any:
        index = self.chosen.get(trial.number)
        if index is None:
            drawn = self.inner.sample_independent(study, trial, param_name, param_distribution)
            index = self._snap(trial.number, {**trial.params, param_name: drawn})
        return self.snapper.params[index][param_name]

    def before_trial(self, study: optuna.Study, trial: Any) -> None:
        self.inner.before_trial(study, trial)

    def after_trial(self, study: optuna.Study, trial: Any, state: Any, values: Any) -> None:
        self.inner.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.inner.reseed_rng()


def restrict(study: optuna.Study, snapper: Snapper, seed: list[int]) -> None:
    """Restrict the study's sampler to the recorded configurations: its random draws (its whole
    sampler when random, else the one TPE or GP draws their first trials with) and, for TPE and
    GP, their proposals."""
    draws = RecordedSampler([snapper.params[i] for i in np.flatnonzero(snapper.sobol)], seed)
    current = study.sampler
    if isinstance(current, optuna.samplers.RandomSampler):
        study.sampler = draws
        return
    if isinstance(current, optuna.samplers.TPESampler):
        current._random_sampler = draws
    elif isinstance(current, optuna.samplers.GPSampler):
        current._independent_sampler = draws
    else:
        raise ValueError(f"the replay restricts random, TPE and GP samplers, not {type(current).__name__}")
    study.sampler = SnappingSampler(current, snapper)

"""Define-by-run search spaces: each model's study samples only the parameters it uses."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import optuna

from sweeper.spec.sweep import SweepSpec
from sweeper.spec.values import FRACTION_SUFFIX, Choice, FloatRange, Fraction, Grid, IntRange, Match
from trainables.hyperparams import Hyperparam


def suggest_params(trial: optuna.Trial, spec: SweepSpec, model: str) -> dict[str, Any]:
    """Sample the searched entries of one model's study space (fixed values are not params).

    A setting bounded by another (`at_most`, ρ ≤ hidden size) is drawn after it: as an integer
    range it is capped by the value this trial drew, and as `{fraction: ...}` it is stored as the
    parameter `<name>_fraction`.
    """
    space, declared = spec.space(model), spec.declared(model)
    params: dict[str, Any] = {}
    bounds = {hp.at_most for hp in declared.values() if hp.at_most}
    for name in sorted(space, key=lambda name: name not in bounds):
        value = space[name]
        if isinstance(value, IntRange):
            low, high = value.int
            bound = declared[name].at_most
            if bound is not None:
                high = min(high, _value_of(bound, params, space, declared))
            params[name] = trial.suggest_int(
                name, low, high, log=value.log, step=1 if value.log else value.step
            )
        elif isinstance(value, FloatRange):
            low, high = value.float
            params[name] = trial.suggest_float(name, low, high, log=value.log)
        elif isinstance(value, (Choice, Grid)):
            options = value.choice if isinstance(value, Choice) else value.grid
            params[name] = trial.suggest_categorical(name, list(options))
        elif isinstance(value, Fraction):
            params[name + FRACTION_SUFFIX] = trial.suggest_float(name + FRACTION_SUFFIX, *value.bounds)
        elif isinstance(value, Match):
            raise ValueError(f"{name}: parameter matching must be resolved before sampling")
    return params


def searched_names(spec: SweepSpec) -> list[str]:
    """Every parameter some study of the sweep searches, by the name its trials store it under."""
    names: dict[str, None] = {}
    for model in spec.models:
        for name, value in spec.space(model).items():
            if isinstance(value, Fraction):
                names[name + FRACTION_SUFFIX] = None
            elif isinstance(value, IntRange | FloatRange | Choice | Grid):
                names[name] = None
    return list(names)


def searched_count(spec: SweepSpec, model: str) -> int:
    """How many values one model's study searches: the dimensions its trials are drawn in."""
    return sum(
        isinstance(v, IntRange | FloatRange | Choice | Grid | Fraction) for v in spec.space(model).values()
    )


def _value_of(
    name: str, params: Mapping[str, Any], space: Mapping[str, Any], declared: Mapping[str, Hyperparam]
) -> Any:
    """The value of `name` in the trial being drawn: sampled, fixed, or its default."""
    if name in params:
        return params[name]
    fixed = space.get(name)
    return fixed if isinstance(fixed, int | float) else declared[name].default


def grid_of(space: Mapping[str, Any]) -> dict[str, list[Any]] | None:
    """The grid of a study whose searched values are grids, for Optuna's GridSampler."""
    grid = {name: list(value.grid) for name, value in space.items() if isinstance(value, Grid)}
    return grid or None


def grid_size(grid: Mapping[str, list[Any]]) -> int:
    return math.prod(len(values) for values in grid.values())


def describe(value: Any, bound: str | None = None) -> str:
    """A one-line rendering for `--dry-run` and listings; `bound` names what a fraction is of."""
    if isinstance(value, IntRange):
        return f"int [{value.int[0]}, {value.int[1]}]" + (" log" if value.log else "")
    if isinstance(value, FloatRange):
        return f"float [{value.float[0]:g}, {value.float[1]:g}]" + (" log" if value.log else "")
    if isinstance(value, Choice):
        return "choice {" + ", ".join(map(str, value.choice)) + "}"
    if isinstance(value, Grid):
        return "grid {" + ", ".join(map(str, value.grid)) + "}"
    if isinstance(value, Fraction):
        low, high = value.bounds
        return f"fraction [{low:g}, {high:g}] of {bound}"
    if isinstance(value, Match):
        target = value.match
        if target.parameters is not None:
            return f"matched to {target.parameters:,} parameters"
        return f"matched to {target.model} at hidden size {target.hidden_size}"
    return f"= {value}"


def study_budget(spec: SweepSpec, model: str) -> int:
    """Trials of one study: the spec's budget, or the grid's size when that is smaller."""
    grid = grid_of(spec.space(model))
    return spec.budget.trials if grid is None else min(spec.budget.trials, grid_size(grid))


class UnitTrial:
    """Answers a study's suggestions from positions within each range (`unit`: 0 to 1, through
    the logarithm on a log scale, Optuna's rounding for integers; a choice, the option whose slice
    of [0, 1) holds it), and a choice also by its value (`chosen`); a name given neither answers
    the middle of its range. Remembers the names asked, in order: the space's coordinates, which
    carry a configuration between spaces whose ranges differ (a table's design, a transfer)."""

    def __init__(
        self, unit: Mapping[str, float] | None = None, chosen: Mapping[str, Any] | None = None
    ) -> None:
        self.unit = dict(unit or {})
        self.chosen = dict(chosen or {})
        self.asked: list[str] = []

    def _u(self, name: str) -> float:
        self.asked.append(name)
        return min(max(self.unit.get(name, 0.5), 0.0), 1.0 - 1e-12)

    def suggest_float(self, name: str, low: float, high: float, log: bool = False) -> float:
        u = self._u(name)
        if log:
            return math.exp(math.log(low) + u * (math.log(high) - math.log(low)))
        return low + u * (high - low)

    def suggest_int(self, name: str, low: int, high: int, log: bool = False, step: int = 1) -> int:
        u = self._u(name)
        if log:
            value = round(math.exp(math.log(low - 0.5) + u * (math.log(high + 0.5) - math.log(low - 0.5))))
            return min(max(value, low), high)
        return low + step * math.floor(u * ((high - low) // step + 1))

    def suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any:
        u = self._u(name)
        if name in self.chosen and self.chosen[name] in choices:
            return self.chosen[name]
        return choices[math.floor(u * len(choices))]


def unit_position(distribution: optuna.distributions.BaseDistribution, value: Any) -> float | None:
    """Where `value` lies in `distribution`'s range, as `UnitTrial` reads it back (None for a
    choice, which carries by its value)."""
    from optuna.distributions import FloatDistribution, IntDistribution

    if isinstance(distribution, FloatDistribution):
        low, high, x = distribution.low, distribution.high, float(value)
        if distribution.log:
            low, high, x = math.log(low), math.log(high), math.log(x)
        return 0.5 if high == low else (x - low) / (high - low)
    if isinstance(distribution, IntDistribution):
        low, high = distribution.low, distribution.high
        if distribution.log:
            return (math.log(value) - math.log(low - 0.5)) / (math.log(high + 0.5) - math.log(low - 0.5))
        slots = (high - low) // distribution.step + 1
        return ((value - low) // distribution.step + 0.5) / slots
    return None

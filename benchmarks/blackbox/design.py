"""The configurations the table records: a scrambled Sobol design over each study's own space,
plus every papers' point of the task.

The space is the benchmark spec's, drawn by the function a study draws with (`suggest_params`),
so log scales, choices and conditional bounds (ρ at most the hidden size) are the study's. Each
searched parameter takes one coordinate of the unit cube, in the order the study asks for them;
a float or an integer maps it linearly or, on a log scale, through the logarithm (Optuna's
rounding for integers), and a choice takes the option whose slice of [0, 1) holds it. The
design is extensible: the first n points of a longer design are the n-point design.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any

import torch

from benchmarks.blackbox.strategies import Settings, Strategy, sweep_spec
from sweeper.papers.points import paper_points
from sweeper.spec.space import describe, suggest_params
from sweeper.spec.sweep import SweepSpec, trial_config

SOBOL_SEED = 20261126


@dataclass(frozen=True)
class Design:
    """One recorded configuration of a (task, model): its study parameters, the flat config
    `train` takes (without its seed), and where it came from ("sobol 12", or a paper's row)."""

    label: str
    params: dict[str, Any]
    config: dict[str, Any]

    @property
    def paper(self) -> bool:
        return not self.label.startswith("sobol ")


class _UnitTrial:
    """Answers a study's suggestions from unit coordinates, one per parameter name; asked with
    none, it answers the middle of each range and remembers the order it was asked in."""

    def __init__(self, unit: dict[str, float] | None = None) -> None:
        self.unit = unit or {}
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

    def suggest_categorical(self, name: str, choices: list[Any]) -> Any:
        return choices[math.floor(self._u(name) * len(choices))]


def base_spec(task: str, settings: Settings) -> SweepSpec:
    """The benchmark's sweep of `task`, for its spaces (which no strategy changes)."""
    return sweep_spec(task, Strategy("random"), 0, settings, trials=1)


def searched(spec: SweepSpec, model: str) -> list[str]:
    """The parameters a study of `model` draws, in the order it draws them."""
    probe = _UnitTrial()
    suggest_params(probe, spec, model)  # type: ignore[arg-type]
    return probe.asked


def space_text(spec: SweepSpec, model: str) -> dict[str, str]:
    """A model's space as words, the table's record of what its design was drawn over."""
    declared = {hp.name: hp for hp in spec.declared(model).values()}
    return {
        name: describe(value, declared[name].at_most if name in declared else None)
        for name, value in sorted(spec.space(model).items())
    }


def sobol_design(spec: SweepSpec, model: str, count: int, offset: int = 0) -> list[Design]:
    """Points offset..count-1 of the model's scrambled Sobol design (scrambled per model, so no
    two models share a learning rate by construction; the same on every task)."""
    names = searched(spec, model)
    seed = SOBOL_SEED + zlib.crc32(model.encode())
    engine = torch.quasirandom.SobolEngine(len(names), scramble=True, seed=seed)
    points = engine.draw(count, dtype=torch.float64).tolist()
    designs = []
    for index in range(offset, count):
        params = suggest_params(_UnitTrial(dict(zip(names, points[index], strict=True))), spec, model)  # type: ignore[arg-type]
        designs.append(Design(f"sobol {index}", params, _config(spec, model, params)))
    return designs


def paper_design(spec: SweepSpec, model: str) -> list[Design]:
    """The papers' points of the model on the task that fit its space, every searched value set."""
    names = set(searched(spec, model))
    designs = []
    for point in paper_points(spec, model)[0]:
        if set(point.params) != names:
            missing = ", ".join(sorted(names - set(point.params)))
            raise ValueError(f"{point.label} leaves {missing} to the sampler; the table records whole points")
        designs.append(Design(point.label, dict(point.params), _config(spec, model, point.params)))
    return designs


def _config(spec: SweepSpec, model: str, params: dict[str, Any]) -> dict[str, Any]:
    config = trial_config(spec, model, params, seed=0)
    del config["seed"]
    return config

"""How often a model family behind another at a rung of its learning curves still ends level
with it or ahead: the prior the curves race states its odds with.

The chance is a logistic function of what the race sees at a rung: the gap between the two
families' best values there (on a log scale, each clipped at the task's memoryless baseline,
where a value is no evidence of learning yet), the trials behind each of them and how far
through a trial the rung lies. It is learned from recorded tables of learning curves
(`benchmarks/search_tables/prior.py`): random sweeps of each family drawn from a table, each
family's best at the rung against its best after the whole budget, for every pair of families;
"level" is within the tie margin (`separation.tie_margin`, at the tables' relative seed spread).
A sweep cannot learn it from its own trials: when it must decide, none of them has finished.
The shipped prior (`curve_prior.json`) says which tables and tasks it was learned from, and the
trials measured and the share of a trial it saw: outside them it says nothing (`covers`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

SHIPPED = Path(__file__).with_name("curve_prior.json")
FEATURES = ("1", "gap", "gap*ln(trials)", "gap*progress")


def features(gap: float, trials: int, progress: float) -> list[float]:
    """The logistic's inputs: the log gap beyond the race's `LEVEL` (> 0), the trials behind the
    smaller side, the rung's share of a trial."""
    return [1.0, gap, gap * math.log(max(trials, 1)), gap * progress]


@dataclass(frozen=True)
class CurvePrior:
    weights: tuple[float, ...]
    learned_from: dict[str, Any]
    trials: tuple[int, int]  # the trials measured on the smaller side it was fitted on
    progress: tuple[float, float]  # the shares of a trial its rungs lay at
    relative_noise: float  # its tables' seed spread relative to the loss: sets the tie margin of zero

    def covers(self, trials: int, progress: float) -> bool:
        """Whether the prior was fitted on comparisons like this one."""
        return (
            self.trials[0] <= trials <= self.trials[1]
            and self.progress[0] - 1e-9 <= progress <= self.progress[1] + 1e-9
        )

    def p_overtake(self, gap: float, trials: int, progress: float) -> float:
        """The chance that a family `gap` behind at a rung `progress` of the way through a trial,
        with `trials` trials measured there on the smaller side, ends level or ahead."""
        z = sum(w * x for w, x in zip(self.weights, features(gap, trials, progress), strict=True))
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))

    def as_dict(self) -> dict[str, Any]:
        return {
            "features": list(FEATURES),
            "weights": list(self.weights),
            "trials": list(self.trials),
            "progress": list(self.progress),
            "relative_noise": self.relative_noise,
            "learned_from": self.learned_from,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CurvePrior:
        if list(data["features"]) != list(FEATURES):
            raise ValueError(f"a curve prior over {data['features']}, not {list(FEATURES)}")
        low, high = data["trials"]
        first, last = data["progress"]
        return cls(
            tuple(float(w) for w in data["weights"]),
            dict(data.get("learned_from", {})),
            (int(low), int(high)),
            (float(first), float(last)),
            float(data["relative_noise"]),
        )


@cache
def shipped_prior() -> CurvePrior:
    return CurvePrior.from_dict(json.loads(SHIPPED.read_text()))

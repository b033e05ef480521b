"""What fresh seeds say about the leading models, by tests whose level holds at every look, across
invocations, whatever rule stops them.

The tie margin is `TIED` seed spreads (σ, one run's seed-to-seed spread) as the verdict states it
on the sweep's own trials: the verdict names models whose estimates lie within it of the winner's
as tied, and confirmation tests that margin, a number fixed before any confirmation run (so no
look's data moves it). Confirmation makes four claims:
- "ahead": the leader with the best mean is better than every other leader (the claim a paper
  makes when it ranks two models);
- "margin": it is ahead of every other leader by more than the tie margin;
- "tie": every pair of leaders lies within the tie margin of each other;
- none of them, "not decided", within the seeds asked.
A true gap of exactly one margin makes neither "tie" nor "ahead by more than the margin" true.

Each claim rests on one-sided tests of a shifted gap: "b's true value minus a's, less s, is above
(or below) zero", s being 0 (ahead) or ± the margin. One test is the mixture likelihood ratio of
the pair's two-sample t statistic on the shifted runs (Lai 1976; the scale-invariant t e-value of
Pérez-Ortiz, Lardy, de Heide and Grünwald 2024) between the standardized gaps `ALTERNATIVES` tie
margins' worth of seed spreads (equal weights) and zero. Under a zero gap it is a nonnegative
martingale in every look's data, so by Ville's inequality it ever reaches 1/error with
probability at most `error`, whenever the looks come and however many there are; it grows with
the statistic, and the statistic with the gap run by run, so a gap on the null's side is
rejected less often still. The seed spread is a nuisance the test is free of (no σ estimated
from few runs decides a margin, where heavy tails would make it too small), leaders with unequal
spreads run equally many seeds (where the pooled two-sample t is Welch's statistic), and the
ratio depends on the runs only through their current statistic, so a later invocation looks on
from the stored runs with nothing else to carry. An anytime-valid test rather than a
group-sequential design: `confirm` may be run again with more seeds at any time, and no horizon
fixed in advance could hold it to one.
- "ahead" and "margin": the winner is chosen from the data, so each of its comparisons is held to
  the level's error divided by the number of leaders (a wrong claim needs some leader's test
  against the truly best other leader to reject a true null: one of as many tests as leaders);
- "tie": every pair's two tests (the gap below the margin, and above minus it) at the level's
  whole error (an intersection of claims needs no division).
`benchmarks/search_tables/confirm_calibration.py` measures how often each claim is made and is
wrong, with normal, t(3), the recorded tables' and unequal seed noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from itertools import combinations
from typing import Literal

import numpy as np

TIED = 2.0  # seed spreads: true values this close to each other are a tie
FIRST_LOOK = 2  # seeds each before the first look: one run has no spread of its own
SUGGESTED_SEEDS = 5  # at first: a gap of two tie margins is "ahead" within it in 9 of 10 sweeps
ALTERNATIVES = (1.0, 1.5)  # tie margins beyond each test's null: the mixture's alternatives

Claim = Literal["ahead", "margin", "tie"]
CLAIMS: tuple[Claim, ...] = ("ahead", "margin", "tie")
RULES_OUT: dict[Claim, Claim] = {"margin": "tie", "tie": "margin"}  # no true gap makes both true
_NODES = 401  # the quadrature of `_log_h`: its relative error is far below what a critical value needs


def tie_margin(sigma: float) -> float:
    """The tie margin in the objective's units, for one run's seed spread `sigma`."""
    return TIED * sigma


def suggested_seeds(asked: int) -> int:
    """The seeds each leader to ask `confirm` for, where `asked` have been asked so far: the
    verdict's next step and `confirm`'s own suggestion after an undecided look both say this."""
    return max(SUGGESTED_SEEDS, 2 * asked)


@dataclass(frozen=True)
class Decision:
    winner: str  # the leader with the best mean
    means: dict[str, float]
    runs: dict[str, int]
    margin: float  # the tie margin tested, in the objective's units
    made: dict[Claim, bool]  # each claim, made at this look or not
    level: float

    def outcome(self, asked: Claim) -> Claim | None:
        """The claim that ends confirmation: the one asked for, or the one that rules it out."""
        if self.made[asked]:
            return asked
        other = RULES_OUT.get(asked)
        return other if other is not None and self.made[other] else None

    def line(self, asked: Claim) -> str:
        """The decision in a sentence, with what it rests on and where the other claims stand."""
        others = [m for m in self.means if m != self.winner]
        level = f"{self.level:.0%}"
        said = {
            "ahead": f"{self.winner} ahead of {_listed(others)} at {level}",
            "margin": f"{self.winner} ahead of {_listed(others)} by more than the tie margin at {level}",
            "tie": f"{_listed(list(self.means))} tie within the tie margin at {level}",
        }
        seeds = ", ".join(f"{m} {self.runs[m]}" for m in self.means)
        rests = (
            f"tie margin {self.margin:.3g}, {TIED:g} of the verdict's seed spreads; fresh seeds: {seeds}; "
            "valid at every look, across invocations"
        )
        standing = "; ".join(
            f"{CLAIM_NAMES[c]}: {'yes' if self.made[c] else 'not yet'}" for c in CLAIMS if c != asked
        )
        ended = self.outcome(asked)
        if ended is None:
            most = max(self.runs.values())
            head = f"not decided at {level} after {most} seeds each: {self.winner} leads, not yet {CLAIM_NAMES[asked]}"
        else:
            head = said[ended]
        return f"{head} ({rests}); {standing}"

    def as_dict(self, asked: Claim) -> dict[str, object]:
        return {
            "asked": asked,
            "level": self.level,
            "outcome": self.outcome(asked),
            "made": dict(self.made),
            "winner": self.winner,
            "means": dict(self.means),
            "runs": dict(self.runs),
            "margin": self.margin,
        }


CLAIM_NAMES: dict[Claim, str] = {
    "ahead": "ahead",
    "margin": "ahead by more than the tie margin",
    "tie": "tie confirmed",
}


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def decide(runs: dict[str, list[float]], mode: str, level: float, margin: float) -> Decision:
    """Each claim at this look, on each leader's confirmation values (two leaders or more, each
    with a value), against the tie `margin` in the objective's units (fixed before any of these
    runs): what `confirm` stops on and the calibration simulates."""
    if len(runs) < 2 or not all(runs.values()):
        raise ValueError("a decision needs two leaders or more, each with a confirmation value")
    if not margin >= 0:
        raise ValueError(f"the tie margin must be zero or more, got {margin}")
    sign = 1.0 if mode == "min" else -1.0
    values = {m: [sign * x for x in v] for m, v in runs.items()}  # lower is better
    means = {m: sum(v) / len(v) for m, v in values.items()}
    squares = {m: sum((x - means[m]) ** 2 for x in v) for m, v in values.items()}
    counts = {m: len(v) for m, v in values.items()}
    winner = min(means, key=means.__getitem__)
    error = 1.0 - level
    share = error / len(runs)

    def beyond(a: str, b: str, shift: float, err: float) -> bool:
        """Whether the test of (b's true value - a's - shift) > 0 rejects its null at `err`."""
        if counts[a] + counts[b] < 3:  # no spread to compare a gap with
            return False
        gap = means[b] - means[a] - shift
        scale = math.sqrt(
            (squares[a] + squares[b]) / (counts[a] + counts[b] - 2) * (1 / counts[a] + 1 / counts[b])
        )
        t = 0.0 if gap == 0 else math.copysign(math.inf, gap) if scale == 0 else gap / scale
        return t > critical(counts[a], counts[b], err)

    rivals = [m for m in runs if m != winner]
    made: dict[Claim, bool] = {
        "ahead": all(beyond(winner, m, 0.0, share) for m in rivals),
        "margin": all(beyond(winner, m, margin, share) for m in rivals),
        "tie": all(
            beyond(b, a, -margin, error) and beyond(a, b, -margin, error) for a, b in combinations(runs, 2)
        ),
    }
    shown = {m: sign * v for m, v in means.items()}
    return Decision(winner, shown, counts, margin, made, level)


def _log_h(dof: int, z: np.ndarray) -> np.ndarray:
    """log ∫_0^∞ u^dof exp(-u²/2 + z u) du, for each z: the integral over the unknown scale that
    the t statistic's likelihood is (trapezoids over ±14 widths of the integrand's peak)."""
    z = np.asarray(z, dtype=float)[..., None]
    peak = (z + np.sqrt(z * z + 4 * dof)) / 2
    width = 1 / np.sqrt(1 + dof / peak**2)
    low, high = np.maximum(peak - 14 * width, 0.0), peak + 14 * width
    u = low + (high - low) * np.linspace(0.0, 1.0, _NODES)
    with np.errstate(divide="ignore"):
        exponent = dof * np.log(u) - u * u / 2 + z * u
    weights = np.ones(_NODES)
    weights[[0, -1]] = 0.5
    top = exponent.max(axis=-1, keepdims=True)
    total = np.sum(weights * np.exp(exponent - top), axis=-1)
    return top[..., 0] + np.log(total * (high - low)[..., 0] / (_NODES - 1))


def log_e_value(r: float, n_a: int, n_b: int) -> float:
    """The log mixture likelihood ratio at the pair's statistic r = t / sqrt(t² + dof), of the
    standardized gaps δ = `ALTERNATIVES` × `TIED` against δ = 0: given the scale-free data, δ's
    likelihood is exp(-n δ²/2) H(δ √n r) up to a factor without δ, n = n_a n_b / (n_a + n_b) and
    H `_log_h`'s integral."""
    dof, n = n_a + n_b - 2, n_a * n_b / (n_a + n_b)
    deltas = np.array([d * TIED for d in ALTERNATIVES])
    logs = -n * deltas**2 / 2 + _log_h(dof, deltas * math.sqrt(n) * r) - _log_h(dof, np.zeros(1))
    top = float(logs.max())
    return top + math.log(float(np.mean(np.exp(logs - top))))


@cache
def critical(n_a: int, n_b: int, error: float) -> float:
    """The t statistic beyond which the test of a positive gap reaches 1/error, wrong with
    probability `error` at most at every look; inf where no statistic reaches it with these runs
    (its ratio is bounded: the statistic's r never exceeds 1)."""
    from scipy.optimize import brentq

    dof = n_a + n_b - 2
    target = math.log(1.0 / error)

    def excess(r: float) -> float:
        return log_e_value(r, n_a, n_b) - target

    edge = 1.0 - 1e-12
    if excess(edge) < 0:
        return math.inf
    r = brentq(excess, 0.0, edge, xtol=1e-13)
    return r * math.sqrt(dof) / math.sqrt(1 - r * r)

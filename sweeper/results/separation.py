"""Whether fresh seeds separate the leading models or confirm their tie, by a rule whose level
holds however many times it looks.

The tie margin is `TIED` seed spreads (σ, one run's seed-to-seed spread): the verdict names
models whose estimates lie within it of the winner's as tied, and confirmation decides between:
- "separated": the best mean's model is ahead of every other leader by more than the margin;
- "tied": every pair of leaders lies within the margin of each other;
- "undecided": neither, at this look.
Each claim is a test on the leaders' confirmation runs with σ unknown and pooled over them: the
difference of two means over σ̂ is a noncentral t, whose noncentrality at the margin is
`TIED / sqrt(1/n_a + 1/n_b)`, so the test is exact for normal seed noise at any number of runs.
Looks are indexed by the seeds asked of each leader (s = 2, 3, ...), across invocations, and look
s may be wrong with probability (1 - level) / ((s - 1) s) at most, which sums to 1 - level over
every look there could ever be: a claim is right with at least the stated level whatever round
it stops at. "Separated" picks its model from the data, so each of its comparisons is held to the
look's share divided by the number of leaders; a tie is claimed only when every pair's test says
so (an intersection of claims needs no division). `benchmarks/search_tables/confirm_calibration.py`
measures how often each claim is wrong, with the tables' own seed noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Literal

TIED = 2.0  # seed spreads: true values this close to each other are a tie
FIRST_LOOK = 2  # seeds each before the first look: one run has no spread of its own

Outcome = Literal["separated", "tied", "undecided"]


def tie_margin(sigma: float) -> float:
    """The tie margin in the objective's units, for one run's seed spread `sigma`."""
    return TIED * sigma


def look_error(level: float, look: int) -> float:
    """The error rate look `look` may spend (seeds asked of each leader, from `FIRST_LOOK`)."""
    if look < FIRST_LOOK:
        raise ValueError(f"a look needs {FIRST_LOOK} seeds or more, got {look}")
    return (1.0 - level) / ((look - 1) * look)


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    winner: str  # the leader with the best mean
    means: dict[str, float]
    runs: dict[str, int]
    sigma: float  # pooled over the leaders' runs
    dof: int
    look: int
    error: float  # what this look may spend: a claim made here is wrong this often at most

    @property
    def margin(self) -> float:
        return tie_margin(self.sigma)

    def line(self, level: float) -> str:
        """The decision in a sentence, with what it rests on."""
        others = [m for m in self.means if m != self.winner]
        seeds = ", ".join(f"{m} {self.runs[m]}" for m in self.means)
        rests = (
            f"tie margin {TIED:g} seed spreads = {self.margin:.3g} (σ {self.sigma:.3g}, {self.dof} degrees of "
            f"freedom); fresh seeds: {seeds}; valid at every look, across invocations"
        )
        if self.outcome == "separated":
            return (
                f"{self.winner} ahead of {_listed(others)} by more than the tie margin at {level:.0%} "
                f"(separated; {rests})"
            )
        if self.outcome == "tied":
            return f"{_listed(list(self.means))} tie within the tie margin at {level:.0%} (tie confirmed; {rests})"
        return (
            f"not decided at {level:.0%} after {self.look} seeds each: {self.winner} leads, neither "
            f"separated nor confirmed tied ({rests})"
        )


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def decide(runs: dict[str, list[float]], mode: str, level: float, look: int) -> Decision:
    """The decision at look `look` on each leader's confirmation values (two leaders or more,
    each with a value)."""
    if len(runs) < 2 or not all(runs.values()):
        raise ValueError("a decision needs two leaders or more, each with a confirmation value")
    sign = 1.0 if mode == "min" else -1.0
    means = {m: sign * sum(v) / len(v) for m, v in runs.items()}  # lower is better
    counts = {m: len(v) for m, v in runs.items()}
    dof = sum(n - 1 for n in counts.values())
    squares = sum((sign * x - means[m]) ** 2 for m, v in runs.items() for x in v)
    sigma = math.sqrt(squares / dof) if dof else math.nan
    winner = min(means, key=means.__getitem__)
    error = look_error(level, look)

    def statistic(a: str, b: str) -> float:
        """(mean b - mean a) in standard errors: > 0 where a is ahead."""
        gap = means[b] - means[a]
        scale = sigma * math.sqrt(1 / counts[a] + 1 / counts[b])
        return 0.0 if gap == 0 else math.copysign(math.inf, gap) if scale == 0 else gap / scale

    outcome: Outcome = "undecided"
    names = list(runs)
    share = error / len(names)
    if dof >= 1 and all(
        statistic(winner, m) > ahead_critical(dof, counts[winner], counts[m], share)
        for m in names
        if m != winner
    ):
        outcome = "separated"
    elif dof >= 1 and all(
        abs(statistic(a, b)) < tie_critical(dof, counts[a], counts[b], error)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    ):
        outcome = "tied"
    shown = {m: sign * v for m, v in means.items()}
    return Decision(outcome, winner, shown, counts, sigma, dof, look, error)


def _noncentrality(n_a: int, n_b: int) -> float:
    return TIED / math.sqrt(1 / n_a + 1 / n_b)


@cache
def ahead_critical(dof: int, n_a: int, n_b: int, error: float) -> float:
    """The standardized gap beyond which a is ahead of b by more than the margin: wrong with
    probability `error` where the true gap is exactly the margin, less where it is smaller."""
    from scipy.stats import nct

    return float(nct.ppf(1.0 - error, dof, _noncentrality(n_a, n_b)))


@cache
def tie_critical(dof: int, n_a: int, n_b: int, error: float) -> float:
    """The standardized gap within which a and b tie: |T| falls below it with probability
    `error` where the true gap is exactly the margin (either way), less where it is larger."""
    from scipy.optimize import brentq
    from scipy.stats import nct

    delta = _noncentrality(n_a, n_b)

    def inside(c: float) -> float:
        return float(nct.cdf(c, dof, delta) - nct.cdf(-c, dof, delta)) - error

    if inside(0.0) >= 0:
        return 0.0
    high = delta
    while inside(high) < 0:
        high *= 2
    return float(brentq(inside, 0.0, high, xtol=1e-10))

"""The odds of a sweep's verdict: how likely the named winner is the true one, and which models
tie with it within the noise the sweep can estimate.

Each model stands for its best configuration: the value of its best trial (one seed, and a
sweep's best is biased low: the winner's curse), or the mean of its confirmation runs on fresh
seeds once `sweeper confirm` has run. One run's value scatters with its seed by a spread σ in the
objective's units, estimated from, in this order:
- repeated seeds: the confirmation runs of any model (each model's runs about their mean);
- near-identical configurations: pairs of the sweep's complete trials of one model whose every
  searched value lies within 5% of its range (and whose choices agree), which differ by little
  but their seed;
- the recorded tables' repeated seeds (`seed_noise.json`, `benchmarks/search_tables/prior.py`: the
  median spread relative to the value), times the winner's value, where the sweep has neither.
A model's best configuration may also lie where the sweep has not looked: its estimate can still
improve by a search spread, drawn exponentially with the mean gap between the model's best
complete trials (a tail that its top trials spread over is likely to reach further); a model with
one complete trial takes the other models' median gap. A model's true value is then its estimate
scattered by σ/√runs and improved by its search spread; the chance that the named winner is the
best is the share of draws where it is best. Where σ is estimated from few runs, each draw
takes its own σ from that estimate's spread (so a model's scatter is a t, not a normal).

The tie margin (`separation.tie_margin`: two seed spreads, two standard errors of the difference
of two-seed means, the rule the search benchmark's truth uses) is the one `sweeper confirm`
decides with: the models whose estimates lie within it of the winner's are named tied with it. A
tie is a claim about the models' true values: that each named one lies within the margin of the
best. Its stated chance is the share of draws where that holds for every named model, not the
chance that the best is among them (which a tie padded with a near-miss would raise).

The trials are the sweep's own: a trial copied from an earlier sweep (a warm start) informs the
sampler only, as in the verdict (`best_trial`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from optuna.distributions import CategoricalDistribution
from optuna.trial import FrozenTrial, TrialState

from sweeper.results.calibration import calibrated, search_of
from sweeper.results.loss_scale import as_loss, resolved
from sweeper.results.retrained import confirmed
from sweeper.results.separation import suggested_seeds, tie_margin
from sweeper.spec.loading import stored_spec
from sweeper.spec.space import searched_count
from sweeper.store.database import Store, SweepRecord
from sweeper.store.states import SweepStatus
from sweeper.store.trial_record import own_trials

SEED_NOISE = Path(__file__).with_name("seed_noise.json")
NEAR = 0.05  # of each searched range: configurations this close differ by little but their seed
DRAWS = 20_000


def signed(value: float, mode: str) -> float:
    """The value where lower is better."""
    return value if mode == "min" else -value


@dataclass(frozen=True)
class Estimate:
    value: float
    runs: int
    source: str  # "its best trial" or "k confirmation runs"
    search: float | None = None  # the search spread (see the module's docstring); None: none


TOP = 4  # complete trials whose gaps give a model's search spread
FEW_DRAWS = 1  # complete trials per searched value below which a model's best may lie where none looked


def few_draws(complete: dict[str, int], searched: dict[str, int], winner: str) -> dict[str, tuple[int, int]]:
    """The winner's rivals drawn too thinly to rule out a better configuration of theirs: fewer
    complete trials than `FEW_DRAWS` per searched value (their complete trials, searched values).
    The winner's own best can only improve, which the answer does not change."""
    return {
        m: (complete.get(m, 0), n)
        for m, n in searched.items()
        if m != winner and n and complete.get(m, 0) < FEW_DRAWS * n
    }


def search_spread(values: list[float], mode: str) -> float | None:
    """The mean gap between a model's best complete values (None with fewer than two)."""
    ranked = sorted(signed(v, mode) for v in values)[:TOP]
    return float(np.mean(np.diff(ranked))) if len(ranked) > 1 else None


def with_search(estimates: dict[str, Estimate], spreads: dict[str, float | None]) -> dict[str, Estimate]:
    """The estimates with their models' search spreads, the median of the others' where a model
    has none."""
    known = [s for s in spreads.values() if s is not None]
    fallback = float(np.median(known)) if known else 0.0
    return {
        m: dataclasses.replace(e, search=fallback if spreads.get(m) is None else spreads[m])
        for m, e in estimates.items()
    }


@dataclass(frozen=True)
class Noise:
    sigma: float  # one run's seed spread, in the objective's units
    source: str
    samples: int = 0


@dataclass(frozen=True)
class Odds:
    winner: str
    p_winner: float
    p_best: dict[str, float]
    co_winners: list[str]  # the winner first, then the models tied with it
    noise: Noise
    estimates: dict[str, Estimate] = field(default_factory=dict)
    p_tie: float | None = None  # P(every co-winner's true value is tied with the best); None: no tie
    # where the stated chance was recalibrated (`calibration`): what the model of the odds said
    modelled: float | None = None
    # rivals whose best may lie where the search has not looked (`few_draws`): complete, searched
    thin: dict[str, tuple[int, int]] = field(default_factory=dict)
    # each model's chance that its true value lies within the tie margin of the best: a co-winner
    p_level: dict[str, float] = field(default_factory=dict)

    @property
    def tie(self) -> bool:
        return len(self.co_winners) > 1

    @property
    def confirmed_seeds(self) -> int:
        """The most confirmation runs any model's estimate rests on (0: none confirmed yet)."""
        return max((e.runs for e in self.estimates.values() if e.runs > 1), default=0)

    @property
    def stated(self) -> float:
        """The chance the verdict states: that its tie holds where it names one, else that its
        winner is the true one."""
        return self.p_tie if self.tie and self.p_tie is not None else self.p_winner

    def lines(self, sweep: str) -> list[str]:
        seeds = suggested_seeds(self.confirmed_seeds)
        noise = f"seed noise {self.noise.sigma:.3g}, from {self.noise.source}"
        if any(e.search for e in self.estimates.values()):
            noise += "; and how much further each model's search could reach"
        if self.modelled is not None:
            noise += (
                f"; {self.modelled:.2f} by that model, recalibrated to how often such verdicts were "
                "right on the recorded tables' replayed sweeps"
            )
        warning = [] if not self.thin else [self.thin_line()]
        if not self.tie:
            return [f"P({self.winner} is the true winner) = {self.p_winner:.2f} ({noise})", *warning]
        names = " and ".join([", ".join(self.co_winners[:-1]), self.co_winners[-1]])
        return [
            f"{names} tie within seed noise (P {self.p_tie:.2f}; {self.winner} ahead in "
            f"{100 * self.p_winner:.0f}%; {noise}): `sweeper confirm {sweep} --seeds {seeds}` "
            f"gives each of them fresh seeds, up to {seeds}, until one is shown ahead of the rest",
            *warning,
        ]

    def thin_line(self) -> str:
        """The word that the search may have missed a rival's best, and what it rests on."""
        drawn = ", ".join(f"{m} {c}/{n}" for m, (c, n) in self.thin.items())
        return (
            f"the search may have missed a rival's better configuration ({drawn}: complete trials "
            "over searched values, fewer trials than values); the odds count only what it drew and "
            "`confirm` re-seeds only what it found"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "winner": self.winner,
            "p_winner": self.p_winner,
            "p_best": self.p_best,
            "co_winners": self.co_winners,
            "p_tie": self.p_tie,
            "p_modelled": self.modelled,
            "few_draws": {m: list(v) for m, v in self.thin.items()},
            "p_level": self.p_level,
            "noise": self.noise.sigma,
            "noise_source": self.noise.source,
            "based_on": {m: e.source for m, e in self.estimates.items()},
        }


def shipped_relative() -> tuple[float, list[str]]:
    """The recorded tables' seed spread relative to the loss (`loss_scale`), and the tables."""
    data = json.loads(SEED_NOISE.read_text())
    return float(data["relative"]), list(data["tables"])


def shipped_noise(value: float, mode: str) -> Noise:
    """The recorded tables' seed spread at `value`."""
    relative, tables = shipped_relative()
    return Noise(
        relative * resolved(as_loss(value, mode), mode),
        f"the recorded tables' repeated seeds ({', '.join(tables)}), none of this sweep's",
    )


def seed_noise(
    repeated: list[list[float]],
    near_pairs: list[float],
    winner_value: float,
    mode: str,
    fallback: Noise | None = None,
) -> Noise:
    """σ from repeated seeds (values per configuration), else from near-identical pairs (their
    differences), else `fallback` (the recorded tables' at the winner's value)."""
    groups = [g for g in repeated if len(g) > 1]
    dof = sum(len(g) - 1 for g in groups)
    if dof >= 2:
        squares = sum(float(np.sum((np.array(g) - np.mean(g)) ** 2)) for g in groups)
        return Noise(
            math.sqrt(squares / dof), f"repeated seeds ({sum(map(len, groups))} confirmation runs)", dof
        )
    if len(near_pairs) >= 3:
        return Noise(
            math.sqrt(float(np.mean(np.square(near_pairs))) / 2),
            f"near-identical configurations ({len(near_pairs)} pairs)",
            len(near_pairs),
        )
    return fallback if fallback is not None else shipped_noise(winner_value, mode)


def odds(estimates: dict[str, Estimate], noise: Noise, mode: str, seed: int = 0) -> Odds | None:
    """The odds over the models with an estimate; None with fewer than one."""
    if not estimates:
        return None
    models = list(estimates)
    centre = np.array([signed(estimates[m].value, mode) for m in models])
    spread = np.array([noise.sigma / math.sqrt(estimates[m].runs) for m in models])
    search = np.array([estimates[m].search or 0.0 for m in models])
    rng = np.random.default_rng(seed)
    scale = np.ones((DRAWS, 1))
    if noise.samples:  # σ estimated with this many degrees of freedom: each draw takes its own
        scale = np.sqrt(noise.samples / rng.chisquare(noise.samples, (DRAWS, 1)))
    draws = centre + scale * spread * rng.standard_normal((DRAWS, len(models)))
    draws -= search * rng.standard_exponential((DRAWS, len(models)))
    wins = np.bincount(np.argmin(draws, axis=1), minlength=len(models)) / DRAWS
    p_best = {m: float(w) for m, w in zip(models, wins, strict=True)}
    winner = models[int(np.argmin(centre))]
    w = models.index(winner)

    margin = tie_margin(noise.sigma)
    tied = sorted(
        (m for k, m in enumerate(models) if k != w and centre[k] - centre[w] <= margin),
        key=lambda m: centre[models.index(m)],
    )
    co = [winner, *tied]
    named = [models.index(m) for m in co]
    tie = np.all(draws[:, named] - draws.min(axis=1, keepdims=True) <= margin, axis=1)
    p_tie = float(tie.mean()) if tied else None
    level = draws - draws.min(axis=1, keepdims=True) <= margin
    p_level = {m: float(share) for m, share in zip(models, level.mean(axis=0), strict=True)}
    return Odds(winner, p_best[winner], p_best, co, noise, estimates, p_tie, p_level=p_level)


def near_identical(trials: list[FrozenTrial], mode: str) -> list[float]:
    """The differences of the complete trials' pairs that differ by little but their seed."""
    done = [t for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
    out = []
    for i, a in enumerate(done):
        for b in done[i + 1 :]:
            if _close(a, b):
                out.append(float(a.value) - float(b.value))  # type: ignore[arg-type]
    return out


def _close(a: FrozenTrial, b: FrozenTrial) -> bool:
    if set(a.params) != set(b.params):
        return False
    for name, d in a.distributions.items():
        if isinstance(d, CategoricalDistribution):
            if a.params[name] != b.params[name]:
                return False
            continue
        low, high, x, y = float(d.low), float(d.high), float(a.params[name]), float(b.params[name])
        if getattr(d, "log", False):
            low, high, x, y = (math.log(v) for v in (low, high, x, y))
        if high > low and abs(x - y) > NEAR * (high - low):
            return False
    return True


def trial_odds(
    trials: dict[str, list[FrozenTrial]], mode: str, confirmations: dict[str, list[float]] | None = None
) -> Odds | None:
    """The odds over models' complete trials (see the module's docstring): each model's best, or
    the mean of its `confirmations` where it has them; what the verdict and the race both state."""
    confirmations = confirmations or {}
    estimates: dict[str, Estimate] = {}
    spreads: dict[str, float | None] = {}
    pairs: list[float] = []
    for model, done in trials.items():
        pairs += near_identical(done, mode)
        values = [float(t.value) for t in done if t.value is not None]
        spreads[model] = search_spread(values, mode)
        if model in confirmations:
            runs = confirmations[model]
            estimates[model] = Estimate(float(np.mean(runs)), len(runs), f"{len(runs)} confirmation runs")
        elif values:
            estimates[model] = Estimate(min(values, key=lambda v: signed(v, mode)), 1, "its best trial")
    if not estimates:
        return None
    winner = min(estimates.values(), key=lambda e: signed(e.value, mode))
    noise = seed_noise(list(confirmations.values()), pairs, winner.value, mode)
    return odds(with_search(estimates, spreads), noise, mode)


def sweep_odds(store: Store, record: SweepRecord, confirmations_too: bool = True) -> Odds | None:
    """The odds of a stored sweep's verdict (see the module's docstring); on its trials alone
    without `confirmations_too` (the leaders `sweeper confirm` takes, which its runs must not move)."""
    spec = stored_spec(record)
    mode = spec.resolved_objective().mode
    confirmations = (
        {c.model: list(c.objectives) for c in confirmed(store, record) if c.objectives}
        if confirmations_too
        else {}
    )
    trials = {s.model: own_trials(store.study(s.study_name), (TrialState.COMPLETE,)) for s in record.studies}
    said = trial_odds(trials, mode, confirmations)
    if said is None:
        return None
    complete = {m: len(done) for m, done in trials.items()}
    searched = {s.model: searched_count(spec, s.model) for s in record.studies}
    said = dataclasses.replace(said, thin=few_draws(complete, searched, said.winner))
    # the map was learned on finished sweeps' own trials: not mid-sweep, nor on fresh seeds
    if confirmations or record.status != SweepStatus.FINISHED:
        return said
    return recalibrated(said, search_of(spec.sampler, spec.budget.allocate))


def recalibrated(said: Odds, search: str) -> Odds:
    """The odds with their stated chance replaced by how often such verdicts were right at a
    sweep's end (`calibration`), the other models' chances scaled to the rest."""
    modelled = said.stated
    stated = calibrated(modelled, said.tie, search)
    if stated == modelled:
        return said
    if said.tie:
        return dataclasses.replace(said, p_tie=stated, modelled=modelled)
    rest = 1.0 - said.p_winner
    scale = (1.0 - stated) / rest if rest > 0 else 0.0
    p_best = {m: stated if m == said.winner else p * scale for m, p in said.p_best.items()}
    return dataclasses.replace(said, p_winner=stated, p_best=p_best, modelled=modelled)

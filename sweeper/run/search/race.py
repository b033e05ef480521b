"""Racing models: successive halving across a sweep's studies, stopping a model only on evidence
that it does not tie for the win.

Every model first gets a rung of trials. Once each model still in the race has finished its
rung, the worse half (by best objective) may stop, but only a model whose stated chance of being a
co-winner (its true value within the tie margin of the best: the verdict's event, from the
service's own odds on the race's complete trials) is below `DROP_BELOW` and whose best lies at
least `BEHIND_AT_LEAST` tie margins behind the leader's, and which the verdict would not warn
was drawn too thinly (`odds.few_draws`: fewer complete trials than searched values), and only
where the survivors could then run a rung twice as long within the budget (a cut at the last rung
would move only the few trials left); or whose whole rung ended without a complete trial. The
reason and that chance are stored on its study.
The last two conditions are there because a rung draws a few configurations of each model: the
odds' search spread, estimated from them, cannot see a better region none was drawn in. In the
recorded tables' replayed races true co-winners were stopped at P < 0.02 from up to about 11 tie
margins behind, and parenthesis's sole winner, NC-GRU, from 42 margins behind on 2-4 complete
trials of its 9 searched values; with both conditions, every co-winner still stopped was
stopped at the last rung, 20 of 24 trials (the benchmarks README, races judged). The rest go
on to a rung twice as long, as do all where no model could be stopped but one of the worse half
was drawn too thinly; where none could be stopped otherwise, the models left tie as far as the race
can tell, halving stops and they share what is left. A model in `budget.race_exempt` runs beside
the race: never stopped, not ranked against the others. The trials the stopped models did not
spend go to the survivors: the sweep never spends more than an equal budget would (trials ×
models).

The state lives in the studies (`RACE_STOP_ATTR`, `SHARE_ATTR`), so `resume` picks the race up.
"""

from __future__ import annotations

import math
from typing import Protocol

import optuna
from optuna.trial import TrialState

from sweeper.results.odds import Odds, few_draws, signed, trial_odds
from sweeper.results.separation import tie_margin
from sweeper.run.search.samplers import startup_trials
from sweeper.spec.sweep import SweepSpec
from sweeper.store.trial_record import RACE_STOP_ATTR, SHARE_ATTR, own_trials

DROP_BELOW = 0.02  # a model's stated chance of being a co-winner below which the race may stop it
BEHIND_AT_LEAST = 12.0  # tie margins behind the leader's best a model must lie for the race to stop it


def race_rung(spec: SweepSpec, papers: int = 0) -> int:
    """A race's first rung, in trials per model: the spec's number, or a quarter of the budget but
    never fewer than a study's papers' points (at most `papers`) and random startup trials. Models
    are first compared on an unbiased sample of their spaces; a model cut on one or two draws is
    cut on luck."""
    if spec.budget.race_rung is not None:
        return spec.budget.race_rung
    startup = max(startup_trials(spec, model) for model in spec.models)
    return max(2, spec.budget.trials // 4, papers + startup)


class Raced(Protocol):
    """What the race reads and sets of a study's plan (`run.search.StudyPlan`)."""

    study: optuna.Study
    model: str
    budget: int
    best: float | None
    running: int

    @property
    def done(self) -> int: ...

    @property
    def remaining(self) -> int: ...


class Race:
    def __init__(
        self,
        plans: list[Raced],
        trials: int,
        rung: int,
        mode: str,
        searched: dict[str, int],
        exempt: list[str] | None = None,
    ) -> None:
        self.plans = plans
        self.searched = searched  # each model's searched values (`spec.space.searched_count`)
        self.exempt = set(exempt or [])
        self.total = trials * len(plans)
        self.rung = rung
        self.mode = mode
        stops = {p.model: p.study.user_attrs.get(RACE_STOP_ATTR) for p in plans}
        self.stopped = {model: stop["reason"] for model, stop in stops.items() if stop}
        self.cuts = max((stop["cut"] + 1 for stop in stops.values() if stop), default=0)
        self.final = False
        self._allot()

    def alive(self) -> list[Raced]:
        return [p for p in self.plans if p.model not in self.stopped]

    def contenders(self) -> list[Raced]:
        """The models still in the race that it may stop: an exempt one runs beside it."""
        return [p for p in self.alive() if p.model not in self.exempt]

    def reported(self, plan: Raced, number: int, step: int, value: float) -> None:
        """A trial's report: this race decides on complete trials only."""

    def trial_ended(self, plan: Raced, number: int) -> None:
        self.update()

    def update(self) -> None:
        """After a trial ends: cut the field once every model in it has finished its rung."""
        alive = self.alive()
        if self.final or len(alive) < 2:
            return
        if any(p.running or p.remaining > 0 for p in alive):  # a plan out of steps or time has run its rung
            return
        ranked = sorted(self.contenders(), key=self._rank)
        leader = ranked[0]
        trials = complete_trials(alive)
        said = trial_odds(trials, self.mode)
        chances = {} if said is None else said.p_level
        behind = {} if said is None else margins_behind(said, self.mode)
        thin = few_draws({m: len(done) for m, done in trials.items()}, self.searched, leader.model)
        worse = ranked[math.ceil(len(ranked) / 2) :]
        unfinished = [p for p in worse if p.model not in chances]
        beaten = [
            p
            for p in worse
            if p.model in chances
            and chances[p.model] < DROP_BELOW
            and behind[p.model] >= BEHIND_AT_LEAST
            and p.model not in thin
        ]
        if not self._next_rung_fits(len(alive) - len(unfinished) - len(beaten), [*unfinished, *beaten]):
            beaten = []  # the last rung: the models left share the few trials there are
        dropped = [*unfinished, *beaten]
        if not dropped and any(p.model in thin for p in worse):  # too few draws to tell: a longer rung
            self.cuts += 1
            self._allot()
            return
        if not dropped:  # the models left tie as far as the race can tell: they share what is left
            self.final = True
            self._share(alive)
            return
        for plan in dropped:
            why = (
                f"P(within the tie margin of the best) = {chances[plan.model]:.2f}, "
                f"{behind[plan.model]:.3g} tie margins behind"
                if plan.model in chances
                else "no complete trial in its rung"
            )
            reason = (
                f"stopped by the race after {plan.done} trials: {why}; best {_shown(plan.best)} "
                f"against {leader.model}'s {_shown(leader.best)}"
            )
            self.stopped[plan.model] = reason
            plan.study.set_user_attr(RACE_STOP_ATTR, {"cut": self.cuts, "reason": reason})
        self.cuts += 1
        self._allot()

    def odds(self, plans: list[Raced]) -> Odds | None:
        """The verdict's own odds on the plans' complete trials: each model's stated chance that
        its true value lies within the tie margin of the best (`p_level`; none for a model without
        a complete trial)."""
        return trial_odds(complete_trials(plans), self.mode)

    def _allot(self) -> None:
        """Each plan's budget: what it ran once stopped; the next rung, or the rest shared."""
        for plan in self.plans:
            if plan.model in self.stopped:
                plan.budget = plan.done
        alive = self.alive()
        rung = self.rung * 2**self.cuts
        if len(self.contenders()) < 2 or rung * len(alive) >= self._left():
            self.final = True
            self._share(alive)
            return
        for plan in alive:
            plan.budget = rung
        for plan in self.plans:
            plan.study.set_user_attr(SHARE_ATTR, plan.budget)

    def _next_rung_fits(self, survivors: int, dropped: list[Raced]) -> bool:
        """Whether, once `dropped` stop, the `survivors` could each run a rung twice as long as
        this one within the budget: a cut there sends them on; one at the last rung would only
        move the few trials left."""
        left = self._left() - sum(p.done for p in dropped)
        return self.rung * 2 ** (self.cuts + 1) * survivors <= left

    def _left(self) -> int:
        return self.total - sum(p.done for p in self.plans if p.model in self.stopped)

    def _share(self, alive: list[Raced]) -> None:
        """The models left share what the stopped ones did not spend."""
        share, extra = divmod(self._left(), max(1, len(alive)))
        for index, plan in enumerate(alive):
            plan.budget = share + (index < extra)
        for plan in self.plans:
            plan.study.set_user_attr(SHARE_ATTR, plan.budget)

    def _rank(self, plan: Raced) -> tuple[bool, float]:
        if plan.best is None:
            return (True, 0.0)
        return (False, plan.best if self.mode == "min" else -plan.best)


def complete_trials(plans: list[Raced]) -> dict[str, list[optuna.trial.FrozenTrial]]:
    """Each plan's own complete trials: what the race's odds and its count of draws read."""
    return {p.model: own_trials(p.study, (TrialState.COMPLETE,)) for p in plans}


def margins_behind(said: Odds, mode: str) -> dict[str, float]:
    """How many tie margins each model's estimate lies behind the best one's; none where the
    seed noise came out nil (runs that repeated one another exactly measure no margin to count
    in, so no model is shown that far behind)."""
    margin = tie_margin(said.noise.sigma)
    values = {m: signed(e.value, mode) for m, e in said.estimates.items()}
    best = min(values.values())
    return {m: (v - best) / margin if margin > 0 else 0.0 for m, v in values.items()}


def _shown(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"

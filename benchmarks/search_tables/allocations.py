"""Two allocations across model families that the replay compares the service's with; the
service does not offer them, so they plug into its searcher here, with the race's interface
(`reported`, `trial_ended`, `stopped`, `final`).

- `TopAfterOneRung`: the plain baseline any early-stopping rule must beat ("Is one epoch all you
  need?", Egele et al. 2023) at the level of families: once each family has `per_family` trials
  measured at ASHA's first rung, the `keep` families with the best value there go on and the
  rest are dropped (their running trials stopped by `RaceStops`, their unspent trials shared by
  the others).
- `MaxUCB`: full runs allocated by a max-armed bandit ("Put CASH on Bandits", Balef, Vernade,
  Eggensperger 2025, the MaxUCB policy of their code): each family is pulled once, then the next
  trial goes to the family with the highest max reward plus (alpha ln t / n)^2, rewards being
  complete trials' values min-max scaled to [0.01, 0.99] (lower loss, higher reward). A family
  whose pulls have not finished yet counts as unexplored.
"""

from __future__ import annotations

import math
from typing import Any

from ray.tune.schedulers import TrialScheduler

from sweeper.results.loss_scale import as_loss
from sweeper.run.search.pruning import Wrapped
from sweeper.store.trial_record import RACE_STOP_ATTR

ALPHA = 0.5  # MaxUCB's exploration constant, as its authors' code sets it


class RaceStops(Wrapped):
    """Tune's scheduler with a race's drops mid-trial: a trial of a dropped family stops at its
    next report (its worker goes to the families still in the race); every other decision is the
    sweep's own scheduler's."""

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        race = self.searcher.race
        if race is not None and trial.config.get("model") in race.stopped:
            return TrialScheduler.STOP
        return self.inner.on_trial_result(tune_controller, trial, result)


class TopAfterOneRung:
    def __init__(
        self, plans: list[Any], trials: int, first_rung: int, mode: str, keep: int = 2, per_family: int = 2
    ):
        self.plans = plans
        self.total = trials * len(plans)
        self.first_rung = first_rung
        self.mode = mode
        self.keep = keep
        self.per_family = per_family
        self.at: dict[str, dict[int, float]] = {p.model: {} for p in plans}  # value at the first rung
        self.ended: dict[str, set[int]] = {p.model: set() for p in plans}
        self.stopped: dict[str, str] = {}
        self.decided = False

    @property
    def final(self) -> bool:
        return self.decided

    def reported(self, plan: Any, number: int, step: int, value: float) -> None:
        if step >= self.first_rung and number not in self.at[plan.model]:
            self.at[plan.model][number] = as_loss(value, self.mode)
            self._decide()

    def trial_ended(self, plan: Any, number: int) -> None:
        self.ended[plan.model].add(number)
        self._decide()

    def _measured(self, model: str) -> int:
        return len(set(self.at[model]) | self.ended[model])

    def _decide(self) -> None:
        if self.decided or any(self._measured(p.model) < self.per_family for p in self.plans):
            return
        self.decided = True
        best = {p.model: min(self.at[p.model].values(), default=math.inf) for p in self.plans}
        ranked = sorted(best, key=best.__getitem__)
        for plan in self.plans:
            if plan.model in ranked[self.keep :]:
                reason = f"not among the best {self.keep} at iteration {self.first_rung}"
                self.stopped[plan.model] = reason
                plan.study.set_user_attr(RACE_STOP_ATTR, {"cut": 0, "reason": reason})
                plan.budget = plan.done + plan.running
        alive = [p for p in self.plans if p.model not in self.stopped]
        left = self.total - sum(p.budget for p in self.plans if p.model in self.stopped)
        share, extra = divmod(left, len(alive))
        for index, plan in enumerate(alive):
            plan.budget = share + (index < extra)


class MaxUCB:
    def __init__(self, plans: list[Any], trials: int, mode: str):
        self.plans = plans
        self.total = trials * len(plans)
        self.mode = mode
        self.values: dict[str, list[float]] = {p.model: [] for p in plans}
        self.stopped: dict[str, str] = {}
        self.final = True
        for plan in plans:
            plan.budget = self.total

    def reported(self, plan: Any, number: int, step: int, value: float) -> None:
        """Rewards are complete trials' values (`observe`)."""

    def trial_ended(self, plan: Any, number: int) -> None:
        """The searcher has counted the trial; its value came through `observe`."""

    def observe(self, model: str, value: float) -> None:
        self.values[model].append(as_loss(value, self.mode))

    def next_plan(self) -> Any:
        """The plan the next trial goes to, or None once the sweep's trials are all handed out."""
        pulled = {p.model: p.done + p.running for p in self.plans}
        if sum(pulled.values()) >= self.total:
            return None
        unexplored = [p for p in self.plans if not self.values[p.model]]
        if unexplored:
            return min(unexplored, key=lambda p: pulled[p.model])
        seen = [v for vs in self.values.values() for v in vs]
        low, high = min(seen), max(seen)
        t = sum(pulled.values()) + 1

        def index(plan: Any) -> float:
            rewards = [
                0.01 + 0.98 * (high - v) / (high - low) if high > low else 0.5
                for v in self.values[plan.model]
            ]
            return max(rewards) + (ALPHA * math.log(t) / pulled[plan.model]) ** 2

        return max(self.plans, key=index)

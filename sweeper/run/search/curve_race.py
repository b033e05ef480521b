"""Racing model families on their learning curves: a family is dropped, on partial curves or at
the last rung, once its stated chance to end level with the leader or ahead of it falls below
`budget.drop_below`.

At every rung of ASHA's (the iterations where it compares a study's trials), each family's best
value there is compared with the leader's at the highest rung both have reached, on the loss
scale (`loss_scale`) and in logs, each value clipped at the task's memoryless baseline (above it a
value is no evidence of learning) and at the tie margin of zero (the tables' relative seed spread
at the baseline, twice: below it a task is solved, and two solved families are level). A family
whose best lies within `LEVEL` of the leader's (twice its loss) is level with it and never dropped:
a family's best after a sweep's trials is one draw of what it can reach, and on the recorded
tables true co-winners' sweeps stood up to about that far apart. Beyond it, the chance that the
family ends level or ahead is the larger of two:
- the ranks' (`untried_chance`): the probability that the leader's trials ahead of the family's
  best (by more than `LEVEL`) would all be the leader's if both families' configurations were
  alike. It rests on nothing learned elsewhere, so it holds on any task, at any rung: it is small
  only when many of the leader's trials beat the family's best, and a family that has drawn a few
  poor configurations is not dropped for them;
- the curve prior's (`curve_prior`), a logistic of the log gap beyond `LEVEL`, the trials behind
  the smaller side and how far through a trial the rung lies, learned from recorded tables and
  used only within the trials measured and the share of a trial it was fitted on. It can keep a
  family the ranks would drop, never drop one they keep: learned on one task, it dropped true
  co-winners of another (the search tables' replay, leave-one-task-out).
The leader is the family that is ahead of the most others at their common rungs. A family below
the threshold is dropped: its running trials are stopped at their next report
(`pruning.RaceStops`), its study records the iteration, the evidence and the odds
(`RACE_STOP_ATTR`), and its unspent trials go to the families still in the race, so the sweep
never spends more than an equal budget would. Models in `budget.race_exempt` and the leader are
never dropped. What a drop states is judged by the search tables' replay
(`benchmarks/search_tables/racing.py`): how often a dropped family was a true co-winner.

The state lives in the studies (their trials' intermediate values and `RACE_STOP_ATTR`), so a
resumed sweep finds the race where it was.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

from optuna.trial import TrialState

from sweeper.results.loss_scale import as_loss, from_loss, resolved
from sweeper.results.separation import tie_margin
from sweeper.run.search.curve_prior import CurvePrior
from sweeper.run.search.race import Raced
from sweeper.store.trial_record import INTERRUPTED_ATTR, RACE_STOP_ATTR, SHARE_ATTR, own_trials

LEVEL = math.log(2.0)  # a family within twice the leader's loss is level with it


def solved_scale(baseline: float | None, mode: str, relative_noise: float) -> Callable[[float], float]:
    """The race's scale: a loss in logs (`loss_scale.resolved`), clipped at the baseline's loss
    and at the tie margin of zero (the seed spread `relative_noise` at the baseline's loss, twice:
    below it a task is solved). A task without a baseline has neither."""
    if baseline is None:
        return lambda loss: math.log(resolved(loss, mode))
    ceiling = as_loss(baseline, mode)
    floor = resolved(tie_margin(relative_noise * ceiling), mode)
    return lambda loss: math.log(min(max(loss, floor), ceiling))


@dataclass(frozen=True)
class Evidence:
    """What a drop was decided on: both families' best values at the rung (on the loss scale),
    their trials there, and the chances it rests on."""

    rung: int
    best: float
    trials: int
    leader_best: float
    leader_trials: int
    gap: float  # log scale, after clipping, beyond `LEVEL`
    p_win: float  # the larger of the two below
    p_untried: float  # the ranks' chance (`untried_chance`)
    p_prior: float | None = None  # the curve prior's; None outside what it was fitted on

    def rests_on(self, leader: str) -> str:
        ranks = f"{self.p_untried:.3f} by the ranks of its {self.trials} trials and {leader}'s {self.leader_trials}"
        if self.p_prior is None:
            return f"{ranks}; the curve prior was not fitted on {min(self.trials, self.leader_trials)} trials here"
        return f"{ranks}, {self.p_prior:.3f} by the curve prior"


def untried_chance(trials: int, leader_trials: int, ahead: int) -> float:
    """If a family's configurations were as good as the leader's (every trial of either equally
    likely to rank anywhere), the chance that the `ahead` best of the pooled trials would all be
    the leader's: C(m, a) / C(n + m, a). Small only when many of the leader's trials beat the
    family's best, so a leader that found one lucky configuration among many poor ones does not
    drop a family that has merely not found its own yet."""
    return math.comb(leader_trials, ahead) / math.comb(trials + leader_trials, ahead)


class CurveRace:
    def __init__(
        self,
        plans: list[Raced],
        trials: int,
        rungs: list[int],
        mode: str,
        baseline: float | None,
        drop_below: float,
        exempt: list[str],
        prior: CurvePrior,
    ) -> None:
        self.plans = plans
        self.total = trials * len(plans)
        self.rungs = sorted(rungs)
        self.mode = mode
        self.baseline = baseline
        self.judge_with(prior)
        self.drop_below = drop_below
        self.exempt = set(exempt)
        self.at: dict[str, dict[int, dict[int, float]]] = {p.model: {} for p in plans}
        self.best: dict[tuple[str, int], float] = {}
        # each family's highest rung any of its trials reached: a trial reaches rungs in order,
        # so a family has a frontier at every rung up to this one and at none above
        self.top: dict[str, int | None] = {p.model: None for p in plans}
        self.ended: dict[str, set[int]] = {p.model: set() for p in plans}
        # each family's frontiers, read at every report for every pair and rung: kept until the
        # family reaches a new rung or a trial of it ends, the only events that move them
        self._frontiers: dict[str, dict[int, tuple[float, int] | None]] = {p.model: {} for p in plans}
        self.evidence: dict[str, Evidence] = {}
        stops = {p.model: p.study.user_attrs.get(RACE_STOP_ATTR) for p in plans}
        self.stopped = {model: stop["reason"] for model, stop in stops.items() if stop}
        self.cuts = max((stop["cut"] + 1 for stop in stops.values() if stop), default=0)
        for plan in plans:
            self._restore(plan)
        self._allot()

    def judge_with(self, prior: CurvePrior) -> None:
        """State the odds with `prior`, on the scale its tables' seed spread sets."""
        self.prior = prior
        self._clipped = solved_scale(self.baseline, self.mode, prior.relative_noise)

    @property
    def final(self) -> bool:
        """No family can be dropped any more (so none of its trials can go to another)."""
        return len([p for p in self.alive() if p.model not in self.exempt]) < 1 or len(self.alive()) < 2

    def alive(self) -> list[Raced]:
        return [p for p in self.plans if p.model not in self.stopped]

    def _restore(self, plan: Raced) -> None:
        """A resumed sweep's curves so far, from the study: the trials the live race saw end,
        and those still running; an interrupted trial runs again after a resume (its reports
        would count twice), and a warm start's trials are an earlier sweep's."""
        for trial in own_trials(plan.study):
            if INTERRUPTED_ATTR in trial.user_attrs:
                continue
            for step, value in sorted(trial.intermediate_values.items()):
                self._note(plan.model, trial.number, step, value)
            if trial.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL):
                self.ended[plan.model].add(trial.number)
        self._frontiers[plan.model].clear()

    def _note(self, model: str, number: int, step: int, value: float) -> bool:
        """Keep a report; True when it reached a rung the trial had not reached."""
        key = (model, number)
        self.best[key] = min(self.best.get(key, math.inf), as_loss(value, self.mode))
        reached = self.at[model].setdefault(number, {})
        new = [r for r in self.rungs if r <= step and r not in reached]
        for rung in new:
            reached[rung] = self.best[key]
        if new:
            self._frontiers[model].clear()
            self.top[model] = max(new[-1], self.top[model] or 0)
        return bool(new)

    def reported(self, plan: Raced, number: int, step: int, value: float) -> None:
        """A trial's report: at a new rung, the field is judged again."""
        if self._note(plan.model, number, step, value):
            self.update()

    def trial_ended(self, plan: Raced, number: int) -> None:
        self.ended[plan.model].add(number)
        self._frontiers[plan.model].clear()
        self.update()

    def frontier(self, model: str, rung: int) -> tuple[float, int] | None:
        """The family's best value at `rung` and the trials measured there: those that reached it
        and those that ended before it (ASHA or a failure judged them worse)."""
        known = self._frontiers[model]
        if rung not in known:
            values = [r[rung] for r in self.at[model].values() if rung in r]
            short = sum(1 for n in self.ended[model] if rung not in self.at[model].get(n, {}))
            known[rung] = (min(values), len(values) + short) if values else None
        return known[rung]

    def common_rung(self, a: str, b: str) -> int | None:
        """The highest rung both families have a frontier at."""
        top_a, top_b = self.top[a], self.top[b]
        return None if top_a is None or top_b is None else min(top_a, top_b)

    def compare(self, model: str, leader: str) -> Evidence | None:
        """`model` against `leader` at their highest common rung, with the stated chance."""
        rung = self.common_rung(model, leader)
        if rung is None:
            return None
        (own, n), (theirs, m) = self.frontier(model, rung), self.frontier(leader, rung)  # type: ignore[misc]
        behind = self._clipped(own) - LEVEL
        gap = max(0.0, behind - self._clipped(theirs))
        ahead = sum(1 for r in self.at[leader].values() if rung in r and self._clipped(r[rung]) < behind)
        untried = untried_chance(n, m, ahead)
        progress = rung / self.rungs[-1]
        prior = (
            self.prior.p_overtake(gap, min(n, m), progress)
            if self.prior.covers(min(n, m), progress)
            else None
        )
        return Evidence(rung, own, n, theirs, m, gap, max(untried, prior or 0.0), untried, prior)

    def leader(self) -> str | None:
        """The family ahead of the most others at their common rungs (ties: the farther along,
        then the better there); a family none of whose trials has reached a rung is not yet in it."""
        alive = [p.model for p in self.alive() if self.top[p.model] is not None]
        if not alive:
            return None

        def standing(model: str) -> tuple[int, int, float]:
            wins = 0
            for other in alive:
                rung = self.common_rung(model, other) if other != model else None
                if rung is not None and self.frontier(model, rung)[0] < self.frontier(other, rung)[0]:  # type: ignore[index]
                    wins += 1
            farthest = self.top[model] or 0  # set: `alive` holds only families at a rung
            return wins, farthest, -self.frontier(model, farthest)[0]  # type: ignore[index]

        return max(alive, key=standing)

    def update(self) -> None:
        """Drop every family whose chance to win against the leader is below the threshold."""
        if len(self.alive()) < 2:
            return
        leader = self.leader()
        if leader is None:
            return
        for plan in self.alive():
            if plan.model == leader or plan.model in self.exempt:
                continue
            evidence = self.compare(plan.model, leader)
            if evidence is not None:
                self.evidence[plan.model] = evidence
            if evidence is not None and evidence.p_win < self.drop_below:
                self._drop(plan, leader, evidence)

    def _drop(self, plan: Raced, leader: str, evidence: Evidence) -> None:
        of = self.rungs[-1]
        best, leader_best = (from_loss(v, self.mode) for v in (evidence.best, evidence.leader_best))
        reason = (
            f"raced out at iteration {evidence.rung:,} of {of:,}: P(level or ahead) < {self.drop_below:g} "
            f"against {leader} ({evidence.rests_on(leader)}; its best {best:.4g}, {leader}'s {leader_best:.4g})"
        )
        self.stopped[plan.model] = reason
        plan.study.set_user_attr(
            RACE_STOP_ATTR,
            {
                "cut": self.cuts,
                "reason": reason,
                "iteration": evidence.rung,
                "of": of,
                "p_win": evidence.p_win,
                "against": leader,
                "evidence": asdict(evidence),
            },
        )
        self.cuts += 1
        self._allot()

    def _allot(self) -> None:
        """A dropped family keeps what it has started; the rest of the sweep's trials are shared
        by the families still in the race."""
        for plan in self.plans:
            if plan.model in self.stopped:
                plan.budget = plan.done + plan.running
        alive = self.alive()
        left = self.total - sum(p.budget for p in self.plans if p.model in self.stopped)
        share, extra = divmod(left, max(1, len(alive)))
        for index, plan in enumerate(alive):
            plan.budget = share + (index < extra)
        for plan in self.plans:
            plan.study.set_user_attr(SHARE_ATTR, plan.budget)

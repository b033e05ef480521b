"""Racing families on partial curves: a family far behind at a rung is dropped with the iteration,
the evidence and the stated odds, before any of its trials completes; one within reach, the leader
and an exempt model never are; the running trials of a dropped family are stopped; its unspent
trials go to the others; a resumed sweep finds the race where it was."""

from __future__ import annotations

import math
import random

import optuna
import pytest
from ray.tune.schedulers import TrialScheduler

from sweeper.run.search.curve_prior import CurvePrior, shipped_prior
from sweeper.run.search.curve_race import CurveRace, as_loss, untried_chance
from sweeper.run.search.pruning import RaceStops
from sweeper.run.search.searcher import MultiStudySearcher, StudyPlan
from sweeper.spec.loading import parse_spec
from sweeper.spec.rungs import rungs
from sweeper.store.trial_record import RACE_STOP_ATTR, SHARE_ATTR
from tests.helpers import dump_spec, tiny_spec

optuna.logging.set_verbosity(optuna.logging.WARNING)
PRIOR = CurvePrior((0.0, -10.0, -1.0, 4.0, 0.0), {"tables": ["written for this test"]})
BASELINE = 0.5
# the value each family reports at iterations 10, 20 and 30: lstm stays at the baseline (and
# above it before), gru learns, scornn a little behind gru, ncgru far behind but not hopeless
CURVES = {
    "lstm": (0.9, 0.6, 0.55),
    "gru": (0.3, 0.1, 0.05),
    "scornn": (0.32, 0.11, 0.06),
    "ncgru": (0.4, 0.4, 0.35),
}


def curve_race(
    models: tuple[str, ...], trials: int, exempt: tuple[str, ...] = (), studies: dict | None = None
):
    budget = {"trials": trials, "allocate": "curves", "race_exempt": list(exempt), "max_concurrent": 4}
    spec = parse_spec(dump_spec(tiny_spec(models=models, budget=budget)), "s.yaml")
    studies = studies or {m: optuna.create_study(study_name=m) for m in models}
    plans = [StudyPlan(studies[m], m, None, trials) for m in models]
    searcher = MultiStudySearcher(spec, plans, None, None)
    searcher.race = CurveRace(plans, trials, rungs(spec), "min", BASELINE, 0.03, list(exempt), PRIOR)
    return searcher, {p.model: p for p in plans}, studies


def start_one_each(searcher: MultiStudySearcher, models: tuple[str, ...]) -> dict[str, str]:
    """One trial of each model, as the searcher hands them out."""
    ids = {}
    for n in range(len(models)):
        config = searcher.suggest(str(n))
        ids[config["model"]] = str(n)
    return ids


def report(searcher: MultiStudySearcher, ids: dict[str, str], step: int) -> None:
    for model, trial in ids.items():
        if model not in searcher.race.stopped:
            searcher.on_trial_result(trial, {"step": step, "valid_loss": CURVES[model][step // 10 - 1]})


def test_the_rungs_are_ashas_and_the_prior_shrinks_with_the_gap_and_the_evidence() -> None:
    long = tiny_spec(scheduler={"name": "asha", "grace_period": 100, "reduction_factor": 3})
    long["params"].update(iterations=2000, eval_every=100)
    assert rungs(parse_spec(dump_spec(long), "s.yaml")) == [100, 300, 900, 2000]
    prior = shipped_prior()
    assert prior.learned_from["tables"]
    chances = [prior.p_overtake(gap, 3, 0.15) for gap in (0.0, 0.1, 0.3, 1.0)]
    assert chances == sorted(chances, reverse=True) and chances[0] > 0.3 and chances[-1] < 0.01
    assert prior.p_overtake(0.3, 8, 0.15) < prior.p_overtake(0.3, 1, 0.15)
    assert as_loss(0.9, "max") == pytest.approx(0.1) and as_loss(0.0, "min") > 0


def test_a_family_far_behind_is_raced_out_at_a_rung_with_its_odds_and_the_rest_share_its_trials() -> None:
    models = ("lstm", "gru", "scornn", "ncgru")
    searcher, plans, _ = curve_race(models, trials=5)
    ids = start_one_each(searcher, models)
    report(searcher, ids, 10)
    race = searcher.race
    # lstm sits at the baseline (clipped there) against gru's 0.3: log(0.5 / 0.3) = 0.51 behind
    assert set(race.stopped) == {"lstm"}
    stop = plans["lstm"].study.user_attrs[RACE_STOP_ATTR]
    expected = PRIOR.p_overtake(math.log(BASELINE / 0.3), 1, 10 / 30)
    assert stop["iteration"] == 10 and stop["of"] == 30 and stop["against"] == "gru"
    assert stop["p_win"] == pytest.approx(expected) and expected < 0.03
    assert stop["reason"].startswith("raced out at iteration 10 of 30: P(win) < 0.03 against gru")
    assert stop["evidence"]["best"] == 0.9 and stop["evidence"]["leader_best"] == 0.3
    assert plans["lstm"].done == 0  # no trial of lstm had completed
    # its running trial keeps its slot until it stops; its other four trials go to the rest
    assert plans["lstm"].budget == 1 and sum(p.budget for p in plans.values()) == 20
    assert plans["lstm"].study.user_attrs[SHARE_ATTR] == 1
    # scornn (just behind gru) and ncgru (0.29 behind at the first rung) stay
    assert race.evidence["scornn"].p_win > 0.3 and race.evidence["ncgru"].p_win > 0.03
    report(searcher, ids, 20)
    assert set(race.stopped) == {"lstm", "ncgru"}  # 1.39 behind at the second rung
    assert "at iteration 20 of 30" in race.stopped["ncgru"]
    assert "scornn" not in race.stopped and "gru" not in race.stopped


def test_a_dropped_familys_running_trials_stop_at_their_next_report() -> None:
    models = ("lstm", "gru")
    searcher, _, _ = curve_race(models, trials=3)
    ids = start_one_each(searcher, models)
    report(searcher, ids, 10)
    inner = type("Continue", (), {"on_trial_result": lambda *a: TrialScheduler.CONTINUE})()
    stops = RaceStops(inner, searcher)
    trial = type("Trial", (), {})
    trial.config = {"model": "lstm"}
    assert stops.on_trial_result(None, trial, {"step": 20}) == TrialScheduler.STOP
    trial.config = {"model": "gru"}
    assert stops.on_trial_result(None, trial, {"step": 20}) == TrialScheduler.CONTINUE


def test_an_exempt_model_is_never_raced_out() -> None:
    models = ("lstm", "gru")
    searcher, _, _ = curve_race(models, trials=3, exempt=("lstm",))
    report(searcher, start_one_each(searcher, models), 10)
    assert not searcher.race.stopped and "lstm" not in searcher.race.evidence


def test_a_resumed_sweep_finds_the_race_and_the_curves_where_they_were() -> None:
    models = ("lstm", "gru", "ncgru")
    searcher, plans, studies = curve_race(models, trials=4)
    ids = start_one_each(searcher, models)
    report(searcher, ids, 10)
    assert set(searcher.race.stopped) == {"lstm"}
    resumed, plans, _ = curve_race(models, trials=4, studies=studies)
    assert set(resumed.race.stopped) == {"lstm"} and resumed.race.cuts == 1
    assert resumed.race.frontier("gru", 10) == (0.3, 1)
    assert plans["lstm"].budget == 0 and sum(p.budget for p in plans.values()) == 12


def plain_frontier(race: CurveRace, model: str, rung: int) -> tuple[float, int] | None:
    """The frontier read off every trial's rungs, as the race defines it, with nothing kept."""
    values = [reached[rung] for reached in race.at[model].values() if rung in reached]
    short = sum(1 for n in race.ended[model] if rung not in race.at[model].get(n, {}))
    return (min(values), len(values) + short) if values else None


def test_the_frontiers_kept_between_events_are_those_read_afresh() -> None:
    """The race keeps each family's frontiers until it reaches a new rung or a trial of it ends;
    after every report and every end, in a random order, they equal a fresh reading."""
    models = ("lstm", "gru", "scornn")
    studies = {m: optuna.create_study(study_name=m) for m in models}
    plans = [StudyPlan(studies[m], m, None, 6) for m in models]
    race = CurveRace(plans, 6, [10, 20, 30], "min", BASELINE, 0.0, [], PRIOR)
    rng = random.Random(7)
    steps = {(p.model, n): 0 for p in plans for n in range(6)}
    while steps:
        (model, number) = key = rng.choice(sorted(steps))
        plan = next(p for p in plans if p.model == model)
        if steps[key] == 30 or rng.random() < 0.15:  # a trial ends: complete, pruned or failed
            race.trial_ended(plan, number)
            del steps[key]
        else:
            steps[key] += 5
            race.reported(plan, number, steps[key], rng.uniform(0.05, 0.9))
        for m in models:
            for rung in race.rungs:
                assert race.frontier(m, rung) == plain_frontier(race, m, rung), (m, rung)
    assert all(race.frontier(m, 10) is not None for m in models)


def test_a_family_that_has_reported_only_before_the_first_rung_is_not_yet_in_the_race() -> None:
    """Reports come every `eval_every`, rungs from the grace period on: a family whose trials have
    reported only between rungs has no frontier yet, is neither leader nor dropped, and does not
    stop the others being judged."""
    models = ("lstm", "gru", "ncgru")
    studies = {m: optuna.create_study(study_name=m) for m in models}
    plans = {m: StudyPlan(studies[m], m, None, 3) for m in models}
    race = CurveRace(list(plans.values()), 3, [10, 20, 30], "min", BASELINE, 0.03, [], PRIOR)
    race.reported(plans["lstm"], 0, 5, 0.9)  # before the first rung
    race.reported(plans["gru"], 0, 10, 0.1)
    race.reported(plans["ncgru"], 0, 10, 0.45)
    assert race.leader() == "gru" and race.frontier("lstm", 10) is None
    assert "lstm" not in race.stopped and "lstm" not in race.evidence
    race.reported(plans["lstm"], 0, 10, 0.9)  # at the rung, at the baseline, far behind gru
    assert "lstm" in race.stopped


def test_the_untried_chance_is_the_ranks_exact_probability() -> None:
    # 2 trials each, the leader's one trial ahead: of the 4 pooled ranks, the best is the leader's
    # in 2 of 4 orders; both of its trials ahead: 1 of the 6 ways to choose the top two
    assert untried_chance(2, 2, 1) == pytest.approx(2 / 4)
    assert untried_chance(2, 2, 2) == pytest.approx(1 / 6)
    assert untried_chance(6, 8, 0) == 1.0
    assert untried_chance(6, 8, 7) == pytest.approx(8 / 3432)


def complete_trials(race: CurveRace, plan: StudyPlan, values: list[float]) -> None:
    """Trials of `plan` that ended at the last rung with these values, reported there at once."""
    for number, value in enumerate(values):
        if plan.model in race.stopped:
            return
        race.reported(plan, number, race.rungs[-1], value)
        race.trial_ended(plan, number)


@pytest.mark.parametrize(
    ("leader_values", "dropped_after"),
    [
        # one lucky configuration of eight: gru may yet find its own among its untried ones
        ([0.1, 0.46, 0.47, 0.48, 0.49, 0.49, 0.49, 0.49], None),
        # every configuration of the leader's beats gru's best: after two trials of gru the
        # chance that it is as good is C(8, 8) / C(10, 8) = 1 / 45, below 0.03
        ([0.1, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16, 0.17], 2),
    ],
)
def test_at_the_last_rung_a_family_is_dropped_only_when_the_ranks_say_its_configurations_are_worse(
    leader_values: list[float], dropped_after: int | None
) -> None:
    """On complete trials the prior alone would drop gru in both cases (0.45 against 0.1 is far
    behind); the ranks of the sweep's own trials keep it where only one leader trial is ahead."""
    models = ("ncgru", "gru")
    studies = {m: optuna.create_study(study_name=m) for m in models}
    plans = {m: StudyPlan(studies[m], m, None, 24) for m in models}
    race = CurveRace(list(plans.values()), 24, [10, 20, 30], "min", BASELINE, 0.03, [], PRIOR)
    complete_trials(race, plans["ncgru"], leader_values)
    complete_trials(race, plans["gru"], [0.45] * 6)
    evidence = race.evidence["gru"]
    prior_alone = PRIOR.p_overtake(evidence.gap, evidence.trials, 1.0)
    assert evidence.rung == 30 and prior_alone < 0.03  # the prior alone would drop it
    ahead = sum(v < 0.45 for v in leader_values)
    assert evidence.p_untried == pytest.approx(untried_chance(evidence.trials, 8, ahead))
    assert evidence.p_win == pytest.approx(max(evidence.p_untried, prior_alone))
    if dropped_after is None:
        assert "gru" not in race.stopped and evidence.trials == 6
    else:
        assert "gru" in race.stopped and evidence.trials == dropped_after
        stop = plans["gru"].study.user_attrs[RACE_STOP_ATTR]
        assert stop["evidence"]["p_untried"] == pytest.approx(1 / 45)

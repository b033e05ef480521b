"""Racing families on partial curves: a family far behind at a rung, with more than a few
trials measured, is dropped with the iteration, the evidence and the stated odds, before any of
its trials completes; one within twice the leader's loss, one with few trials, the leader and an
exempt model never are; a leader at 100% accuracy does not drop a rival at 99.95%; the running
trials of a dropped family are stopped; its unspent trials go to the others; a resumed sweep finds
the race where it was, without the interrupted trials' reports or a warm start's."""

from __future__ import annotations

import math
import random

import optuna
import pytest
from ray.tune.schedulers import TrialScheduler

from sweeper.results.loss_scale import as_loss
from sweeper.run.search.curve_prior import CurvePrior, shipped_prior
from sweeper.run.search.curve_race import LEVEL, CurveRace, untried_chance
from sweeper.run.search.pruning import RaceStops
from sweeper.run.search.searcher import MultiStudySearcher, StudyPlan
from sweeper.spec.loading import parse_spec
from sweeper.spec.rungs import rungs
from sweeper.store.trial_record import INTERRUPTED_ATTR, RACE_STOP_ATTR, SHARE_ATTR, WARM_START_ATTR
from tests.helpers import dump_spec, tiny_spec

optuna.logging.set_verbosity(optuna.logging.WARNING)
PRIOR = CurvePrior((0.0, -10.0, -1.0, 4.0), {"tables": ["written for this test"]}, (1, 12), (0.0, 1.0), 0.04)
BASELINE = 0.5
# the value each family reports at iterations 10, 20 and 30: lstm stays at the baseline (and
# above it before), gru learns, scornn a little behind gru, ncgru level with gru at first, then
# stuck while gru goes on
CURVES = {
    "lstm": (0.9, 0.6, 0.55),
    "gru": (0.1, 0.05, 0.02),
    "scornn": (0.12, 0.06, 0.03),
    "ncgru": (0.19, 0.3, 0.25),
}
MANY = 5  # trials a side


def curve_race(
    models: tuple[str, ...], trials: int, exempt: tuple[str, ...] = (), studies: dict | None = None
):
    budget = {"trials": trials, "allocate": "curves", "max_concurrent": 4}
    if exempt:
        budget["race_exempt"] = list(exempt)
    spec = parse_spec(dump_spec(tiny_spec(models=models, budget=budget)), "s.yaml")
    studies = studies or {m: optuna.create_study(study_name=m) for m in models}
    plans = [StudyPlan(studies[m], m, None, trials) for m in models]
    searcher = MultiStudySearcher(spec, plans, None, None)
    searcher.race = CurveRace(plans, trials, rungs(spec), "min", BASELINE, 0.03, list(exempt), PRIOR)
    return searcher, {p.model: p for p in plans}, studies


def start(searcher: MultiStudySearcher, models: tuple[str, ...], each: int = 1) -> dict[str, list[str]]:
    """`each` trials of every model, as the searcher hands them out."""
    ids: dict[str, list[str]] = {}
    for n in range(each * len(models)):
        config = searcher.suggest(str(n))
        ids.setdefault(config["model"], []).append(str(n))
    return ids


def report(searcher: MultiStudySearcher, ids: dict[str, list[str]], step: int) -> None:
    for model, trials in ids.items():
        for trial in trials:
            if model not in searcher.race.stopped:
                searcher.on_trial_result(trial, {"step": step, "valid_loss": CURVES[model][step // 10 - 1]})


def test_the_rungs_are_ashas_and_the_prior_shrinks_with_the_gap_and_the_evidence() -> None:
    long = tiny_spec(scheduler={"name": "asha", "grace_period": 100, "reduction_factor": 3})
    long["params"].update(iterations=2000, eval_every=100)
    assert rungs(parse_spec(dump_spec(long), "s.yaml")) == [100, 300, 900, 2000]
    prior = shipped_prior()
    assert prior.learned_from["tables"] and prior.covers(4, 0.15) and not prior.covers(20, 0.15)
    chances = [prior.p_overtake(gap, 3, 0.45) for gap in (0.01, 0.3, 1.0, 3.0)]
    assert chances == sorted(chances, reverse=True) and chances[-1] < 0.01
    assert prior.p_overtake(1.0, 8, 0.45) < prior.p_overtake(1.0, 1, 0.45)
    assert as_loss(0.9, "max") == pytest.approx(0.1) and as_loss(0.0, "min") > 0


def test_a_family_far_behind_is_raced_out_at_a_rung_with_its_odds_and_the_rest_share_its_trials() -> None:
    models = ("lstm", "gru", "scornn", "ncgru")
    searcher, plans, _ = curve_race(models, trials=8)
    ids = start(searcher, models, MANY)
    report(searcher, ids, 10)
    race = searcher.race
    # lstm sits at the baseline (clipped there) against gru's 0.1: log(0.5 / 0.1) = 1.61, beyond
    # twice the leader's loss by 0.92; dropped once gru's third trial reaches the rung beside
    # lstm's five, all three ahead: by the ranks 1 in C(8, 3) = 56
    assert set(race.stopped) == {"lstm"}
    stop = plans["lstm"].study.user_attrs[RACE_STOP_ATTR]
    evidence = stop["evidence"]
    assert (evidence["trials"], evidence["leader_trials"]) == (MANY, 3)
    assert evidence["gap"] == pytest.approx(math.log(BASELINE / 0.1) - LEVEL)
    assert evidence["p_untried"] == pytest.approx(1 / 56)
    assert evidence["p_prior"] == pytest.approx(PRIOR.p_overtake(evidence["gap"], 3, 10 / 30))
    assert stop["p_win"] == pytest.approx(max(evidence["p_untried"], evidence["p_prior"]))
    assert stop["iteration"] == 10 and stop["of"] == 30 and stop["against"] == "gru"
    assert stop["reason"].startswith("raced out at iteration 10 of 30: P(level or ahead) < 0.03 against gru")
    assert f"by the ranks of its {MANY} trials and gru's 3" in stop["reason"]
    assert "its best 0.9, gru's 0.1" in stop["reason"]
    assert stop["evidence"]["best"] == 0.9 and stop["evidence"]["leader_best"] == 0.1
    assert plans["lstm"].done == 0  # no trial of lstm had completed
    # its running trials keep their slots until they stop; its other three go to the rest
    assert plans["lstm"].budget == MANY and sum(p.budget for p in plans.values()) == 32
    assert plans["lstm"].study.user_attrs[SHARE_ATTR] == MANY
    # scornn and, at the first rung, ncgru lie within twice gru's loss: level with it
    assert race.evidence["scornn"].gap == 0.0 and race.evidence["ncgru"].gap == 0.0
    report(searcher, ids, 20)
    assert set(race.stopped) == {"lstm", "ncgru"}  # 0.19 against 0.05 at the second rung
    assert "at iteration 20 of 30" in race.stopped["ncgru"]
    assert "scornn" not in race.stopped and "gru" not in race.stopped


def test_the_curve_prior_keeps_a_family_the_ranks_would_drop_never_the_reverse() -> None:
    """Six trials a side, one of the leader's far ahead and the rest level with the family: the
    prior, learned on other tasks, would drop it; the ranks (one trial ahead) keep it."""
    models = ("gru", "ncgru")
    studies = {m: optuna.create_study(study_name=m) for m in models}
    plans = {m: StudyPlan(studies[m], m, None, 12) for m in models}
    race = CurveRace(list(plans.values()), 12, [10, 20, 30], "min", BASELINE, 0.03, [], PRIOR)
    for number, value in enumerate([0.1, 0.45, 0.45, 0.45, 0.45, 0.45]):
        race.reported(plans["gru"], number, 10, value)
    for number in range(6):
        race.reported(plans["ncgru"], number, 10, 0.45)
    evidence = race.evidence["ncgru"]
    assert evidence.p_prior < 0.03 < evidence.p_untried == evidence.p_win
    assert "ncgru" not in race.stopped


def test_a_family_with_few_trials_measured_is_not_dropped_on_them() -> None:
    """Two trials a side, lstm's both at the baseline: the prior alone would drop it, the ranks
    (both of gru's trials ahead: 1 in 6) keep it until it has tried more."""
    models = ("lstm", "gru")
    searcher, _, _ = curve_race(models, trials=8)
    report(searcher, start(searcher, models, 2), 10)
    evidence = searcher.race.evidence["lstm"]
    assert evidence.p_prior < 0.03 and evidence.p_untried == pytest.approx(1 / 6)
    assert evidence.p_win == evidence.p_untried and not searcher.race.stopped


def test_a_leader_at_100_percent_accuracy_leaves_a_rival_at_99_95_level_and_says_accuracies() -> None:
    """A maximised objective: the loss is the share wrong, at least one in a thousand, so 100% and
    99.95% are level; a rival at 50% is far behind, and its drop says accuracies, not losses."""
    models = ("lstm", "gru", "goru")
    studies = {m: optuna.create_study(study_name=m) for m in models}
    plans = {m: StudyPlan(studies[m], m, None, 8) for m in models}
    race = CurveRace(list(plans.values()), 8, [10, 20, 30], "max", None, 0.03, [], PRIOR)
    accuracy = {"gru": 1.0, "goru": 0.9995, "lstm": 0.5}
    for number in range(MANY):
        for model, value in accuracy.items():
            race.reported(plans[model], number, 10, value)
    assert race.evidence["goru"].gap == 0.0 and "goru" not in race.stopped
    assert "lstm" in race.stopped and "its best 0.5, gru's 1" in race.stopped["lstm"]


def test_a_task_without_a_baseline_is_raced_on_its_losses_unclipped() -> None:
    """Parenthesis's squared error has no memoryless baseline: nothing clips the losses, a family
    at 0.3 against 0.02 (15 times) with five trials a side, all ahead, is dropped; one at 0.03 is
    level."""
    models = ("lstm", "gru", "goru")
    studies = {m: optuna.create_study(study_name=m) for m in models}
    plans = {m: StudyPlan(studies[m], m, None, 8) for m in models}
    race = CurveRace(list(plans.values()), 8, [10, 20, 30], "min", None, 0.03, [], PRIOR)
    for number in range(5):
        for model, value in {"gru": 0.02, "goru": 0.03, "lstm": 0.3}.items():
            race.reported(plans[model], number, 10, value)
    assert race.evidence["lstm"].gap == pytest.approx(math.log(0.3 / 0.02) - LEVEL)
    assert "lstm" in race.stopped and "goru" not in race.stopped and race.evidence["goru"].gap == 0.0


def test_a_dropped_familys_running_trials_stop_at_their_next_report() -> None:
    models = ("lstm", "gru")
    searcher, _, _ = curve_race(models, trials=8)
    report(searcher, start(searcher, models, MANY), 10)
    inner = type("Continue", (), {"on_trial_result": lambda *a: TrialScheduler.CONTINUE})()
    stops = RaceStops(inner, searcher)
    trial = type("Trial", (), {})
    trial.config = {"model": "lstm"}
    assert stops.on_trial_result(None, trial, {"step": 20}) == TrialScheduler.STOP
    trial.config = {"model": "gru"}
    assert stops.on_trial_result(None, trial, {"step": 20}) == TrialScheduler.CONTINUE


def test_an_exempt_model_is_never_raced_out() -> None:
    models = ("lstm", "gru")
    searcher, _, _ = curve_race(models, trials=8, exempt=("lstm",))
    report(searcher, start(searcher, models, MANY), 10)
    assert not searcher.race.stopped and "lstm" not in searcher.race.evidence


def test_a_resumed_sweep_finds_the_race_and_the_curves_where_they_were() -> None:
    models = ("lstm", "gru", "ncgru")
    searcher, plans, studies = curve_race(models, trials=8)
    report(searcher, start(searcher, models, MANY), 10)
    assert set(searcher.race.stopped) == {"lstm"}
    for plan in plans.values():  # the driver stops: its running trials are told their reports
        for trial in plan.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            plan.study.tell(trial.number, CURVES[plan.model][0])
    resumed, plans, _ = curve_race(models, trials=8, studies=studies)
    assert set(resumed.race.stopped) == {"lstm"} and resumed.race.cuts == 1
    assert resumed.race.frontier("gru", 10) == (0.1, MANY)
    assert plans["lstm"].budget == MANY and sum(p.budget for p in plans.values()) == 24


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
    race.reported(plans["lstm"], 0, 10, 0.9)  # at the rung: in the race (one trial is too few to drop)
    assert "lstm" in race.evidence and "lstm" not in race.stopped


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


class Scripted:
    """A curves race over real studies, driven trial by trial as the searcher drives it."""

    def __init__(self, studies: dict[str, optuna.Study], trials: int = 8) -> None:
        self.plans = {m: StudyPlan(s, m, None, trials) for m, s in studies.items()}
        self.race = CurveRace(
            list(self.plans.values()), trials, [10, 20, 30], "min", BASELINE, 0.03, [], PRIOR
        )
        self.live: dict[str, tuple[str, optuna.Trial]] = {}

    def start(self, key: str, model: str) -> None:
        self.live[key] = (model, self.plans[model].study.ask())

    def report(self, key: str, model: str, step: int, value: float) -> None:
        _, trial = self.live[key]
        trial.report(value, step)
        self.race.reported(self.plans[model], trial.number, step, value)

    def end(self, key: str, model: str, value: float) -> None:
        _, trial = self.live.pop(key)
        self.plans[model].study.tell(trial, value)
        self.race.trial_ended(self.plans[model], trial.number)

    def interrupt(self) -> None:
        """The driver stops: every running trial is told interrupted, as `abandon_running` does."""
        for key, (model, trial) in list(self.live.items()):
            trial.set_user_attr(INTERRUPTED_ATTR, True)
            self.plans[model].study.tell(trial, state=optuna.trial.TrialState.FAIL)
            del self.live[key]

    def drops(self) -> dict[str, tuple[int, str]]:
        return {
            m: (p.study.user_attrs[RACE_STOP_ATTR]["cut"], p.study.user_attrs[RACE_STOP_ATTR]["reason"])
            for m, p in self.plans.items()
            if RACE_STOP_ATTR in p.study.user_attrs
        }


# (key, model, the values it reports at 10, 20 and 30): level at 10, lstm far behind at 20
SHAPES = {"gru": (0.30, 0.08, 0.04), "ncgru": (0.31, 0.10, 0.05), "lstm": (0.31, 0.30, 0.28)}
SCRIPT = [
    (f"{model}{k}", model, tuple(v * (1 + 0.01 * k) for v in shape))
    for k in range(MANY)
    for model, shape in SHAPES.items()
]


def play(race: Scripted, steps: tuple[int, ...] = (10, 20, 30)) -> None:
    """Every trial of the script started, then their reports step by step, then their ends."""
    for key, model, _ in SCRIPT:
        race.start(key, model)
    for step in steps:
        for key, model, values in SCRIPT:
            if model not in race.race.stopped:
                race.report(key, model, step, values[step // 10 - 1])
    if steps[-1] == 30:
        for key, model, values in SCRIPT:
            if key in race.live:
                race.end(key, model, values[-1])


def fresh(models: tuple[str, ...], warm: dict[str, float]) -> dict[str, optuna.Study]:
    """Studies holding a warm start's complete trials (an earlier sweep's: the race ignores them)."""
    studies = {m: optuna.create_study(study_name=m) for m in models}
    for model, value in warm.items():
        studies[model].add_trial(
            optuna.trial.create_trial(
                value=value,
                intermediate_values={10: value, 20: value, 30: value},
                user_attrs={WARM_START_ATTR: "earlier-1 trial 0"},
            )
        )
    return studies


def test_a_race_killed_mid_way_and_resumed_makes_the_drops_of_one_never_interrupted() -> None:
    """Killed after the trials' first report: they run again after the resume (as `resume` runs
    them), and the restored race counts neither their cut-short reports nor a warm start's
    trials (an earlier sweep's lstm at 0.001 would lead it): it drops what a sweep that ran them
    once, uninterrupted, drops, with the same evidence."""
    models = ("lstm", "gru", "ncgru")
    warm = {"lstm": 0.001, "ncgru": 0.9}

    never = Scripted(fresh(models, warm))
    play(never)
    assert set(never.drops()) == {"lstm"} and "at iteration 20 of 30" in never.drops()["lstm"][1]

    killed = Scripted(fresh(models, warm))
    play(killed, steps=(10,))
    killed.interrupt()
    resumed = Scripted({m: p.study for m, p in killed.plans.items()})
    play(resumed)
    assert resumed.drops() == never.drops()
    assert {m: resumed.race.frontier(m, 20) for m in models} == {
        m: never.race.frontier(m, 20) for m in models
    }

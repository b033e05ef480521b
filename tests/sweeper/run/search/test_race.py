"""Racing models: a hopeless model stops after its first rung with the reason, its unspent trials
go to the models that can still win, and a resumed sweep finds the race where it was."""

from __future__ import annotations

import numpy as np
import optuna
from ray.tune.search import Searcher

from sweeper.results.separation import tie_margin
from sweeper.run.search.race import BEHIND_AT_LEAST, DROP_BELOW, Race, margins_behind, race_rung
from sweeper.run.search.searcher import MultiStudySearcher, StudyPlan
from sweeper.spec.loading import parse_spec
from sweeper.spec.space import searched_count
from sweeper.store.trial_record import RACE_STOP_ATTR, SHARE_ATTR
from tests.helpers import dump_spec, tiny_spec

optuna.logging.set_verbosity(optuna.logging.WARNING)
LOSS = {"lstm": 0.9, "gru": 0.2, "scornn": 0.08, "ncgru": 0.02}  # a crafted objective per model:
# each lies more than `BEHIND_AT_LEAST` tie margins (by the tables' relative seed noise) behind the next


def race(
    models: tuple[str, ...], trials: int, rung: int, studies: dict | None = None, exempt: tuple[str, ...] = ()
):
    budget = {"trials": trials, "allocate": "race", "race_rung": rung, "race_exempt": list(exempt)}
    spec = parse_spec(dump_spec(tiny_spec(models=models, budget=budget)), "s.yaml")
    studies = studies or {  # seeded as a sweep's are, so the configurations and the odds on them repeat
        m: optuna.create_study(study_name=m, sampler=optuna.samplers.TPESampler(seed=k))
        for k, m in enumerate(models)
    }
    plans = [StudyPlan(studies[m], m, None, trials) for m in models]
    searcher = MultiStudySearcher(spec, plans, None, None)
    searched = {m: searched_count(spec, m) for m in models}
    searcher.race = Race(plans, trials, rung, "min", searched, spec.budget.race_exempt)
    return searcher, {p.model: p for p in plans}, studies


def run_out(searcher: MultiStudySearcher, limit: int = 1000) -> int:
    for n in range(limit):
        config = searcher.suggest(str(n))
        if config is Searcher.FINISHED:
            return n
        searcher.on_trial_complete(str(n), {"step": 30, "valid_loss": LOSS[config["model"]]})
    raise AssertionError("the race never ended")


def test_a_hopeless_model_stops_after_its_rung_and_the_winner_gets_its_trials() -> None:
    searcher, plans, _ = race(("lstm", "gru"), trials=8, rung=2)
    assert run_out(searcher) == 16  # never more than an equal budget would spend
    assert plans["lstm"].done == 2 and plans["gru"].done == 14
    stop = plans["lstm"].study.user_attrs[RACE_STOP_ATTR]
    said = (
        "stopped by the race after 2 trials: P(within the tie margin of the best) = 0.00, "
        "38.2 tie margins behind; best 0.9 against gru's 0.2"
    )
    assert stop == {"cut": 0, "reason": said}
    assert RACE_STOP_ATTR not in plans["gru"].study.user_attrs
    assert plans["gru"].study.user_attrs[SHARE_ATTR] == 14


def test_the_field_halves_at_each_rung_and_a_resume_finds_the_race_where_it_was() -> None:
    models = ("lstm", "gru", "scornn", "ncgru")
    searcher, plans, studies = race(models, trials=4, rung=2)
    for n in range(8 + 3):  # the first rung, then three trials of the second
        config = searcher.suggest(str(n))
        searcher.on_trial_complete(str(n), {"step": 30, "valid_loss": LOSS[config["model"]]})
    assert set(searcher.race.stopped) == {"lstm", "gru"}
    assert plans["scornn"].budget == plans["ncgru"].budget == 4
    resumed, plans, _ = race(models, trials=4, rung=2, studies=studies)
    assert set(resumed.race.stopped) == {"lstm", "gru"} and resumed.race.cuts == 1
    assert plans["lstm"].budget == 2 and plans["ncgru"].budget == 4
    assert run_out(resumed) == 5  # the second rung's last trial, then the winner's share
    assert "scornn" in resumed.race.stopped
    assert plans["ncgru"].done == plans["ncgru"].budget == 16 - 2 - 2 - 4


def test_two_models_tied_within_the_margin_both_stay_and_share_what_is_left() -> None:
    """gru and lstm a hair apart: neither's chance of tying for the win is small, so the race stops
    no one at its rung, halving stops and both run to an equal share; scornn and ncgru, far
    behind, are stopped, each with its stated chance."""
    tied = {"gru": 0.2, "lstm": 0.2002, "scornn": 0.9, "ncgru": 0.95}
    searcher, plans, _ = race(tuple(tied), trials=8, rung=2)
    seeds = np.random.default_rng(0)  # each run's seed noise: 1%, so near-identical runs measure some
    for n in range(1000):
        config = searcher.suggest(str(n))
        if config is Searcher.FINISHED:
            break
        loss = tied[config["model"]] * (1 + 0.01 * seeds.standard_normal())
        searcher.on_trial_complete(str(n), {"step": 30, "valid_loss": loss})
    assert set(searcher.race.stopped) == {"scornn", "ncgru"} and searcher.race.final
    for model in ("scornn", "ncgru"):
        assert "P(within the tie margin of the best) = 0.00" in searcher.race.stopped[model]
    assert plans["gru"].done == plans["lstm"].done == (32 - 2 - 2) // 2
    chances = searcher.race.odds(list(plans.values())).p_level
    assert chances["gru"] > 0.9 and chances["lstm"] > 0.5 and chances["ncgru"] < 0.02


def test_a_model_unlikely_to_tie_but_fewer_margins_behind_than_a_co_winner_was_seen_stays() -> None:
    """lstm at 0.9 against gru's 0.5: its stated chance of tying is nil, but it lies about 9 tie
    margins behind, closer than true co-winners were seen after a rung in the tables' races: the
    race stops no one and both share the budget."""
    losses = {"lstm": 0.9, "gru": 0.5}
    searcher, plans, _ = race(tuple(losses), trials=8, rung=2)
    for n in range(100):
        config = searcher.suggest(str(n))
        if config is Searcher.FINISHED:
            break
        searcher.on_trial_complete(str(n), {"step": 30, "valid_loss": losses[config["model"]]})
    said = searcher.race.odds(list(plans.values()))
    assert said.p_level["lstm"] < DROP_BELOW and margins_behind(said, "min")["lstm"] < BEHIND_AT_LEAST
    assert not searcher.race.stopped and searcher.race.final
    assert plans["lstm"].done == plans["gru"].done == 8


def test_a_model_drawn_more_thinly_than_its_searched_values_is_not_stopped_on_its_odds() -> None:
    """A first rung of one trial against two searched values: lstm, hopeless by its odds, is drawn
    too thinly for the verdict to rule out a better configuration of it, so the race waits for
    the next rung (two trials) to stop it."""
    searcher, plans, _ = race(("lstm", "gru"), trials=8, rung=1)
    run_out(searcher)
    assert plans["lstm"].study.user_attrs[RACE_STOP_ATTR]["cut"] == 1
    assert plans["lstm"].done == 2 and plans["gru"].done == 16 - 2


def test_the_first_rung_holds_each_studys_random_trials() -> None:
    def rung(trials: int, **budget: int) -> int:
        spec = tiny_spec(models=("gru", "scornn"), budget={"trials": trials, "allocate": "race", **budget})
        return race_rung(parse_spec(dump_spec(spec), "s.yaml"))

    assert rung(6) == 3  # not 2: a study draws its first 3 of 6 at random
    assert rung(20) == 6 and rung(40) == 10 and rung(100) == 25  # a quarter once that is longer
    assert rung(6, race_rung=1) == 1
    two_papers = tiny_spec(models=("gru", "scornn"), budget={"trials": 6, "allocate": "race"})
    assert race_rung(parse_spec(dump_spec(two_papers), "s.yaml"), papers=2) == 5  # 2 points, then 3
    startup = {"sampler": {"name": "tpe", "startup_trials": 8}}
    spec = tiny_spec(models=("gru",), budget={"trials": 12, "allocate": "race"}, **startup)
    assert race_rung(parse_spec(dump_spec(spec), "s.yaml")) == 8


def test_a_race_waits_for_its_rungs_running_trials_instead_of_finishing() -> None:
    """Tune never asks again once a searcher answers FINISHED: while the rung's trials still run
    on other workers, the race answers None (nothing yet), and hands out the next rung after."""
    searcher, plans, _ = race(("lstm", "gru"), trials=8, rung=2)
    configs = [searcher.suggest(str(n)) for n in range(4)]  # four workers take the whole first rung
    assert searcher.suggest("4") is None
    for n, config in enumerate(configs):
        searcher.on_trial_complete(str(n), {"step": 30, "valid_loss": LOSS[config["model"]]})
    assert searcher.suggest("5")["model"] == "gru"
    assert plans["gru"].budget == 14


def test_a_model_exempt_from_the_race_is_never_stopped() -> None:
    """`race_exempt` under `allocate: race`: the worst model goes on through every rung."""
    searcher, plans, _ = race(("lstm", "gru", "scornn"), trials=4, rung=2, exempt=("lstm",))
    run_out(searcher)
    assert "lstm" not in searcher.race.stopped and "gru" in searcher.race.stopped
    assert plans["lstm"].done > 2


def test_runs_that_repeat_one_another_measure_no_margin_to_stop_a_model_on() -> None:
    """Seed noise estimated nil (pairs of runs that came out identical): no model is counted any
    number of tie margins behind, so none is stopped on its distance."""
    from sweeper.results.odds import Estimate, Noise, odds

    said = odds(
        {"gru": Estimate(0.1, 1, "its best trial"), "lstm": Estimate(0.9, 1, "its best trial")},
        Noise(0.0, "identical pairs"),
        "min",
    )
    assert margins_behind(said, "min") == {"gru": 0.0, "lstm": 0.0}
    assert margins_behind(
        odds({"gru": Estimate(0.1, 1, "b"), "lstm": Estimate(0.9, 1, "b")}, Noise(0.1, "t"), "min"), "min"
    )["lstm"] == 0.8 / tie_margin(0.1)


def test_the_last_rung_cuts_no_one_the_models_left_share_what_is_left() -> None:
    """Twelve trials for four models, a first rung of two: gru and lstm are stopped there (the two
    survivors' next rung of four fits the eight left), but at the second rung a cut would leave
    ncgru a rung of eight in the four left: scoRNN, far behind, is not stopped and both end."""
    searcher, plans, _ = race(("lstm", "gru", "scornn", "ncgru"), trials=3, rung=2)
    assert run_out(searcher) == 12
    assert set(searcher.race.stopped) == {"lstm", "gru"} and searcher.race.final
    assert plans["scornn"].done == plans["ncgru"].done == 4

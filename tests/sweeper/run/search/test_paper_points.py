"""A study asks for the papers' points first, marks them, reruns one a stopped driver cut short,
and its summary says how the search compares; TPE and GP draw only valid combinations."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from sweeper.results.summaries import search_notes, study_summaries
from sweeper.run.launch import create_sweep, study_searcher
from sweeper.run.search.repair import requeue_paper_points
from sweeper.run.search.samplers import make_sampler, paper_point_count, sampler_text
from sweeper.run.search.searcher import MultiStudySearcher, StudyPlan, origin_tags
from sweeper.spec.loading import parse_spec
from sweeper.spec.space import suggest_params
from sweeper.spec.sweep import trial_config
from sweeper.store.database import Store
from sweeper.store.trial_record import INTERRUPTED_ATTR, PAPER_POINT_ATTR, SAMPLER_ATTR
from tests.helpers import dump_spec, tiny_spec

optuna.logging.set_verbosity(optuna.logging.WARNING)
POINT = ("ncgru Table 2, gru, T=200", {"hidden_size": 12, "lr": 0.005})


def spec_of(**overrides: object):
    return parse_spec(dump_spec(tiny_spec(models=("gru",), **overrides)), "s.yaml")


def registered(tmp_path: Path, spec) -> tuple[Store, optuna.Study]:
    store = Store(f"sqlite:///{tmp_path / 'sweeper.db'}")
    record = create_sweep(
        spec,
        store,
        f"sqlite:///{tmp_path / 'mlflow.db'}",
        None,
        None,
        home=tmp_path,
        first_trials={"gru": [POINT]},
    )
    return store, optuna.load_study(study_name=record.studies[0].study_name, storage=store.optuna)


def test_the_papers_point_is_the_first_trial_and_is_marked(tmp_path: Path) -> None:
    spec = spec_of()
    store, study = registered(tmp_path, spec)
    searcher = MultiStudySearcher(spec, [StudyPlan(study, "gru", None, 4)], None, None)
    first = searcher.suggest("a")
    assert (first["hidden_size"], first["lr"]) == (12, 0.005)
    trial = study.get_trials()[0]
    assert trial.user_attrs[PAPER_POINT_ATTR] == POINT[0]
    assert origin_tags(trial.user_attrs) == {"sweeper.paper_point": POINT[0]}
    searcher.on_trial_complete("a", {"step": 30, "valid_loss": 0.5})
    second = searcher.suggest("b")
    assert PAPER_POINT_ATTR not in study.get_trials()[1].user_attrs and second["seed"] != first["seed"]
    searcher.on_trial_complete("b", {"step": 30, "valid_loss": 0.4})
    record = store.get_sweep("tiny-1")
    [summary] = study_summaries(store, record)
    assert [(p.label, p.trial, p.value) for p in summary.paper_points] == [(POINT[0], 0, 0.5)]
    assert search_notes(summary, "min") == [
        f"the paper's point ({POINT[0]}) reached 0.5 at trial 0; the search's best 0.4 is 20% better"
    ]
    store.dispose()


def test_a_papers_point_cut_short_is_asked_for_again(tmp_path: Path) -> None:
    store, study = registered(tmp_path, spec_of())
    trial = study.ask()
    suggest_params(trial, spec_of(), "gru")
    trial.set_user_attr(INTERRUPTED_ATTR, True)  # as reconcile marks what a stopped driver left
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    assert requeue_paper_points(study) == 1 and requeue_paper_points(study) == 0
    again = study.ask()
    assert again.user_attrs[PAPER_POINT_ATTR] == POINT[0]
    assert suggest_params(again, spec_of(), "gru") == {"hidden_size": 12, "lr": 0.005}
    store.dispose()


def draws(sampler: optuna.samplers.BaseSampler, n: int, points: tuple[float, ...] = ()) -> list[float]:
    study = optuna.create_study(sampler=sampler)
    for lr in points:
        study.enqueue_trial({"lr": lr}, user_attrs={PAPER_POINT_ATTR: f"a paper's lr={lr}"})
    values = []
    for _ in range(n):
        trial = study.ask()
        values.append(trial.suggest_float("lr", 1e-4, 1e-1, log=True))
        study.tell(trial, abs(values[-1] - 0.01))
    return values


@pytest.mark.parametrize("name", ["tpe", "gp"])
@pytest.mark.parametrize(
    ("trials", "startup", "expected"), [(12, None, 4), (6, None, 3), (60, None, 10), (12, 2, 2)]
)
def test_a_study_models_its_results_after_a_share_of_its_budget(
    name: str, trials: int, startup: int | None, expected: int
) -> None:
    spec = spec_of(sampler={"name": name, "startup_trials": startup}, budget={"trials": trials})
    sampled = draws(make_sampler(spec, "gru", 0), expected + 2)
    random = draws(optuna.samplers.RandomSampler(seed=0), expected + 2)
    assert sampled[:expected] == random[:expected]
    assert sampled[expected:] != random[expected:]
    assert sampler_text(spec, "gru").endswith(f"after {expected} random trials")


@pytest.mark.parametrize("name", ["tpe", "gp"])
def test_the_papers_points_come_before_the_random_trials_not_among_them(name: str) -> None:
    spec = spec_of(sampler={"name": name}, budget={"trials": 6})
    points = (1e-3, 2e-3)
    sampled = draws(make_sampler(spec, "gru", 0, papers=2), 2 + 3 + 2, points)
    random = draws(optuna.samplers.RandomSampler(seed=0), 2 + 3 + 2, points)
    assert sampled[:5] == random[:5] and sampled[:2] == list(points)
    assert sampled[5:] != random[5:]
    assert sampler_text(spec, "gru", 2).endswith("after 2 papers' points and 3 random trials")


def test_a_launched_study_counts_its_papers_point_once(tmp_path: Path) -> None:
    store, study = registered(tmp_path, spec_of(budget={"trials": 6}))
    assert paper_point_count(study.get_trials()) == 1
    study_searcher(store, store.get_sweep("tiny-1"), None)
    assert study.user_attrs[SAMPLER_ATTR].endswith("after 1 papers' point and 3 random trials")
    trial = study.ask()
    trial.set_user_attr(INTERRUPTED_ATTR, True)
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    assert requeue_paper_points(study) == 1 and paper_point_count(study.get_trials()) == 1  # asked twice
    store.dispose()


@pytest.mark.parametrize(
    ("name", "multivariate", "expected"),
    [
        ("tpe", True, "TPE (multivariate, grouped, constant liar)"),
        ("tpe", False, "TPE (independent, constant liar)"),
        ("gp", True, "Gaussian process"),
    ],
)
def test_a_conditional_space_draws_only_valid_combinations(
    name: str, multivariate: bool, expected: str
) -> None:
    spec = parse_spec(
        dump_spec(
            tiny_spec(
                models=("ncgru",),
                sampler={"name": name, "multivariate": multivariate},
                per_model={"ncgru": {"rho": {"int": [0, 16]}, "neumann_order": {"choice": [0, 2]}}},
            )
        ),
        "s.yaml",
    )
    sampler = make_sampler(spec, "ncgru", 0)
    assert sampler_text(spec, "ncgru") == f"{expected} after 3 random trials"
    if name == "tpe":  # Optuna's own switches, as the text says
        assert (sampler._multivariate, sampler._group) == (multivariate, multivariate)
    study = optuna.create_study(sampler=sampler)
    for _ in range(14):
        trial = study.ask()
        config = trial_config(spec, "ncgru", suggest_params(trial, spec, "ncgru"), 0)
        assert 0 <= config["rho"] <= config["hidden_size"] and config["neumann_order"] in (0, 2)
        study.tell(trial, abs(config["lr"] - 0.01) + config["rho"] / 100)

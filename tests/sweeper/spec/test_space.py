"""Search spaces: each study samples exactly its model's parameters, ρ stays within the hidden
size, grids are walked, pruners and step budgets end trials and studies as declared."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState
from ray.tune.search import Searcher

from sweeper.run.search.pruning import make_pruner
from sweeper.run.search.samplers import make_sampler
from sweeper.run.search.searcher import MultiStudySearcher, StudyPlan
from sweeper.spec.loading import SpecError, parse_spec
from sweeper.spec.space import study_budget, suggest_params
from sweeper.spec.sweep import trial_config
from tests.helpers import dump_spec, tiny_spec
from trainables.catalog import load_all
from trainables.registry import MODELS
from trainables.train import TRAINING, TrialConfig

optuna.logging.set_verbosity(optuna.logging.WARNING)


def spec_of(**overrides):
    return parse_spec(dump_spec(tiny_spec(**overrides)), "s.yaml")


def sample(spec, model, n=50, sampler=None):
    study = optuna.create_study(sampler=sampler or optuna.samplers.RandomSampler(seed=0))
    drawn = []
    for _ in range(n):
        trial = study.ask()
        params = suggest_params(trial, spec, model)
        drawn.append((trial.params, trial_config(spec, model, params, 0)))
        study.tell(trial, 0.0)
    return drawn


def test_each_models_study_has_exactly_its_own_parameters():
    load_all()
    spec = spec_of(
        models=["lstm", "goru", "ncgru"],
        params={
            "iterations": 30,
            "hidden_size": {"int": [16, 64]},
            "lr": {"float": [1e-4, 1e-2], "log": True},
            "capacity": {"int": [2, 4]},
            "neumann_order": {"choice": [0, 1, 2, 3]},
            "reset_interval": {"int": [10, 100], "log": True},
        },
    )
    expected = {
        "lstm": {"hidden_size", "lr"},
        "goru": {"hidden_size", "lr", "capacity"},
        "ncgru": {"hidden_size", "lr", "neumann_order", "reset_interval"},
    }
    for model, names in expected.items():
        for params, config in sample(spec, model, n=5):
            assert set(params) == names
            TrialConfig.from_mapping(config)  # every sampled config is one the trial accepts
            assert set(config) - {"task", "task_settings", "model", "seed"} <= set(TRAINING) | set(
                MODELS.get(model).all_hyperparams
            )


@pytest.mark.parametrize("rho", [{"int": [0, 500]}, {"fraction": [0.0, 1.0]}, {"fraction": 0.5}])
def test_rho_never_exceeds_the_sampled_hidden_size(rho):
    spec = spec_of(models=["ncgru", "scornn"], per_model={"ncgru": {"rho": rho}, "scornn": {"rho": rho}})
    for model in ("ncgru", "scornn"):
        draws = sample(spec, model, n=80)
        assert all(0 <= c["rho"] <= c["hidden_size"] for _, c in draws)
        if rho == {"fraction": 0.5}:
            assert all(c["rho"] == round(c["hidden_size"] / 2) for _, c in draws)
        assert len({c["rho"] for _, c in draws}) > 1


@pytest.mark.parametrize(
    ("per_model", "expected"),
    [
        ({"ncgru": {"rho": 50}}, "rho 50 exceeds hidden_size 4"),
        ({"gru": {"neumann_order": 2}}, "per_model.gru.neumann_order"),
        ({"ncgru": {"rho": {"fraction": [0.5, 1.5]}}}, "0 <= low <= high <= 1"),
        ({"ncgru": {"lr": {"fraction": 0.5}}}, "only rho can be a fraction"),
        ({"ncgru": {"lr": {"match": {"parameters": 100}}}}, "only hidden_size can be derived"),
        ({"ncgru": {"hidden_size": {"match": {"parameters": 100, "model": "gru"}}}}, "either"),
        ({"ncgru": {"neumann_order": {"grid": [1, 2]}}}, "every searched value must be a grid"),
    ],
)
def test_invalid_combinations_are_rejected_when_the_spec_is_read(per_model, expected):
    with pytest.raises(SpecError) as info:
        parse_spec(dump_spec(tiny_spec(models=["gru", "ncgru"], per_model=per_model)), "s.yaml")
    assert any(expected in e for e in info.value.errors), info.value.errors


def test_grids_are_walked_and_cap_the_study_budget():
    spec = spec_of(
        models=["gru"],
        params={"iterations": 30, "hidden_size": {"grid": [8, 16]}, "lr": {"grid": [0.01, 0.001, 0.1]}},
        budget={"trials": 50},
    )
    assert study_budget(spec, "gru") == 6
    draws = sample(spec, "gru", n=6, sampler=make_sampler(spec, "gru", 0))
    assert sorted((p["hidden_size"], p["lr"]) for p, _ in draws) == sorted(
        (h, lr) for h in (8, 16) for lr in (0.01, 0.001, 0.1)
    )


def test_fixed_per_model_values_rerun_a_papers_setting():
    spec = spec_of(models=["ncgru"], per_model={"ncgru": {"hidden_size": 118, "rho": 50, "neumann_order": 2}})
    (params, config), *_ = sample(spec, "ncgru", n=1)
    assert "hidden_size" not in params and (
        config["hidden_size"],
        config["rho"],
        config["neumann_order"],
    ) == (118, 50, 2)


def make_searcher(spec, trials=10, step_budget=None):
    plan = StudyPlan(
        optuna.create_study(study_name="gru", pruner=make_pruner(spec)), "gru", None, trials, step_budget
    )
    return MultiStudySearcher(spec, [plan], None, None), plan


def test_median_pruner_stops_a_trial_worse_than_the_median():
    spec = spec_of(models=["gru"], scheduler={"name": "median", "grace_period": 20})
    searcher, plan = make_searcher(spec)
    for trial_id, value in (("a", 0.1), ("b", 0.2)):
        searcher.suggest(trial_id)
        for step in (10, 20, 30):
            assert not searcher.should_prune(trial_id, {"step": step, "valid_loss": value})
        searcher.on_trial_complete(trial_id, None)
    searcher.suggest("c")
    assert not searcher.should_prune("c", {"step": 10, "valid_loss": 0.9})  # within the warm-up
    assert searcher.should_prune("c", {"step": 20, "valid_loss": 0.9})
    searcher.on_trial_complete("c", None)
    states = [t.state for t in plan.study.trials]
    assert states == [TrialState.COMPLETE, TrialState.COMPLETE, TrialState.PRUNED]
    assert plan.study.trials[2].intermediate_values == {10: 0.9, 20: 0.9}


@pytest.mark.parametrize("name", ["asha", "none", "median", "hyperband"])
def test_pruner_matches_the_scheduler(name):
    pruner = make_pruner(spec_of(scheduler={"name": name}))
    expected = {
        "median": optuna.pruners.MedianPruner,
        "hyperband": optuna.pruners.HyperbandPruner,
    }.get(name, optuna.pruners.NopPruner)
    assert isinstance(pruner, expected)


def test_step_budget_ends_a_study_once_spent():
    searcher, plan = make_searcher(spec_of(models=["gru"]), trials=10, step_budget=50)
    searcher.suggest("a")
    searcher.on_trial_complete("a", {"step": 30, "valid_loss": 0.5})
    searcher.suggest("b")
    searcher.on_trial_complete("b", {"step": 20, "valid_loss": 0.5})  # pruned at 20: 50 steps spent
    assert plan.steps == 50
    assert searcher.suggest("c") is Searcher.FINISHED
    fresh = MultiStudySearcher(searcher.spec, [StudyPlan(plan.study, "gru", None, 10, 50)], None, None)
    assert fresh.plans[0].steps == 50 and fresh.plans[0].remaining == 0


def test_per_model_resources():
    spec = spec_of(resources={"cpus": 1, "gpus": 0.25, "per_model": {"lstm": {"cpus": 2, "gpus": 0.5}}})
    assert spec.resources.for_model("lstm") == {"cpu": 2, "gpu": 0.5}
    assert spec.resources.for_model("gru") == {"cpu": 1, "gpu": 0.25}
    reserved = spec_of(resources={"memory_gb": 2}).resources.for_model("gru")
    assert reserved == {"cpu": 1, "gpu": 0, "memory": 2 * 2**30}
    with pytest.raises(SpecError, match=r"resources\.per_model\.eurnn"):
        spec_of(resources={"per_model": {"eurnn": {"cpus": 2}}})


def test_task_settings_such_as_dropout_are_searched_like_any_parameter():
    raw = tiny_spec(models=["gru", "lstm"], task={"name": "ptb_word", "settings": {"data_dir": "data/ptb"}})
    raw["params"] = {"task.output_dropout": {"float": [0.1, 0.5]}, "task.bptt": 35, "lr": 0.01}
    spec = parse_spec(dump_spec(raw), "t.yaml")
    for params, config in sample(spec, "gru", n=20):
        assert set(params) == {"task.output_dropout"}
        assert 0.1 <= config["task_settings"]["output_dropout"] <= 0.5
        assert config["task_settings"]["bptt"] == 35 and "task.bptt" not in config
    for bad, expected in (
        ({"task.output_dropout": {"float": [0.1, 1.5]}}, "outside the allowed range"),
        ({"task.data_dir": "elsewhere"}, "searchable: task.bptt"),
    ):
        raw["params"] = bad
        with pytest.raises(SpecError) as info:
            parse_spec(dump_spec(raw), "t.yaml")
        assert any(expected in e for e in info.value.errors), info.value.errors


def test_study_time_budget_ends_a_study_once_spent():
    searcher, plan = make_searcher(spec_of(models=["gru"]), trials=10)
    plan.time_budget = 5.0
    searcher.suggest("a")
    # the trial's own time in its worker, as it keeps it; Tune's clock adds the worker's set-up
    searcher.on_trial_complete("a", {"step": 30, "valid_loss": 0.5, "wall_time": 6.0, "time_total_s": 7.5})
    assert plan.seconds == 6.0
    assert searcher.suggest("b") is Searcher.FINISHED


def test_a_trial_over_its_time_limit_fails_with_the_reason():
    from sweeper.run.tune.runtime import _BudgetStopper

    spec = spec_of(models=["gru"], budget={"trials": 3, "trial_time": "2s"})
    searcher, plan = make_searcher(spec)
    searcher.suggest("a")
    stopper = _BudgetStopper(searcher, None)
    assert not stopper("a", {"step": 10, "valid_loss": 0.5, "time_total_s": 1.0})
    assert stopper("a", {"step": 20, "valid_loss": 0.4, "time_total_s": 2.5})
    searcher.on_trial_complete("a", {"step": 20, "valid_loss": 0.4, "time_total_s": 2.5})
    (trial,) = plan.study.trials
    assert trial.state == TrialState.FAIL
    assert trial.user_attrs["fail_reason"] == "exceeded the trial time limit of 2s"


def test_per_model_resources_share_what_they_leave_out():
    spec = spec_of(resources={"cpus": 2, "gpus": 0.5, "memory_gb": 1, "per_model": {"lstm": {"gpus": 0.125}}})
    assert spec.resources.for_model("lstm") == {"cpu": 2, "gpu": 0.125, "memory": 2**30}
    assert spec.resources.for_model("gru") == {"cpu": 2, "gpu": 0.5, "memory": 2**30}


def test_no_gpus_puts_every_trial_on_the_cpu():
    from sweeper.run.launch import without_gpus

    spec = spec_of(resources={"gpus": 0.5, "per_model": {"lstm": {"gpus": 0.125, "cpus": 2}}})
    cpu_only = without_gpus(spec)
    assert cpu_only.resources.for_model("lstm") == {"cpu": 2, "gpu": 0}
    assert cpu_only.resources.for_model("gru") == {"cpu": 1, "gpu": 0}

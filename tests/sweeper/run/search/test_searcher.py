"""The multi-study searcher, driven as Tune drives it: budgets, interleaving and faithful states."""

from __future__ import annotations

import math
import threading

import optuna
import pytest
import yaml
from optuna.trial import TrialState
from ray.tune.search import Searcher

from sweeper.run.launch import searcher_over
from sweeper.run.search.searcher import MultiStudySearcher, StudyPlan
from sweeper.spec.loading import parse_spec
from sweeper.store.trial_record import INTERRUPTED_ATTR, PRICE_ATTR, trial_seed
from tests.helpers import add_queued_trials, tiny_spec


class RecordingTracker:
    def __init__(self):
        self.started, self.metrics, self.finished, self.tracebacks = [], [], [], []

    def start_trial(self, experiment_id, parent, study, task, model, number, params, extra_tags=None):
        self.started.append((study, number, params))
        return f"run-{study}-{number}"

    def log_metrics(self, run_id, step, metrics):
        self.metrics.append((run_id, step, metrics))

    def finish_trial(self, run_id, state, value, reason, traceback=None):
        self.finished.append((run_id, state, value, reason))
        self.tracebacks.append(traceback)


def make(trials=3, models=("lstm", "gru"), tracker=None):
    spec = parse_spec(yaml.safe_dump(tiny_spec(models=models, budget={"trials": trials})), "t.yaml")
    storage = optuna.storages.InMemoryStorage()
    plans = [
        StudyPlan(optuna.create_study(study_name=m, storage=storage), m, f"parent-{m}", trials)
        for m in models
    ]
    tracker = tracker or RecordingTracker()
    return MultiStudySearcher(spec, plans, tracker, "exp"), plans, tracker


def report(searcher, trial_id, steps, values):
    for step, value in zip(steps, values, strict=True):
        searcher.on_trial_result(trial_id, {"step": step, "valid_loss": value, "train_loss": 1.0})


def test_suggest_gives_each_model_only_its_parameters_and_a_recorded_seed():
    searcher, plans, tracker = make()
    config = searcher.suggest("t0")
    assert config["task"] == "denoise" and config["model"] in ("lstm", "gru")
    assert config["iterations"] == 30 and 4 <= config["hidden_size"] <= 16
    assert config["seed"] == trial_seed(0, 0)
    study = next(p.study for p in plans if p.model == config["model"])
    assert study.trials[0].user_attrs["seed"] == config["seed"]
    searcher.flush_tracking()
    assert tracker.started[0][2]["task.T"] == 6


def test_studies_are_interleaved_and_budgets_end_the_search():
    searcher, _, _ = make(trials=2)
    models = [searcher.suggest(f"t{i}")["model"] for i in range(4)]
    assert sorted(models[:2]) == ["gru", "lstm"] and sorted(models[2:]) == ["gru", "lstm"]
    assert searcher.suggest("t4") is Searcher.FINISHED


def test_the_dearest_model_starts_first_and_later_trials_keep_the_spec_s_order():
    """Longest first: the cheap models' first trials fill the slots the dear one leaves, so every
    model completes a trial sooner; once each has started, a dear model first at every tie would
    delay the cheap ones' trials. Unpriced studies keep the spec's order."""
    searcher, plans, _ = make(trials=2, models=("lstm", "gru", "goru"))
    for plan, hours in zip(plans, (0.01, 0.03, 0.02), strict=True):
        plan.trial_hours = hours
    order = [searcher.suggest(f"t{i}")["model"] for i in range(6)]
    assert order == ["gru", "goru", "lstm", "lstm", "gru", "goru"]
    unpriced, _, _ = make(trials=2, models=("lstm", "gru", "goru"))
    assert [unpriced.suggest(f"t{i}")["model"] for i in range(3)] == ["lstm", "gru", "goru"]


def test_the_searcher_reads_each_study_s_price_as_the_launch_kept_it():
    spec = parse_spec(yaml.safe_dump(tiny_spec(models=("lstm", "gru"), budget={"trials": 4})), "t.yaml")
    storage = optuna.storages.InMemoryStorage()
    for model in spec.models:
        optuna.create_study(study_name=model, storage=storage)
    priced = optuna.load_study(study_name="gru", storage=storage)
    priced.set_user_attr(PRICE_ATTR, {"worker_hours": [1.0, 3.0], "source": "measured here"})
    plans = searcher_over(spec, storage, [(m, m, None) for m in spec.models]).plans
    assert {p.model: p.trial_hours for p in plans} == {"lstm": 0.0, "gru": pytest.approx(0.5)}


def test_full_run_is_complete_with_the_best_attained_value():
    searcher, plans, tracker = make()
    searcher.suggest("a")
    report(searcher, "a", [10, 20], [0.9, 0.5])
    searcher.on_trial_complete("a", {"step": 30, "valid_loss": 0.7})
    trial = next(p.study for p in plans if p.study.trials).trials[0]
    assert trial.state == TrialState.COMPLETE
    assert trial.value == 0.5
    assert trial.intermediate_values == {10: 0.9, 20: 0.5, 30: 0.7}
    model = next(p.model for p in plans if p.study.trials)
    assert trial.user_attrs["mlflow_run_id"] == f"run-{model}-0"
    searcher.flush_tracking()
    assert tracker.finished[-1][1:3] == ("COMPLETE", 0.5)
    assert [m[1] for m in tracker.metrics] == [10, 20, 30]


def test_stopped_early_by_the_scheduler_is_pruned_with_intermediate_values():
    searcher, plans, tracker = make()
    searcher.suggest("a")
    report(searcher, "a", [10], [0.9])
    searcher.on_trial_complete("a", {"step": 10, "valid_loss": 0.9})
    trial = next(p.study for p in plans if p.study.trials).trials[0]
    assert trial.state == TrialState.PRUNED
    assert trial.intermediate_values == {10: 0.9}
    searcher.flush_tracking()
    assert tracker.finished[-1][1] == "PRUNED"


def test_a_raising_trial_fails_with_its_reason_and_the_search_goes_on():
    searcher, plans, tracker = make()
    searcher.suggest("a")
    report(searcher, "a", [10], [0.9])
    where = (
        'Traceback (most recent call last):\n  File "train.py", line 9\nTrialDiverged: loss nan at step 12\n'
    )
    searcher.on_trial_complete(
        "a", {"fail_reason": "TrialDiverged: loss nan at step 12", "fail_traceback": "x" * 30_000 + where}
    )
    trial = next(p.study for p in plans if p.study.trials).trials[0]
    assert trial.state == TrialState.FAIL
    assert trial.user_attrs["fail_reason"] == "TrialDiverged: loss nan at step 12"
    kept = trial.user_attrs["fail_traceback"]
    assert kept.endswith(where) and len(kept) == 20_000  # its end, where the error is
    assert INTERRUPTED_ATTR not in trial.user_attrs
    searcher.flush_tracking()
    assert tracker.finished[-1][1] == "FAIL" and "nan" in tracker.finished[-1][3]
    assert tracker.tracebacks[-1] == kept
    assert isinstance(searcher.suggest("b"), dict)


def test_mlflow_writes_run_on_their_own_thread_in_order_while_the_search_goes_on():
    gate = threading.Event()

    class GatedTracker(RecordingTracker):
        def start_trial(self, *args, **kwargs):
            assert gate.wait(30), "the test never opened the gate"
            self.thread = threading.current_thread()
            return super().start_trial(*args, **kwargs)

    searcher, plans, tracker = make(tracker=GatedTracker())
    config = searcher.suggest("a")  # returns while MLflow has not created the run yet
    report(searcher, "a", [10, 20], [0.9, 0.5])
    assert tracker.started == [] and tracker.metrics == []
    gate.set()
    searcher.on_trial_complete("a", {"step": 30, "valid_loss": 0.7})
    searcher.flush_tracking()
    run = f"run-{config['model']}-0"
    assert tracker.thread is not threading.current_thread()
    assert [(m[0], m[1]) for m in tracker.metrics] == [(run, 10), (run, 20), (run, 30)]
    assert tracker.finished == [(run, "COMPLETE", 0.5, None)]
    trial = next(p.study for p in plans if p.study.trials).trials[0]
    assert trial.user_attrs["mlflow_run_id"] == run


def test_a_tracker_that_raises_costs_no_trial_and_leaves_no_run_id():
    class BrokenTracker(RecordingTracker):
        def start_trial(self, *args, **kwargs):
            raise RuntimeError("tracking bug")

    searcher, plans, tracker = make(tracker=BrokenTracker())
    searcher.suggest("a")
    report(searcher, "a", [10, 20], [0.9, 0.5])
    searcher.on_trial_complete("a", {"step": 30, "valid_loss": 0.7})
    searcher.flush_tracking()
    trial = next(p.study for p in plans if p.study.trials).trials[0]
    assert trial.state == TrialState.COMPLETE and "mlflow_run_id" not in trial.user_attrs
    assert tracker.metrics == [] and tracker.finished == []  # no run, so nothing written to one


def test_a_crashed_worker_is_a_failure():
    searcher, plans, _ = make()
    searcher.suggest("a")
    searcher.on_trial_complete("a", None, error=True)
    trial = next(p.study for p in plans if p.study.trials).trials[0]
    assert trial.state == TrialState.FAIL and "crashed" in trial.user_attrs["fail_reason"]


def test_interrupted_trials_fail_without_using_budget():
    searcher, plans, _ = make(trials=1)
    searcher.suggest("a")
    searcher.suggest("b")
    report(searcher, "a", [10], [0.8])
    searcher.stop_reason = "interrupted by SIGINT"
    searcher.on_trial_complete("a", {"step": 10, "valid_loss": 0.8})
    searcher.abandon_running("interrupted by SIGINT")
    assert searcher.suggest("c") is Searcher.FINISHED
    for plan in plans:
        (trial,) = plan.study.trials
        assert trial.state == TrialState.FAIL and trial.user_attrs[INTERRUPTED_ATTR] is True
    fresh = MultiStudySearcher(
        searcher.spec, [StudyPlan(p.study, p.model, None, 1) for p in plans], None, None
    )
    assert all(p.remaining == 1 for p in fresh.plans)


def test_counts_resume_from_the_studies():
    searcher, plans, _ = make(trials=3)
    for trial_id in ("a", "b"):
        searcher.suggest(trial_id)
        searcher.on_trial_complete(trial_id, {"step": 30, "valid_loss": 0.4})
    fresh = MultiStudySearcher(
        searcher.spec, [StudyPlan(p.study, p.model, None, 3) for p in plans], None, None
    )
    assert sorted(p.done for p in fresh.plans) == [1, 1]
    assert all(p.best == 0.4 for p in fresh.plans)


def test_the_study_time_a_resume_reads_back_is_the_time_it_spent_in_the_workers(tmp_path):
    """`budget.study_time` caps the trials' own time in their workers: a resume reads back what the
    searcher counted, not the trials' time from their suggestion, which counts their wait for a
    free slot besides (six trials of 10 s on two slots: 60 s in the workers, 120 s suggested)."""
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    add_queued_trials(optuna.create_study(study_name="gru", storage=storage), [10.0] * 6, slots=2)
    spec = parse_spec(yaml.safe_dump(tiny_spec(models=("gru",), budget={"trials": 10})), "t.yaml")
    study = optuna.load_study(study_name="gru", storage=storage)
    assert sum(t.duration.total_seconds() for t in study.trials) == 120.0
    resumed = StudyPlan(study, "gru", None, 10, time_budget=90.0)
    MultiStudySearcher(spec, [resumed], None, None)
    assert resumed.seconds == 60.0 and resumed.remaining == 4

    # a trial counted as it ends is read back alike: its last report's `wall_time`, not Tune's clock
    searcher, (plan,), _ = make(trials=3, models=("gru",))
    searcher.suggest("a")
    searcher.on_trial_result("a", {"step": 10, "valid_loss": 0.5, "wall_time": 4.0, "time_total_s": 5.0})
    searcher.on_trial_complete("a", {"step": 30, "valid_loss": 0.4, "wall_time": 12.0, "time_total_s": 13.5})
    searcher.suggest("b")
    searcher.on_trial_complete("b", {"step": 20, "valid_loss": 0.6, "wall_time": 8.0, "time_total_s": 9.0})
    assert plan.seconds == 20.0
    fresh = MultiStudySearcher(searcher.spec, [StudyPlan(plan.study, "gru", None, 3)], None, None)
    assert fresh.plans[0].seconds == plan.seconds


def test_non_finite_values_are_not_reported():
    searcher, plans, _ = make()
    searcher.suggest("a")
    report(searcher, "a", [10, 20], [math.nan, 0.6])
    searcher.on_trial_complete("a", {"step": 30, "valid_loss": math.inf})
    trial = next(p.study for p in plans if p.study.trials).trials[0]
    assert trial.state == TrialState.COMPLETE and trial.value == 0.6


@pytest.mark.parametrize("mode", ["min", "max"])
def test_best_follows_the_objective_direction(mode):
    searcher, plans, _ = make()
    searcher._mode = mode
    searcher.suggest("a")
    report(searcher, "a", [10, 20, 30], [0.3, 0.9, 0.5])
    searcher.on_trial_complete("a", None)
    trial = next(p.study for p in plans if p.study.trials).trials[0]
    assert trial.value == (0.3 if mode == "min" else 0.9)

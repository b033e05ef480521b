"""Per-study early stopping: a trial is ranked only against trials of its own study."""

from __future__ import annotations

from types import SimpleNamespace

from ray.tune.schedulers import ASHAScheduler, TrialScheduler

from sweeper.run.search.pruning import PerStudyScheduler


def trial(trial_id: str, model: str) -> SimpleNamespace:
    return SimpleNamespace(trial_id=trial_id, config={"model": model})


def test_a_weak_model_is_not_pruned_by_a_strong_one():
    scheduler = PerStudyScheduler(
        lambda: ASHAScheduler(
            time_attr="step", metric="loss", mode="min", max_t=100, grace_period=10, reduction_factor=2
        )
    )
    strong = [trial(f"s{i}", "gru") for i in range(2)]
    weak = [trial(f"w{i}", "lstm") for i in range(2)]
    for t in strong + weak:
        scheduler.on_trial_add(None, t)
    assert scheduler.on_trial_result(None, strong[0], {"step": 10, "loss": 0.1}) == TrialScheduler.CONTINUE
    assert scheduler.on_trial_result(None, strong[1], {"step": 10, "loss": 0.2}) == TrialScheduler.STOP
    # far worse than every GRU trial, but the first of its own study at this rung
    assert scheduler.on_trial_result(None, weak[0], {"step": 10, "loss": 5.0}) == TrialScheduler.CONTINUE
    assert scheduler.on_trial_result(None, weak[1], {"step": 10, "loss": 6.0}) == TrialScheduler.STOP
    assert set(scheduler._schedulers) == {"gru", "lstm"}

"""The cost estimate of a plan rests on measured parts of a trial: its start (with its first
step), a step (forward, backward and optimizer) and an evaluation, each timed apart."""

from __future__ import annotations

from trainables.step_time import trial_costs
from trainables.train import config_from_settings


def test_a_trials_start_step_and_evaluation_are_timed_apart() -> None:
    config = config_from_settings(
        "adding",
        "goru",
        {"T": 6, "hidden_size": 8, "batch_size": 4, "valid_size": 4, "test_size": 4},
        device="cpu",
    )
    costs = trial_costs(config, steps=2)
    assert costs.start > 0 and costs.step > 0 and costs.evaluation > 0

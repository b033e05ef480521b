"""The cost estimate of a plan rests on a measured step: forward, backward and optimizer."""

from __future__ import annotations

from trainables.step_time import seconds_per_step
from trainables.train import config_from_settings


def test_a_step_is_timed_after_an_untimed_one() -> None:
    config = config_from_settings(
        "adding",
        "goru",
        {"T": 6, "hidden_size": 8, "batch_size": 4, "valid_size": 4, "test_size": 4},
        device="cpu",
    )
    seconds = seconds_per_step(config, steps=2)
    assert 0 < seconds < 10

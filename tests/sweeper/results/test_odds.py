"""The verdict's odds: a clear winner is stated with a probability near one, two models within
seed noise are named as a tie with who is ahead how often, and the noise comes from repeated
seeds, then near-identical configurations, then the recorded tables, and says which."""

from __future__ import annotations

import json
import math

import numpy as np
import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution

from sweeper.results.odds import (
    SEED_NOISE,
    Estimate,
    Noise,
    near_identical,
    odds,
    seed_noise,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_a_clear_winner_is_stated_with_its_probability_and_a_close_pair_as_a_tie() -> None:
    noise = Noise(0.004, "near-identical configurations (5 pairs)")
    clear = odds(
        {"gru": Estimate(0.096, 1, "its best trial"), "scornn": Estimate(0.167, 1, "its best trial")},
        noise,
        "min",
    )
    assert clear.winner == "gru" and clear.p_winner > 0.999 and clear.co_winners == ["gru"]
    assert clear.lines("denoise-1") == [
        "P(gru is the true winner) = 1.00 (seed noise 0.004, from near-identical configurations (5 pairs))"
    ]
    close = odds(
        {
            "gru": Estimate(0.0961, 1, "b"),
            "ncgru": Estimate(0.0988, 1, "b"),
            "goru": Estimate(0.1125, 1, "b"),
        },
        Noise(0.005, "repeated seeds"),
        "min",
    )
    assert close.co_winners == ["gru", "ncgru"] and close.tie
    assert 0.55 < close.p_winner < 0.75 and abs(sum(close.p_best.values()) - 1) < 1e-9
    (said,) = close.lines("denoise-1")
    # the tie holds when both true values lie within 2σ of the best: their gap 0.0027 scatters by
    # 0.005·√2, so P = Φ((0.01 - 0.0027) / 0.00707) - Φ((-0.01 - 0.0027) / 0.00707) = 0.81
    assert close.p_tie == pytest.approx(0.81, abs=0.015)
    assert said.startswith(
        f"gru and ncgru tie within seed noise (P {close.p_tie:.2f}; gru ahead in {100 * close.p_winner:.0f}%"
    )
    assert said.endswith("`sweeper confirm denoise-1 --seeds 5` separates them")
    # more seeds behind each estimate narrow the noise: the same values become separated
    firm = odds(
        {m: Estimate(e.value, 50, "50 confirmation runs") for m, e in close.estimates.items()},
        close.noise,
        "min",
    )
    assert firm.co_winners == ["gru"] and firm.p_winner > 0.95 and firm.p_tie is None
    # a maximised objective: the highest wins
    accuracy = odds({"a": Estimate(0.9, 1, "b"), "b": Estimate(0.5, 1, "b")}, Noise(0.01, "x"), "max")
    assert accuracy.winner == "a"


def test_a_tie_padded_with_a_near_miss_states_a_low_chance_though_the_best_is_surely_among_it() -> None:
    padded = odds(
        {
            "gru": Estimate(0.0961, 1, "b"),
            "ncgru": Estimate(0.0988, 1, "b"),
            "goru": Estimate(0.108, 1, "b"),  # inside the naming margin 2σ√2 = 0.0141, 0.0119 behind
            "scornn": Estimate(0.167, 1, "b"),
        },
        Noise(0.005, "repeated seeds"),
        "min",
    )
    assert padded.co_winners == ["gru", "ncgru", "goru"]
    assert sum(padded.p_best[m] for m in padded.co_winners) > 0.999
    assert padded.p_tie < 0.35
    assert padded.as_dict()["p_tie"] == padded.p_tie


def test_the_noise_comes_from_repeated_seeds_then_near_identical_configurations_then_the_tables() -> None:
    repeated = seed_noise([[0.10, 0.12], [0.20, 0.22, 0.18]], [0.5, 0.5, 0.5], 0.1)
    assert repeated.source.startswith("repeated seeds (5 confirmation runs)")
    assert repeated.sigma == pytest.approx(math.sqrt((0.0002 + 0.0008) / 3))
    pairs = seed_noise([[0.1]], [0.01, -0.01, 0.02], 0.1)
    assert pairs.source == "near-identical configurations (3 pairs)"
    assert pairs.sigma == pytest.approx(math.sqrt(np.mean([1e-4, 1e-4, 4e-4]) / 2))
    shipped = json.loads(SEED_NOISE.read_text())
    fallback = seed_noise([], [0.01], 0.2)
    assert fallback.sigma == pytest.approx(0.2 * shipped["relative"]) and "recorded tables" in fallback.source


def test_near_identical_trials_are_those_within_five_percent_of_every_range_with_the_same_choices() -> None:
    lr = FloatDistribution(1e-4, 1e-2, log=True)
    opt = CategoricalDistribution(["adam", "rmsprop_tf"])

    def trial(value: float, rate: float, optimizer: str) -> optuna.trial.FrozenTrial:
        return optuna.trial.create_trial(
            value=value,
            params={"lr": rate, "optimizer": optimizer},
            distributions={"lr": lr, "optimizer": opt},
        )

    trials = [
        trial(0.30, 1e-3, "adam"),
        trial(0.32, 1.05e-3, "adam"),
        trial(0.2, 1.05e-3, "rmsprop_tf"),
        trial(0.1, 5e-3, "adam"),
    ]
    assert near_identical(trials, "min") == [pytest.approx(-0.02)]

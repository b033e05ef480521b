"""The verdict's odds: a clear winner is stated with a probability near one, two models within
seed noise are named as a tie with who is ahead how often, and the noise comes from repeated
seeds, then near-identical configurations, then the recorded tables, and says which."""

from __future__ import annotations

import dataclasses
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
    assert said.endswith(
        "`sweeper confirm denoise-1 --seeds 5` gives each of them fresh seeds, up to 5, until one is "
        "shown ahead of the rest"
    )
    # more seeds behind each estimate narrow the noise, not the margin: the gap of 0.0027 is
    # within 2σ = 0.01, a tie that now surely holds, while a gap beyond the margin separates
    firm = odds(
        {m: Estimate(e.value, 50, "50 confirmation runs") for m, e in close.estimates.items()},
        close.noise,
        "min",
    )
    assert firm.co_winners == ["gru", "ncgru"] and firm.p_tie > 0.999
    apart = odds({"gru": Estimate(0.0961, 50, "c"), "ncgru": Estimate(0.1088, 50, "c")}, close.noise, "min")
    assert apart.co_winners == ["gru"] and apart.p_winner > 0.999 and apart.p_tie is None
    # a maximised objective: the highest wins
    accuracy = odds({"a": Estimate(0.9, 1, "b"), "b": Estimate(0.5, 1, "b")}, Noise(0.01, "x"), "max")
    assert accuracy.winner == "a"


def test_a_tie_padded_with_a_near_miss_states_a_low_chance_though_the_best_is_surely_among_it() -> None:
    padded = odds(
        {
            "gru": Estimate(0.0961, 1, "b"),
            "ncgru": Estimate(0.0988, 1, "b"),
            "goru": Estimate(0.1055, 1, "b"),  # inside the tie margin 2σ = 0.01, 0.0094 behind
            "scornn": Estimate(0.167, 1, "b"),
        },
        Noise(0.005, "repeated seeds"),
        "min",
    )
    assert padded.co_winners == ["gru", "ncgru", "goru"]
    assert sum(padded.p_best[m] for m in padded.co_winners) > 0.999
    assert padded.p_tie < 0.5
    assert padded.as_dict()["p_tie"] == padded.p_tie


def test_the_noise_comes_from_repeated_seeds_then_near_identical_configurations_then_the_tables() -> None:
    repeated = seed_noise([[0.10, 0.12], [0.20, 0.22, 0.18]], [0.5, 0.5, 0.5], 0.1, "min")
    assert repeated.source.startswith("repeated seeds (5 confirmation runs)")
    assert repeated.sigma == pytest.approx(math.sqrt((0.0002 + 0.0008) / 3))
    pairs = seed_noise([[0.1]], [0.01, -0.01, 0.02], 0.1, "min")
    assert pairs.source == "near-identical configurations (3 pairs)"
    assert pairs.sigma == pytest.approx(math.sqrt(np.mean([1e-4, 1e-4, 4e-4]) / 2))
    shipped = json.loads(SEED_NOISE.read_text())
    fallback = seed_noise([], [0.01], 0.2, "min")
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


def test_a_spread_estimated_from_few_runs_makes_each_scatter_a_t() -> None:
    """Two models one run each, 2σ apart: Φ(2/√2) = 0.92 with σ known; a t with 2 degrees of
    freedom where σ comes from 2, 0.85."""
    from scipy.stats import t as student

    estimates = {"gru": Estimate(0.10, 1, "b"), "lstm": Estimate(0.12, 1, "b")}
    known = odds(estimates, Noise(0.01, "x"), "min")
    estimated = odds(estimates, Noise(0.01, "repeated seeds", 2), "min")
    assert known.p_winner == pytest.approx(0.921, abs=0.006)
    assert estimated.p_winner == pytest.approx(student.cdf(2 / math.sqrt(2), 2), abs=0.006)


def test_a_maximised_objective_at_100_percent_is_read_as_a_loss_at_its_floor() -> None:
    """The fallback noise of an accuracy is the tables' relative spread of its loss (the share
    wrong, at least one in a thousand), not of the accuracy: at 100% it is small, so a rival at
    95% is behind (relative to the accuracy it would be 0.042, and the two would tie)."""
    from sweeper.results.loss_scale import ACCURACY_FLOOR

    relative = json.loads(SEED_NOISE.read_text())["relative"]
    assert seed_noise([], [], 0.75, "max").sigma == pytest.approx(relative * 0.25)
    perfect = seed_noise([], [], 1.0, "max")
    assert perfect.sigma == pytest.approx(relative * ACCURACY_FLOOR)
    rivals = {"goru": Estimate(1.0, 1, "b"), "gru": Estimate(0.95, 1, "b"), "lstm": Estimate(0.6, 1, "b")}
    said = odds(rivals, perfect, "max")
    assert said.winner == "goru" and said.co_winners == ["goru"] and said.p_winner > 0.99


def test_a_rival_drawn_fewer_times_than_it_searches_values_gets_a_word_with_what_it_rests_on() -> None:
    from sweeper.results.odds import few_draws

    thin = few_draws({"gru": 1, "ncgru": 2, "lstm": 3}, {"gru": 2, "ncgru": 8, "lstm": 3}, winner="gru")
    assert thin == {"ncgru": (2, 8)}  # the winner's own best can only improve; lstm drew 3 of 3
    said = odds(
        {"gru": Estimate(0.1, 1, "its best trial"), "ncgru": Estimate(0.3, 1, "its best trial")},
        Noise(0.004, "near-identical configurations (5 pairs)"),
        "min",
    )
    lines = dataclasses.replace(said, thin=thin).lines("denoise-1")
    assert lines[-1].startswith("the search may have missed a rival's better configuration (ncgru 2/8:")
    assert said.lines("denoise-1")[-1].startswith("P(gru is the true winner)")

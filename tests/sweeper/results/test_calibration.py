"""The stated chance's recalibration: its inputs, which search a spec ran, the shipped map read
once and applied to the odds (the winner's chance, the others' scaled to the rest, or a tie's), and
the odds left as modelled where no map ships."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from sweeper.results import calibration
from sweeper.results.calibration import FEATURES, SEARCHES, calibrated, features, search_of
from sweeper.results.odds import Estimate, Noise, odds, recalibrated
from sweeper.spec.loading import parse_spec
from tests.helpers import tiny_spec


def test_a_verdict_becomes_the_maps_inputs_with_its_chance_clipped() -> None:
    said = features(1.0, True, "allocate: race")
    assert len(said) == len(FEATURES) and said[:3] == [1.0, pytest.approx(math.log(999)), 1.0]
    assert said[3:] == [float(s == "allocate: race") for s in SEARCHES[1:]]
    assert features(0.5, False, "the default")[1:] == [0.0, 0.0, *([0.0] * (len(SEARCHES) - 1))]
    with pytest.raises(ValueError, match="unknown search 'bayes'"):
        features(0.5, False, "bayes")


@pytest.mark.parametrize(
    ("sampler", "allocate", "search"),
    [
        ({}, "equal", "the default"),
        ({"multivariate": True}, "equal", "sampler.multivariate: true"),
        ({}, "race", "allocate: race"),
        ({"name": "random"}, "equal", "sampler.name: random"),
        ({"name": "gp", "transfer": False}, "equal", "sampler.name: gp"),
        ({"transfer": False}, "equal", "sampler.transfer: false"),
        ({"name": "cmaes"}, "equal", "the default"),
    ],
)
def test_a_spec_is_read_as_the_search_it_runs(sampler: dict, allocate: str, search: str) -> None:
    raw = tiny_spec()
    raw["sampler"] = {"name": "tpe", **sampler}
    raw.setdefault("budget", {})["allocate"] = allocate
    spec = parse_spec(yaml.safe_dump(raw), "s.yaml")
    assert search_of(spec.sampler, spec.budget.allocate) == search


def test_the_odds_state_the_maps_chance_and_keep_what_their_model_said(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    said = odds(
        {"gru": Estimate(0.100, 1, "b"), "lstm": Estimate(0.111, 1, "b"), "goru": Estimate(0.2, 1, "b")},
        Noise(0.004, "near-identical configurations (5 pairs)"),
        "min",
    )
    assert not said.tie
    beta = [0.5, 1.0, -1.0, *([0.0] * (len(FEATURES) - 3))]
    shipped = tmp_path / "odds_calibration.json"
    shipped.write_text(json.dumps({"features": list(FEATURES), "coefficients": beta}))
    monkeypatch.setattr(calibration, "SHIPPED", shipped)
    calibration.shipped.cache_clear()
    try:
        now = recalibrated(said, "the default")
        expected = 1 / (1 + math.exp(-(0.5 + math.log(said.p_winner / (1 - said.p_winner)))))
        assert now.p_winner == pytest.approx(expected) and now.modelled == said.p_winner
        assert sum(now.p_best.values()) == pytest.approx(1.0) and now.p_best["gru"] == now.p_winner
        assert now.lines("s-1")[0].startswith(f"P(gru is the true winner) = {now.p_winner:.2f}")
        assert "recalibrated to how often such verdicts were right" in now.lines("s-1")[0]
        assert recalibrated(said, "allocate: race").p_winner == now.p_winner  # no offset for it here
        tie = odds({"gru": Estimate(0.100, 1, "b"), "lstm": Estimate(0.101, 1, "b")}, said.noise, "min")
        tied = recalibrated(tie, "the default")
        assert tie.tie and tied.modelled == tie.p_tie and tied.p_winner == tie.p_winner
        assert tied.p_tie == pytest.approx(calibrated(tie.p_tie, True, "the default"))
        assert tied.p_tie < calibrated(tie.p_tie, False, "the default")
    finally:
        calibration.shipped.cache_clear()
    monkeypatch.setattr(calibration, "SHIPPED", tmp_path / "none.json")
    try:
        assert calibrated(0.7, False, "the default") == 0.7
        assert recalibrated(said, "the default") is said
    finally:
        calibration.shipped.cache_clear()


def test_a_map_learned_on_other_inputs_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shipped = tmp_path / "odds_calibration.json"
    shipped.write_text(json.dumps({"features": ["intercept"], "coefficients": [0.0]}))
    monkeypatch.setattr(calibration, "SHIPPED", shipped)
    calibration.shipped.cache_clear()
    try:
        with pytest.raises(ValueError, match="learned on other features"):
            calibrated(0.5, False, "the default")
    finally:
        calibration.shipped.cache_clear()

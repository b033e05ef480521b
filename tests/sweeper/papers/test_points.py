"""The papers' published configurations, mapped into a study's space or skipped with the reason."""

from __future__ import annotations

import pytest

from sweeper.papers.points import paper_points
from sweeper.spec.loading import parse_spec
from tests.helpers import dump_spec, tiny_spec
from trainables.catalog import load_all

load_all()


def spec_of(T: int = 200, **params: object):
    base = tiny_spec(
        models=("gru", "scornn", "ncgru", "eurnn"), task={"name": "denoise", "settings": {"T": T}}
    )
    base["params"] = {
        "iterations": 30,
        "hidden_size": {"int": [64, 256]},
        "lr": {"float": [1e-4, 3e-2], "log": True},
        "optimizer": {"choice": ["adam", "rmsprop_tf"]},
        **params,
    }
    base["per_model"] = {"ncgru": {"rho": {"fraction": [0.0, 1.0]}, "neumann_order": {"choice": [0, 2]}}}
    return parse_spec(dump_spec(base), "s.yaml")


def test_the_papers_searched_values_become_the_first_trial() -> None:
    points, _ = paper_points(spec_of(), "gru")
    assert [(p.label, p.params) for p in points] == [
        ("ncgru Table 2, gru, T=200", {"hidden_size": 100, "lr": 0.001, "optimizer": "adam"})
    ]
    # NC-GRU's two variants differ only in `orthogonal`, which this space does not search: one point
    [ncgru] = paper_points(spec_of(), "ncgru")[0]
    assert ncgru.label == "ncgru Table 2, ncgru (orthogonal=c), T=200"
    assert ncgru.params["hidden_size"] == 118 and ncgru.params["rho_fraction"] == pytest.approx(50 / 118)
    assert ncgru.params["neumann_order"] == 2 and "reset_interval" not in ncgru.params  # not searched
    searched = spec_of(orthogonal={"choice": ["c", "rc"]})
    assert {p.params["orthogonal"] for p in paper_points(searched, "ncgru")[0]} == {"c", "rc"}


def test_a_point_outside_the_space_or_at_another_length_is_skipped_with_the_reason() -> None:
    points, skipped = paper_points(spec_of(lr={"float": [1e-2, 3e-2]}), "gru")
    assert points == [] and any("lr=0.001 lies outside the sweep's range [0.01, 0.03]" in s for s in skipped)
    narrow_lr = spec_of(T=100, lr={"float": [1e-2, 3e-2]})
    points, skipped = paper_points(narrow_lr, "gru")
    assert (
        points == []
        and "ncgru Table 2, gru, T=200: lr=0.001 lies outside the sweep's range [0.01, 0.03]" in skipped
    )
    narrow = paper_points(spec_of(hidden_size={"int": [8, 32]}), "scornn")[1]
    assert any("hidden_size=200 lies outside" in s for s in narrow)


def test_where_the_papers_ran_another_length_the_nearest_stands_in() -> None:
    points, skipped = paper_points(spec_of(T=100), "gru")  # the papers ran denoise at T = 200 and 400
    assert [(p.label, p.params["hidden_size"]) for p in points] == [("ncgru Table 2, gru, T=200", 100)]
    assert "ncgru Table 2, gru, T=400: the paper's T=400, the sweep's 100" in skipped
    assert [p.label for p in paper_points(spec_of(T=350), "gru")[0]] == ["ncgru Table 2, gru, T=400"]


def test_no_point_where_the_papers_hold_none_or_the_study_walks_a_grid() -> None:
    assert paper_points(spec_of(), "eurnn") == ([], [])  # no published denoise run of EURNN
    gridded = tiny_spec(models=("gru",), task={"name": "denoise", "settings": {"T": 200}})
    gridded["params"] = {"lr": {"grid": [1e-3, 1e-2]}, "hidden_size": 100}
    assert paper_points(parse_spec(dump_spec(gridded), "s.yaml"), "gru") == ([], ["the study walks a grid"])

"""The shipped paper numbers: they load, use the registry's names, and match the papers' tables.

The expected numbers below are typed in from the papers by hand, independently of results.yaml, so a
slip in either shows up here. The allowed names are spelled out rather than imported from the model
and task registries, which change on their own schedule; a rename there must be a deliberate edit here.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest
import yaml

from trainables.reference.published import (
    SPLITS,
    Reference,
    ReferenceDataError,
    _parse,
    all_references,
    references_for,
)

ALLOWED_TASKS = {
    "copying",
    "denoise",
    "parenthesis",
    "adding",
    "shortest_path",
    "ptb_char",
    "ptb_word",
    "wikitext2",
    "babi",
    "timit",
}
ALLOWED_MODELS = {"lstm", "gru", "eurnn", "goru", "goru_noreset", "goru_noupdate", "scornn", "ncgru"}
HIGHER_IS_BETTER = {
    "accuracy": True,
    "accuracy_all_steps": True,
    "min_loss": False,
    "bpc": False,
    "perplexity": False,
    "mse": False,
}

# Cells per table: GORU Table 2 is 21 rows (20 tasks and the mean) x 4 models; NC-GRU Tables 1-4 are 6 models x 2 T.
EXPECTED_COUNTS = {
    ("goru2019", "Table 1"): 6,
    ("goru2019", "Table 2"): 84,
    ("goru2019", "Table 3"): 4,
    ("goru2019", "Table 4"): 8,
    ("ncgru", "Table 1"): 12,
    ("ncgru", "Table 2"): 12,
    ("ncgru", "Table 3"): 12,
    ("ncgru", "Table 4"): 12,
    ("ncgru", "Table 5"): 4,
    ("ncgru", "Table 6"): 5,
    ("ncgru", "Table 7"): 4,
    ("ncgru", "Table 8"): 6,
    ("ncgru", "Table 9"): 6,
}

C = {"orthogonal": "c"}
RC = {"orthogonal": "rc"}

# (paper, table, task, model, model_settings, split, settings filter, value, std) as printed x scale.
SPOT_CHECKS = [
    ("goru2019", "Table 1", "ptb_char", "lstm", {}, "test", {"hidden_size": 350}, 1.596, None),
    ("goru2019", "Table 1", "ptb_char", "eurnn", {}, "test", {"hidden_size": 2048}, 1.715, None),
    ("goru2019", "Table 1", "ptb_char", "goru_noupdate", {}, "test", {"hidden_size": 512}, 1.754, None),
    ("goru2019", "Table 2", "babi", "gru", {}, "test", {"babi_task": 14}, 0.401, None),
    ("goru2019", "Table 2", "babi", "lstm", {}, "test", {"babi_task": 19}, 0.097, None),
    ("goru2019", "Table 2", "babi", "eurnn", {}, "test", {"babi_task": 4}, 0.66, None),
    ("goru2019", "Table 2", "babi", "goru", {}, "test", {"babi_task": "mean"}, 0.523, None),
    ("goru2019", "Table 3", "shortest_path", "goru", {}, "test", {"hidden_size": 128}, 0.750, 0.053),
    ("goru2019", "Table 3", "shortest_path", "lstm", {}, "test", {}, 0.609, 0.047),
    ("goru2019", "Table 4", "timit", "goru", {}, "test", {"hidden_size": 128}, 47.6, None),
    ("goru2019", "Table 4", "timit", "goru", {}, "valid", {}, 45.4, None),
    ("goru2019", "Table 4", "timit", "lstm", {}, "test", {}, 57.5, None),
    (
        "ncgru",
        "Table 1",
        "parenthesis",
        "lstm",
        {},
        "unstated",
        {"T": 100, "hidden_size": 42},
        0.710e-3,
        0.005e-3,
    ),
    ("ncgru", "Table 1", "parenthesis", "gru", {}, "unstated", {"T": 200}, 23.794e-3, 0.397e-3),
    ("ncgru", "Table 1", "parenthesis", "ncgru", RC, "unstated", {"T": 100, "rho": 40}, 0.188e-3, 0.001e-3),
    ("ncgru", "Table 2", "denoise", "lstm", {}, "unstated", {"T": 200, "hidden_size": 90}, 0.10367, 0.00050),
    (
        "ncgru",
        "Table 2",
        "denoise",
        "ncgru",
        C,
        "unstated",
        {"T": 400, "hidden_size": 118},
        0.952e-2,
        0.001e-2,
    ),
    ("ncgru", "Table 2", "denoise", "goru", {}, "unstated", {"T": 400}, 2.131e-2, 0.001e-2),
    ("ncgru", "Table 3", "adding", "lstm", {}, "valid", {"T": 200, "hidden_size": 68}, 22.302e-5, 11.884e-5),
    ("ncgru", "Table 3", "adding", "scornn", {}, "valid", {"T": 400, "rho": 95}, 16301.960e-5, 0.019e-5),
    ("ncgru", "Table 3", "adding", "ncgru", C, "valid", {"T": 200, "rho": 43}, 0.918e-5, 0.009e-5),
    ("ncgru", "Table 4", "copying", "lstm", {}, "valid", {"T": 1000}, 2.039e-2, 0.001e-2),
    (
        "ncgru",
        "Table 4",
        "copying",
        "scornn",
        {},
        "valid",
        {"T": 1000, "hidden_size": 190},
        0.005e-2,
        0.001e-2,
    ),
    ("ncgru", "Table 4", "copying", "ncgru", C, "valid", {"T": 2000, "hidden_size": 96}, 0.447e-2, 0.002e-2),
    ("ncgru", "Table 5", "ptb_char", "ncgru", C, "unstated", {"hidden_size": [430, 1000, 430]}, 1.385, 0.002),
    ("ncgru", "Table 5", "ptb_char", "lstm", {}, "unstated", {"hidden_size": [350, 880, 350]}, 1.980, 0.003),
    ("ncgru", "Table 6", "ptb_word", "ncgru", C, "unstated", {"hidden_size": [400, 1150, 400]}, 77.05, 0.04),
    ("ncgru", "Table 6", "ptb_word", "gru", {}, "unstated", {"quoted_from": "Bai et al. 2018"}, 92.48, None),
    ("ncgru", "Table 6", "ptb_word", "gru", {}, "unstated", {"seeds": 3}, 80.90, 0.13),
    ("ncgru", "Table 7", "wikitext2", "lstm", {}, "unstated", {}, 65.76, 1.05),
    ("ncgru", "Table 7", "wikitext2", "ncgru", C, "unstated", {"rho": [100, 310, 100]}, 92.56, 0.04),
    ("ncgru", "Table 8", "denoise", "ncgru", RC, "unstated", {"T": 400}, 0.9972, None),
    ("ncgru", "Table 8", "denoise", "lstm", {}, "unstated", {"T": 400}, 0.9601, None),
    ("ncgru", "Table 9", "copying", "scornn", {}, "unstated", {"T": 2000}, 0.9999, None),
]


def _raw_data() -> dict[str, Any]:
    """The data file as plain YAML, for feeding deliberately broken copies to the validator."""
    from importlib import resources

    return yaml.safe_load(resources.files("trainables.reference").joinpath("results.yaml").read_text("utf-8"))


def test_every_entry_loads_with_the_expected_cells_per_table() -> None:
    refs = all_references()
    assert all(isinstance(ref, Reference) for ref in refs)
    assert Counter((ref.paper, ref.table) for ref in refs) == EXPECTED_COUNTS


def test_names_come_from_the_registries_vocabulary() -> None:
    for ref in all_references():
        assert ref.paper in {"goru2019", "ncgru"}, ref
        assert ref.task in ALLOWED_TASKS, ref
        assert ref.model in ALLOWED_MODELS, ref
        assert ref.metric in HIGHER_IS_BETTER, ref
        assert ref.split in SPLITS, ref
        assert ref.citation
        if ref.model == "ncgru":
            assert ref.model_settings["orthogonal"] in {"c", "rc", "ruc"}, ref
        else:
            assert not ref.model_settings, ref


@pytest.mark.parametrize(
    ("paper", "table", "task", "model", "model_settings", "split", "settings", "value", "std"), SPOT_CHECKS
)
def test_spot_checks_against_the_papers(
    paper: str,
    table: str,
    task: str,
    model: str,
    model_settings: dict[str, str],
    split: str,
    settings: dict[str, Any],
    value: float,
    std: float | None,
) -> None:
    (ref,) = [
        ref
        for ref in references_for(task, **settings)
        if (ref.paper, ref.table, ref.model, dict(ref.model_settings), ref.split)
        == (paper, table, model, model_settings, split)
    ]
    assert ref.value == pytest.approx(value, rel=1e-9)
    if std is None:
        assert ref.std is None
    else:
        assert ref.std == pytest.approx(std, rel=1e-9)


def test_std_is_non_negative_and_value_matches_published_times_scale() -> None:
    for ref in all_references():
        assert ref.std is None or ref.std >= 0, ref
        printed = ref.published.split("±")[0].replace(",", "").replace("%", "")
        assert ref.value == pytest.approx(float(printed) * ref.scale, rel=1e-9), ref


def test_higher_is_better_follows_the_metric() -> None:
    for ref in all_references():
        assert ref.higher_is_better is HIGHER_IS_BETTER[ref.metric], ref


def test_references_for_filters_by_task_and_settings() -> None:
    denoise_200 = references_for("denoise", T=200)
    assert len(denoise_200) == 6
    assert {ref.table for ref in denoise_200} == {"Table 2"}
    assert all(ref.settings["T"] == 200 for ref in denoise_200)
    assert len(references_for("denoise")) == 12 + 6
    assert len(references_for("babi", babi_task=3)) == 4
    # NC-GRU(U_c) and NC-GRU(U_r,U_c) share hidden size 96: their Table 4 losses and Table 9 accuracies.
    assert len(references_for("copying", T=2000, hidden_size=96)) == 4
    assert references_for("copying", T=123) == []
    assert references_for("no_such_task") == []
    # An entry that does not state a setting never matches a filter on it.
    assert references_for("ptb_word", T=200) == []


def test_entries_are_read_only_and_callers_get_their_own_list() -> None:
    first = all_references()
    first.clear()
    assert len(all_references()) == sum(EXPECTED_COUNTS.values())
    ref = all_references()[0]
    with pytest.raises(TypeError):
        ref.settings["T"] = 1  # type: ignore[index]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda e: e.update(typo=1),
            r"entry 3 \(goru2019 Table 1 ptb_char goru\): unknown field\(s\) \['typo'\]",
        ),
        (
            lambda e: e.pop("split"),
            r"entry 3 \(goru2019 Table 1 ptb_char goru\): missing field\(s\) \['split'\]",
        ),
        (lambda e: e.update(value=1.632), r"entry 3 .*value 1.632 != published 1.623"),
        (lambda e: e.update(std=0.1), r"entry 3 .*std must be given exactly when published prints one"),
        (lambda e: e.update(split="validation"), r"entry 3 .*split must be one of"),
        (lambda e: e.update(paper="nope"), r"entry 3 \(nope Table 1 ptb_char goru\): paper 'nope'"),
    ],
)
def test_malformed_entries_are_rejected_naming_the_entry(mutate: Any, message: str) -> None:
    data = copy.deepcopy(_raw_data())
    mutate(data["references"][3])
    with pytest.raises(ReferenceDataError, match=message):
        _parse(data)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda t: t.pop("stated_in"),
            r"table 0 \(goru2019 Table 1\): stated_in must say where the paper states",
        ),
        (lambda t: t.update(stated={"eval_every": ""}), r"table 0 .*stated must map settings to where"),
        (lambda t: t.update(stated=["eval_every"]), r"table 0 .*stated must map settings to where"),
    ],
)
def test_a_runnable_table_says_where_its_settings_are_stated(mutate: Any, message: str) -> None:
    data = copy.deepcopy(_raw_data())
    mutate(data["tables"][0])
    with pytest.raises(ReferenceDataError, match=message):
        _parse(data)

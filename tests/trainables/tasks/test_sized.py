"""A task without its data builds the network it builds with it, so counts need no data set."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from trainables.catalog import load_all
from trainables.registry import TASKS
from trainables.sizing import network_parameters

load_all()
LANGUAGE = {"layers": 3, "inner_hidden_size": 12, "embedding_size": 6}


def same_counts(real: object, sized: object) -> None:
    for model in ("gru", "goru", "scornn"):
        assert network_parameters(sized, model, 8, {}) == network_parameters(real, model, 8, {})


@pytest.mark.parametrize("task", ["ptb_char", "ptb_word", "wikitext2"])
def test_a_language_task(tmp_path: Path, corpora, monkeypatch: pytest.MonkeyPatch, task: str) -> None:
    (corpora.write_wikitext if task == "wikitext2" else corpora.write_ptb)(tmp_path)
    settings = {"data_dir": str(tmp_path), **LANGUAGE}
    real = TASKS.get(task).create(settings, batch_size=2, seed=0, device=torch.device("cpu"))
    monkeypatch.setattr(type(real), "usual_vocabulary", len(real.vocabulary))
    same_counts(real, TASKS.get(task).sized(settings))


def test_the_usual_vocabularies() -> None:
    sizes = {
        name: TASKS.get(name).task_class.usual_vocabulary for name in ("ptb_char", "ptb_word", "wikitext2")
    }
    assert sizes == {"ptb_char": 50, "ptb_word": 10_000, "wikitext2": 33_278}


def test_timit(tmp_path: Path, corpora) -> None:
    corpora.write_speech(tmp_path, count=8)
    settings = {"data_dir": str(tmp_path), "train_size": 4, "valid_size": 2, "test_size": 2}
    real = TASKS.get("timit").create(settings, batch_size=2, seed=0, device=torch.device("cpu"))
    same_counts(real, TASKS.get("timit").sized(settings))


@pytest.mark.parametrize(
    ("task", "settings"),
    [("shortest_path", {"train_size": 4, "valid_size": 2, "test_size": 2}), ("denoise", {"T": 5})],
)
def test_generated_tasks(task: str, settings: dict) -> None:
    real = TASKS.get(task).create(settings, batch_size=2, seed=0, device=torch.device("cpu"))
    same_counts(real, TASKS.get(task).sized(settings))

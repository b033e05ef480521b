"""Every registered task trains for a few steps with every registered model, through `train`.

A task missing from TINY trains with its default settings (with its data_dir pointed at the
fixtures), so a new task is covered at once; give it tiny settings here to keep this fast.
`SWEEPER_TEST_DEVICE=cuda` runs the same grid on a GPU (CI has none and runs it on the CPU).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest

from tests import corpora
from trainables.catalog import load_all
from trainables.registry import MODELS, TASKS
from trainables.train import train

load_all()

DEVICE = os.environ.get("SWEEPER_TEST_DEVICE", "cpu")

TINY: dict[str, dict[str, Any]] = {
    "copying": {"T": 5, "valid_size": 4},
    "denoise": {"T": 12, "valid_size": 4},
    "parenthesis": {"T": 6, "valid_size": 4},
    "adding": {"T": 6, "valid_size": 4},
    "shortest_path": {"train_size": 8, "valid_size": 4, "test_size": 4},
    "ptb_char": {"bptt": 5, "eval_batch_size": 2},
    "ptb_word": {"bptt": 4, "eval_batch_size": 2, "layers": 2, "embedding_size": 6},
    "wikitext2": {"bptt": 4, "eval_batch_size": 2, "layers": 1, "embedding_size": 6},
    "babi": {"tasks": [1], "embedding_size": 6, "max_story_sentences": 4},
    "timit": {"train_size": 4, "valid_size": 2, "test_size": 2},
}


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data")
    corpora.write_ptb(root / "ptb")
    corpora.write_wikitext(root / "wikitext2")
    corpora.write_babi(root / "babi", tasks=(1,))
    corpora.write_speech(root / "timit", count=8)
    return root


DATA_DIRS = {"ptb_char": "ptb", "ptb_word": "ptb", "wikitext2": "wikitext2", "babi": "babi", "timit": "timit"}


def every_pair() -> list:
    """Every (task, model): the fast tier trains every model on denoise and GRU on every task,
    the slow tier the rest of the grid."""
    return [
        pytest.param(task, model, marks=[] if task == "denoise" or model == "gru" else [pytest.mark.slow])
        for task in TASKS.names()
        for model in MODELS.names()
    ]


@pytest.mark.parametrize(("task", "model"), every_pair())
def test_trains_a_few_steps(task: str, model: str, data_root: Path) -> None:
    settings = dict(TINY.get(task, {}))
    if "data_dir" in TASKS.get(task).settings.model_fields:
        settings["data_dir"] = str(data_root / DATA_DIRS.get(task, task))
    reports: list[tuple[int, dict[str, float]]] = []
    metrics = train(
        {
            "task": task,
            "task_settings": settings,
            "model": model,
            "hidden_size": 8,
            "batch_size": 4,
            "iterations": 2,
            "eval_every": 1,
            "seed": 3,
            "device": DEVICE,
        },
        lambda step, m: reports.append((step, m)),
    )
    assert [step for step, _ in reports] == [1, 2]
    assert metrics == reports[-1][1]
    numbers = {k: v for k, v in metrics.items() if not isinstance(v, str)}
    bad = {k: v for k, v in numbers.items() if not math.isfinite(v)}
    assert not bad, bad
    if MODELS.get(model).orthogonal:  # what ran the time loop is reported with the numbers
        assert metrics["kernel"] == ("fused" if DEVICE.startswith("cuda") else "loop")

"""Networks with several recurrent parts: the training loop finds, optimizes and steps them all."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from trainables.catalog import load_all
from trainables.registry import MODELS, TASKS
from trainables.train import TrialConfig, build_optimizers, recurrent_models

load_all()


def test_language_model_layers_are_all_found(tmp_path: Path, corpora) -> None:
    corpora.write_ptb(tmp_path)
    task = TASKS.get("ptb_word").create(
        {"data_dir": str(tmp_path), "layers": 3, "embedding_size": 4},
        batch_size=2,
        seed=0,
        device=torch.device("cpu"),
    )
    network = task.create_network(lambda i, h=None: MODELS.get("lstm").create(i, h or 5))
    assert recurrent_models(network) == list(network.rnns)


@pytest.mark.parametrize("model", [spec.name for spec in MODELS if spec.orthogonal] or ["none"])
def test_orthogonal_parameters_of_every_part_get_the_orthogonal_optimizer(
    tmp_path: Path, corpora, model: str
) -> None:
    if model == "none":
        pytest.skip("no orthogonal model is registered")
    corpora.write_babi(tmp_path, tasks=(1,))
    settings = {"data_dir": str(tmp_path), "embedding_size": 4}
    task = TASKS.get("babi").create(settings, batch_size=2, seed=0, device=torch.device("cpu"))
    spec = MODELS.get(model)
    network = task.create_network(lambda i, h=None: spec.create(i, h or 8))
    rnns = recurrent_models(network)
    assert rnns == [network.story_rnn, network.question_rnn, network.answer_rnn]
    trial = TrialConfig.from_mapping({"task": "babi", "model": model, "task_settings": settings})
    ordinary, orthogonal = build_optimizers(rnns, network, trial)
    expected = {id(p) for rnn in rnns for p in rnn.orthogonal_parameters()}
    assert {id(p) for group in orthogonal.param_groups for p in group["params"]} == expected
    assert not expected & {id(p) for group in ordinary.param_groups for p in group["params"]}

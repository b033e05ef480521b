from __future__ import annotations

import math

import pytest
import torch
from pydantic import ValidationError
from torch import nn

from trainables.catalog import load_all
from trainables.registry import TASKS

load_all()


def make(task: str, batch_size: int = 16, seed: int = 0, **settings):
    return TASKS.get(task).create(settings, batch_size=batch_size, seed=seed, device=torch.device("cpu"))


def test_copying_baseline_is_ten_ln8_over_length() -> None:
    assert make("copying", T=200, valid_size=2).baseline == pytest.approx(10 * math.log(8) / 220)
    assert make("copying", T=200, valid_size=2).baseline == pytest.approx(0.0945, abs=1e-4)
    assert make("copying", T=1000, valid_size=2).baseline == pytest.approx(0.0204, abs=1e-4)


def test_copying_layout() -> None:
    task = make("copying", T=7, valid_size=2)
    inputs, targets = task.train_batch()
    assert inputs.shape == targets.shape == (27, 16)
    assert ((inputs[:10] >= 1) & (inputs[:10] <= 8)).all()
    assert (inputs[16] == 9).all() and (inputs[10:16] == 0).all() and (inputs[17:] == 0).all()
    assert (targets[:17] == 0).all() and torch.equal(targets[-10:], inputs[:10])


def parenthesis_counts_by_loop(tokens: list[int], n_types: int, cap: int) -> list[list[int]]:
    counts, out = [0] * n_types, []
    for token in tokens:
        kind, closing = divmod(token, 2)
        if kind < n_types:
            if closing:
                counts[kind] = max(0, counts[kind] - 1)
            else:
                counts[kind] = min(cap, counts[kind] + 1)
        out.append(list(counts))
    return out


@pytest.mark.parametrize(
    ("variant", "symbols", "n_types", "cap", "classes"), [("goru", 30, 10, 10, 21), ("isan", 7, 3, 5, 6)]
)
def test_parenthesis_counts_match_a_plain_loop(variant, symbols, n_types, cap, classes) -> None:
    task = make("parenthesis", batch_size=32, T=300, variant=variant, valid_size=2)
    assert (task.input_size, task.output_size) == (symbols, n_types * classes)
    tokens, counts = task.train_batch()
    assert tokens.shape == (300, 32) and counts.shape == (300, 32, n_types)
    assert tokens.min() >= 0 and tokens.max() == symbols - 1
    for column in range(32):
        expected = parenthesis_counts_by_loop(tokens[:, column].tolist(), n_types, cap)
        assert counts[:, column].tolist() == expected
    assert counts.max() == cap  # long sequences reach the cap


def test_parenthesis_losses_follow_the_variant() -> None:
    class Constant(nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.width = width

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.zeros(*x.shape[:2], self.width)

    goru = make("parenthesis", T=5, variant="goru", valid_size=3)
    assert goru.loss(Constant(goru.output_size), goru.train_batch()).item() == pytest.approx(math.log(21))
    isan = make("parenthesis", T=5, variant="isan", valid_size=3)
    # zero output against one-hot targets: one unit error in 6 classes
    assert isan.loss(Constant(isan.output_size), isan.train_batch()).item() == pytest.approx(1 / 6)
    assert isan.evaluate(Constant(isan.output_size))["valid_loss"] == pytest.approx(1 / 6)


def test_adding_markers_targets_and_baseline() -> None:
    T = 11
    task = make("adding", batch_size=512, T=T, valid_size=2)
    inputs, targets = task.train_batch()
    assert inputs.shape == (T, 512, 2) and targets.shape == (512,)
    values, markers = inputs[..., 0], inputs[..., 1]
    assert ((values >= 0) & (values < 1)).all()
    half = (T - 1) // 2
    assert (markers[:half].sum(0) == 1).all() and (markers[half:].sum(0) == 1).all()
    assert torch.allclose((values * markers).sum(0), targets)
    assert task.baseline == pytest.approx(0.167, abs=1e-3)
    big = make("adding", batch_size=20000, T=T, valid_size=2)
    _, many = big.train_batch()
    assert ((many - 1) ** 2).mean().item() == pytest.approx(0.167, abs=0.01)


def test_validation_set_follows_data_seed_and_training_stream_follows_seed() -> None:
    a = make("parenthesis", seed=1, T=8, valid_size=5, data_seed=4)
    b = make("parenthesis", seed=2, T=8, valid_size=5, data_seed=4)
    c = make("parenthesis", seed=1, T=8, valid_size=5, data_seed=5)
    valid = [task.fixed_batches("valid") for task in (a, b, c)]
    assert all(torch.equal(x[0], y[0]) for x, y in zip(valid[0], valid[1], strict=True))
    assert not torch.equal(valid[0][0][0], valid[2][0][0])
    assert not torch.equal(a.train_batch()[0], b.train_batch()[0])
    assert torch.equal(
        make("adding", seed=1, T=8).train_batch()[0], make("adding", seed=1, T=8).train_batch()[0]
    )


@pytest.mark.parametrize(
    ("task", "settings"),
    [("parenthesis", {"variant": "other"}), ("adding", {"T": 1}), ("adding", {"length": 5})],
)
def test_settings_are_validated(task: str, settings: dict) -> None:
    with pytest.raises(ValidationError):
        TASKS.get(task).settings.model_validate(settings)


@pytest.mark.parametrize("name", ["copying", "denoise", "parenthesis", "adding"])
def test_test_split_is_fixed_by_data_seed_and_differs_from_validation(name):
    from torch import nn

    from trainables.registry import TASKS

    def build(seed: int, data_seed: int):
        settings = {"T": 8, "valid_size": 6, "test_size": 5, "data_seed": data_seed}
        return TASKS.get(name).create(settings, batch_size=4, seed=seed, device=torch.device("cpu"))

    a, b = build(1, 3), build(2, 3)
    test_a, test_b = a.fixed_batches("test"), b.fixed_batches("test")
    assert [x[0].shape[1] for x in test_a] == [4, 1]
    assert all(torch.equal(x[0], y[0]) for x, y in zip(test_a, test_b, strict=True))
    assert not torch.equal(test_a[0][0], a.fixed_batches("valid")[0][0])

    class Zero(nn.Module):
        def forward(self, x):
            leading = x.shape[1:2] if name == "adding" else x.shape[:2]  # adding reads out once per sequence
            return torch.zeros(*leading, a.output_size)

    metrics = a.evaluate(Zero(), "test")
    assert set(metrics) == {m.replace("valid_", "test_") for m in TASKS.get(name).metrics}


class AlwaysClass(nn.Module):
    """Predicts one class at every step: the memoryless answer when the class is blank."""

    def __init__(self, classes: int, answer: int) -> None:
        super().__init__()
        self.classes, self.answer = classes, answer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = torch.zeros(*x.shape[:2], self.classes)
        logits[..., self.answer] = 1.0
        return logits


@pytest.mark.parametrize(("task", "classes"), [("copying", 9), ("denoise", 10)])
def test_recall_tasks_report_accuracy_over_all_steps_and_over_the_answers(task: str, classes: int) -> None:
    """A network that always outputs blank is right on the T + 10 blank steps and on none of the
    ten answers: the NC-GRU tables' all-steps accuracy reads (T + 10) / (T + 20), ours 0."""
    instance = make(task, T=50, valid_size=64)
    metrics = instance.evaluate(AlwaysClass(classes, 0))
    assert set(metrics) == set(TASKS.get(task).metrics)
    assert metrics["valid_accuracy_all_steps"] == pytest.approx(60 / 70)
    assert metrics["valid_accuracy_answer_steps"] == 0.0
    perfect = instance.evaluate(AlwaysClass(classes, 1))  # symbol 1 everywhere
    answers = torch.cat([targets[-10:] for _, targets in instance.fixed_batches("valid")])
    share = (answers == 1).double().mean().item()
    assert perfect["valid_accuracy_answer_steps"] == pytest.approx(share)
    assert perfect["valid_accuracy_all_steps"] == pytest.approx(share * 10 / 70)

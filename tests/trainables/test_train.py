"""The training loop's own contract: divergence is a failure with a reason, not a value."""

from __future__ import annotations

import pytest
import torch

from trainables.models.rnn import FusedRNN
from trainables.registry import MODELS, ModelEntry
from trainables.train import TrialDiverged, train


class Diverging(FusedRNN):
    def forward(self, x, state=None):
        out, state = super().forward(x, state)
        return out * torch.tensor(float("nan")), state


@pytest.fixture
def diverging_model():
    MODELS.register("diverging", ModelEntry("diverging", lambda i, h: Diverging(torch.nn.GRU, i, h)))
    yield "diverging"
    MODELS._entries.pop("diverging")


@pytest.fixture
def diverging_config(diverging_model):
    return {
        "task": "denoise",
        "model": diverging_model,
        "task_settings": {"T": 4, "valid_size": 4},
        "hidden_size": 4,
        "batch_size": 4,
        "iterations": 50,
        "eval_every": 10,
    }


def test_a_nan_loss_stops_the_trial_at_once_with_its_reason(diverging_config):
    reports = []
    with pytest.raises(TrialDiverged, match=r"loss nan .* at step 1$"):
        train(diverging_config, lambda step, metrics: reports.append(step))
    assert reports == []


def test_on_a_gpu_a_nan_loss_stops_the_trial_at_the_next_report(diverging_config, monkeypatch):
    """Where reading the loss would stall the device every step, the sums read at a report still
    catch a non-finite step and say which window it fell in."""
    import trainables.train

    monkeypatch.setattr(trainables.train, "reads_every_step", lambda device: False)
    reports = []
    with pytest.raises(TrialDiverged, match=r"non-finite between steps 1 and 10$"):
        train(diverging_config, lambda step, metrics: reports.append(step))
    assert reports == []


class MemoryCheckpointing:
    """Keeps every saved state; `restore_at` makes `load` hand back the one saved at that step."""

    def __init__(self, restore: dict | None = None) -> None:
        self.saved: dict[int, dict] = {}
        self.restore = restore

    def save(self, state: dict) -> None:
        import copy

        self.saved[state["step"]] = copy.deepcopy(state)

    def load(self) -> dict | None:
        return self.restore


@pytest.mark.parametrize(
    ("model", "task", "extra"),
    [
        ("ncgru", "denoise", {"neumann_order": 2, "reset_interval": 7, "rho": 3, "optimizer": "rmsprop_tf"}),
        ("gru", "adding", {"optimizer": "adam"}),
    ],
)
def test_a_restored_trial_continues_exactly_where_it_was(model, task, extra):
    """Network (NC-GRU's maintained inverse included), optimizers, data stream and random state
    all come back: the restored run's reports equal the uninterrupted run's."""
    config = {
        "task": task,
        "model": model,
        "task_settings": {"T": 6, "valid_size": 8},
        "hidden_size": 8,
        "batch_size": 8,
        "iterations": 60,
        "eval_every": 10,
        "checkpoint_every": 1,
        "lr": 0.01,
        **extra,
    }
    full, saver = {}, MemoryCheckpointing()
    train(config, lambda step, metrics: full.__setitem__(step, metrics), saver)
    assert sorted(saver.saved) == [10, 20, 30, 40, 50]  # never at the last step: the trial is done
    resumed = {}
    train(
        config, lambda step, metrics: resumed.__setitem__(step, metrics), MemoryCheckpointing(saver.saved[30])
    )
    assert sorted(resumed) == [40, 50, 60]
    for step, metrics in resumed.items():
        assert metrics.pop("restored_from_step") == 30
        for key in ("train_loss", "valid_loss", "grad_norm"):
            assert metrics[key] == pytest.approx(full[step][key], rel=1e-6, abs=1e-9), (step, key)


class Hoarding(FusedRNN):
    """Holds on to 300 MB it has written to, as a model far too large for its worker would."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.hoard = torch.ones(300 * 2**20 // 4)


def test_a_trial_over_its_memory_limit_fails_with_the_reason():
    from trainables.train import TrialOutOfMemory, resident_mb

    MODELS.register("hoarding", ModelEntry("hoarding", lambda i, h: Hoarding(torch.nn.GRU, i, h)))
    try:
        limit = int(resident_mb()) + 150
        config = {
            "task": "denoise",
            "model": "hoarding",
            "task_settings": {"T": 4, "valid_size": 4},
            "hidden_size": 4,
            "batch_size": 4,
            "iterations": 20,
            "eval_every": 10,
            "memory_limit_mb": limit,
        }
        reports = []
        with pytest.raises(TrialOutOfMemory, match=rf"at step 10, over its limit of {limit} MB"):
            train(config, lambda step, metrics: reports.append(step))
        assert reports == []
        train({**config, "memory_limit_mb": 0}, lambda step, metrics: reports.append(step))
        assert reports == [10, 20]
    finally:
        MODELS._entries.pop("hoarding")

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

    def keep_final(self, network: torch.nn.Module) -> None:
        import copy

        self.final = copy.deepcopy(network.state_dict())


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


def small_run(**extra) -> dict:
    return {
        "task": "adding",
        "model": "gru",
        "task_settings": {"T": 6, "valid_size": 64},
        "hidden_size": 8,
        "batch_size": 16,
        "lr": 0.01,
        "optimizer": "adam",
        **extra,
    }


def test_a_finished_run_hands_over_its_trained_weights_with_its_last_report():
    order = []
    saver = MemoryCheckpointing()

    def report(step: int, metrics: dict) -> None:
        order.append((step, hasattr(saver, "final")))

    train(small_run(iterations=30, eval_every=10), report, saver)
    assert order == [(10, False), (20, False), (30, True)]
    assert set(saver.final) and all(torch.isfinite(v).all() for v in saver.final.values())


def test_a_run_continues_from_initial_weights():
    """From a trained network's weights, the first report is as good as that network, far better
    than a fresh start's with the same seed."""
    trained = MemoryCheckpointing()
    train(small_run(iterations=300, eval_every=300), lambda step, metrics: None, trained)
    first: dict[str, list[float]] = {"fresh": [], "continued": []}
    config = small_run(iterations=1, eval_every=1, lr=1e-5)
    train(config, lambda step, metrics: first["fresh"].append(metrics["valid_loss"]))
    train(
        config,
        lambda step, metrics: first["continued"].append(metrics["valid_loss"]),
        initial_weights=trained.final,
    )
    assert first["continued"][0] < 0.5 * first["fresh"][0]


def test_initial_weights_of_another_network_are_refused_with_their_names():
    trained = MemoryCheckpointing()
    train(small_run(iterations=1, eval_every=1), lambda step, metrics: None, trained)
    with pytest.raises(ValueError, match=r"another network .*of another shape: .*rnn"):
        train(
            small_run(iterations=1, eval_every=1, hidden_size=12),
            lambda s, m: None,
            initial_weights=trained.final,
        )

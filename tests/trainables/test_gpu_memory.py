"""A GPU trial takes no more than its share of the device's memory: past it, it fails as out of
memory, naming its share, instead of starving the trials packed beside it. The trials run where
CUDA is (the GPU acceptance script's kernel tests include them), the cap's call everywhere; the
share's wiring from a sweep's resources is tested without a GPU in
`tests/sweeper/run/tune/test_gpu_sweep.py`."""

from __future__ import annotations

import pytest
import torch

from trainables.memory import gpu_memory_share
from trainables.train import TrialOutOfMemory, train

on_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="the cap acts on a GPU's memory")


def _config(hidden: int, fraction: float) -> dict:
    return {
        "task": "denoise",
        "task_settings": {"T": 10, "valid_size": 8, "test_size": 8},
        "model": "gru",
        "hidden_size": hidden,
        "batch_size": 8,
        "iterations": 2,
        "eval_every": 2,
        "gpu_memory_fraction": fraction,
        "device": "cuda",
    }


@on_cuda
def test_a_trial_over_its_gpu_memory_share_fails_naming_it() -> None:
    total_mb = torch.cuda.get_device_properties(0).total_memory / 2**20
    fraction = 64 / total_mb  # 64 MB, where a 4096-unit GRU's weights alone take 400
    with pytest.raises(
        TrialOutOfMemory, match=r"ran out of GPU memory: it may take its share of .* \(64 MB\)"
    ):
        train(_config(4096, fraction), lambda step, metrics: None)
    torch.cuda.set_per_process_memory_fraction(1.0)
    torch.cuda.empty_cache()


@on_cuda
def test_a_trial_within_its_share_trains() -> None:
    reports = []
    train(_config(64, 0.25), lambda step, metrics: reports.append(step))
    torch.cuda.set_per_process_memory_fraction(1.0)
    assert reports == [2]


def test_the_share_is_capped_on_the_index_of_the_trials_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """A trial's device is `cuda` without an index, which torch's cap refuses: the cap goes to the
    current device's index (a sweep's GPU trial sees only its own GPU, as device 0)."""
    capped = []
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    monkeypatch.setattr(
        torch.cuda,
        "set_per_process_memory_fraction",
        lambda fraction, device: capped.append((fraction, device)),
    )
    with gpu_memory_share(torch.device("cuda"), 0.25):
        pass
    with gpu_memory_share(torch.device("cuda:1"), 0.5):
        pass
    with gpu_memory_share(torch.device("cuda"), 1.0):  # the whole device: nothing to cap
        pass
    assert capped == [(0.25, 3), (0.5, 1)]

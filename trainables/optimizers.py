"""Optimizers by name: the one table the training loop and the hyperparameter declarations read.

On a GPU each takes PyTorch's fused (Adam, SGD) or multi-tensor (RMSprop) implementation, a few
kernel launches per step for all parameters instead of several per parameter; on a CPU each
keeps PyTorch's default. `capturable` (on a GPU only: a CPU has no graphs) keeps Adam's and
RMSprop's step counts on the device, so that a CUDA graph can capture their steps; SGD keeps no
step count. torch is imported when an optimizer is made, so that declaring the names costs the
read-only commands no torch import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

Factory = Callable[["list[torch.nn.Parameter]", float, bool, bool], "torch.optim.Optimizer"]


def _adam(params: list[torch.nn.Parameter], lr: float, gpu: bool, capturable: bool) -> torch.optim.Optimizer:
    import torch

    return torch.optim.Adam(params, lr=lr, fused=gpu or None, capturable=capturable)


def _sgd(params: list[torch.nn.Parameter], lr: float, gpu: bool, capturable: bool) -> torch.optim.Optimizer:
    """Any SGD step is capturable: it keeps no step count."""
    import torch

    return torch.optim.SGD(params, lr=lr, fused=gpu or None)


def _rmsprop(
    params: list[torch.nn.Parameter], lr: float, gpu: bool, capturable: bool
) -> torch.optim.Optimizer:
    import torch

    return torch.optim.RMSprop(params, lr=lr, foreach=gpu or None, capturable=capturable)


def _rmsprop_tf(
    params: list[torch.nn.Parameter], lr: float, gpu: bool, capturable: bool
) -> torch.optim.Optimizer:
    """TensorFlow 1's RMSProp: decay 0.9, ε = 1e-10, and the accumulator starting at one, not zero.
    The state is seeded here, so its step count is put where torch's own seeding would put it."""
    import torch

    optimizer = torch.optim.RMSprop(
        params, lr=lr, alpha=0.9, eps=1e-10, foreach=gpu or None, capturable=capturable
    )
    for p in params:
        optimizer.state[p] = {
            "step": torch.zeros((), dtype=torch.float32, device=p.device if capturable else None),
            "square_avg": torch.ones_like(p, memory_format=torch.preserve_format),
        }
    return optimizer


OPTIMIZERS: dict[str, Factory] = {
    "rmsprop": _rmsprop,
    "rmsprop_tf": _rmsprop_tf,
    "adam": _adam,
    "sgd": _sgd,
}


def make_optimizer(
    name: str, params: Iterable[torch.nn.Parameter], lr: float, capturable: bool = False
) -> torch.optim.Optimizer:
    """The optimizer `name` over `params`; `capturable` where a CUDA graph will capture its steps
    (off a GPU there is no graph, so it is ignored there)."""
    params = list(params)
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; known: {', '.join(OPTIMIZERS)}")
    gpu = bool(params) and all(p.is_cuda for p in params)
    return OPTIMIZERS[name](params, lr, gpu, capturable and gpu)

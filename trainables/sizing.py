"""Parameter counts, and the hidden size that meets a parameter budget, as the papers compare
models (denoise: LSTM 90, GRU 100, scoRNN 200, GORU 128, NC-GRU 118 units).

`count_parameters` is the one count; the rest build what is counted on the meta device, so
nothing is allocated or initialized, whatever the size.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import torch
from torch import nn

from trainables.models.base import RecurrentModel
from trainables.registry import MODELS

MAX_HIDDEN = 65536


class NetworkBuilder(Protocol):
    """What builds a whole network around recurrent models: a task (`Task.create_network`)."""

    def create_network(self, make_rnn: Any) -> nn.Module: ...


def count_parameters(module: nn.Module) -> int:
    """Trainable parameters of `module`."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def model_parameters(model: str, input_size: int, hidden_size: int, **values: Any) -> int:
    """Trainable parameters of the recurrent model alone."""
    with torch.device("meta"):
        return count_parameters(MODELS.get(model).create(input_size, hidden_size, **values))


def network_parameters(task: NetworkBuilder, model: str, hidden_size: int, values: Mapping[str, Any]) -> int:
    """Trainable parameters of the whole network `model` has on `task` (embeddings and heads too)."""
    entry = MODELS.get(model)

    def make_rnn(input_size: int, hidden: int | None = None) -> RecurrentModel:
        return entry.create(input_size, hidden or hidden_size, **values)

    with torch.device("meta"):
        return count_parameters(task.create_network(make_rnn))


def hidden_size_for_budget(
    task: NetworkBuilder, model: str, budget: int, values: Mapping[str, Any]
) -> tuple[int, int]:
    """The hidden size whose network has the count closest to `budget`, and that count.

    Counts grow with the hidden size but not strictly (Givens `auto` switches layout at powers
    of two), so a bisection finds the crossing and its neighbours are compared. Hidden sizes the
    model rejects (ρ above it, FFT off powers of two) are skipped.
    """
    if budget < 1:
        raise ValueError(f"budget must be a positive parameter count, got {budget}")
    MODELS.get(model).resolve(values)  # unknown or invalid hyperparameters fail here, not below
    counts: dict[int, int | None] = {}

    def count(n: int) -> int | None:
        if n not in counts:
            try:
                counts[n] = network_parameters(task, model, n, values)
            except ValueError:
                counts[n] = None
        return counts[n]

    def below(n: int) -> bool:
        c = count(n)
        return c is None or c < budget

    high = 1
    while high < MAX_HIDDEN and below(high):
        high *= 2
    if high >= MAX_HIDDEN and below(MAX_HIDDEN):
        raise ValueError(f"{model} cannot reach {budget:,} parameters below hidden size {MAX_HIDDEN}")
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if below(middle) else (low, middle)
    candidates = [n for n in range(max(1, high - 4), min(MAX_HIDDEN, high + 4) + 1) if count(n) is not None]
    if not candidates:
        raise ValueError(f"model {model!r} accepts no hidden size near {high} with {dict(values)}")
    best = min(candidates, key=lambda n: (abs(count(n) - budget), n))
    return best, count(best)

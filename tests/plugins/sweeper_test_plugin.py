"""A plugin registering a model that fails on purpose, loaded through SWEEPER_PLUGINS.

It proves the failure path end to end: the trial raises inside a Ray worker, and the sweep
records FAIL with the reason and goes on.
"""

from __future__ import annotations

import torch
from torch import nn

from trainables.hyperparams import Hyperparam
from trainables.models.rnn import FusedRNN
from trainables.registry import register_model


@register_model(
    "exploding",
    hyperparams=(Hyperparam("fail_after", "int", 5, low=0, high=10**6),),
    description="test model that raises after fail_after forward passes",
)
class Exploding(FusedRNN):
    """A GRU whose forward raises once it has run `fail_after` times."""

    def __init__(self, input_size: int, hidden_size: int, fail_after: int) -> None:
        super().__init__(nn.GRU, input_size, hidden_size)
        self.fail_after = fail_after
        self.calls = 0

    def forward(self, x: torch.Tensor, state=None):
        self.calls += 1
        if self.calls > self.fail_after:
            raise RuntimeError("exploding model failed on purpose")
        return super().forward(x, state)

"""A model of your own, registered for sweeper: an Elman RNN whose recurrent matrix has low rank.

    h_t = tanh(W x_t + P Qᵀ h_{t−1} + b),  P, Q of shape (n, rank)

`rank` is declared bounded by the hidden size (`at_most`), so a sweep may search it as
`{fraction: ...}` of the hidden size, is never drawn above it, and a trial that asks for more is
refused with both values named. Nothing else in sweeper needs to know about this model.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from trainables.hyperparams import Hyperparam
from trainables.models.base import RecurrentModel, State
from trainables.registry import register_model


@register_model(
    "lowrank_rnn",
    hyperparams=(
        Hyperparam(
            "rank",
            "int",
            8,
            low=1,
            high=65536,
            at_most="hidden_size",
            help="rank of the recurrent matrix P Qᵀ",
        ),
    ),
    description="Elman RNN with a low-rank recurrent matrix: tanh(W x + P Qᵀ h + b)",
)
class LowRankRNN(RecurrentModel):
    def __init__(self, input_size: int, hidden_size: int, rank: int = 8) -> None:
        super().__init__()
        if rank > hidden_size:
            raise ValueError(f"rank {rank} exceeds hidden_size {hidden_size}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        bound = 1 / math.sqrt(hidden_size)
        self.input = nn.Linear(input_size, hidden_size)
        self.left = nn.Parameter(torch.empty(hidden_size, rank).uniform_(-bound, bound))
        self.right = nn.Parameter(torch.empty(hidden_size, rank).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor, state: State = None) -> tuple[torch.Tensor, State]:
        projected = self.input(x)  # all steps' inputs in one GEMM
        h = x.new_zeros(x.shape[1], self.hidden_size) if state is None else state
        outputs = []
        for xt in projected.unbind(0):
            h = torch.tanh(xt + (h @ self.right) @ self.left.T)
            outputs.append(h)
        return torch.stack(outputs), h

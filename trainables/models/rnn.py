"""LSTM and GRU: PyTorch's fused modules (cuDNN on a GPU) behind the common interface."""

from __future__ import annotations

import torch
from torch import nn

from trainables.models.base import RecurrentModel, State


class FusedRNN(RecurrentModel):
    """A single-layer `nn.LSTM` or `nn.GRU`, time-major."""

    def __init__(self, cell: type[nn.RNNBase], input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.rnn = cell(input_size, hidden_size)

    def forward(self, x: torch.Tensor, state: State = None) -> tuple[torch.Tensor, State]:
        return self.rnn(x, state)


class LSTM(FusedRNN):
    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__(nn.LSTM, input_size, hidden_size)


class GRU(FusedRNN):
    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__(nn.GRU, input_size, hidden_size)

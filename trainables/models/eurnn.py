"""EURNN, the orthogonal (real) efficient unitary RNN: h_t = modReLU(U h_{t−1} + W_x x_t, b)."""

from __future__ import annotations

import torch
from torch import nn

from trainables.models.base import OrthogonalModel, State
from trainables.models.hyperparams import CAPACITY, KERNEL, KERNEL_PRECISION, LAYOUT, MODRELU_EPS
from trainables.models.initialization import REFERENCE_INPUT_BOUND, uniform_
from trainables.models.modrelu import ModReLU, modrelu_scan
from trainables.models.orthogonal import GivensRotations, resolve_layout
from trainables.models.scans.choice import fused_scans


class EURNN(OrthogonalModel):
    """U is a product of Givens rotation layers, built once per forward pass."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        layout: str = LAYOUT.default,
        capacity: int = CAPACITY.default,
        modrelu_eps: float = MODRELU_EPS.default,
        kernel: str = KERNEL.default,
        kernel_precision: str = KERNEL_PRECISION.default,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.kernel, self.kernel_precision = kernel, kernel_precision
        self.input_weight = nn.Parameter(
            uniform_(torch.empty(hidden_size, input_size), REFERENCE_INPUT_BOUND)
        )
        layout = resolve_layout(layout, hidden_size)
        self.rotations = GivensRotations(hidden_size, layout, capacity, kernel, self.kernel_record)
        self.activation = ModReLU(hidden_size, modrelu_eps)

    def forward(self, x: torch.Tensor, state: State = None) -> tuple[torch.Tensor, State]:
        U = self.rotations.matrix()
        projected = x @ self.input_weight.T
        h = x.new_zeros(x.shape[1], self.hidden_size) if state is None else state
        bias, eps = self.activation.bias, self.activation.eps
        if self.scan_kernel(x) == "fused":
            return fused_scans().reset_after_scan(
                projected, h, U, bias, eps, False, None, givens=self.rotations.tables(), **self.scan_options()
            )  # eqs. 12–13
        return modrelu_scan(projected, h, U, bias, eps)  # eq. 12 with σ = modReLU (eq. 13)

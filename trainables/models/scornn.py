"""scoRNN: h_t = modReLU(W x_t + U h_{t−1}, b) with U the scaled Cayley transform of a skew A.

The inverse (I + A)^{-1} is exact, computed once per forward pass; A trains with the orthogonal
optimizer on the paper's gradient (NC-GRU paper eqs. 3–6, after Helfrich et al.).
"""

from __future__ import annotations

import torch
from torch import nn

from trainables.models.base import OrthogonalModel, State
from trainables.models.hyperparams import KERNEL, KERNEL_PRECISION, MODRELU_EPS, RHO
from trainables.models.initialization import REFERENCE_INPUT_BOUND, uniform_
from trainables.models.modrelu import ModReLU, modrelu_scan
from trainables.models.orthogonal import ScaledCayley
from trainables.models.scans.choice import fused_scans


class ScoRNN(OrthogonalModel):
    """One GEMM and one modReLU per step; U is built once per forward pass."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        rho: int = RHO.default,
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
        self.cayley = ScaledCayley(hidden_size, rho, kernel=kernel, record=self.kernel_record)
        self.activation = ModReLU(hidden_size, modrelu_eps)

    def forward(self, x: torch.Tensor, state: State = None) -> tuple[torch.Tensor, State]:
        U_t = self.cayley().T  # h @ Uᵀ is U h for row-major states
        projected = x @ self.input_weight.T
        h = x.new_zeros(x.shape[1], self.hidden_size) if state is None else state
        bias, eps = self.activation.bias, self.activation.eps
        if self.scan_kernel(x) == "fused":
            return fused_scans().reset_after_scan(
                projected, h, U_t, bias, eps, False, None, **self.scan_options()
            )  # scoRNN: modReLU(W x + U h, b)
        return modrelu_scan(projected, h, U_t, bias, eps)  # scoRNN: modReLU(W x + U h, b)

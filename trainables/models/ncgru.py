"""NC-GRU (NC-GRU paper eq. 19): a GRU whose chosen recurrent weights are scaled Cayley matrices
whose inverse (I + A)^{-1} is carried across optimizer steps by Algorithm 1's Neumann series.

`orthogonal` names the orthogonal weights: c = NC-GRU(U_c), rc = NC-GRU(U_r, U_c), ruc = all three;
each has its own A and D. `reset: before` is eq. 19 (and the synthetic-task code):
c = modReLU(W_c x + U_c (r ⊙ h)); `after` is the PTB code's modReLU(W_c x + r ⊙ (U_c h)), which
saves one GEMM per step.

`init` picks the initial weights, because the paper states only A's and the authors' two code bases differ:
- `paper` (default): the paper states only the initial A (skew-symmetric, after Helfrich et al.
  and Henaff et al., as every `init` does); the rest is a reading, torch.nn.GRU's: every plain
  weight U(±1/√n), gate biases 0, modReLU bias 0.
- `synthetic_code` (the TensorFlow code of the copying, denoise, adding and parenthesis tables):
  candidate input weights He-normal; modReLU bias U(±0.1); with only U_c orthogonal, the gates'
  kernel over [x; h] He-uniform (fan-in = inputs + n) and gate biases 0; with U_r orthogonal too,
  the gates' input kernels He-uniform (fan-in = inputs), U_u He-uniform (fan-in = n) and gate
  biases N(0, 1).
- `ptb_code` (the PyTorch code of the language-model tables): candidate input weights U(±0.01),
  gate weights U(±1/√n), gate biases the sum of two U(±1/√n) (its input and hidden biases),
  modReLU bias 0.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from trainables.models.base import OrthogonalModel, State
from trainables.models.hyperparams import (
    KERNEL,
    KERNEL_PRECISION,
    MODRELU_EPS,
    NCGRU_INIT,
    NCGRU_ORTHOGONAL,
    NCGRU_RESET,
    NEUMANN_ORDER,
    RESET_INTERVAL,
    RHO,
)
from trainables.models.initialization import (
    REFERENCE_INPUT_BOUND,
    he_normal_,
    he_uniform_bound,
    sum_of_uniforms_,
    uniform_,
)
from trainables.models.modrelu import ModReLU
from trainables.models.orthogonal import ScaledCayley
from trainables.models.scans import loop
from trainables.models.scans.choice import fused_scans

GATES = ("c", "r", "u")  # column order of the input projection and the recurrent matrices


class NCGRU(OrthogonalModel):
    """Each orthogonal weight is its own `ScaledCayley` (own A, D and maintained inverse), so one
    matrix's step never updates another's inverse, unlike the reference code."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        orthogonal: str = NCGRU_ORTHOGONAL.default,
        reset: str = NCGRU_RESET.default,
        rho: int = RHO.default,
        neumann_order: int = NEUMANN_ORDER.default,
        reset_interval: int = RESET_INTERVAL.default,
        init: str = NCGRU_INIT.default,
        modrelu_eps: float = MODRELU_EPS.default,
        kernel: str = KERNEL.default,
        kernel_precision: str = KERNEL_PRECISION.default,
    ) -> None:
        super().__init__()
        self.kernel, self.kernel_precision = kernel, kernel_precision
        for declared, value in ((NCGRU_INIT, init), (NCGRU_RESET, reset), (NCGRU_ORTHOGONAL, orthogonal)):
            declared.validate(value)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.reset_before = reset == "before"
        n = hidden_size
        self.input_weight = nn.Parameter(torch.empty(3 * n, input_size))  # [c|r|u]
        self.gate_bias = nn.Parameter(torch.empty(2 * n))  # b_r, b_u
        self.cayley = nn.ModuleDict(
            {
                g: ScaledCayley(n, rho, neumann_order, reset_interval, kernel, self.kernel_record)
                for g in GATES
                if g in orthogonal
            }
        )
        self.plain = nn.ParameterDict(
            {g: nn.Parameter(torch.empty(n, n)) for g in GATES if g not in orthogonal}
        )
        self.activation = ModReLU(n, modrelu_eps)
        with torch.no_grad():
            self._initialize(init)

    def _initialize(self, init: str) -> None:
        n, inputs = self.hidden_size, self.input_size
        candidate, gates = self.input_weight[:n], self.input_weight[n:]
        small = 1 / math.sqrt(n)  # torch.nn.GRU's bound, which the PTB code uses too
        if init == "paper":
            uniform_(self.input_weight, small)
            self.gate_bias.zero_()
            for weight in self.plain.values():
                uniform_(weight, small)
            self.activation.bias.zero_()
        elif init == "ptb_code":
            uniform_(candidate, REFERENCE_INPUT_BOUND)
            uniform_(gates, small)
            sum_of_uniforms_(self.gate_bias, small)
            for weight in self.plain.values():
                uniform_(weight, small)
            self.activation.bias.zero_()
        elif "r" in self.cayley:  # synthetic code, NC-GRU(U_r, U_c): gate kernels split by source
            he_normal_(candidate, inputs)
            uniform_(gates, he_uniform_bound(inputs))
            for weight in self.plain.values():
                uniform_(weight, he_uniform_bound(n))
            self.gate_bias.normal_(0.0, 1.0)
            uniform_(self.activation.bias, 0.1)
        else:  # synthetic code, NC-GRU(U_c): one gate kernel over [x; h]
            he_normal_(candidate, inputs)
            bound = he_uniform_bound(inputs + n)
            uniform_(gates, bound)
            for weight in self.plain.values():
                uniform_(weight, bound)
            self.gate_bias.zero_()
            uniform_(self.activation.bias, 0.1)

    def recurrent_matrix(self, gate: str) -> torch.Tensor:
        """U_gate in the paper's column convention (h_new = U h)."""
        return self.cayley[gate]() if gate in self.cayley else self.plain[gate]

    def forward(self, x: torch.Tensor, state: State = None) -> tuple[torch.Tensor, State]:
        n = self.hidden_size
        U_c, U_r, U_u = (self.recurrent_matrix(g).T for g in GATES)  # transposed: h @ Uᵀ = U h
        input_bias = torch.cat([self.gate_bias.new_zeros(n), self.gate_bias])
        projected = torch.nn.functional.linear(x, self.input_weight, input_bias)
        h0 = x.new_zeros(x.shape[1], n) if state is None else state
        bias, eps = self.activation.bias, self.activation.eps
        fused = self.scan_kernel(x) == "fused"
        options = self.scan_options() if fused else {}
        scans = fused_scans() if fused else loop
        if self.reset_before:
            return scans.reset_before_scan(
                projected, h0, torch.cat([U_r, U_u], dim=1), U_c, bias, eps, **options
            )  # eq. 19
        recurrent = torch.cat([U_c, U_r, U_u], dim=1)
        return scans.reset_after_scan(
            projected, h0, recurrent, bias, eps, True, "admits", **options
        )  # PTB code's variant

"""NC-GRU (NC-GRU paper eq. 19): a GRU whose chosen recurrent weights are scaled Cayley matrices
whose inverse (I + A)^{-1} is carried across optimizer steps by Algorithm 1's Neumann series.

`orthogonal` names the orthogonal weights: c = NC-GRU(U_c), rc = NC-GRU(U_r, U_c), ruc = all three;
each has its own A and D. `reset: before` is eq. 19 (and the synthetic-task code):
c = modReLU(W_c x + U_c (r ⊙ h)); `after` is the PTB code's modReLU(W_c x + r ⊙ (U_c h)), which
saves one GEMM per step.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from trainables.hyperparams import Hyperparam
from trainables.models import gated
from trainables.models.base import OrthogonalModel, State
from trainables.models.kernel_choice import KERNEL, fused_scans
from trainables.models.modrelu import MODRELU_EPS, ModReLU
from trainables.models.orthogonal import RHO, ScaledCayley
from trainables.registry import register_model

GATES = ("c", "r", "u")  # column order of the input projection and the recurrent matrices


@register_model(
    "ncgru",
    hyperparams=(
        Hyperparam(
            "orthogonal",
            "categorical",
            "rc",
            choices=("c", "rc", "ruc"),
            help="which recurrent weights are scaled Cayley matrices: U_c, U_r and U_c, or all three",
        ),
        Hyperparam(
            "reset",
            "categorical",
            "before",
            choices=("before", "after"),
            help="reset gate before the candidate's product (eq. 19) or after it (the PTB code)",
        ),
        RHO,
        Hyperparam(
            "neumann_order",
            "int",
            2,
            low=0,
            high=3,
            help="Neumann series order of the inverse update; 0 computes the exact inverse every step",
        ),
        Hyperparam(
            "reset_interval",
            "int",
            50,
            low=1,
            high=10**6,
            help="optimizer steps between exact recomputations of the inverse",
        ),
        MODRELU_EPS,
        KERNEL,
    ),
    orthogonal=True,
    description="NC-GRU: GRU with scaled Cayley U_c (and U_r, U_u), inverse kept by a Neumann series",
)
class NCGRU(OrthogonalModel):
    """Each orthogonal weight is its own `ScaledCayley` (own A, D and maintained inverse), so one
    matrix's step never updates another's inverse, unlike the reference code."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        orthogonal: str = "rc",
        reset: str = "before",
        rho: int = 0,
        neumann_order: int = 2,
        reset_interval: int = 50,
        modrelu_eps: float = 0.0,
        kernel: str = "auto",
    ) -> None:
        super().__init__()
        self.kernel = kernel
        if reset not in ("before", "after"):
            raise ValueError(f"reset: expected before or after, got {reset!r}")
        if orthogonal not in ("c", "rc", "ruc"):
            raise ValueError(f"orthogonal: expected c, rc or ruc, got {orthogonal!r}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.reset_before = reset == "before"
        n = hidden_size
        bound = 1 / math.sqrt(n)  # torch.nn.GRU's initialization for the ordinary weights
        self.input_weight = nn.Parameter(torch.empty(3 * n, input_size).uniform_(-bound, bound))  # [c|r|u]
        self.gate_bias = nn.Parameter(torch.zeros(2 * n))  # b_r, b_u
        self.cayley = nn.ModuleDict(
            {g: ScaledCayley(n, rho, neumann_order, reset_interval) for g in GATES if g in orthogonal}
        )
        self.plain = nn.ParameterDict(
            {g: nn.Parameter(torch.empty(n, n).uniform_(-bound, bound)) for g in GATES if g not in orthogonal}
        )
        self.activation = ModReLU(n, modrelu_eps)

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
        scans = fused_scans() if self.scan_kernel(x) == "fused" else gated
        if self.reset_before:
            return scans.reset_before_scan(
                projected, h0, torch.cat([U_r, U_u], dim=1), U_c, bias, eps
            )  # eq. 19
        recurrent = torch.cat([U_c, U_r, U_u], dim=1)
        return scans.reset_after_scan(
            projected, h0, recurrent, bias, eps, True, "admits"
        )  # PTB code's variant

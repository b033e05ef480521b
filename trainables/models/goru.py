"""GORU (GORU paper eqs. 14–16) and the ablations of its PTB table: no reset gate, no update gate.

The reset gate multiplies *after* the orthogonal product (r ⊙ U h), so one GEMM per step computes
h @ [U | W_r | W_z], and the loop runs in `scans.loop.reset_after_scan` with a hand-written backward.
Initialization follows the publication code: input and gate weights U(±0.01), reset bias 2,
update bias TensorFlow 1's default Glorot-uniform U(±√(3/n)), modReLU bias 0.01.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from trainables.models.base import OrthogonalModel, State
from trainables.models.hyperparams import CAPACITY, KERNEL, KERNEL_PRECISION, LAYOUT, MODRELU_EPS
from trainables.models.initialization import glorot_uniform_bound, uniform_
from trainables.models.modrelu import ModReLU
from trainables.models.orthogonal import GivensRotations, resolve_layout
from trainables.models.scans import loop
from trainables.models.scans.choice import fused_scans

WEIGHT_INIT = 0.01
RESET_BIAS_INIT = 2.0
MODRELU_BIAS_INIT = 0.01


class GORU(OrthogonalModel):
    """Gated orthogonal recurrent unit. The ablations set `reset = False` (r ≡ 1) or
    `update = False` (z ≡ 0); an ablated gate has no weights at all, so parameter counts are
    those of the smaller model."""

    reset: ClassVar[bool] = True
    update: ClassVar[bool] = True

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
        self.kernel, self.kernel_precision = kernel, kernel_precision
        self.input_size = input_size
        self.hidden_size = hidden_size
        n, n_gates = hidden_size, int(self.reset) + int(self.update)
        # rows: [candidate | reset | update]; the candidate's bias is modReLU's
        self.input_weight = nn.Parameter(
            torch.empty((1 + n_gates) * n, input_size).uniform_(-WEIGHT_INIT, WEIGHT_INIT)
        )
        self.gate_weight = nn.Parameter(torch.empty(n, n_gates * n).uniform_(-WEIGHT_INIT, WEIGHT_INIT))
        # the update bias had no initializer in the code, so TF1 drew it Glorot-uniform (fans n, n)
        update_bias = uniform_(torch.empty(n), glorot_uniform_bound(n, n))
        biases = [torch.full((n,), RESET_BIAS_INIT)] * self.reset + [update_bias] * self.update
        self.gate_bias = nn.Parameter(torch.cat(biases))
        self.rotations = GivensRotations(n, resolve_layout(layout, n), capacity, kernel, self.kernel_record)
        self.activation = ModReLU(n, modrelu_eps, bias_init=MODRELU_BIAS_INIT)

    def forward(self, x: torch.Tensor, state: State = None) -> tuple[torch.Tensor, State]:
        n = self.hidden_size
        recurrent = torch.cat([self.rotations.matrix(), self.gate_weight], dim=1)  # h @ [U | W_r | W_z]
        input_bias = torch.cat([self.gate_bias.new_zeros(n), self.gate_bias])
        projected = torch.nn.functional.linear(x, self.input_weight, input_bias)
        h0 = x.new_zeros(x.shape[1], n) if state is None else state
        update = "keeps" if self.update else None
        bias, eps = self.activation.bias, self.activation.eps
        if self.scan_kernel(x) == "fused":
            return fused_scans().reset_after_scan(
                projected, h0, recurrent, bias, eps, self.reset, update,
                givens=self.rotations.tables(), **self.scan_options(),
            )  # eqs. 14–16  # fmt: skip
        return loop.reset_after_scan(projected, h0, recurrent, bias, eps, self.reset, update)  # eqs. 14–16


class GORUNoReset(GORU):
    reset = False


class GORUNoUpdate(GORU):
    update = False

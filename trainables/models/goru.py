"""GORU (GORU paper eqs. 14–16) and the ablations of its PTB table: no reset gate, no update gate.

The reset gate multiplies *after* the orthogonal product (r ⊙ U h), so one GEMM per step computes
h @ [U | W_r | W_z], and the loop runs in `gated.reset_after_scan` with a hand-written backward.
Initialization follows the publication code: input and gate weights U(±0.01), reset bias 2,
modReLU bias 0.01.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from trainables.models import gated
from trainables.models.base import OrthogonalModel, State
from trainables.models.kernel_choice import KERNEL, fused_scans
from trainables.models.modrelu import MODRELU_EPS, ModReLU
from trainables.models.orthogonal import GIVENS_HYPERPARAMS, GivensRotations, resolve_layout
from trainables.registry import ModelSpec, register_model

WEIGHT_INIT = 0.01
RESET_BIAS_INIT = 2.0
MODRELU_BIAS_INIT = 0.01


class GORU(OrthogonalModel):
    """Gated orthogonal recurrent unit; `reset=False` fixes r ≡ 1, `update=False` fixes z ≡ 0.

    An ablated gate has no weights at all, so parameter counts are those of the smaller model.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        layout: str,
        capacity: int,
        modrelu_eps: float,
        kernel: str = "auto",
        reset: bool = True,
        update: bool = True,
    ) -> None:
        super().__init__()
        self.kernel = kernel
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.reset, self.update = reset, update
        n, n_gates = hidden_size, int(reset) + int(update)
        # rows: [candidate | reset | update]; the candidate's bias is modReLU's
        self.input_weight = nn.Parameter(
            torch.empty((1 + n_gates) * n, input_size).uniform_(-WEIGHT_INIT, WEIGHT_INIT)
        )
        self.gate_weight = nn.Parameter(torch.empty(n, n_gates * n).uniform_(-WEIGHT_INIT, WEIGHT_INIT))
        biases = [torch.full((n,), RESET_BIAS_INIT)] * reset + [torch.zeros(n)] * update
        self.gate_bias = nn.Parameter(torch.cat(biases))
        self.rotations = GivensRotations(n, resolve_layout(layout, n), capacity)
        self.activation = ModReLU(n, modrelu_eps, bias_init=MODRELU_BIAS_INIT)

    def forward(self, x: torch.Tensor, state: State = None) -> tuple[torch.Tensor, State]:
        n = self.hidden_size
        recurrent = torch.cat([self.rotations.matrix(), self.gate_weight], dim=1)  # h @ [U | W_r | W_z]
        input_bias = torch.cat([self.gate_bias.new_zeros(n), self.gate_bias])
        projected = torch.nn.functional.linear(x, self.input_weight, input_bias)
        h0 = x.new_zeros(x.shape[1], n) if state is None else state
        update = "keeps" if self.update else None
        scans = fused_scans() if self.scan_kernel(x) == "fused" else gated
        return scans.reset_after_scan(
            projected, h0, recurrent, self.activation.bias, self.activation.eps, self.reset, update
        )  # eqs. 14–16

    def orthogonal_parameters(self) -> list[nn.Parameter]:
        return [self.rotations.angles]

    def orthogonal_matrices(self) -> list[torch.Tensor]:
        return [self.rotations.matrix()]


def _builder(reset: bool, update: bool) -> Callable[..., GORU]:
    def build(
        input_size: int,
        hidden_size: int,
        layout: str = "auto",
        capacity: int = 2,
        modrelu_eps: float = 0.0,
        kernel: str = "auto",
    ) -> GORU:
        return GORU(
            input_size, hidden_size, layout, capacity, modrelu_eps, kernel, reset=reset, update=update
        )

    return build


for _name, _reset, _update, _what in (
    ("goru", True, True, "GORU: gated orthogonal recurrent unit, Givens U, modReLU"),
    ("goru_noreset", False, True, "GORU without its reset gate (r ≡ 1), a GORU paper ablation"),
    ("goru_noupdate", True, False, "GORU without its update gate (z ≡ 0), a GORU paper ablation"),
):
    register_model(
        ModelSpec(
            _name,
            _builder(_reset, _update),
            hyperparams=(*GIVENS_HYPERPARAMS, MODRELU_EPS, KERNEL),
            orthogonal=True,
            description=_what,
        )
    )

"""modReLU, the activation of orthogonal RNNs (GORU eq. 13, NC-GRU eq. 20), and the plain loop of
the recurrence h_t = modReLU(x_t + U h_{t−1}, b) that EURNN and scoRNN share.

It shrinks |z| by a learned threshold and keeps the sign, so it can forget (zero a unit) without
distorting the norm-preserving dynamics the way a saturating tanh would.
"""

from __future__ import annotations

import torch
from torch import nn


def modrelu_parts(
    z: torch.Tensor, bias: torch.Tensor, eps: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """modReLU(z) with its derivatives ∂/∂z and ∂/∂b, for hand-written backward passes.

    sign(z) · ReLU(|z| + ε + b) (eq. 13 / eq. 20): ε = 0 is the papers' form; ε > 0 is the
    real-valued form of the GORU and EUNN code, where ε only shifts the threshold (z/(|z|+ε) is
    their complex case). The derivative at z = 0 is 0 (sign(0) = 0) rather than the NaN of z/|z|.
    """
    magnitude = z.abs() + eps + bias
    active_sign = torch.sign(z) * (magnitude > 0)  # ±1 where the unit passes, else 0
    return active_sign * magnitude, active_sign.abs(), active_sign  # eq. 13 / eq. 20


class _ModReLUFn(torch.autograd.Function):
    """modReLU as one autograd node: it runs once per time step, where the nodes of the composite
    expression would cost more in autograd bookkeeping than in arithmetic."""

    @staticmethod
    def forward(ctx, z, bias, eps):  # type: ignore[override]
        out, d_z, d_bias = modrelu_parts(z, bias, eps)
        ctx.save_for_backward(d_z, d_bias)
        ctx.bias_shape = bias.shape
        return out

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        d_z, d_bias = ctx.saved_tensors
        return grad * d_z, (grad * d_bias).sum_to_size(ctx.bias_shape), None


def modrelu(z: torch.Tensor, bias: torch.Tensor, eps: float = 0.0) -> torch.Tensor:
    """modReLU with a trainable threshold `bias`; see `modrelu_parts`."""
    return _ModReLUFn.apply(z, bias, eps)


def modrelu_scan(
    projected: torch.Tensor, h0: torch.Tensor, M: torch.Tensor, bias: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(outputs (T, B, n), last state) of h_t = modReLU(x_t + h_{t−1} M, b): the plain loop of
    EURNN and scoRNN, M their orthogonal U in the row convention (h @ M = U h). Autograd
    differentiates it, through one GEMM and one modReLU node per step."""
    h, outputs = h0, []
    for xt in projected.unbind(0):
        h = modrelu(torch.addmm(xt, h, M), bias, eps)
        outputs.append(h)
    return torch.stack(outputs), h


class ModReLU(nn.Module):
    """modReLU with one trainable threshold per unit."""

    def __init__(self, size: int, eps: float = 0.0, bias_init: float = 0.0) -> None:
        super().__init__()
        if eps < 0:
            raise ValueError(f"modrelu_eps must be ≥ 0, got {eps}")
        self.eps = eps
        self.bias = nn.Parameter(torch.full((size,), float(bias_init)))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return modrelu(z, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.bias.numel()}, eps={self.eps}"

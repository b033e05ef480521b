"""Hand-written backpropagation through time for the gated cells (GORU and its ablations, NC-GRU).

Autograd records about a dozen nodes per time step, and at B = 128, H = 128 their bookkeeping
costs as much as the arithmetic. These functions run the time loop outside autograd and
differentiate it by hand, as one node per sequence: each backward step is one GEMM plus
elementwise work, and the gradient of the recurrent weights is a single GEMM over all steps.
Tests hold them to autograd (gradcheck) and to the papers' equations.

Column layout of `projected` (the inputs projected for all steps at once, biases included) and of
the recurrent matrices: [candidate | reset | update], an ablated gate's block left out.
"""

from __future__ import annotations

from typing import Literal

import torch

from trainables.models.modrelu import modrelu_parts

# How the update gate mixes states: GORU's z keeps the old state, h' = z ⊙ h + (1 − z) ⊙ c
# (eq. 14); NC-GRU's u admits the candidate, h' = (1 − u) ⊙ h + u ⊙ c (eq. 19).
UpdateGate = Literal["keeps", "admits"] | None


def _previous_states(h0: torch.Tensor, states: list[torch.Tensor]) -> torch.Tensor:
    """h_{t−1} for every t, flattened to (T·B, n) for the weight-gradient GEMM."""
    return torch.stack([h0, *states[:-1]]).reshape(-1, h0.shape[1])


class _ResetAfterScan(torch.autograd.Function):
    """c = modReLU(x_c + r ⊙ (U h), b), h' = c + s ⊙ (h − c), s the share of the old state kept.

    One GEMM per step: h @ M with M = [Uᵀ | W_r | W_z].
    """

    @staticmethod
    def forward(ctx, projected, h0, M, bias, eps, reset, update):  # type: ignore[override]
        n = h0.shape[1]
        keep = any(ctx.needs_input_grad[:4])
        h, states, saved = h0, [], []
        for xt in projected.unbind(0):
            hm = h @ M
            gates = torch.sigmoid(xt[:, n:] + hm[:, n:])  # GORU eqs. 15–16 / NC-GRU eq. 19 gates
            r = gates[:, :n] if reset else None
            z = torch.addcmul(xt[:, :n], r, hm[:, :n]) if reset else xt[:, :n] + hm[:, :n]
            c, dc_dz, dc_db = modrelu_parts(z, bias, eps)  # GORU eq. 14 candidate
            if update is None:
                s, h_new = None, c
            else:
                s = gates[:, -n:] if update == "keeps" else 1 - gates[:, -n:]
                h_new = torch.addcmul(c, s, h - c)  # eq. 14 / eq. 19: c + s ⊙ (h − c)
            if keep:
                saved.append((h, hm[:, :n], r, s, c, dc_dz, dc_db))
            states.append(h_new)
            h = h_new
        ctx.reset, ctx.update, ctx.saved = reset, update, saved
        ctx.save_for_backward(h0, M)
        ctx.states = states if keep else None
        return torch.stack(states), h

    @staticmethod
    def backward(ctx, grad_outputs, grad_last):  # type: ignore[override]
        h0, M = ctx.saved_tensors
        n, width = h0.shape[1], M.shape[1]
        T, B = grad_outputs.shape[:2]
        d_hm = grad_outputs.new_empty(T, B, width)  # ∂L/∂(h @ M) per step
        d_z_all = grad_outputs.new_empty(T, B, n) if ctx.reset else None
        d_bias = torch.zeros_like(h0[0])
        d_h = grad_last
        for t in range(T - 1, -1, -1):
            h_prev, hu, r, s, c, dc_dz, dc_db = ctx.saved[t]
            dh = grad_outputs[t] + d_h
            if s is None:
                dc = dh
            else:
                d_s = dh * (h_prev - c)
                dc = dh - dh * s
                d_gate = d_s * s * (1 - s)
                d_hm[t, :, -n:] = d_gate if ctx.update == "keeps" else -d_gate
            d_z = dc * dc_dz
            d_bias += (dc * dc_db).sum(0)
            if ctx.reset:
                d_z_all[t] = d_z
                torch.mul(d_z, r, out=d_hm[t, :, :n])
                d_hm[t, :, n : 2 * n] = d_z * hu * r * (1 - r)
            else:
                d_hm[t, :, :n] = d_z
            d_h = d_hm[t] @ M.T if s is None else torch.addmm(dh * s, d_hm[t], M.T)
        d_M = _previous_states(h0, ctx.states).T @ d_hm.reshape(-1, width)
        d_projected = d_hm
        if ctx.reset:
            d_projected = torch.cat([d_z_all, d_hm[..., n:]], dim=-1)
        return d_projected, d_h, d_M, d_bias, None, None, None


def reset_after_scan(
    projected: torch.Tensor,
    h0: torch.Tensor,
    M: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
    reset: bool,
    update: UpdateGate,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(outputs (T, B, n), last state) of the reset-after-product cell (GORU, NC-GRU `after`)."""
    return _ResetAfterScan.apply(projected, h0, M, bias, eps, reset, update)


class _ResetBeforeScan(torch.autograd.Function):
    """NC-GRU eq. 19: r, u = σ(x + h @ M_ru); c = modReLU(x_c + (r ⊙ h) @ M_c); h' = h + u ⊙ (c − h)."""

    @staticmethod
    def forward(ctx, projected, h0, M_ru, M_c, bias, eps):  # type: ignore[override]
        n = h0.shape[1]
        keep = any(ctx.needs_input_grad[:5])
        h, states, saved = h0, [], []
        for xt in projected.unbind(0):
            gates = torch.sigmoid(torch.addmm(xt[:, n:], h, M_ru))  # eq. 19, r_t and u_t
            r, u = gates[:, :n], gates[:, n:]
            rh = r * h
            c, dc_dz, dc_db = modrelu_parts(torch.addmm(xt[:, :n], rh, M_c), bias, eps)  # eq. 19, c_t
            h_new = torch.addcmul(h, u, c - h)  # eq. 19, (1 − u) ⊙ h + u ⊙ c
            if keep:
                saved.append((h, r, u, rh, c, dc_dz, dc_db))
            states.append(h_new)
            h = h_new
        ctx.saved = saved
        ctx.save_for_backward(h0, M_ru, M_c)
        ctx.states = states if keep else None
        return torch.stack(states), h

    @staticmethod
    def backward(ctx, grad_outputs, grad_last):  # type: ignore[override]
        h0, M_ru, M_c = ctx.saved_tensors
        n = h0.shape[1]
        T, B = grad_outputs.shape[:2]
        d_pre = grad_outputs.new_empty(T, B, 3 * n)  # ∂L/∂ pre-activations [candidate | r | u]
        d_bias = torch.zeros_like(h0[0])
        d_h = grad_last
        for t in range(T - 1, -1, -1):
            h_prev, r, u, _, c, dc_dz, dc_db = ctx.saved[t]
            dh = grad_outputs[t] + d_h
            dc = dh * u
            d_z = dc * dc_dz
            d_pre[t, :, :n] = d_z
            d_bias += (dc * dc_db).sum(0)
            d_rh = d_z @ M_c.T
            d_pre[t, :, n : 2 * n] = d_rh * h_prev * r * (1 - r)
            d_pre[t, :, 2 * n :] = dh * (c - h_prev) * u * (1 - u)
            d_h = torch.addmm(dh - dc + d_rh * r, d_pre[t, :, n:], M_ru.T)
        d_M_ru = _previous_states(h0, ctx.states).T @ d_pre[..., n:].reshape(-1, 2 * n)
        rh_all = torch.stack([step[3] for step in ctx.saved]).reshape(-1, n)
        d_M_c = rh_all.T @ d_pre[..., :n].reshape(-1, n)
        return d_pre, d_h, d_M_ru, d_M_c, d_bias, None


def reset_before_scan(
    projected: torch.Tensor,
    h0: torch.Tensor,
    M_ru: torch.Tensor,
    M_c: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(outputs (T, B, n), last state) of NC-GRU with the reset before the product (eq. 19)."""
    return _ResetBeforeScan.apply(projected, h0, M_ru, M_c, bias, eps)

"""NC-GRU eq. 19 (reset before the candidate's product) as Triton kernels, one launch per direction
(`loop.reset_before_scan`).

r, u = σ(x + h [U_r | U_u]); c = modReLU(x_c + (r ⊙ h) U_c); h' = h + u ⊙ (c − h). The candidate
needs r ⊙ h of every unit, so a SPLIT step has two phases with a barrier after each: the gates
and r ⊙ h of the program's units, then the candidate and the new state (three in the backward).
Layout, paths and `PHASE` as in `reset_after_kernels`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from trainables.models.scans.kernel_parts import (
    columns,
    columns_t,
    grid_sync,
    modrelu,
    program_tile,
    sign,
    streamed_dot,
)

RUNTIME = ["t0", "steps", "B", "n", "kept"]


@triton.jit(do_not_specialize=RUNTIME)
def reset_before_forward(
    x_ptr,  # (T, B, 3n) [candidate | reset | update]
    mr_ptr,  # U_r, (n, n) with row stride 2n: the first half of [U_r | U_u]
    mu_ptr,  # U_u
    mc_ptr,  # U_c, (n, n)
    bias_ptr,
    states_ptr,  # (T + 1, B, n)
    gates_ptr,  # (kept steps, B, 2n) r and u after the sigmoid
    rh_ptr,  # (kept steps, B, n) r ⊙ h_{t−1}
    cand_ptr,  # (kept steps, B, n) the candidate c
    sync_ptr,
    flag_ptr,
    t0,
    steps,
    B,
    n,
    kept,  # B·n, or 0 when one step of gates, r ⊙ h and candidates is kept (no backward)
    SAVE: tl.constexpr,
    SPLIT: tl.constexpr,
    RESIDENT: tl.constexpr,
    GRID_SYNC: tl.constexpr,
    PHASE: tl.constexpr,  # −1: both phases of every step; 0 or 1: that phase of one step
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    KC: tl.constexpr,
    PRECISION: tl.constexpr,
    SPIN_LIMIT: tl.constexpr,
):
    rows, units, full, row_ok, own, whole = program_tile(B, n, ROWS, BLOCK_N, BLOCK_K)
    zero = tl.zeros((ROWS, BLOCK_K), tl.float32)
    b = tl.load(bias_ptr + units, mask=units < n, other=0.0)[None, :]
    if RESIDENT:
        mr = columns(mr_ptr, 2 * n, full, units, n)
        mu = columns(mu_ptr, 2 * n, full, units, n)
        mc = columns(mc_ptr, n, full, units, n)
    if not SPLIT:
        h = tl.load(
            states_ptr + tl.cast(t0, tl.int64) * B * n + rows[:, None] * n + full[None, :],
            mask=whole,
            other=0.0,
        )
    for i in range(steps):
        t = tl.cast(t0 + i, tl.int64)
        h_rows = states_ptr + t * B * n + rows[:, None] * n
        x_at = x_ptr + t * B * 3 * n + rows[:, None] * 3 * n + units[None, :]
        slot = t * kept
        rh_rows = rh_ptr + slot + rows[:, None] * n
        gate_at = gates_ptr + slot * 2 + rows[:, None] * 2 * n + units[None, :]
        if SPLIT:  # noqa: SIM108  (`h` exists only without SPLIT)
            h_own = tl.load(h_rows + units[None, :], mask=own, other=0.0, cache_modifier=".cg")
        else:
            h_own = h
        if PHASE <= 0:  # eq. 19: r_t, u_t = σ(W x + U h + b), and r ⊙ h for the candidate
            if RESIDENT:
                if SPLIT:
                    h_full = tl.load(h_rows + full[None, :], mask=whole, other=0.0, cache_modifier=".cg")
                else:
                    h_full = h
                hr = tl.dot(h_full, mr, input_precision=PRECISION)
                hu = tl.dot(h_full, mu, input_precision=PRECISION)
            else:
                hr = streamed_dot(zero, h_rows, row_ok, mr_ptr, 2 * n, units, n, KC, False, PRECISION)
                hu = streamed_dot(zero, h_rows, row_ok, mu_ptr, 2 * n, units, n, KC, False, PRECISION)
            r = tl.sigmoid(tl.load(x_at + n, mask=own, other=0.0) + hr)
            u = tl.sigmoid(tl.load(x_at + 2 * n, mask=own, other=0.0) + hu)
            rh = r * h_own
            if SAVE or SPLIT:  # the backward reads them; so does the split path's second phase
                tl.store(gate_at, r, mask=own)
                tl.store(gate_at + n, u, mask=own)
                tl.store(rh_rows + units[None, :], rh, mask=own)
        if GRID_SYNC:
            grid_sync(sync_ptr + tl.program_id(1), flag_ptr, (2 * i + 1) * tl.num_programs(0), SPIN_LIMIT)
        if PHASE != 0:  # eq. 19: c_t = modReLU(W x + U_c (r ⊙ h), b), h_t = h + u (c − h)
            if SPLIT:
                u = tl.load(gate_at + n, mask=own, other=0.0, cache_modifier=".cg")
            if not RESIDENT:
                z = streamed_dot(zero, rh_rows, row_ok, mc_ptr, n, units, n, KC, False, PRECISION)
            elif SPLIT:
                rh_full = tl.load(rh_rows + full[None, :], mask=whole, other=0.0, cache_modifier=".cg")
                z = tl.dot(rh_full, mc, input_precision=PRECISION)
            else:
                z = tl.dot(rh, mc, input_precision=PRECISION)
            z += tl.load(x_at, mask=own, other=0.0)
            c = modrelu(z, b)
            h_new = h_own + u * (c - h_own)  # eq. 19: (1 − u) ⊙ h + u ⊙ c
            if SAVE:
                tl.store(cand_ptr + slot + rows[:, None] * n + units[None, :], c, mask=own)
            tl.store(h_rows + B * n + units[None, :], h_new, mask=own)
        if GRID_SYNC:
            grid_sync(sync_ptr + tl.program_id(1), flag_ptr, (2 * i + 2) * tl.num_programs(0), SPIN_LIMIT)
        if not SPLIT:
            h = h_new


@triton.jit(do_not_specialize=["t0", "steps", "B", "n"])
def reset_before_backward(
    mr_ptr,
    mu_ptr,
    mc_ptr,
    states_ptr,
    gates_ptr,
    cand_ptr,
    grad_ptr,  # (T, B, n)
    carry_ptr,  # (B, n)
    d_pre_ptr,  # (T, B, 3n) ∂L/∂ pre-activations [candidate | r | u]
    d_bias_ptr,  # (row blocks, n)
    sync_ptr,
    flag_ptr,
    t0,
    steps,
    B,
    n,
    SPLIT: tl.constexpr,
    RESIDENT: tl.constexpr,
    GRID_SYNC: tl.constexpr,
    PHASE: tl.constexpr,  # −1: the three phases of every step; 0, 1 or 2: that phase of one step
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    KC: tl.constexpr,
    PRECISION: tl.constexpr,
    SPIN_LIMIT: tl.constexpr,
):
    rows, units, full, row_ok, own, whole = program_tile(B, n, ROWS, BLOCK_N, BLOCK_K)
    zero = tl.zeros((ROWS, BLOCK_K), tl.float32)
    carry_at = carry_ptr + rows[:, None] * n + units[None, :]
    carry = tl.load(carry_at, mask=own, other=0.0)  # between phases of one-phase launches, carried here
    d_bias_at = d_bias_ptr + tl.program_id(1) * n + units
    d_bias = tl.load(d_bias_at, mask=units < n, other=0.0)
    if RESIDENT:
        mrt = columns_t(mr_ptr, 2 * n, full, units, n)
        mut = columns_t(mu_ptr, 2 * n, full, units, n)
        mct = columns_t(mc_ptr, n, full, units, n)
    for i in range(steps):
        t = tl.cast(t0 + steps - 1 - i, tl.int64)
        at = t * B * n + rows[:, None] * n + units[None, :]
        gate_at = gates_ptr + t * B * 2 * n + rows[:, None] * 2 * n + units[None, :]
        d_rows = d_pre_ptr + t * B * 3 * n + rows[:, None] * 3 * n
        if PHASE <= 0:  # through h_t = h + u ⊙ (c − h) and modReLU
            dh = tl.load(grad_ptr + at, mask=own, other=0.0) + carry
            u = tl.load(gate_at + n, mask=own, other=0.0)
            c = tl.load(cand_ptr + at, mask=own, other=0.0)
            h_prev = tl.load(states_ptr + at, mask=own, other=0.0)
            dc = dh * u
            sign_c = sign(c)
            d_z = dc * tl.abs(sign_c)
            d_bias += tl.sum(d_z * sign_c, axis=0)
            d_u = dh * (c - h_prev) * u * (1.0 - u)
            tl.store(d_rows + units[None, :], d_z, mask=own)
            tl.store(d_rows + 2 * n + units[None, :], d_u, mask=own)
            carry = dh - dc
        if GRID_SYNC:
            grid_sync(sync_ptr + tl.program_id(1), flag_ptr, (2 * i + 1) * tl.num_programs(0), SPIN_LIMIT)
        if PHASE < 0 or PHASE == 1:  # through r ⊙ h: ∂L/∂(r ⊙ h) = ∂L/∂z U_cᵀ
            r = tl.load(gate_at, mask=own, other=0.0)
            if PHASE == 1:
                h_prev = tl.load(states_ptr + at, mask=own, other=0.0)
            if not RESIDENT:
                d_rh = streamed_dot(zero, d_rows, row_ok, mc_ptr, n, units, n, KC, True, PRECISION)
            elif SPLIT:
                dz_full = tl.load(d_rows + full[None, :], mask=whole, other=0.0, cache_modifier=".cg")
                d_rh = tl.dot(dz_full, mct, input_precision=PRECISION)
            else:
                d_rh = tl.dot(d_z, mct, input_precision=PRECISION)
            d_r = d_rh * h_prev * r * (1.0 - r)
            tl.store(d_rows + n + units[None, :], d_r, mask=own)
            carry += d_rh * r
        if GRID_SYNC:
            grid_sync(sync_ptr + tl.program_id(1), flag_ptr, (2 * i + 2) * tl.num_programs(0), SPIN_LIMIT)
        if PHASE < 0 or PHASE == 2:  # through the gates: ∂L/∂[r | u] pre-activations [U_r | U_u]ᵀ
            if not RESIDENT:
                carry = streamed_dot(carry, d_rows + n, row_ok, mr_ptr, 2 * n, units, n, KC, True, PRECISION)
                carry = streamed_dot(
                    carry, d_rows + 2 * n, row_ok, mu_ptr, 2 * n, units, n, KC, True, PRECISION
                )
            else:
                if SPLIT:
                    dr_full = tl.load(d_rows + n + full[None, :], mask=whole, other=0.0, cache_modifier=".cg")
                    du_full = tl.load(
                        d_rows + 2 * n + full[None, :], mask=whole, other=0.0, cache_modifier=".cg"
                    )
                else:
                    dr_full = d_r
                    du_full = d_u
                carry += tl.dot(dr_full, mrt, input_precision=PRECISION)
                carry += tl.dot(du_full, mut, input_precision=PRECISION)
    tl.store(carry_at, carry, mask=own)
    tl.store(d_bias_at, d_bias, mask=units < n)

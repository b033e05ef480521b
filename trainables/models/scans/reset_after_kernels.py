"""The reset-after-product cell as Triton kernels, one launch per direction (`loop.reset_after_scan`).

c = modReLU(x_c + r ⊙ (h U), b), h' = c + s ⊙ (h − c) (GORU eq. 14; without gates the modReLU
recurrence of EURNN, scoRNN; NC-GRU `after` admits with s = 1 − u). A program owns `ROWS` batch
rows and the hidden units `units` of them (all units unless SPLIT). The candidate's product h U
is a dense `tl.dot` or, with GIVENS, the rotation layers applied to h; the gates' products are
dense. Without SPLIT the program's state stays in registers for all steps and its matrices on
chip; with SPLIT the state goes through global memory, the matrix columns stay on chip where
RESIDENT (else they are streamed), and the programs sharing rows meet at a barrier after each
phase of a step (GRID_SYNC). Where programs cannot wait for one another (the interpreter), the
host launches one phase of one step at a time (`PHASE`, `steps` = 1 from `t0`) and the same code
runs; what crosses from one phase to the next goes through memory there (the carried gradient,
in `carry_ptr`).
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
    rotate,
    sign,
    streamed_dot,
)

RUNTIME = ["t0", "steps", "B", "n", "W", "ld", "layers"]  # not specialized: one binary for any batch


@triton.jit(do_not_specialize=RUNTIME)
def reset_after_forward(
    x_ptr,  # (T, B, W) inputs projected for all steps, biases included: [candidate | reset | update]
    mc_ptr,  # U, (n, n) with row stride ld (not read with GIVENS)
    mr_ptr,  # W_r
    mz_ptr,  # W_z
    cos_ptr,  # (layers, n) Givens tables (GIVENS only)
    sin_ptr,
    partner_ptr,
    scratch_ptr,  # (programs · ROWS, BLOCK_N) partner exchange of GIVENS with IN_MEMORY
    bias_ptr,  # (n,) modReLU threshold, ε folded in
    states_ptr,  # (T + 1, B, n): states[0] is h0; step t writes states[t + 1]
    hm_ptr,  # (T, B, W) the products h_{t−1} U, h_{t−1} W_r, h_{t−1} W_z, kept for the backward when SAVE
    sync_ptr,  # (row blocks,) barrier counters
    flag_ptr,  # (1,) set when a barrier gave up waiting
    t0,
    steps,
    B,
    n,
    W,
    ld,
    layers,
    RESET: tl.constexpr,
    UPDATE: tl.constexpr,  # 0 none, 1 keeps (GORU's z), 2 admits (NC-GRU's u)
    SAVE: tl.constexpr,
    GIVENS: tl.constexpr,
    IN_MEMORY: tl.constexpr,
    SPLIT: tl.constexpr,
    RESIDENT: tl.constexpr,
    GRID_SYNC: tl.constexpr,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    KC: tl.constexpr,
    PRECISION: tl.constexpr,
    SPIN_LIMIT: tl.constexpr,
):
    rows, units, full, row_ok, own, whole = program_tile(B, n, ROWS, BLOCK_N, BLOCK_K)
    UPD = (1 + RESET) * n  # the update gate's first column in x and hm
    zero = tl.zeros((ROWS, BLOCK_K), tl.float32)
    scratch = scratch_ptr + (tl.program_id(1) * ROWS + tl.arange(0, ROWS))[:, None] * BLOCK_N
    b = tl.load(bias_ptr + units, mask=units < n, other=0.0)[None, :]
    if RESIDENT:  # the program's matrix columns stay on chip for all steps
        if not GIVENS:
            mc = columns(mc_ptr, ld, full, units, n)
        if RESET:
            mr = columns(mr_ptr, ld, full, units, n)
        if UPDATE != 0:
            mz = columns(mz_ptr, ld, full, units, n)
    if not SPLIT:
        h = tl.load(
            states_ptr + tl.cast(t0, tl.int64) * B * n + rows[:, None] * n + full[None, :],
            mask=whole,
            other=0.0,
        )
    for i in range(steps):
        t = tl.cast(t0 + i, tl.int64)
        h_rows = states_ptr + t * B * n + rows[:, None] * n  # h_{t−1}
        if SPLIT:
            h_own = tl.load(h_rows + units[None, :], mask=own, other=0.0, cache_modifier=".cg")
            if RESIDENT:
                h_full = tl.load(h_rows + full[None, :], mask=whole, other=0.0, cache_modifier=".cg")
        else:
            h_full = h
            h_own = h
        if GIVENS:
            hu = rotate(h_full, cos_ptr, sin_ptr, partner_ptr, layers, n, full, scratch, False, IN_MEMORY)
        elif RESIDENT:
            hu = tl.dot(h_full, mc, input_precision=PRECISION)
        else:
            hu = streamed_dot(zero, h_rows, row_ok, mc_ptr, ld, units, n, KC, False, PRECISION)
        x_at = x_ptr + t * B * W + rows[:, None] * W + units[None, :]
        hm_at = hm_ptr + t * B * W + rows[:, None] * W + units[None, :]
        z = tl.load(x_at, mask=own, other=0.0)
        if RESET:
            if RESIDENT:
                hr = tl.dot(h_full, mr, input_precision=PRECISION)
            else:
                hr = streamed_dot(zero, h_rows, row_ok, mr_ptr, ld, units, n, KC, False, PRECISION)
            r = tl.sigmoid(tl.load(x_at + n, mask=own, other=0.0) + hr)
            z += r * hu  # GORU eq. 14: W x + r ⊙ (U h)
            if SAVE:
                tl.store(hm_at + n, hr, mask=own)
        else:
            z += hu
        h_new = modrelu(z, b)
        if UPDATE != 0:
            if RESIDENT:
                hz = tl.dot(h_full, mz, input_precision=PRECISION)
            else:
                hz = streamed_dot(zero, h_rows, row_ok, mz_ptr, ld, units, n, KC, False, PRECISION)
            gate = tl.sigmoid(tl.load(x_at + UPD, mask=own, other=0.0) + hz)
            keep = gate if UPDATE == 1 else 1.0 - gate
            h_new += keep * (h_own - h_new)  # eq. 14 / eq. 19: c + s ⊙ (h − c)
            if SAVE:
                tl.store(hm_at + UPD, hz, mask=own)
        if SAVE:
            tl.store(hm_at, hu, mask=own)
        tl.store(h_rows + B * n + units[None, :], h_new, mask=own)
        if GRID_SYNC:
            grid_sync(sync_ptr + tl.program_id(1), flag_ptr, (i + 1) * tl.num_programs(0), SPIN_LIMIT)
        if not SPLIT:
            h = h_new


@triton.jit(do_not_specialize=RUNTIME)
def reset_after_backward(
    x_ptr,
    mc_ptr,
    mr_ptr,
    mz_ptr,
    cos_ptr,
    sin_ptr,
    partner_ptr,
    scratch_ptr,
    bias_ptr,
    states_ptr,
    hm_ptr,
    grad_ptr,  # (T, B, n) ∂L/∂outputs
    carry_ptr,  # (B, n) ∂L/∂h_t flowing back: ∂L/∂(last state) in, ∂L/∂h0 out
    d_hm_ptr,  # (T, B, W) ∂L/∂(h_{t−1} M) per block
    d_xc_ptr,  # (T, B, n) ∂L/∂(candidate input) when RESET
    d_bias_ptr,  # (row blocks, n) partial sums of ∂L/∂b
    sync_ptr,
    flag_ptr,
    t0,
    steps,
    B,
    n,
    W,
    ld,
    layers,
    RESET: tl.constexpr,
    UPDATE: tl.constexpr,
    GIVENS: tl.constexpr,
    IN_MEMORY: tl.constexpr,
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
    UPD = (1 + RESET) * n
    zero = tl.zeros((ROWS, BLOCK_K), tl.float32)
    scratch = scratch_ptr + (tl.program_id(1) * ROWS + tl.arange(0, ROWS))[:, None] * BLOCK_N
    b = tl.load(bias_ptr + units, mask=units < n, other=0.0)[None, :]
    carry_at = carry_ptr + rows[:, None] * n + units[None, :]
    carry = tl.load(carry_at, mask=own, other=0.0)  # between phases of one-phase launches, carried here
    d_bias_at = d_bias_ptr + tl.program_id(1) * n + units
    d_bias = tl.load(d_bias_at, mask=units < n, other=0.0)
    if RESIDENT:
        if not GIVENS:
            mct = columns_t(mc_ptr, ld, full, units, n)
        if RESET:
            mrt = columns_t(mr_ptr, ld, full, units, n)
        if UPDATE != 0:
            mzt = columns_t(mz_ptr, ld, full, units, n)
    for i in range(steps):
        t = tl.cast(t0 + steps - 1 - i, tl.int64)
        d_at = d_hm_ptr + t * B * W + rows[:, None] * W + units[None, :]
        if PHASE <= 0:  # elementwise: every ∂L/∂(h M) of the program's units at step t
            h_rows = states_ptr + t * B * n + rows[:, None] * n  # h_{t−1}; h_t is B·n further
            x_at = x_ptr + t * B * W + rows[:, None] * W + units[None, :]
            hm_at = hm_ptr + t * B * W + rows[:, None] * W + units[None, :]
            dh = (
                tl.load(grad_ptr + t * B * n + rows[:, None] * n + units[None, :], mask=own, other=0.0)
                + carry
            )
            if RESET or UPDATE != 0:
                hu = tl.load(hm_at, mask=own, other=0.0)
                z = tl.load(x_at, mask=own, other=0.0)
                if RESET:
                    r = tl.sigmoid(
                        tl.load(x_at + n, mask=own, other=0.0) + tl.load(hm_at + n, mask=own, other=0.0)
                    )
                    z += r * hu
                else:
                    z += hu
                c = modrelu(z, b)
            else:
                c = tl.load(h_rows + B * n + units[None, :], mask=own, other=0.0)  # h_t is the candidate
            dc = dh
            direct = zero
            if UPDATE != 0:
                gate = tl.sigmoid(
                    tl.load(x_at + UPD, mask=own, other=0.0) + tl.load(hm_at + UPD, mask=own, other=0.0)
                )
                keep = gate if UPDATE == 1 else 1.0 - gate
                h_prev = tl.load(h_rows + units[None, :], mask=own, other=0.0)
                d_gate = dh * (h_prev - c) * keep * (1.0 - keep)
                if UPDATE == 2:
                    d_gate = -d_gate
                tl.store(d_at + UPD, d_gate, mask=own)
                direct = dh * keep
                dc = dh - direct
            sign_c = sign(c)
            d_z = dc * tl.abs(sign_c)  # modReLU passes the gradient where its unit is active
            d_bias += tl.sum(d_z * sign_c, axis=0)
            if RESET:
                d_c = d_z * r
                d_r = d_z * hu * r * (1.0 - r)
                tl.store(d_xc_ptr + t * B * n + rows[:, None] * n + units[None, :], d_z, mask=own)
                tl.store(d_at + n, d_r, mask=own)
            else:
                d_c = d_z
            tl.store(d_at, d_c, mask=own)
            carry = direct  # the update gate's direct path to h_{t−1}
        if GRID_SYNC:
            grid_sync(sync_ptr + tl.program_id(1), flag_ptr, (i + 1) * tl.num_programs(0), SPIN_LIMIT)
        if PHASE != 0:  # ∂L/∂h_{t−1} += ∂L/∂(h U) Uᵀ + ∂L/∂(h W_r) W_rᵀ + ∂L/∂(h W_z) W_zᵀ
            d_rows = d_hm_ptr + t * B * W + rows[:, None] * W  # every unit's, as the programs stored them
            if SPLIT and RESIDENT:
                dc_full = tl.load(d_rows + full[None, :], mask=whole, other=0.0, cache_modifier=".cg")
                if RESET:
                    dr_full = tl.load(d_rows + n + full[None, :], mask=whole, other=0.0, cache_modifier=".cg")
                if UPDATE != 0:
                    dz_full = tl.load(
                        d_rows + UPD + full[None, :], mask=whole, other=0.0, cache_modifier=".cg"
                    )
            elif not SPLIT:
                dc_full = d_c
                if RESET:
                    dr_full = d_r
                if UPDATE != 0:
                    dz_full = d_gate
            if GIVENS:
                carry += rotate(
                    dc_full, cos_ptr, sin_ptr, partner_ptr, layers, n, full, scratch, True, IN_MEMORY
                )
            elif RESIDENT:
                carry += tl.dot(dc_full, mct, input_precision=PRECISION)
            else:
                carry = streamed_dot(carry, d_rows, row_ok, mc_ptr, ld, units, n, KC, True, PRECISION)
            if RESET:
                if RESIDENT:
                    carry += tl.dot(dr_full, mrt, input_precision=PRECISION)
                else:
                    carry = streamed_dot(carry, d_rows + n, row_ok, mr_ptr, ld, units, n, KC, True, PRECISION)
            if UPDATE != 0:
                if RESIDENT:
                    carry += tl.dot(dz_full, mzt, input_precision=PRECISION)
                else:
                    carry = streamed_dot(
                        carry, d_rows + UPD, row_ok, mz_ptr, ld, units, n, KC, True, PRECISION
                    )
    tl.store(carry_at, carry, mask=own)
    tl.store(d_bias_at, d_bias, mask=units < n)

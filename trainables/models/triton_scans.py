"""Fused recurrences: the time loops of `trainables.models.gated` as Triton kernels.

A loop in Python launches about a dozen small kernels per time step, and on a GPU the launches,
not the arithmetic, set the pace. Here the whole forward scan is one launch, and the backward
one more: each program owns a block of batch rows and walks all T steps with them, since rows
are independent no program waits for another. Per step a program multiplies its rows' state by
the recurrent matrix tile by tile (the hidden dimension is split into `block`-wide tiles, so any
hidden size fits; the matrix is re-read from L2 each step) and applies the gates elementwise.
The state tiles a program writes at step t are what it reads at step t + 1, and a barrier
between the two keeps the program's threads in step. The weight gradients stay one GEMM over all
steps, outside the kernels.

Arithmetic is float32 throughout, with `tl.dot` in IEEE mode (no TF32): orthogonal RNNs run
thousands of steps, and the loop implementation in `gated` is the reference these are tested
against (under `TRITON_INTERPRET=1` on a CPU, and on CUDA).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from trainables.models.gated import UpdateGate

BLOCK_B = 16  # batch rows per program: tl.dot needs every dimension ≥ 16
# The widest hidden-dimension tile. In IEEE float32 `tl.dot` runs on FMA units with its operands
# in registers: compiled for sm_90 at 8 warps, 32-wide tiles spill at most 24 bytes of the 255
# registers a thread has, 64-wide ones up to 100 bytes (at 4 warps over a kilobyte).
MAX_BLOCK = 32
UPDATE_CODES = {None: 0, "keeps": 1, "admits": 2}


def tile_width(n: int) -> int:
    """The hidden-dimension tile: the padded size itself up to MAX_BLOCK, then MAX_BLOCK."""
    return min(max(16, triton.next_power_of_2(n)), MAX_BLOCK)


def warps(block: int) -> int:
    return 4 if block <= 16 else 8


def tiling(n: int, block: int | None = None) -> str:
    """How a scan of hidden size n runs, for benchmarks and logs: tiles per state row."""
    block = block or tile_width(n)
    tiles = triton.cdiv(n, block)
    return f"fused, {tiles} tile{'s' if tiles > 1 else ''} of {block}"


@triton.jit
def _modrelu(z, b):
    """sign(z) · ReLU(|z| + b) (GORU eq. 13 / NC-GRU eq. 20), with its sign mask."""
    magnitude = tl.abs(z) + b
    sign = tl.where(z > 0, 1.0, tl.where(z < 0, -1.0, 0.0))
    active = tl.where(magnitude > 0, sign, 0.0)
    return active * magnitude


@triton.jit
def _sign(v):
    return tl.where(v > 0, 1.0, tl.where(v < 0, -1.0, 0.0))


@triton.jit
def _dot_tiles(acc, a_rows, row_ok, m_at, k_stride, col_ok, n, BLOCK: tl.constexpr):
    """acc + a[:, :n] @ m[:n, :], the shared dimension walked in BLOCK tiles.

    `a_rows` (BLOCK_B, 1) points at the first element of each row of a; `m_at` (1, BLOCK) at the
    first of m's rows, whose k-th lies `k_stride` further (a row stride, or 1 to multiply by a
    transposed matrix).
    """
    for k0 in range(0, n, BLOCK):
        ck = k0 + tl.arange(0, BLOCK)
        k_ok = ck < n
        a = tl.load(a_rows + ck[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        m = tl.load(m_at + ck[:, None] * k_stride, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc += tl.dot(a, m, input_precision="ieee")
    return acc


@triton.jit
def _reset_after_forward(
    x_ptr,  # (T, B, W) inputs projected for all steps, biases included: [candidate | reset | update]
    m_ptr,  # (n, W) recurrent matrix [U | W_r | W_z]
    bias_ptr,  # (n,) modReLU threshold, ε folded in
    states_ptr,  # (T + 1, B, n): states[0] is h0; step t writes states[t + 1]
    hm_ptr,  # (T, B, W) h_{t−1} @ M, kept for the backward when SAVE
    T,
    B,
    n,
    W,
    RESET: tl.constexpr,
    UPDATE: tl.constexpr,  # 0 none, 1 keeps (GORU's z), 2 admits (NC-GRU's u)
    SAVE: tl.constexpr,
    BLOCK_B: tl.constexpr,
    BLOCK: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    row_ok = rows < B
    zero = tl.zeros((BLOCK_B, BLOCK), tl.float32)
    UPD = (1 + RESET) * n  # the update gate's first column
    for t in range(T):
        step = tl.cast(t, tl.int64) * B
        h_rows = states_ptr + step * n + rows[:, None] * n  # h_{t−1}
        x_rows = x_ptr + step * W + rows[:, None] * W
        hm_rows = hm_ptr + step * W + rows[:, None] * W
        for j0 in range(0, n, BLOCK):
            cj = j0 + tl.arange(0, BLOCK)
            col_ok = cj < n
            ok = row_ok[:, None] & col_ok[None, :]
            hu = _dot_tiles(zero, h_rows, row_ok, m_ptr + cj[None, :], W, col_ok, n, BLOCK)
            z = tl.load(x_rows + cj[None, :], mask=ok, other=0.0)
            if RESET:
                hr = _dot_tiles(zero, h_rows, row_ok, m_ptr + n + cj[None, :], W, col_ok, n, BLOCK)
                r = tl.sigmoid(tl.load(x_rows + n + cj[None, :], mask=ok, other=0.0) + hr)
                z += r * hu  # GORU eq. 14: W x + r ⊙ (U h)
                if SAVE:
                    tl.store(hm_rows + n + cj[None, :], hr, mask=ok)
            else:
                z += hu
            h_new = _modrelu(z, tl.load(bias_ptr + cj, mask=col_ok, other=0.0)[None, :])
            if UPDATE != 0:
                hz = _dot_tiles(zero, h_rows, row_ok, m_ptr + UPD + cj[None, :], W, col_ok, n, BLOCK)
                gate = tl.sigmoid(tl.load(x_rows + UPD + cj[None, :], mask=ok, other=0.0) + hz)
                keep = gate if UPDATE == 1 else 1.0 - gate
                h_prev = tl.load(h_rows + cj[None, :], mask=ok, other=0.0)
                h_new += keep * (h_prev - h_new)  # eq. 14 / eq. 19: c + s ⊙ (h − c)
                if SAVE:
                    tl.store(hm_rows + UPD + cj[None, :], hz, mask=ok)
            if SAVE:
                tl.store(hm_rows + cj[None, :], hu, mask=ok)
            tl.store(h_rows + B * n + cj[None, :], h_new, mask=ok)
        tl.debug_barrier()


@triton.jit
def _reset_after_backward(
    x_ptr,
    m_ptr,
    bias_ptr,
    states_ptr,
    hm_ptr,
    grad_ptr,  # (T, B, n) ∂L/∂outputs
    carry_ptr,  # (B, n) ∂L/∂h_t flowing back: ∂L/∂(last state) in, ∂L/∂h0 out
    d_hm_ptr,  # (T, B, W) ∂L/∂(h_{t−1} @ M)
    d_xc_ptr,  # (T, B, n) ∂L/∂(candidate input) when RESET; otherwise d_hm's candidate block
    d_bias_ptr,  # (programs, n) per-program partial sums of ∂L/∂b
    T,
    B,
    n,
    W,
    RESET: tl.constexpr,
    UPDATE: tl.constexpr,
    BLOCK_B: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_B + tl.arange(0, BLOCK_B)
    row_ok = rows < B
    UPD = (1 + RESET) * n
    carry_rows = carry_ptr + rows[:, None] * n
    for i in range(T):
        step = tl.cast(T - 1 - i, tl.int64) * B
        h_rows = states_ptr + step * n + rows[:, None] * n  # h_{t−1}; h_t is B·n further
        x_rows = x_ptr + step * W + rows[:, None] * W
        hm_rows = hm_ptr + step * W + rows[:, None] * W
        d_hm_rows = d_hm_ptr + step * W + rows[:, None] * W
        for j0 in range(0, n, BLOCK):  # elementwise: every ∂L/∂(h @ M) of this step
            cj = j0 + tl.arange(0, BLOCK)
            col_ok = cj < n
            ok = row_ok[:, None] & col_ok[None, :]
            dh = tl.load(grad_ptr + step * n + rows[:, None] * n + cj[None, :], mask=ok, other=0.0)
            dh += tl.load(carry_rows + cj[None, :], mask=ok, other=0.0)
            if RESET or UPDATE != 0:
                hu = tl.load(hm_rows + cj[None, :], mask=ok, other=0.0)
                z = tl.load(x_rows + cj[None, :], mask=ok, other=0.0)
                if RESET:
                    r = tl.load(x_rows + n + cj[None, :], mask=ok, other=0.0)
                    r = tl.sigmoid(r + tl.load(hm_rows + n + cj[None, :], mask=ok, other=0.0))
                    z += r * hu
                else:
                    z += hu
                c = _modrelu(z, tl.load(bias_ptr + cj, mask=col_ok, other=0.0)[None, :])
            else:
                c = tl.load(h_rows + B * n + cj[None, :], mask=ok, other=0.0)  # h_t is the candidate
            dc = dh
            direct = tl.zeros((BLOCK_B, BLOCK), tl.float32)
            if UPDATE != 0:
                gate = tl.load(x_rows + UPD + cj[None, :], mask=ok, other=0.0)
                gate = tl.sigmoid(gate + tl.load(hm_rows + UPD + cj[None, :], mask=ok, other=0.0))
                keep = gate if UPDATE == 1 else 1.0 - gate
                h_prev = tl.load(h_rows + cj[None, :], mask=ok, other=0.0)
                d_gate = dh * (h_prev - c) * keep * (1.0 - keep)
                if UPDATE == 2:
                    d_gate = -d_gate
                tl.store(d_hm_rows + UPD + cj[None, :], d_gate, mask=ok)
                direct = dh * keep
                dc = dh - direct
            sign_c = _sign(c)
            d_z = dc * tl.abs(sign_c)  # modReLU passes the gradient where its unit is active
            partial = tl.load(d_bias_ptr + pid * n + cj, mask=col_ok, other=0.0)
            tl.store(d_bias_ptr + pid * n + cj, partial + tl.sum(d_z * sign_c, axis=0), mask=col_ok)
            if RESET:
                tl.store(d_xc_ptr + step * n + rows[:, None] * n + cj[None, :], d_z, mask=ok)
                tl.store(d_hm_rows + cj[None, :], d_z * r, mask=ok)
                tl.store(d_hm_rows + n + cj[None, :], d_z * hu * r * (1.0 - r), mask=ok)
            else:
                tl.store(d_hm_rows + cj[None, :], d_z, mask=ok)
            tl.store(carry_rows + cj[None, :], direct, mask=ok)
        tl.debug_barrier()
        for j0 in range(0, n, BLOCK):  # ∂L/∂h_{t−1} = ∂L/∂(h @ M) Mᵀ + the update gate's direct path
            cj = j0 + tl.arange(0, BLOCK)
            col_ok = cj < n
            ok = row_ok[:, None] & col_ok[None, :]
            acc = tl.load(carry_rows + cj[None, :], mask=ok, other=0.0)
            acc = _dot_tiles(acc, d_hm_rows, row_ok, m_ptr + cj[None, :] * W, 1, col_ok, n, BLOCK)
            if RESET:
                acc = _dot_tiles(acc, d_hm_rows + n, row_ok, m_ptr + cj[None, :] * W + n, 1, col_ok, n, BLOCK)
            if UPDATE != 0:
                acc = _dot_tiles(
                    acc, d_hm_rows + UPD, row_ok, m_ptr + cj[None, :] * W + UPD, 1, col_ok, n, BLOCK
                )
            tl.store(carry_rows + cj[None, :], acc, mask=ok)
        tl.debug_barrier()


@triton.jit
def _reset_before_forward(
    x_ptr,  # (T, B, 3n) [candidate | reset | update]
    m_ru_ptr,  # (n, 2n) [U_r | U_u] in the row convention
    m_c_ptr,  # (n, n)
    bias_ptr,
    states_ptr,  # (T + 1, B, n)
    gates_ptr,  # (T, B, 2n) r and u after the sigmoid
    rh_ptr,  # (T, B, n) r ⊙ h_{t−1}
    cand_ptr,  # (T, B, n) the candidate c
    kept,  # B·n, or 0 when only one step of gates, rh and cand is kept (no backward)
    T,
    B,
    n,
    BLOCK_B: tl.constexpr,
    BLOCK: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    row_ok = rows < B
    zero = tl.zeros((BLOCK_B, BLOCK), tl.float32)
    for t in range(T):
        step = tl.cast(t, tl.int64)
        h_rows = states_ptr + step * B * n + rows[:, None] * n
        x_rows = x_ptr + step * B * 3 * n + rows[:, None] * 3 * n
        gate_rows = gates_ptr + step * kept * 2 + rows[:, None] * 2 * n
        rh_rows = rh_ptr + step * kept + rows[:, None] * n
        for j0 in range(0, n, BLOCK):  # eq. 19: r_t, u_t = σ(W x + U h + b), then r ⊙ h
            cj = j0 + tl.arange(0, BLOCK)
            col_ok = cj < n
            ok = row_ok[:, None] & col_ok[None, :]
            hr = _dot_tiles(zero, h_rows, row_ok, m_ru_ptr + cj[None, :], 2 * n, col_ok, n, BLOCK)
            hu = _dot_tiles(zero, h_rows, row_ok, m_ru_ptr + n + cj[None, :], 2 * n, col_ok, n, BLOCK)
            r = tl.sigmoid(tl.load(x_rows + n + cj[None, :], mask=ok, other=0.0) + hr)
            u = tl.sigmoid(tl.load(x_rows + 2 * n + cj[None, :], mask=ok, other=0.0) + hu)
            tl.store(gate_rows + cj[None, :], r, mask=ok)
            tl.store(gate_rows + n + cj[None, :], u, mask=ok)
            tl.store(rh_rows + cj[None, :], r * tl.load(h_rows + cj[None, :], mask=ok, other=0.0), mask=ok)
        tl.debug_barrier()
        for j0 in range(0, n, BLOCK):  # eq. 19: c_t = modReLU(W x + U_c (r ⊙ h), b), h_t = h + u (c − h)
            cj = j0 + tl.arange(0, BLOCK)
            col_ok = cj < n
            ok = row_ok[:, None] & col_ok[None, :]
            z = _dot_tiles(zero, rh_rows, row_ok, m_c_ptr + cj[None, :], n, col_ok, n, BLOCK)
            z += tl.load(x_rows + cj[None, :], mask=ok, other=0.0)
            c = _modrelu(z, tl.load(bias_ptr + cj, mask=col_ok, other=0.0)[None, :])
            u = tl.load(gate_rows + n + cj[None, :], mask=ok, other=0.0)
            h_prev = tl.load(h_rows + cj[None, :], mask=ok, other=0.0)
            tl.store(cand_ptr + step * kept + rows[:, None] * n + cj[None, :], c, mask=ok)
            tl.store(h_rows + B * n + cj[None, :], h_prev + u * (c - h_prev), mask=ok)
        tl.debug_barrier()


@triton.jit
def _reset_before_backward(
    m_ru_ptr,
    m_c_ptr,
    states_ptr,
    gates_ptr,
    cand_ptr,
    grad_ptr,  # (T, B, n)
    carry_ptr,  # (B, n)
    d_pre_ptr,  # (T, B, 3n) ∂L/∂ pre-activations [candidate | r | u]
    d_bias_ptr,  # (programs, n)
    T,
    B,
    n,
    BLOCK_B: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_B + tl.arange(0, BLOCK_B)
    row_ok = rows < B
    carry_rows = carry_ptr + rows[:, None] * n
    for i in range(T):
        step = tl.cast(T - 1 - i, tl.int64) * B
        h_rows = states_ptr + step * n + rows[:, None] * n
        gate_rows = gates_ptr + step * 2 * n + rows[:, None] * 2 * n
        d_rows = d_pre_ptr + step * 3 * n + rows[:, None] * 3 * n
        for j0 in range(0, n, BLOCK):  # through h_t = h + u ⊙ (c − h) and modReLU
            cj = j0 + tl.arange(0, BLOCK)
            col_ok = cj < n
            ok = row_ok[:, None] & col_ok[None, :]
            at = step * n + rows[:, None] * n + cj[None, :]
            dh = tl.load(grad_ptr + at, mask=ok, other=0.0) + tl.load(
                carry_rows + cj[None, :], mask=ok, other=0.0
            )
            u = tl.load(gate_rows + n + cj[None, :], mask=ok, other=0.0)
            c = tl.load(cand_ptr + at, mask=ok, other=0.0)
            h_prev = tl.load(h_rows + cj[None, :], mask=ok, other=0.0)
            dc = dh * u
            sign_c = _sign(c)
            d_z = dc * tl.abs(sign_c)
            partial = tl.load(d_bias_ptr + pid * n + cj, mask=col_ok, other=0.0)
            tl.store(d_bias_ptr + pid * n + cj, partial + tl.sum(d_z * sign_c, axis=0), mask=col_ok)
            tl.store(d_rows + cj[None, :], d_z, mask=ok)
            tl.store(d_rows + 2 * n + cj[None, :], dh * (c - h_prev) * u * (1.0 - u), mask=ok)
            tl.store(carry_rows + cj[None, :], dh - dc, mask=ok)
        tl.debug_barrier()
        for j0 in range(0, n, BLOCK):  # through r ⊙ h: ∂L/∂(r ⊙ h) = ∂L/∂z U_cᵀ
            cj = j0 + tl.arange(0, BLOCK)
            col_ok = cj < n
            ok = row_ok[:, None] & col_ok[None, :]
            zero = tl.zeros((BLOCK_B, BLOCK), tl.float32)
            d_rh = _dot_tiles(zero, d_rows, row_ok, m_c_ptr + cj[None, :] * n, 1, col_ok, n, BLOCK)
            r = tl.load(gate_rows + cj[None, :], mask=ok, other=0.0)
            h_prev = tl.load(h_rows + cj[None, :], mask=ok, other=0.0)
            tl.store(d_rows + n + cj[None, :], d_rh * h_prev * r * (1.0 - r), mask=ok)
            direct = tl.load(carry_rows + cj[None, :], mask=ok, other=0.0)
            tl.store(carry_rows + cj[None, :], direct + d_rh * r, mask=ok)
        tl.debug_barrier()
        for j0 in range(0, n, BLOCK):  # through the gates: ∂L/∂[r | u] pre-activations [U_r | U_u]ᵀ
            cj = j0 + tl.arange(0, BLOCK)
            col_ok = cj < n
            ok = row_ok[:, None] & col_ok[None, :]
            acc = tl.load(carry_rows + cj[None, :], mask=ok, other=0.0)
            acc = _dot_tiles(acc, d_rows + n, row_ok, m_ru_ptr + cj[None, :] * 2 * n, 1, col_ok, n, BLOCK)
            acc = _dot_tiles(
                acc, d_rows + 2 * n, row_ok, m_ru_ptr + cj[None, :] * 2 * n + n, 1, col_ok, n, BLOCK
            )
            tl.store(carry_rows + cj[None, :], acc, mask=ok)
        tl.debug_barrier()


def _grid(B: int) -> tuple[int]:
    return (triton.cdiv(B, BLOCK_B),)


def _states(h0: torch.Tensor, T: int) -> torch.Tensor:
    states = h0.new_empty(T + 1, *h0.shape)
    states[0] = h0
    return states


class _ResetAfterScan(torch.autograd.Function):
    """`gated.reset_after_scan`, fused; the modReLU recurrence is the case without gates."""

    @staticmethod
    def forward(ctx, projected, h0, M, bias, eps, reset, update, block):  # type: ignore[override]
        projected, M = projected.contiguous(), M.contiguous()
        T, B, W = projected.shape
        n = h0.shape[1]
        code = UPDATE_CODES[update]
        save = any(ctx.needs_input_grad[:4]) and (reset or code != 0)
        states = _states(h0, T)
        hm = torch.empty_like(projected) if save else projected.new_empty(1)
        threshold = (bias + eps).contiguous()
        _reset_after_forward[_grid(B)](
            projected, M, threshold, states, hm, T, B, n, W,
            RESET=reset, UPDATE=code, SAVE=save, BLOCK_B=BLOCK_B, BLOCK=block, num_warps=warps(block),
        )  # fmt: skip
        ctx.save_for_backward(projected, M, threshold, states, hm)
        ctx.reset, ctx.code, ctx.block = reset, code, block
        return states[1:], states[T].clone()

    @staticmethod
    def backward(ctx, grad_outputs, grad_last):  # type: ignore[override]
        projected, M, threshold, states, hm = ctx.saved_tensors
        T, B, W = projected.shape
        n = states.shape[2]
        carry = grad_last.contiguous().clone()
        d_hm = torch.empty_like(projected)
        d_xc = projected.new_empty(T, B, n) if ctx.reset else projected.new_empty(1)
        d_bias = projected.new_zeros(_grid(B)[0], n)
        _reset_after_backward[_grid(B)](
            projected, M, threshold, states, hm, grad_outputs.contiguous(), carry, d_hm, d_xc, d_bias,
            T, B, n, W, RESET=ctx.reset, UPDATE=ctx.code, BLOCK_B=BLOCK_B, BLOCK=ctx.block,
            num_warps=warps(ctx.block),
        )  # fmt: skip
        d_M = states[:-1].reshape(-1, n).T @ d_hm.reshape(-1, W)  # one GEMM over all steps
        d_projected = torch.cat([d_xc, d_hm[..., n:]], dim=-1) if ctx.reset else d_hm
        return d_projected, carry, d_M, d_bias.sum(0), None, None, None, None


class _ResetBeforeScan(torch.autograd.Function):
    """`gated.reset_before_scan`, fused."""

    @staticmethod
    def forward(ctx, projected, h0, M_ru, M_c, bias, eps, block):  # type: ignore[override]
        projected, M_ru, M_c = projected.contiguous(), M_ru.contiguous(), M_c.contiguous()
        T, B, _ = projected.shape
        n = h0.shape[1]
        save = any(ctx.needs_input_grad[:5])
        kept = T if save else 1  # without a backward, one step's scratch is enough
        states = _states(h0, T)
        gates = projected.new_empty(kept, B, 2 * n)
        rh = projected.new_empty(kept, B, n)
        cand = projected.new_empty(kept, B, n)
        threshold = (bias + eps).contiguous()
        _reset_before_forward[_grid(B)](
            projected, M_ru, M_c, threshold, states, gates, rh, cand, B * n if save else 0, T, B, n,
            BLOCK_B=BLOCK_B, BLOCK=block, num_warps=warps(block),
        )  # fmt: skip
        ctx.save_for_backward(M_ru, M_c, states, gates, rh, cand)
        ctx.block = block
        return states[1:], states[T].clone()

    @staticmethod
    def backward(ctx, grad_outputs, grad_last):  # type: ignore[override]
        M_ru, M_c, states, gates, rh, cand = ctx.saved_tensors
        T, B, n = rh.shape
        carry = grad_last.contiguous().clone()
        d_pre = states.new_empty(T, B, 3 * n)
        d_bias = states.new_zeros(_grid(B)[0], n)
        _reset_before_backward[_grid(B)](
            M_ru, M_c, states, gates, cand, grad_outputs.contiguous(), carry, d_pre, d_bias, T, B, n,
            BLOCK_B=BLOCK_B, BLOCK=ctx.block, num_warps=warps(ctx.block),
        )  # fmt: skip
        d_M_ru = states[:-1].reshape(-1, n).T @ d_pre[..., n:].reshape(-1, 2 * n)
        d_M_c = rh.reshape(-1, n).T @ d_pre[..., :n].reshape(-1, n)
        return d_pre, carry, d_M_ru, d_M_c, d_bias.sum(0), None, None


def reset_after_scan(
    projected: torch.Tensor,
    h0: torch.Tensor,
    M: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
    reset: bool,
    update: UpdateGate,
    block: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused `gated.reset_after_scan`; with `reset=False, update=None` the modReLU recurrence
    h_t = modReLU(x_t + h_{t−1} M) of EURNN and scoRNN."""
    return _ResetAfterScan.apply(projected, h0, M, bias, eps, reset, update, block or tile_width(h0.shape[1]))


def reset_before_scan(
    projected: torch.Tensor,
    h0: torch.Tensor,
    M_ru: torch.Tensor,
    M_c: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
    block: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused `gated.reset_before_scan` (NC-GRU eq. 19)."""
    return _ResetBeforeScan.apply(projected, h0, M_ru, M_c, bias, eps, block or tile_width(h0.shape[1]))

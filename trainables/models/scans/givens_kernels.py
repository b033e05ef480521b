"""The Givens matrix M (h @ M = U h, `GivensRotations.matrix`) and its angle gradient as Triton
kernels: one launch builds M from the angles, two map dL/dM to dL/dθ (`givens_matrix` launches them).

Row i of M is e_i rotated through the layers, and a layer acts on the columns of every row alike,
so a program owns blocks of M's rows and needs nothing from another program. Layer l takes
h'_j = h_j c_j + h_p s_j, p the partner of j, c_j = cos θ_k and s_j = ∓sin θ_k for the pair's
lower and upper index (`GivensRotations.coefficients`); the kernels read θ and the index tables
themselves, so no table is built before the launch.

The backward runs the layers in reverse from the saved M: a layer is a rotation, so the rows
before it are the rows after it rotated back (h = h' c − h'_p s), and memory stays n² whatever the
number of layers. For the pair (p, q) of angle θ, ∂L/∂θ = Σ_rows (D_q H'_p − D_p H'_q), H' the rows
after the layer and D their gradient: each program writes its rows' share per layer and index, and
a second launch adds the shares in program order, so the gradient is the same on every run.
"""

from __future__ import annotations

import triton
import triton.language as tl

from trainables.models.scans.kernel_parts import exchange

RUNTIME = ["n", "n_angles", "layers"]  # not specialized: one binary for any size and capacity


@triton.jit
def layer_coefficients(angles_ptr, partner_ptr, cos_index_ptr, sin_index_ptr, layer, n, n_angles, full):
    """c, s and the partner of every index of `layer`, and whether it is paired: an unpaired index
    reads θ = 0, so c = 1 and s = 0 and it keeps its value."""
    ok = full < n
    at = layer * n + full
    k = tl.load(cos_index_ptr + at, mask=ok, other=n_angles)
    paired = k < n_angles
    theta = tl.load(angles_ptr + k, mask=paired, other=0.0)
    # sin_index points at +sin θ_k (k) for the upper index, −sin θ_k (n_angles + k) for the lower
    sign = tl.where(tl.load(sin_index_ptr + at, mask=ok, other=0) == k, 1.0, -1.0)
    partner = tl.where(ok, tl.load(partner_ptr + at, mask=ok, other=0), full)
    return tl.cos(theta), sign * tl.sin(theta), sign, partner, paired


@triton.jit(do_not_specialize=RUNTIME)
def givens_matrix_forward(
    angles_ptr,  # (n_angles,) θ
    partner_ptr,  # (layers, n) the index each index is paired with (itself where unpaired)
    cos_index_ptr,  # (layers, n) the angle rotating each index, n_angles where unpaired
    sin_index_ptr,  # (layers, n) k for +sin θ_k, n_angles + k for −sin θ_k, 2·n_angles where unpaired
    m_ptr,  # (n, n) M, written
    scratch_ptr,  # (programs · ROWS, BLOCK_N) partner exchange with IN_MEMORY
    n,
    n_angles,
    layers,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    IN_MEMORY: tl.constexpr,
):
    """Every ROWS-row block of M this program owns: the identity's rows through every layer in order."""
    pid, programs = tl.program_id(0), tl.num_programs(0)
    full = tl.arange(0, BLOCK_N)
    scratch = scratch_ptr + (pid * ROWS + tl.arange(0, ROWS))[:, None] * BLOCK_N
    for block in range(pid, tl.cdiv(n, ROWS), programs):
        rows = block * ROWS + tl.arange(0, ROWS)
        h = tl.where(rows[:, None] == full[None, :], 1.0, 0.0).to(m_ptr.dtype.element_ty)
        for layer in range(layers):
            c, s, _, partner, _ = layer_coefficients(
                angles_ptr, partner_ptr, cos_index_ptr, sin_index_ptr, layer, n, n_angles, full
            )
            h = h * c[None, :] + exchange(h, partner, scratch, full, IN_MEMORY) * s[None, :]
        mask = (rows < n)[:, None] & (full < n)[None, :]
        tl.store(m_ptr + rows[:, None] * n + full[None, :], h, mask=mask)


@triton.jit(do_not_specialize=RUNTIME)
def givens_matrix_backward(
    angles_ptr,
    partner_ptr,
    cos_index_ptr,
    sin_index_ptr,
    m_ptr,  # (n, n) M as the forward built it
    grad_ptr,  # (n, n) dL/dM
    share_ptr,  # (programs, layers, n) each program's share of every index's term of dL/dθ, written
    scratch_ptr,
    n,
    n_angles,
    layers,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    IN_MEMORY: tl.constexpr,
):
    """share[program, l, j] = ±Σ D_j H'_p over the program's rows (+ at a pair's upper index j,
    − at its lower), H' the rows after layer l, D their gradient; the layers undone one by one."""
    pid, programs = tl.program_id(0), tl.num_programs(0)
    full = tl.arange(0, BLOCK_N)
    ok = full < n
    share = share_ptr + pid.to(tl.int64) * layers * n
    scratch = scratch_ptr + (pid * ROWS + tl.arange(0, ROWS))[:, None] * BLOCK_N
    for block in range(pid, tl.cdiv(n, ROWS), programs):
        later = tl.full([BLOCK_N], block, tl.int32) > pid  # not the program's first block
        rows = block * ROWS + tl.arange(0, ROWS)
        tile = rows[:, None] * n + full[None, :]
        mask = (rows < n)[:, None] & ok[None, :]
        h = tl.load(m_ptr + tile, mask=mask, other=0.0)
        d = tl.load(grad_ptr + tile, mask=mask, other=0.0)
        for i in range(layers):
            layer = layers - 1 - i
            c, s, sign, partner, paired = layer_coefficients(
                angles_ptr, partner_ptr, cos_index_ptr, sin_index_ptr, layer, n, n_angles, full
            )
            h_partner = exchange(h, partner, scratch, full, IN_MEMORY)
            term = tl.where(paired, sign * tl.sum(d * h_partner, axis=0), 0.0)
            # the program's earlier blocks added theirs before the barrier that ended their turn
            before = tl.load(share + layer * n + full, mask=ok & later, other=0.0)
            tl.store(share + layer * n + full, before + term, mask=ok)
            h = h * c[None, :] - h_partner * s[None, :]  # the rows before the layer: s_p = −s_j
            d = d * c[None, :] - exchange(d, partner, scratch, full, IN_MEMORY) * s[None, :]
        tl.debug_barrier()


@triton.jit(do_not_specialize=[*RUNTIME, "programs"])
def givens_angle_gradient(
    share_ptr,  # (programs, layers, n) from `givens_matrix_backward`
    partner_ptr,
    cos_index_ptr,
    grad_ptr,  # (n_angles,) dL/dθ, written
    n,
    n_angles,
    layers,
    programs,
    BLOCK: tl.constexpr,
):
    """dL/dθ_k: the shares of both indices of pair k, added over the programs in order; each angle
    is written once, from its pair's lower index."""
    at = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # flat (layer, index) positions
    ok = at < layers * n
    j = at % n
    partner = tl.load(partner_ptr + at, mask=ok, other=0)
    k = tl.load(cos_index_ptr + at, mask=ok, other=n_angles)
    lower = ok & (k < n_angles) & (j < partner)
    mate = at - j + partner
    total = tl.zeros([BLOCK], dtype=grad_ptr.dtype.element_ty)
    share = share_ptr
    for _ in range(programs):
        total += tl.load(share + at, mask=lower, other=0.0) + tl.load(share + mate, mask=lower, other=0.0)
        share += layers * n
    tl.store(grad_ptr + k, total, mask=lower)

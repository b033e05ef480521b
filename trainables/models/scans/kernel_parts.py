"""Triton building blocks the fused scans share: modReLU, matrix slices, Givens layers, a barrier.

Matrices are float32 in the row convention of `loop` (a step computes h @ M). A program reads
the slice of a matrix it needs as one (block_n × block_k) tile: columns `units` of every row for
the forward product, or the same entries transposed for the backward one.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def program_tile(B, n, ROWS: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """This program's batch rows and hidden units (axis 1 and 0 of the grid), every unit, and the
    masks of its own (rows × units) and of whole rows (rows × every unit)."""
    rows = tl.program_id(1) * ROWS + tl.arange(0, ROWS)
    units = tl.program_id(0) * BLOCK_K + tl.arange(0, BLOCK_K)
    full = tl.arange(0, BLOCK_N)
    row_ok = rows < B
    own = row_ok[:, None] & (units < n)[None, :]
    whole = row_ok[:, None] & (full < n)[None, :]
    return rows, units, full, row_ok, own, whole


@triton.jit
def modrelu(z, b):
    """sign(z) · ReLU(|z| + b) (GORU eq. 13 / NC-GRU eq. 20)."""
    magnitude = tl.abs(z) + b
    active = tl.where(magnitude > 0, sign(z), 0.0)
    return active * magnitude


@triton.jit
def sign(v):
    return tl.where(v > 0, 1.0, tl.where(v < 0, -1.0, 0.0))


@triton.jit
def columns(m_ptr, ld, full, units, n):
    """M[:, units] as a (block_n, block_k) tile, zero outside n × n: the forward product h @ M[:, units]."""
    mask = (full < n)[:, None] & (units < n)[None, :]
    return tl.load(m_ptr + full[:, None] * ld + units[None, :], mask=mask, other=0.0)


@triton.jit
def columns_t(m_ptr, ld, full, units, n):
    """M[units, :]ᵀ as a (block_n, block_k) tile: the backward product d @ M[units, :]ᵀ."""
    mask = (full < n)[:, None] & (units < n)[None, :]
    return tl.load(m_ptr + units[None, :] * ld + full[:, None], mask=mask, other=0.0)


@triton.jit
def exchange(v, partner, scratch, full, IN_MEMORY: tl.constexpr):
    """v[:, partner]: by `tl.gather`, which keeps a row within one warp, or past the width where
    that costs more registers than a thread has (IN_MEMORY) through the program's own `scratch`
    rows (rows × block_n pointers), between CTA barriers."""
    if IN_MEMORY:
        tl.store(scratch + full[None, :], v)
        tl.debug_barrier()
        moved = tl.load(scratch + partner[None, :])
        tl.debug_barrier()
    else:
        moved = tl.gather(v, tl.broadcast_to(partner[None, :], v.shape), axis=1)
    return moved


@triton.jit
def rotate(h, cos_ptr, sin_ptr, partner_ptr, layers, n, full, scratch, BACKWARD: tl.constexpr, IN_MEMORY: tl.constexpr):  # fmt: skip
    """h @ U for U a product of Givens layers, applied layer by layer to the rows of `h`.

    Layer l: h'_j = h_j cos_lj + h_p sin_lj with p the partner of j (its own index where unpaired,
    with cos 1 and sin 0): `GivensRotations.rotate`. The backward, d @ Uᵀ, runs the layers in
    reverse with d'_j = d_j cos_lj + (d sin_l)_p, the transposed pair rotation.

    Partners are exchanged by `tl.gather`, which keeps a row within one warp; past 1024 units
    that costs more registers than a thread has, so IN_MEMORY exchanges them through the
    program's own `scratch` rows (rows × block_n pointers) instead, between CTA barriers.
    """
    ok = full < n
    for i in range(layers):
        layer = layers - 1 - i if BACKWARD else i
        at = layer * n + full
        c = tl.load(cos_ptr + at, mask=ok, other=1.0)[None, :]
        s = tl.load(sin_ptr + at, mask=ok, other=0.0)[None, :]
        partner = tl.where(ok, tl.load(partner_ptr + at, mask=ok, other=0), full)
        moved = exchange(h * s if BACKWARD else h, partner, scratch, full, IN_MEMORY)
        h = h * c + (moved if BACKWARD else moved * s)
    return h


@triton.jit
def streamed_dot(acc, a_rows, row_ok, m_ptr, ld, units, n, KC: tl.constexpr, TRANSPOSED: tl.constexpr, PRECISION: tl.constexpr):  # fmt: skip
    """acc + a[:, :n] @ M[:, units] (or @ M[units, :]ᵀ), the shared dimension in KC-wide chunks: a's
    rows read from L2 (other programs wrote them), M's from memory (L1 keeps a program's slice).
    An FMA `tl.dot` holds its whole shared dimension in each thread's registers, so chunks keep
    wide hidden sizes out of local memory."""
    for k0 in range(0, n, KC):
        k = k0 + tl.arange(0, KC)
        a = tl.load(
            a_rows + k[None, :], mask=row_ok[:, None] & (k < n)[None, :], other=0.0, cache_modifier=".cg"
        )
        m = columns_t(m_ptr, ld, k, units, n) if TRANSPOSED else columns(m_ptr, ld, k, units, n)
        acc += tl.dot(a, m, input_precision=PRECISION)
    return acc


@triton.jit
def grid_sync(counter_ptr, flag_ptr, target, SPIN_LIMIT: tl.constexpr):
    """Wait until `target` arrivals are counted: the programs sharing this counter have all
    stored what the next phase reads (release/acquire at GPU scope, as Inductor's grid barrier).

    The counter only grows, so phase k of a group of p programs waits for (k + 1)·p. After
    SPIN_LIMIT polls the program sets the stall flag and goes on; every waiting program sees the
    flag and stops waiting, so a scan whose programs are not all co-resident ends in bounded time
    and the host raises instead of hanging.
    """
    tl.debug_barrier()  # every thread's stores issued before the arrival is released
    tl.atomic_add(counter_ptr, 1, sem="release", scope="gpu")
    seen = tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu")
    stalled = tl.load(flag_ptr, volatile=True)
    spins = 0
    while (seen < target) & (stalled == 0):
        seen = tl.atomic_add(counter_ptr, 0, sem="acquire", scope="gpu")
        spins += 1
        if spins > SPIN_LIMIT:
            tl.atomic_xchg(flag_ptr, 1)
        stalled = tl.load(flag_ptr, volatile=True)
    tl.debug_barrier()

"""The scaled Cayley matrix W = B (I − A) D as one Triton kernel (`cayley_matrix` launches it).

The ATen build makes A from its upper triangle (zeros, a scatter, A = X − Xᵀ), then I − A, the
product and the scaling, each a launch. Here a program computes one tile of W and generates the
tiles of I − A it multiplies by from the upper triangle as it reads them, so A never exists in
memory.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def identity_minus_skew(upper_ptr, k, j, n):
    """(I − A)[k, j] for A = X − Xᵀ, X holding `upper` (row-major strict upper triangle) above the
    diagonal: 1 on it, −X[k, j] above, X[j, k] below, 0 outside n × n."""
    low, high = tl.minimum(k, j), tl.maximum(k, j)
    at = low * n - low * (low + 1) // 2 + (high - low - 1)  # position of (low, high) in triu order
    x = tl.load(upper_ptr + at, mask=(k != j) & (high < n), other=0.0)
    return tl.where(k == j, 1.0, tl.where(k < j, -x, x)).to(upper_ptr.dtype.element_ty)


@triton.jit(do_not_specialize=["n"])
def cayley_matrix_forward(
    upper_ptr,  # (n(n − 1)/2,) A's strict upper triangle, row-major
    inverse_ptr,  # (n, n) B ≈ (I + A)^{-1}, either layout (an LU's inverse comes column-major)
    d_ptr,  # (n,) the diagonal of D
    w_ptr,  # (n, n) W, written
    n,
    inverse_row_stride,
    inverse_col_stride,
    BLOCK: tl.constexpr,
    BLOCK_K: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """W[rows, cols] = Σ_k B[rows, k] (I − A)[k, cols] · d[cols] (NC-GRU paper eqs. 2 and 4)."""
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK, BLOCK], dtype=w_ptr.dtype.element_ty)
    for k0 in range(0, n, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        b = tl.load(
            inverse_ptr + rows[:, None] * inverse_row_stride + k[None, :] * inverse_col_stride,
            mask=(rows < n)[:, None] & (k < n)[None, :],
            other=0.0,
        )
        m = identity_minus_skew(upper_ptr, k[:, None], cols[None, :], n)
        acc += tl.dot(b, m, input_precision=PRECISION)
    d = tl.load(d_ptr + cols, mask=cols < n, other=0.0)
    tl.store(
        w_ptr + rows[:, None] * n + cols[None, :],
        acc * d[None, :],
        mask=(rows < n)[:, None] & (cols < n)[None, :],
    )

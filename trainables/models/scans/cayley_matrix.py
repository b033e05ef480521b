"""The scaled Cayley matrix W = B (I − A) D of `ScaledCayley` in one Triton launch
(`cayley_kernels`), where the ATen build takes seven. The ATen build stays the reference and the
CPU's path; the backward (NC-GRU paper eqs. 5–6) is the same either way.
"""

from __future__ import annotations

import torch

from trainables.models.scans import cayley_kernels
from trainables.models.scans.plan import cdiv

BLOCK = 32  # W's tile per program: at n = 128, 16 programs
# An IEEE `tl.dot` holds its shared dimension in each thread's registers: 16 keeps it at 128 on sm_90
BLOCK_K = 16


def cayley_matrix(upper: torch.Tensor, inverse: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """W = B (I − A) D with A skew from its strict upper triangle `upper`, B = `inverse`; products
    in IEEE float32 (or float64), as the ATen build's."""
    n = inverse.shape[0]
    W = inverse.new_empty(n, n)
    grid = (cdiv(n, BLOCK), cdiv(n, BLOCK))
    cayley_kernels.cayley_matrix_forward[grid](
        upper.contiguous(), inverse, d.contiguous(), W, n, *inverse.stride(),
        BLOCK=BLOCK, BLOCK_K=BLOCK_K, PRECISION="ieee",
    )  # fmt: skip
    return W

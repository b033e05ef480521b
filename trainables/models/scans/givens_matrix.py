"""The Givens matrix M of `GivensRotations.matrix` built and differentiated by Triton kernels
(`givens_kernels`): one launch forward, two backward, where the ATen build is dozens of small ops
each way, every one a launch. The ATen build (`GivensRotations.rotate` of the identity) is the
reference these are tested against, and the CPU's path.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trainables.models.scans import givens_kernels
from trainables.models.scans.plan import GATHER_WIDTH, GPU, H100, cdiv, gpu_of, next_power_of_2

# Elements of M one program holds per block of rows (the backward holds four such tiles).
TILE = 2048
REDUCE_BLOCK = 1024


@dataclass(frozen=True)
class GivensLaunch:
    """`programs` programs, each owning every `programs`-th block of `rows` rows of M; `in_memory`:
    partners are exchanged through scratch memory (rows wider than `tl.gather` handles well)."""

    rows: int
    block_n: int
    programs: int
    warps: int
    in_memory: bool


def plan_givens(n: int, gpu: GPU = H100) -> GivensLaunch:
    """Row blocks of about TILE elements, at most one program per SM: the backward's shares of
    the gradient take programs × layers × n memory, so programs are capped, not blocks. Blocks
    have two rows at least: a one-row tile of 2048 units spills registers on sm_90 where two do not."""
    block_n = next_power_of_2(n)
    rows = min(max(2, TILE // block_n), block_n)
    in_memory = block_n > GATHER_WIDTH
    programs = min(cdiv(n, rows), gpu.sms)
    return GivensLaunch(rows, block_n, programs, 8 if in_memory else 4, in_memory)


def _scratch(launch: GivensLaunch, like: torch.Tensor) -> torch.Tensor:
    if not launch.in_memory:
        return like.new_empty(1)
    return like.new_empty(launch.programs * launch.rows, launch.block_n)


def _options(launch: GivensLaunch) -> dict[str, object]:
    return dict(ROWS=launch.rows, BLOCK_N=launch.block_n, IN_MEMORY=launch.in_memory, num_warps=launch.warps)


class _GivensMatrix(torch.autograd.Function):
    @staticmethod
    def forward(ctx, angles, partner, cos_index, sin_index, launch):  # type: ignore[override]
        layers, n = partner.shape
        M = angles.new_empty(n, n)
        givens_kernels.givens_matrix_forward[(launch.programs,)](
            angles, partner, cos_index, sin_index, M, _scratch(launch, angles),
            n, angles.numel(), layers, **_options(launch),
        )  # fmt: skip
        ctx.save_for_backward(angles, partner, cos_index, sin_index, M)
        ctx.launch = launch
        return M

    @staticmethod
    def backward(ctx, grad_M):  # type: ignore[override]
        angles, partner, cos_index, sin_index, M = ctx.saved_tensors
        launch = ctx.launch
        layers, n = partner.shape
        shares = angles.new_empty(launch.programs, layers, n)
        givens_kernels.givens_matrix_backward[(launch.programs,)](
            angles, partner, cos_index, sin_index, M, grad_M.contiguous(), shares,
            _scratch(launch, angles), n, angles.numel(), layers, **_options(launch),
        )  # fmt: skip
        grad = torch.empty_like(angles)
        givens_kernels.givens_angle_gradient[(cdiv(layers * n, REDUCE_BLOCK),)](
            shares, partner, cos_index, grad, n, angles.numel(), layers, launch.programs, BLOCK=REDUCE_BLOCK
        )
        return grad, None, None, None, None


def givens_matrix(
    angles: torch.Tensor,
    partner: torch.Tensor,
    cos_index: torch.Tensor,
    sin_index: torch.Tensor,
    launch: GivensLaunch | None = None,
) -> torch.Tensor:
    """M with h @ M = U h from the angles and `GivensRotations`' index tables (layers, n),
    differentiable in the angles. `launch` fixes the programs (tests)."""
    launch = launch or plan_givens(partner.shape[1], gpu_of(angles.device))
    return _GivensMatrix.apply(angles.contiguous(), partner, cos_index, sin_index, launch)

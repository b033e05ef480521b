"""The Triton build of the Givens matrix and its angle gradient against the ATen build it replaces
(`GivensRotations.rotate` of the identity) and autograd through it: both layouts, hidden sizes
that are powers of two and not, one layer and several, float32 and float64, and launches that
split M's rows every way the plan can (several blocks per program, a ragged last block, the
partner exchange through memory).

Without a GPU the kernels run in Triton's interpreter on CPU tensors (`TRITON_INTERPRET=1`, set in
conftest); with `SWEEPER_TEST_DEVICE=cuda` the same tests run compiled.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
import torch

pytest.importorskip("triton", reason="the fused kernels need Triton (a test dependency)")

from trainables.models.eurnn import EURNN
from trainables.models.orthogonal import GivensRotations
from trainables.models.scans.givens_matrix import GivensLaunch, givens_matrix, plan_givens
from trainables.models.scans.plan import H100

DEVICE = torch.device(os.environ.get("SWEEPER_TEST_DEVICE", "cpu"))
TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-10}  # relative to the largest entry
# (n, layout, capacity): fft at powers of two, tunable at any n with one layer and several
CASES = [
    (6, "tunable", 1),
    (6, "tunable", 4),
    (8, "fft", 1),
    (12, "tunable", 3),
    (32, "fft", 1),
    (32, "tunable", 2),
]


def assert_near(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype, what: str) -> None:
    tolerance = TOLERANCE[dtype]
    torch.testing.assert_close(
        got, want, rtol=tolerance, atol=tolerance * float(want.abs().max()), msg=lambda m: f"{what}: {m}"
    )


def rotations(n: int, layout: str, capacity: int, dtype: torch.dtype, seed: int = 0) -> GivensRotations:
    torch.manual_seed(seed)
    return GivensRotations(n, layout, capacity).to(DEVICE, dtype)


def aten_and_kernel(r: GivensRotations, launch: GivensLaunch | None = None):  # type: ignore[no-untyped-def]
    """M and dL/dθ for L = ⟨G, M⟩, G random, from the ATen build and from the kernels."""
    generator = torch.Generator().manual_seed(1)
    G = torch.randn(r.n, r.n, generator=generator, dtype=r.angles.dtype).to(DEVICE)
    results = []
    for build in (lambda: r.rotate(torch.eye(r.n, dtype=r.angles.dtype, device=DEVICE)),
                  lambda: givens_matrix(r.angles, r.partner, r.cos_index, r.sin_index, launch)):  # fmt: skip
        M = build()
        (grad,) = torch.autograd.grad((M * G).sum(), r.angles)
        results.append((M.detach(), grad))
    return results


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize(("n", "layout", "capacity"), CASES)
def test_matrix_and_angle_gradient_equal_the_aten_build(n: int, layout: str, capacity: int, dtype: torch.dtype) -> None:  # fmt: skip
    r = rotations(n, layout, capacity, dtype)
    (M_aten, grad_aten), (M_kernel, grad_kernel) = aten_and_kernel(r)
    assert_near(M_kernel, M_aten, dtype, "M")
    assert_near(grad_kernel, grad_aten, dtype, "dL/dθ")


LAUNCHES = {  # at n = 12: how the rows of M are split among programs
    "blocks of 2, three per program": dict(rows=2, programs=2),
    "blocks of 8, the last ragged": dict(rows=8, programs=2),
    "one program, every block": dict(rows=4, programs=1),
    "partners through memory": dict(rows=4, programs=2, in_memory=True),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("split", LAUNCHES)
def test_every_split_of_the_rows_gives_the_same_matrix_and_gradient(split: str, dtype: torch.dtype) -> None:
    r = rotations(12, "tunable", 5, dtype, seed=2)
    launch = replace(plan_givens(12), **LAUNCHES[split])
    (M_aten, grad_aten), (M_kernel, grad_kernel) = aten_and_kernel(r, launch)
    assert_near(M_kernel, M_aten, dtype, "M")
    assert_near(grad_kernel, grad_aten, dtype, "dL/dθ")


def test_the_angle_gradient_is_the_same_on_every_run() -> None:
    r = rotations(16, "fft", 1, torch.float32)
    launch = replace(plan_givens(16), rows=4, programs=3)
    first, second = (aten_and_kernel(r, launch)[1][1] for _ in range(2))
    assert torch.equal(first, second)


def test_the_plan_caps_programs_and_exchanges_wide_rows_through_memory() -> None:
    narrow, wide = plan_givens(128, H100), plan_givens(2048, H100)
    assert (narrow.rows, narrow.block_n, narrow.programs, narrow.in_memory) == (16, 128, 8, False)
    assert (wide.rows, wide.block_n, wide.programs, wide.in_memory) == (2, 2048, H100.sms, True)


def test_kernel_fused_builds_through_the_kernels_and_auto_off_cuda_is_aten() -> None:
    r = rotations(8, "tunable", 3, torch.float32)
    default = r.matrix()
    r.kernel = "fused"
    fused = r.matrix()
    assert type(fused.grad_fn).__name__ == "_GivensMatrixBackward"
    if DEVICE.type == "cuda":
        assert type(default.grad_fn).__name__ == "_GivensMatrixBackward"
    else:  # the CPU's numbers are the ATen build's, bit for bit
        assert torch.equal(default, r.rotate(torch.eye(8)))
    assert_near(fused.detach(), default.detach(), torch.float32, "M")


def test_a_model_trains_the_same_through_the_kernels() -> None:
    """EURNN's loss gradient reaches the angles through the kernels as through the ATen build."""
    torch.manual_seed(0)
    model = EURNN(3, 8, layout="fft", kernel="loop").to(DEVICE, torch.float64)
    x = torch.randn(4, 2, 3, dtype=torch.float64, device=DEVICE)
    grads = []
    for kernel in ("loop", "fused"):
        model.rotations.kernel = kernel
        model.zero_grad()
        model(x)[0].square().sum().backward()
        grads.append(model.rotations.angles.grad.clone())
    assert_near(grads[1], grads[0], torch.float64, "dL/dθ through EURNN")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the default path differs only on CUDA")
def test_on_cuda_matrix_takes_the_kernels_by_default() -> None:
    r = GivensRotations(64, "fft", 1).cuda()
    assert type(r.matrix().grad_fn).__name__ == "_GivensMatrixBackward"

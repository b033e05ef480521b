"""The Triton build of the scaled Cayley matrix against the ATen build it replaces: U and the
gradient on A's upper triangle, for scoRNN's exact inverse (column-major, from the LU) and NC-GRU's
maintained one (row-major, from the series), sizes inside one tile and across a ragged edge,
float32 and float64.

Without a GPU the kernel runs in Triton's interpreter on CPU tensors (`TRITON_INTERPRET=1`, set in
conftest); with `SWEEPER_TEST_DEVICE=cuda` the same tests run compiled.
"""

from __future__ import annotations

import os

import pytest
import torch

pytest.importorskip("triton", reason="the fused kernels need Triton (a test dependency)")

from trainables.models.orthogonal import ScaledCayley

DEVICE = torch.device(os.environ.get("SWEEPER_TEST_DEVICE", "cpu"))
TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-10}  # relative to the largest entry


def assert_near(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype, what: str) -> None:
    tolerance = TOLERANCE[dtype]
    torch.testing.assert_close(
        got, want, rtol=tolerance, atol=tolerance * float(want.abs().max()), msg=lambda m: f"{what}: {m}"
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("neumann_order", [None, 2], ids=["exact", "maintained"])
@pytest.mark.parametrize(("n", "rho"), [(5, 0), (16, 3), (37, 5)])
def test_cayley_matrix_and_gradient_equal_the_aten_build(n: int, rho: int, neumann_order: int | None, dtype: torch.dtype) -> None:  # fmt: skip
    torch.manual_seed(0)
    cayley = ScaledCayley(n, rho, neumann_order).to(DEVICE, dtype)
    with torch.no_grad():  # away from the initial block-diagonal A, so every entry of the product counts
        cayley.upper.add_(0.3 * torch.randn_like(cayley.upper))
    if neumann_order is not None:  # a series step: B row-major, where the LU's is column-major
        cayley.after_optimizer_step()
    G = torch.randn(n, n, dtype=dtype, device=DEVICE)
    results = []
    for kernel in ("loop", "fused"):
        cayley.kernel = kernel
        U = cayley()
        (grad,) = torch.autograd.grad((U * G).sum(), cayley.upper)
        results.append((U.detach(), grad))
    (U_aten, grad_aten), (U_kernel, grad_kernel) = results
    assert_near(U_kernel, U_aten, dtype, "U")
    assert_near(grad_kernel, grad_aten, dtype, "dL/dA's upper triangle")


@pytest.mark.skipif(DEVICE.type == "cuda", reason="on CUDA the default is the kernel")
def test_the_default_on_a_cpu_is_bit_for_bit_the_aten_build() -> None:
    cayley = ScaledCayley(6, 1)
    A = cayley.skew().detach()
    eye = torch.eye(6)
    assert torch.equal(cayley(), (torch.linalg.inv(eye + A) @ (eye - A)) * cayley.d)

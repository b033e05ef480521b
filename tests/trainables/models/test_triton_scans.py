"""The fused Triton scans against the loop implementation they replace, forward and every gradient.

Without a GPU the kernels run in Triton's interpreter on CPU tensors (`TRITON_INTERPRET=1`, set in
conftest); with `SWEEPER_TEST_DEVICE=cuda` the same tests run compiled, on the GPU. The reference
is the loop in float64; the kernels compute in float32.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("triton", reason="the fused kernels need Triton (a test dependency)")

from trainables.catalog import load_all
from trainables.models import gated, triton_scans
from trainables.registry import MODELS

load_all()
DEVICE = torch.device(os.environ.get("SWEEPER_TEST_DEVICE", "cpu"))
AFTER_CELLS = [  # (reset, update): EURNN/scoRNN, GORU, its two ablations, NC-GRU `after`
    (False, None),
    (True, "keeps"),
    (False, "keeps"),
    (True, None),
    (True, "admits"),
]
# (T, B, n, tile): odd batch sizes (one program, and two with a ragged one), hidden sizes that
# are no power of two, T = 1, and hidden sizes split over several tiles
SHAPES = [(4, 3, 5, None), (3, 17, 20, None), (1, 2, 7, None), (5, 5, 37, 16)]


def assert_close(fused: torch.Tensor, reference: torch.Tensor, what: str) -> None:
    torch.testing.assert_close(
        fused.double().cpu(), reference, rtol=1e-4, atol=1e-5, msg=lambda m: f"{what}: {m}"
    )


def run(
    scan, inputs: list[torch.Tensor], dtype: torch.dtype, grads: tuple[torch.Tensor, torch.Tensor], *args
):
    """Outputs, last state and the gradients of every input under ⟨grads, (outputs, last)⟩."""
    leaves = [t.to(DEVICE, dtype).clone().requires_grad_() for t in inputs]
    outputs, last = scan(*leaves, *args)
    g_out, g_last = (g.to(DEVICE, dtype) for g in grads)
    ((outputs * g_out).sum() + (last * g_last).sum()).backward()
    return [outputs, last, *(leaf.grad for leaf in leaves)]


def random_inputs(T: int, B: int, n: int, *widths: int, seed: int = 0) -> list[torch.Tensor]:
    """Projected inputs, a carried-in state, recurrent matrices of the given widths, a modReLU bias."""
    generator = torch.Generator().manual_seed(seed)

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        return torch.randn(*shape, dtype=torch.float64, generator=generator) * scale

    projected = randn(T, B, widths[0] + n)
    matrices = [randn(n, w, scale=n**-0.5) for w in widths[1:]]
    return [projected, randn(B, n, scale=0.5), *matrices, randn(n, scale=0.3)]


def cotangents(T: int, B: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return torch.randn(T, B, n, dtype=torch.float64, generator=generator), torch.randn(
        B, n, dtype=torch.float64, generator=generator
    )


@pytest.mark.parametrize(("reset", "update"), AFTER_CELLS)
@pytest.mark.parametrize(("T", "B", "n", "tile"), SHAPES)
@pytest.mark.parametrize("eps", [0.0, 1e-2])
def test_reset_after_scan_equals_the_loop(reset, update, T, B, n, tile, eps) -> None:
    width = n * (1 + reset + (update is not None))
    projected, h0, M, bias = random_inputs(T, B, n, width - n, width)
    grads = cotangents(T, B, n)
    names = ("outputs", "last state", "∂projected", "∂h0", "∂M", "∂bias")
    reference = run(
        gated.reset_after_scan, [projected, h0, M, bias], torch.float64, grads, eps, reset, update
    )
    fused = run(
        lambda *a: triton_scans.reset_after_scan(*a, block=tile),
        [projected, h0, M, bias],
        torch.float32,
        grads,
        eps,
        reset,
        update,
    )
    for name, got, want in zip(names, fused, reference, strict=True):
        assert_close(got, want.detach().cpu(), name)


@pytest.mark.parametrize(("T", "B", "n", "tile"), SHAPES)
@pytest.mark.parametrize("eps", [0.0, 1e-2])
def test_reset_before_scan_equals_the_loop(T, B, n, tile, eps) -> None:
    projected, h0, M_ru, M_c, bias = random_inputs(T, B, n, 2 * n, 2 * n, n)
    grads = cotangents(T, B, n)
    names = ("outputs", "last state", "∂projected", "∂h0", "∂M_ru", "∂M_c", "∂bias")
    inputs = [projected, h0, M_ru, M_c, bias]
    reference = run(gated.reset_before_scan, inputs, torch.float64, grads, eps)
    fused = run(lambda *a: triton_scans.reset_before_scan(*a, block=tile), inputs, torch.float32, grads, eps)
    for name, got, want in zip(names, fused, reference, strict=True):
        assert_close(got, want.detach().cpu(), name)


def test_without_gradients_the_scans_keep_no_history() -> None:
    """Inference keeps one step of scratch (reset before) and saves nothing (reset after)."""
    projected, h0, M_ru, M_c, bias = (t.float().to(DEVICE) for t in random_inputs(6, 3, 9, 18, 18, 9))
    with torch.no_grad():
        outputs, last = triton_scans.reset_before_scan(projected, h0, M_ru, M_c, bias, 0.0)
        reference, _ = gated.reset_before_scan(projected, h0, M_ru, M_c, bias, 0.0)
    assert not outputs.requires_grad and torch.equal(outputs[-1], last)
    assert_close(outputs, reference.double().cpu(), "outputs")
    projected, h0, M, bias = (t.float().to(DEVICE) for t in random_inputs(6, 3, 9, 18, 27))
    with torch.no_grad():
        outputs, _ = triton_scans.reset_after_scan(projected, h0, M, bias, 0.0, True, "keeps")
        reference, _ = gated.reset_after_scan(projected, h0, M, bias, 0.0, True, "keeps")
    assert_close(outputs, reference.double().cpu(), "outputs")


def test_tiles_follow_the_hidden_size() -> None:
    assert [triton_scans.tile_width(n) for n in (5, 16, 20, 32, 100, 2048)] == [16, 16, 32, 32, 32, 32]
    assert triton_scans.tiling(128) == "fused, 4 tiles of 32"
    assert triton_scans.tiling(20) == "fused, 1 tile of 32"


MODEL_CASES = [
    ("eurnn", {}),
    ("eurnn", {"layout": "tunable", "capacity": 4, "modrelu_eps": 1e-2}),
    ("scornn", {"rho": 3}),
    ("goru", {}),
    ("goru_noreset", {}),
    ("goru_noupdate", {}),
    ("ncgru", {}),
    ("ncgru", {"reset": "after", "orthogonal": "ruc"}),
    ("ncgru", {"orthogonal": "c"}),
]


@pytest.mark.parametrize(("name", "hparams"), MODEL_CASES, ids=lambda v: str(v))
def test_models_with_fused_kernels_equal_their_loops(name: str, hparams: dict) -> None:
    """Same weights: outputs, carried state, every parameter's gradient and the diagnostics."""
    results = {}
    for kernel in ("loop", "fused"):
        torch.manual_seed(0)
        model = MODELS.get(name).create(3, 10, kernel=kernel, **hparams).to(DEVICE)
        assert model.scan_kernel(torch.empty(0, device=DEVICE)) == kernel
        x = torch.randn(5, 3, 3).to(DEVICE)
        state = torch.randn(3, 10).to(DEVICE) * 0.5
        out, last = model(x, state)
        (out.square().sum() + last.sum()).backward()
        grads = {k: p.grad.detach().cpu() for k, p in model.named_parameters()}
        results[kernel] = (out.detach().cpu(), last.detach().cpu(), grads, model.diagnostics())
    (out, last, grads, diagnostics), (f_out, f_last, f_grads, f_diagnostics) = (
        results["loop"],
        results["fused"],
    )
    torch.testing.assert_close(f_out, out, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(f_last, last, rtol=1e-4, atol=1e-5)
    assert grads.keys() == f_grads.keys()
    for key in grads:
        torch.testing.assert_close(
            f_grads[key], grads[key], rtol=1e-4, atol=1e-5, msg=lambda m, k=key: f"{k}: {m}"
        )
    assert f_diagnostics["ortho_error"] == pytest.approx(diagnostics["ortho_error"], abs=1e-6)
    assert f_diagnostics["orth_grad_norm"] == pytest.approx(diagnostics["orth_grad_norm"], rel=1e-4)


@pytest.mark.slow
def test_every_variant_compiles_for_hopper_within_the_register_file() -> None:
    """Built for sm_90 with Triton's own compiler and ptxas, no GPU needed. A few bytes of
    spill are L1 traffic; hundreds would mean a tile too wide for the register file."""
    pytest.importorskip("triton.backends.nvidia.compiler", reason="Triton without its CUDA backend")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    built = subprocess.run(
        [sys.executable, "-m", "tests.trainables.models.hopper_build"],
        capture_output=True,
        text=True,
        env={**env, "TRITON_DEFAULT_FP_FUSION": "1"},
        cwd=Path(__file__).parents[3],
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    report = json.loads(built.stdout)
    assert len(report) == 2 * 17
    for variant, line in report.items():
        spilled = int(re.search(r"(\d+) bytes spill stores", line).group(1))
        assert spilled <= 64, f"{variant}: {line}"

"""The fused Triton scans against the loop implementation they replace, forward and every gradient,
on every path (givens, rows, split in one launch and one step per launch, matrices on chip or
from L2) and every precision.

Without a GPU the kernels run in Triton's interpreter on CPU tensors (`TRITON_INTERPRET=1`, set in
conftest); with `SWEEPER_TEST_DEVICE=cuda` the same tests run compiled, on the GPU, where a split
plan runs all its steps in one launch with its barrier. The reference is the loop in float64;
the kernels compute in float32.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
import torch

pytest.importorskip("triton", reason="the fused kernels need Triton (a test dependency)")

from trainables.catalog import load_all
from trainables.models.orthogonal import GivensRotations
from trainables.models.scans import fused, loop, self_check
from trainables.models.scans.barrier import GridBarrierTimeout, raise_if_stalled
from trainables.models.scans.plan import (
    GPU,
    H100,
    PRECISIONS,
    ScanPlan,
    plan_reset_after,
    plan_reset_before,
)
from trainables.registry import MODELS

load_all()
DEVICE = torch.device(os.environ.get("SWEEPER_TEST_DEVICE", "cpu"))
ON_GPU = DEVICE.type == "cuda"
AFTER_CELLS = [  # (reset, update): EURNN/scoRNN, GORU, its two ablations, NC-GRU `after`
    (False, None),
    (True, "keeps"),
    (False, "keeps"),
    (True, None),
    (True, "admits"),
]
# (T, B, n): odd batch sizes (one program's rows, and a ragged last block), hidden sizes that are
# no power of two and split into several slices, T = 1
SHAPES = [(4, 3, 5), (3, 17, 20), (1, 2, 7), (3, 5, 37)]
LARGE = {(3, 17, 20), (3, 5, 37)}  # a second apiece in the interpreter


def shapes_by_cell(cells: list[tuple], full: tuple) -> list:
    """Every cell at every shape; at the large shapes the fast tier runs the `full` cell (every
    matrix the path streams) and the slow tier the rest."""
    return [
        pytest.param(*shape, *cell, marks=[pytest.mark.slow] if shape in LARGE and cell != full else [])
        for shape in SHAPES
        for cell in cells
    ]


# a path without cells: the fast tier's large shape has both a ragged last block and several slices
ONE_LARGE = [
    pytest.param(*shape, marks=[pytest.mark.slow] if shape == (3, 5, 37) else []) for shape in SHAPES
]
TINY_GPU = GPU("a 4-SM device with 24 KiB of shared memory per program", 4, 24 * 1024)


def assert_close(got: torch.Tensor, reference: torch.Tensor, what: str, precision: str = "ieee") -> None:
    """float32 against float64; one TF32 product per step (only on a GPU) rounds to about 1e-3."""
    rtol, atol = (3e-2, 3e-3) if precision == "tf32" and ON_GPU else (1e-4, 1e-5)
    torch.testing.assert_close(
        got.double().cpu(), reference, rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}"
    )


def precision_of(options: dict) -> str:
    return options["plan"].precision if options.get("plan") else options.get("precision", "ieee")


def split_plan(scan: str, matrices: int, n: int, B: int, block_k: int | None = None, rows: int | None = None, **changes) -> ScanPlan:  # fmt: skip
    """A split launch at test sizes: several unit slices of `block_k` and row blocks of `rows`, the
    last of each ragged at the shapes here (20 = 8 + 8 + 4 units, 37 = 16 + 16 + 5; 17 = 8 + 8 + 1
    rows, 5 = 2 + 2 + 1) and no more programs than that takes, since the interpreter runs each
    program in Python; on a GPU all steps in one launch with the barrier, in the interpreter one
    step per launch."""
    block_k = block_k or (16 if n > 32 else 8)
    rows = rows or (8 if B > 8 else 2)
    plan = ScanPlan(scan, "split", matrices, n, B, rows, block_k, True, 4, "ieee", H100)
    return replace(plan, **changes)


def run(scan, inputs: list[torch.Tensor], dtype: torch.dtype, grads, *args, **options):
    """Outputs, last state and the gradients of every input under ⟨grads, (outputs, last)⟩."""
    leaves = [t.to(DEVICE, dtype).clone().requires_grad_() for t in inputs]
    outputs, last = scan(*leaves, *args, **options)
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


def check_after(T, B, n, reset, update, eps=0.0, givens=None, **options) -> None:
    width = n * (1 + reset + (update is not None))
    projected, h0, M, bias = random_inputs(T, B, n, width - n, width)
    tables = None
    if givens is not None:  # U from rotation layers; the kernels read their tables
        rotations = GivensRotations(n, *givens).double()
        M[:, :n] = rotations.matrix().detach()
        tables = tuple(t.to(DEVICE) for t in rotations.float().tables())
    grads = cotangents(T, B, n)
    names = ("outputs", "last state", "∂projected", "∂h0", "∂M", "∂bias")
    reference = run(loop.reset_after_scan, [projected, h0, M, bias], torch.float64, grads, eps, reset, update)
    results = run(
        fused.reset_after_scan, [projected, h0, M, bias], torch.float32, grads, eps, reset, update,
        givens=tables, **options,
    )  # fmt: skip
    for name, got, want in zip(names, results, reference, strict=True):
        assert_close(got, want.detach().cpu(), name, precision_of(options))


def check_before(T, B, n, eps=0.0, **options) -> None:
    projected, h0, M_ru, M_c, bias = random_inputs(T, B, n, 2 * n, 2 * n, n)
    grads = cotangents(T, B, n)
    names = ("outputs", "last state", "∂projected", "∂h0", "∂M_ru", "∂M_c", "∂bias")
    inputs = [projected, h0, M_ru, M_c, bias]
    reference = run(loop.reset_before_scan, inputs, torch.float64, grads, eps)
    results = run(fused.reset_before_scan, inputs, torch.float32, grads, eps, **options)
    for name, got, want in zip(names, results, reference, strict=True):
        assert_close(got, want.detach().cpu(), name, precision_of(options))


@pytest.mark.parametrize(("T", "B", "n", "reset", "update"), shapes_by_cell(AFTER_CELLS, (True, "admits")))
def test_reset_after_rows_path_equals_the_loop(reset, update, T, B, n) -> None:
    assert plan_reset_after(n, B, reset + (update is not None), False).path == "rows"
    check_after(T, B, n, reset, update, eps=1e-2 if B % 2 else 0.0)


@pytest.mark.parametrize(("T", "B", "n", "reset", "update"), shapes_by_cell(AFTER_CELLS, (True, "admits")))
def test_reset_after_split_path_equals_the_loop(reset, update, T, B, n) -> None:
    matrices = 1 + reset + (update is not None)
    check_after(T, B, n, reset, update, plan=split_plan("reset_after", matrices, n, B))


@pytest.mark.parametrize(
    ("reset", "update"), [(False, None), (True, "keeps"), (False, "keeps"), (True, None)]
)
@pytest.mark.parametrize(("T", "B", "n", "givens"), [(4, 3, 8, ("fft", 0)), (3, 5, 7, ("tunable", 3)), (1, 2, 16, ("fft", 0)), (5, 3, 20, ("tunable", 6))])  # fmt: skip
def test_reset_after_givens_path_equals_the_loop(reset, update, T, B, n, givens) -> None:
    """EURNN (no gates) and GORU with its ablations: U as rotation layers, FFT and tunable layouts."""
    assert plan_reset_after(n, B, reset + (update is not None), True).path == "givens"
    check_after(T, B, n, reset, update, givens=givens)


@pytest.mark.parametrize(("reset", "update"), [(False, None), (True, "keeps")])
def test_wide_givens_layers_exchange_partners_in_memory(reset, update) -> None:
    """Past `GATHER_WIDTH` units the layers swap partners through scratch memory (forced here at
    test sizes): the same results as `tl.gather`'s."""
    gates = reset + (update is not None)
    plan = replace(plan_reset_after(20, 5, gates, True), in_memory=True)
    check_after(3, 5, 20, reset, update, givens=("tunable", 5), plan=plan)
    assert plan_reset_after(2048, 32, 0, True).in_memory and not plan_reset_after(512, 32, 0, True).in_memory


@pytest.mark.parametrize(("T", "B", "n"), ONE_LARGE)
def test_reset_before_rows_path_equals_the_loop(T, B, n) -> None:
    assert plan_reset_before(n, B).path == "rows"
    check_before(T, B, n, eps=1e-2 if B % 2 else 0.0)


@pytest.mark.parametrize(("T", "B", "n"), ONE_LARGE)
def test_reset_before_split_path_equals_the_loop(T, B, n) -> None:
    check_before(T, B, n, plan=split_plan("reset_before", 3, n, B))


@pytest.mark.parametrize("precision", PRECISIONS)
def test_every_precision_runs_every_path(precision) -> None:
    """The interpreter computes every precision in IEEE: here the code paths, on a GPU the numbers.
    Two steps, and a split of two unit slices by two row blocks, both ragged (10 = 8 + 2, 3 = 2 + 1):
    the shapes above cover the paths' edges, this covers each precision's code on every path."""
    check_after(2, 3, 10, True, "keeps", precision=precision)
    check_after(2, 3, 10, True, "keeps", plan=split_plan("reset_after", 3, 10, 3, precision=precision))
    check_after(2, 3, 8, True, "keeps", givens=("fft", 0), precision=precision)
    check_before(2, 3, 10, precision=precision)
    check_before(2, 3, 10, plan=split_plan("reset_before", 3, 10, 3, precision=precision))


def test_the_fallback_grid_of_a_small_device_streams_its_matrices() -> None:
    """Where the matrices do not fit a program's shared memory, the split path re-reads them from L2,
    and never launches more programs than the device has SMs."""
    plan = plan_reset_after(37, 5, 2, False, gpu=TINY_GPU)
    assert plan.path == "split" and not plan.resident and plan.programs <= TINY_GPU.sms
    check_after(3, 5, 37, True, "keeps", plan=plan)
    plan = plan_reset_before(37, 5, gpu=TINY_GPU)
    assert plan.path == "split" and not plan.resident and plan.programs <= TINY_GPU.sms
    check_before(3, 5, 37, plan=plan)


def test_one_launch_split_runs_its_barrier_code() -> None:
    """All steps in one launch with the barrier; in the interpreter each group is one program, so the
    barrier passes at once and the same code as on the GPU runs."""
    check_after(
        4, 5, 20, True, "admits", plan=split_plan("reset_after", 3, 20, 5, block_k=32, grid_sync=True)
    )
    check_before(4, 5, 20, plan=split_plan("reset_before", 3, 20, 5, block_k=32, grid_sync=True))


@pytest.mark.skipif(ON_GPU, reason="on a GPU the programs are co-resident and the barrier passes")
def test_a_barrier_that_cannot_pass_raises_instead_of_hanging() -> None:
    """The interpreter runs programs one after another, so a group of two never meets: the first
    gives up after its bounded spins, and the scan raises."""
    projected, h0, M, bias = (t.float() for t in random_inputs(3, 2, 20, 0, 20))
    plan = split_plan("reset_after", 1, 20, 2, block_k=16, grid_sync=True, spin_limit=20)
    with pytest.raises(GridBarrierTimeout, match="grid barrier"):
        fused.reset_after_scan(projected, h0, M, bias, 0.0, False, None, plan=plan)
    raise_if_stalled(DEVICE)  # the flag was cleared when it was reported


def test_without_gradients_the_scans_keep_no_history() -> None:
    """Inference keeps one step of scratch (reset before) and saves nothing (reset after)."""
    projected, h0, M_ru, M_c, bias = (t.float().to(DEVICE) for t in random_inputs(6, 3, 9, 18, 18, 9))
    for plan in (None, split_plan("reset_before", 3, 9, 3, block_k=4)):
        with torch.no_grad():
            outputs, last = fused.reset_before_scan(projected, h0, M_ru, M_c, bias, 0.0, plan=plan)
            reference, _ = loop.reset_before_scan(projected, h0, M_ru, M_c, bias, 0.0)
        assert not outputs.requires_grad and torch.equal(outputs[-1], last)
        assert_close(outputs, reference.double().cpu(), "outputs")
    projected, h0, M, bias = (t.float().to(DEVICE) for t in random_inputs(6, 3, 9, 18, 27))
    with torch.no_grad():
        outputs, _ = fused.reset_after_scan(projected, h0, M, bias, 0.0, True, "keeps")
        reference, _ = loop.reset_after_scan(projected, h0, M, bias, 0.0, True, "keeps")
    assert_close(outputs, reference.double().cpu(), "outputs")


def test_the_self_check_passes_a_correct_kernel_and_records_its_plan() -> None:
    self_check.forget()
    projected, h0, M, bias = (t.float().to(DEVICE) for t in random_inputs(5, 4, 12, 24, 36))
    record = self_check.KernelRecord()
    outputs, _ = fused.reset_after_scan(projected, h0, M, bias, 0.0, True, "keeps", check=True, record=record)
    assert record.kernel == "fused" and record.path.startswith("rows,rows=2,programs=2,sms=")
    reference, _ = loop.reset_after_scan(projected, h0, M, bias, 0.0, True, "keeps")
    assert_close(outputs.detach(), reference.double().cpu(), "outputs")


@pytest.mark.parametrize("fault", ["mismatch", "error"])
def test_a_failed_self_check_falls_back_to_the_loop_and_says_so(monkeypatch, caplog, fault) -> None:
    self_check.forget()
    apply = fused._ResetBeforeScan.apply

    def broken(*args):
        if fault == "error":
            raise RuntimeError("out of resources: shared memory, required: 395264, hardware limit: 232448")
        outputs, last = apply(*args)
        return outputs * 1.01, last

    monkeypatch.setattr(fused._ResetBeforeScan, "apply", broken)
    projected, h0, M_ru, M_c, bias = (t.float().to(DEVICE) for t in random_inputs(4, 3, 9, 18, 18, 9))
    record = self_check.KernelRecord()
    for _ in range(2):  # checked once; the verdict holds for the process
        outputs, _ = fused.reset_before_scan(projected, h0, M_ru, M_c, bias, 0.0, check=True, record=record)
    reference, _ = loop.reset_before_scan(projected, h0, M_ru, M_c, bias, 0.0)
    assert torch.equal(outputs, reference)
    assert record.kernel == self_check.FELL_BACK and len(record.problems) == 1
    expected = "out of resources" if fault == "error" else "outputs differs from the loop's"
    assert expected in record.problems[0]
    assert sum("failed its self-check" in message for message in caplog.messages) == 1
    self_check.forget()


MODEL_CASES = [
    ("eurnn", {}),
    ("eurnn", {"layout": "tunable", "capacity": 4, "modrelu_eps": 1e-2}),
    ("scornn", {"rho": 3}),
    ("goru", {}),
    ("goru", {"layout": "tunable", "capacity": 4, "kernel_precision": "tf32x3"}),
    ("goru_noreset", {}),
    ("goru_noupdate", {}),
    ("ncgru", {}),
    ("ncgru", {"reset": "after", "orthogonal": "ruc"}),
    ("ncgru", {"orthogonal": "c", "kernel_precision": "tf32x3"}),
]


@pytest.mark.parametrize(("name", "hparams"), MODEL_CASES, ids=lambda v: str(v))
def test_models_with_fused_kernels_equal_their_loops(name: str, hparams: dict) -> None:
    """Same weights: outputs, carried state, every parameter's gradient (the Givens angles' through
    U's) and the diagnostics; the record names the path that ran."""
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
        assert model.kernel_record.kernel == kernel
    expected_path = "givens" if name.startswith(("eurnn", "goru")) else "rows"
    assert model.kernel_record.path.startswith(expected_path)
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

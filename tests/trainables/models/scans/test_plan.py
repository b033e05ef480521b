"""How the fused scans spread over a GPU, planned for a 132-SM H100 on any machine."""

from __future__ import annotations

import pytest

from trainables.models.scans.plan import (
    GATHER_WIDTH,
    GPU,
    H100,
    PRECISIONS,
    SCRATCH_BYTES,
    matrix_bytes,
    plan_reset_after,
    plan_reset_before,
)

# (scan, hidden size, gate blocks, givens): every model's cell at the sizes the papers use
CELLS = [
    ("eurnn", n, 0, True) for n in (128, 256, 512, 1024, 2048)
] + [
    ("scornn", n, 0, False) for n in (128, 170, 190, 200, 512)
] + [
    (name, n, gates, True)
    for name, gates in (("goru", 2), ("goru_noreset", 1), ("goru_noupdate", 1))
    for n in (100, 128, 256, 512)
] + [("ncgru after", n, 2, False) for n in (100, 118, 128, 256, 1000)]  # fmt: skip
BEFORE_SIZES = (64, 100, 118, 128, 256, 512, 1000)


def every_plan(batch: int, gpu: GPU = H100):
    for precision in PRECISIONS:
        for name, n, gates, givens in CELLS:
            yield name, plan_reset_after(n, batch, gates, givens, precision, gpu)
        for n in BEFORE_SIZES:
            yield "ncgru", plan_reset_before(n, batch, precision, gpu)


@pytest.mark.parametrize("batch", [128, 50, 32])
def test_every_scan_fills_the_gpu_without_overcommitting_it(batch: int) -> None:
    """At the papers' batch of 128 every scan launches at least 32 programs (the first fused
    kernels launched 8); a split scan never more than the SMs, so all its programs are resident."""
    for name, plan in every_plan(batch):
        if batch == 128:
            assert plan.programs >= 32, f"{name}: {plan.describe()}"
        if plan.path == "split":
            assert plan.programs <= H100.sms, f"{name}: {plan.describe()}"
            assert plan.programs_per_sm == 1


def test_resident_matrices_fit_a_programs_shared_memory() -> None:
    for name, plan in every_plan(128):
        if plan.resident and plan.matrices:
            held = matrix_bytes(plan.matrices, plan.block_n, plan.block_k, plan.precision)
            assert held <= H100.shared_bytes - SCRATCH_BYTES, f"{name}: {plan.describe()}"


def test_paths_follow_the_hidden_size_and_the_precision() -> None:
    assert plan_reset_after(512, 32, 0, True).path == "givens"  # EURNN at any size
    assert plan_reset_after(128, 128, 2, True).path == "givens"  # GORU's gates fit on chip
    assert plan_reset_after(512, 32, 2, True).path == "split"  # ... and at 512 they do not
    assert plan_reset_after(128, 128, 0, False).path == "rows"  # scoRNN at n = 128
    assert plan_reset_after(190, 50, 0, False).path == "split"  # scoRNN's copying size
    assert plan_reset_before(128, 128).path == "rows"
    assert plan_reset_before(128, 128, "tf32x3").path == "split"  # tf32x3 keeps two parts of each
    assert (
        plan_reset_after(2048, 32, 0, True).in_memory
        and plan_reset_after(2048, 32, 0, True).block_n > GATHER_WIDTH
    )


def test_a_small_device_streams_what_does_not_fit() -> None:
    small = GPU("a 4-SM device", 4, 24 * 1024)
    plan = plan_reset_before(100, 64, gpu=small)
    assert plan.path == "split" and not plan.resident and plan.programs <= 4


def test_a_plan_says_what_it_launches() -> None:
    plan = plan_reset_after(128, 128, 2, True)
    assert plan.describe() == (
        "givens (1 row per program, matrices on chip, ieee): 128 programs on 132 SMs, 1 per SM"
    )
    assert plan_reset_after(512, 32, 0, True).describe().startswith("givens (1 row per program, no matrices")
    split = plan_reset_after(190, 50, 0, False)
    assert "rows × 16 units per program" in split.describe()
    assert split.grid_record() == {
        "scan": "reset_after",
        "shape": [50, None, 190],
        "path": "split",
        "programs": split.programs,
        "sms": 132,
        "programs_per_sm": 1,
    }
    smaller = split.for_batch(3)
    assert smaller.row_blocks == 1 and smaller.block_k == split.block_k and smaller.rows == split.rows

"""Every fused-scan kernel the models launch at the papers' sizes, and the Givens matrix's kernels,
compile for an H100 (sm_90), with their register spills and shared memory within what the plan
assumed — without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainables.models.scans.plan import H100, PRECISIONS

pytest.importorskip("triton", reason="the fused kernels need Triton (a test dependency)")

# A few bytes of spill are L1 traffic; hundreds would mean a layout too wide for the register file.
SPILL_BYTES = 64


@pytest.mark.slow
def test_every_planned_kernel_compiles_for_hopper_within_its_resources() -> None:
    pytest.importorskip("triton.backends.nvidia.compiler", reason="Triton without its CUDA backend")
    from tests.trainables.models.scans.hopper_build import CAYLEY_DTYPES, GIVENS_SIZES, SIZES

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    built = subprocess.run(
        [sys.executable, "-m", "tests.trainables.models.scans.hopper_build"],
        capture_output=True,
        text=True,
        env={**env, "TRITON_DEFAULT_FP_FUSION": "1"},
        cwd=Path(__file__).parents[4],
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    report = json.loads(built.stdout)
    scans = [variant for variant in report if not variant.startswith(("givens_matrix", "cayley_matrix"))]
    assert len(scans) == 2 * len(PRECISIONS) * len(SIZES)  # forward and backward of every plan
    assert {variant.split()[3] for variant in scans} == {"givens", "rows", "split"}
    givens = [variant for variant in report if variant.startswith("givens_matrix")]
    assert len(givens) == 3 * len(GIVENS_SIZES)  # forward, backward and the gradient's reduction
    assert len(report) == len(scans) + len(givens) + len(CAYLEY_DTYPES)
    for variant, figures in report.items():
        assert figures["spill_bytes"] <= SPILL_BYTES, f"{variant}: {figures}"
        assert figures["shared_bytes"] <= H100.shared_bytes, f"{variant}: {figures}"

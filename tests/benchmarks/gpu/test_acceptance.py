"""The GPU acceptance script keeps working where no GPU is: its whole plan, tiny, in Triton's
interpreter (`--cpu-check`), writing the JSON a GPU run writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton", reason="the fused kernels need Triton (a test dependency)")

ROOT = Path(__file__).parents[3]
SECTIONS = (
    "compile",
    "tests",
    "errors",
    "steps",
    "cells",
    "precision",
    "trials",
    "packing",
    "grids",
    "seconds",
)


@pytest.mark.slow
def test_cpu_check_runs_the_whole_plan_and_writes_the_json(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu.acceptance", "--cpu-check", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    document = json.loads((tmp_path / "gpu_acceptance-cpu-check.json").read_text())
    assert {"date", "machine", "versions", "figures"} <= document.keys()
    assert document["versions"]["torch"] and document["versions"]["triton"]
    figures = document["figures"]
    assert figures["mode"] == "cpu-check" and all(section in figures for section in SECTIONS)
    assert figures["complete"] is True  # each section's partial write is replaced by the whole
    assert figures["tests"]["collected"] > 0 and figures["tests"]["passed"] == figures["tests"]["tests"]
    assert not figures["compile"]["failures"]
    assert {row["path"] for row in figures["errors"]} == {"rows", "givens", "split"}
    assert all(row["outputs"] < 1e-5 and row["gradients"] < 1e-5 for row in figures["errors"])
    models = {row["model"] for row in figures["cells"]}
    assert models == {"eurnn", "scornn", "goru", "goru_noreset", "goru_noupdate", "ncgru", "ncgru after"}
    assert {row["precision"] for row in figures["cells"]} == {"ieee", "tf32x3", "tf32"}
    assert all(row["fwd_bwd_ms"] > 0 and row["times_gru"] > 0 for row in figures["cells"])
    assert all(set(row) >= {"us_per_step_forward", "us_per_step_fwd_bwd", "path"} for row in figures["steps"])
    assert {row["precision"] for row in figures["precision"]} == {"ieee", "tf32x3", "tf32"}
    trials = {row["model"]: row for row in figures["trials"]}
    assert set(trials) == {"gru", "lstm", "eurnn", "goru", "goru_noreset", "goru_noupdate", "scornn", "ncgru"}
    assert all("ms_per_iteration" in row for row in trials.values()), figures["trials"]
    assert trials["goru"]["kernel"] == "fused" and trials["goru"]["path"].startswith("givens")
    assert all(row["capture"] == "eager:cpu" and row["graph_speedup"] > 0 for row in trials.values())
    assert {(row["model"], row["per_gpu"]) for row in figures["packing"]} == {
        (m, k) for m in ("gru", "goru") for k in (1, 2)
    }
    assert all("trials_per_hour" in row for row in figures["packing"])
    at_128 = [row for row in figures["grids"] if row["shape"][0] == 128]
    assert at_128 and all(row["sms"] == 132 and row["programs"] >= 32 for row in at_128)
    assert "cell fwd+bwd against nn.GRU" in done.stdout


def test_a_failed_kernel_test_is_kept_as_its_reasons_without_the_machines_paths() -> None:
    from benchmarks.gpu import sections as gpu_sections

    output = """____ test_cap ____
    def test_cap():
>       torch.cuda.set_per_process_memory_fraction(0.5, torch.device("cuda"))
/some/site-packages/torch/_utils.py:888: ValueError
E               ValueError: Expected a torch.device with a specified index
=========================== short test summary info ============================
FAILED tests/trainables/test_gpu_memory.py::test_cap - ValueError: Expected a torch.device
1 failed, 16 passed, 1 skipped in 19.91s
"""
    assert gpu_sections.pytest_summary(output).splitlines() == [
        "E               ValueError: Expected a torch.device with a specified index",
        "FAILED tests/trainables/test_gpu_memory.py::test_cap - ValueError: Expected a torch.device",
        "1 failed, 16 passed, 1 skipped in 19.91s",
    ]

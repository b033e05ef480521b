"""The scans' diagnosis runs in Triton's interpreter before a GPU is lent: every variant of each
scan's plan is planned, run and timed (or said not to apply), the planners are put back, and it
refuses to run without a GPU or the interpreter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.gpu import scan_diagnosis
from trainables.models.scans import fused


@pytest.mark.slow
def test_each_scan_is_timed_as_planned_and_under_each_variant(tmp_path: Path) -> None:
    planners = (fused.plan_reset_after, fused.plan_reset_before)
    assert scan_diagnosis.main(["--out", str(tmp_path), "--cpu-check", "--scans", "ncgru", "eurnn"]) == 0
    assert (fused.plan_reset_after, fused.plan_reset_before) == planners
    result = json.loads((tmp_path / "scan_diagnosis.json").read_text())
    assert set(result["scans"]) == {"ncgru", "eurnn"} and result["device"].startswith("cpu")
    assert result["machine"]["device"] == "cpu"
    ncgru, eurnn = result["scans"]["ncgru"], result["scans"]["eurnn"]
    assert (ncgru["about"], eurnn["about"]) == ("backward", "forward")
    planned = ncgru["variants"]["as planned"]
    assert planned["plan"]["scan"] == "reset_before" and set(planned["us_per_step"]) == {
        "forward",
        "backward",
    }
    assert (
        ncgru["backward_over_forward"]
        == planned["us_per_step"]["backward"] / planned["us_per_step"]["forward"]
    )
    streamed = ncgru["variants"]["matrices streamed"]
    assert streamed["plan"]["resident"] is False and planned["plan"]["resident"] is True
    assert ncgru["variants"]["tf32 products"]["plan"]["precision"] == "tf32"
    assert ncgru["variants"]["one row block"]["plan"]["batch"] == planned["plan"]["rows"]
    assert eurnn["variants"]["as planned"]["plan"]["path"] == "givens"
    assert eurnn["variants"]["matrices streamed"] == {"applies": False}  # rotations: no matrix to stream
    work = planned["work_and_achieved"]["backward"]
    assert work["flops"] == 2.0 * 4 * 12 * 12 * 3 * 2 and work["gflops"] > 0
    assert "nsight" not in ncgru  # no GPU: no Nsight run


def test_it_refuses_without_a_gpu_or_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert scan_diagnosis.main(["--out", str(tmp_path), "--cpu-check"]) == 2
    assert scan_diagnosis.main(["--out", str(tmp_path)]) == 2  # no CUDA here
    assert not list(tmp_path.iterdir())

"""The step profile runs where no GPU is (ATen ops stand for kernels there) and writes, per model,
the step's wall time, the time its work took and that work by name, largest first."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from torch.autograd import DeviceType

from benchmarks.gpu import step_profile


def test_each_model_s_step_is_profiled_and_its_work_ranked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "profile.json"
    argv = ["step_profile.py", "--quick", "--device", "cpu", "--models", "gru", "goru", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    step_profile.main()
    figures = json.loads(out.read_text())["figures"]
    assert [row["model"] for row in figures["rows"]] == ["gru", "goru"]
    gru, goru = figures["rows"]
    assert gru["path"] == "torch" and goru["path"] == "loop"  # the plain loop: no Triton on a CPU
    for row in figures["rows"]:
        assert row["wall_ms_per_step"] > 0 and row["busy_ms_per_step"] > 0 and row["launches_per_step"] > 0
        times = [kernel["ms_per_step"] for kernel in row["top"]]
        assert times == sorted(times, reverse=True) and len(times) == step_profile.TOP
        assert 0 < sum(kernel["share"] for kernel in row["top"]) <= 1 + 1e-9


def test_a_model_that_fails_is_named_and_the_others_still_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = step_profile.plain_step

    def broken(model: str, *args: object) -> object:
        if model == "gru":
            raise RuntimeError("no kernel for this shape")
        return real(model, *args)

    monkeypatch.setattr(step_profile, "plain_step", broken)
    out = tmp_path / "profile.json"
    monkeypatch.setattr(sys, "argv", ["step_profile.py", "--quick", "--device", "cpu", "--models", "gru", "lstm", "--out", str(out)])  # fmt: skip
    step_profile.main()
    gru, lstm = json.loads(out.read_text())["figures"]["rows"]
    assert gru == {"model": "gru", "error": "RuntimeError: no kernel for this shape"}
    assert lstm["wall_ms_per_step"] > 0


def event(
    name: str, device: DeviceType, us: float, *, self_cpu: float = 0.0, annotation: bool = False
) -> SimpleNamespace:
    return SimpleNamespace(
        name=name, device_type=device, is_user_annotation=annotation, self_cpu_time_total=self_cpu,
        time_range=SimpleNamespace(elapsed_us=lambda: us),
    )  # fmt: skip


def test_device_kernels_are_summed_by_name_and_the_optimizers_range_is_not_counted_again() -> None:
    cuda, cpu = DeviceType.CUDA, DeviceType.CPU
    events = [
        event("scan_backward", cuda, 3000), event("scan_backward", cuda, 3000), event("scan_forward", cuda, 1000),
        event("gemm", cuda, 500), event("gemm", cuda, 500), event("gemm", cuda, 500), event("gemm", cuda, 500),
        event("Optimizer.step#Adam.step", cuda, 400, annotation=True),  # spans kernels counted above
        event("aten::mm", cpu, 0, self_cpu=9000),  # the host's side of a launch
    ]  # fmt: skip
    busy, launches, top = step_profile.kernels(events, 2, cuda=True)
    assert busy == pytest.approx(4.5) and launches == pytest.approx(3.5)
    assert [(k["kernel"], k["ms_per_step"], k["per_step"]) for k in top] == [
        ("scan_backward", 3.0, 1.0), ("gemm", 1.0, 2.0), ("scan_forward", 0.5, 0.5),
    ]  # fmt: skip
    assert sum(k["share"] for k in top) == pytest.approx(1.0)
    busy, launches, top = step_profile.kernels(events, 1, cuda=False)  # on a CPU: ops' own time
    assert (busy, launches, [k["kernel"] for k in top]) == (9.0, 1.0, ["aten::mm"])

"""The step profile runs where no GPU is (ATen ops stand for kernels there) and writes, per model,
the step's wall time, the time its work took and that work by name, largest first."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

import step_profile


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
    assert any("ScanBackward" in kernel["kernel"] for kernel in goru["top"])  # GORU's own time loop


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

"""Which implementation runs an orthogonal model's time loop, and the errors of a wrong choice."""

from __future__ import annotations

import pytest
import torch

from trainables.catalog import load_all
from trainables.models.scans.choice import resolve_kernel, triton_problem
from trainables.registry import MODELS

load_all()
CPU = torch.device("cpu")
ORTHOGONAL = [spec.name for spec in MODELS if spec.orthogonal]


@pytest.mark.parametrize("name", ORTHOGONAL)
def test_every_orthogonal_model_declares_the_setting(name: str) -> None:
    declared = MODELS.get(name).all_hyperparams["kernel"]
    assert declared.default == "auto" and declared.choices == ("auto", "fused", "loop")


def test_a_cpu_keeps_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert resolve_kernel("auto", CPU) == "loop"
    assert resolve_kernel("loop", CPU) == "loop"
    model = MODELS.get("goru").create(3, 8)
    assert model.scan_kernel(torch.zeros(1)) == "loop"


def test_fused_where_it_cannot_run_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match=r"kernel: 'fused' cannot run here: the device is cpu.*auto or loop"):
        resolve_kernel("fused", CPU)
    model = MODELS.get("ncgru").create(3, 8, kernel="fused")
    with pytest.raises(ValueError, match="kernel: 'fused'"):
        model(torch.zeros(2, 1, 3))


def test_fused_computes_in_float32_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(ValueError, match="float64"):
        resolve_kernel("fused", CPU, torch.float64)
    assert resolve_kernel("auto", torch.device("cuda"), torch.float64) == "loop"


def test_auto_takes_fused_on_cuda_when_triton_imports() -> None:
    expected = "fused" if triton_problem() is None else "loop"
    assert resolve_kernel("auto", torch.device("cuda")) == expected


def test_interpreter_runs_fused_on_a_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert resolve_kernel("fused", CPU) == "fused"


def test_a_cuda_trial_names_an_unwritable_kernel_cache_before_its_first_step(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """A read-only root filesystem (a hardened pod without TRITON_CACHE_DIR) would fail deep in
    Triton's compiler at the first fused step; the trial says which directory and what to set."""
    from trainables.train import check_kernels

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(blocked / "cache"))
    cuda = torch.device("cuda")  # nothing is allocated: the check runs before any step
    with pytest.raises(
        ValueError, match=rf"Triton's kernel cache {blocked / 'cache'} is not writable.*TRITON_CACHE_DIR"
    ):
        check_kernels([MODELS.get("goru").create(3, 8)], cuda)
    check_kernels([MODELS.get("goru").create(3, 8, kernel="loop")], cuda)  # the loop compiles nothing
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    check_kernels([MODELS.get("goru").create(3, 8)], cuda)
    assert (tmp_path / "cache").is_dir()

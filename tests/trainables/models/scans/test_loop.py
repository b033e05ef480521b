"""The hand-written BPTT of the gated cells against autograd's numerical gradients."""

import pytest
import torch

from trainables.models.scans.loop import reset_after_scan, reset_before_scan


def inputs(n: int, width: int, seed: int = 0) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(seed)

    def tensor(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, dtype=torch.float64, generator=generator).requires_grad_()

    return tensor(4, 3, width), tensor(3, n), tensor(n, width) * 0.5, tensor(n) * 0.3


@pytest.mark.parametrize(
    ("reset", "update"), [(True, "keeps"), (False, "keeps"), (True, None), (True, "admits")]
)
@pytest.mark.parametrize("eps", [0.0, 1e-2])
def test_reset_after_scan_gradients(reset: bool, update: str | None, eps: float) -> None:
    n = 5
    width = n * (1 + reset + (update is not None))
    projected, h0, M, bias = inputs(n, width)
    M, bias = M.detach().requires_grad_(), bias.detach().requires_grad_()

    def run(projected, h0, M, bias):
        outputs, last = reset_after_scan(projected, h0, M, bias, eps, reset, update)
        return outputs, last * 2  # a gradient through the returned state too

    assert torch.autograd.gradcheck(run, (projected, h0, M, bias))


@pytest.mark.parametrize("eps", [0.0, 1e-2])
def test_reset_before_scan_gradients(eps: float) -> None:
    n = 5
    projected, h0, M_ru, bias = inputs(n, 3 * n)
    M_ru = M_ru.detach()[:, : 2 * n].requires_grad_()
    M_c = (torch.randn(n, n, dtype=torch.float64) * 0.5).requires_grad_()
    bias = bias.detach().requires_grad_()

    def run(projected, h0, M_ru, M_c, bias):
        outputs, last = reset_before_scan(projected, h0, M_ru, M_c, bias, eps)
        return outputs, last * 2

    assert torch.autograd.gradcheck(run, (projected, h0, M_ru, M_c, bias))


def test_no_graph_kept_without_gradients() -> None:
    projected, h0, M, bias = (t.detach() for t in inputs(4, 12))
    with torch.no_grad():
        outputs, last = reset_after_scan(projected, h0, M, bias, 0.0, True, "keeps")
    assert outputs.shape == (4, 3, 4) and torch.equal(outputs[-1], last)

import pytest
import torch

from trainables.models.modrelu import ModReLU, modrelu


def test_values_keep_sign_and_shrink_magnitude() -> None:
    z = torch.tensor([-3.0, -0.5, 0.0, 0.5, 3.0])
    out = modrelu(z, torch.full((5,), -1.0))
    assert torch.equal(out, torch.tensor([-2.0, 0.0, 0.0, 0.0, 2.0]))


def test_positive_bias_grows_magnitude() -> None:
    out = modrelu(torch.tensor([-1.0, 2.0]), torch.tensor([0.5, 0.5]))
    assert torch.equal(out, torch.tensor([-1.5, 2.5]))


def reference_modrelu(z: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
    """The GORU and EUNN publication code's real-valued modReLU, written as they write it:
    z_norm = |z| + ε; step2 = relu(z_norm + b); step3 = sign(z); return step3 · step2."""
    return torch.sign(z) * torch.relu(z.abs() + eps + b)


@pytest.mark.parametrize("eps", [1e-3, 1e-2])
def test_eps_version_matches_reference_code(eps: float) -> None:
    z = torch.tensor([-2.0, -0.15, -1e-4, 0.0, 1e-4, 0.3, 0.05])
    b = torch.tensor([0.1, 0.1, -0.2, 0.3, -5e-4, -0.2, -0.06])
    assert torch.allclose(modrelu(z, b, eps), reference_modrelu(z, b, eps), atol=0, rtol=1e-6)


def test_eps_shifts_the_threshold_only() -> None:
    """ε = 1e-2 turns on a unit whose |z| + b is just below zero, and leaves the sign alone."""
    z, b = torch.tensor([-0.05, 0.05]), torch.tensor([-0.055, -0.055])
    assert torch.equal(modrelu(z, b, 0.0), torch.zeros(2))
    assert torch.allclose(modrelu(z, b, 1e-2), torch.tensor([-0.005, 0.005]))


@pytest.mark.parametrize("eps", [0.0, 1e-3])
def test_gradient_is_finite_at_zero(eps: float) -> None:
    z = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    b = torch.tensor([0.5, -0.5, 0.0, 1.0], dtype=torch.float64, requires_grad=True)
    modrelu(z, b, eps).sum().backward()
    assert torch.isfinite(z.grad).all() and torch.isfinite(b.grad).all()


@pytest.mark.parametrize("eps", [0.0, 1e-2])
def test_gradients_match_finite_differences_away_from_zero(eps: float) -> None:
    z = torch.tensor([-2.0, -0.7, 0.4, 1.5], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([0.3, 0.2, -0.1, -0.4], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda z, b: modrelu(z, b, eps), (z, b))


def test_analytic_gradient() -> None:
    z = torch.tensor([-2.0, 0.5, 0.2], requires_grad=True)
    b = torch.tensor([0.5, -0.1, -0.3], requires_grad=True)
    modrelu(z, b).sum().backward()
    # active units pass gradient 1 to z and sign(z) to b; the dead unit (|z| + b < 0) passes none
    assert torch.equal(z.grad, torch.tensor([1.0, 1.0, 0.0]))
    assert torch.equal(b.grad, torch.tensor([-1.0, 1.0, 0.0]))


def test_module_has_trainable_bias_and_rejects_negative_eps() -> None:
    layer = ModReLU(3, bias_init=0.01)
    assert layer.bias.requires_grad and torch.equal(layer.bias.detach(), torch.full((3,), 0.01))
    with pytest.raises(ValueError, match="modrelu_eps"):
        ModReLU(3, eps=-1.0)

"""Initial weights pinned to what the publication code draws: ranges, means and spreads."""

from __future__ import annotations

import math

import pytest
import torch

from trainables.models.eurnn import EURNN
from trainables.models.goru import GORU, GORUNoReset
from trainables.models.initialization import he_normal_, sum_of_uniforms_
from trainables.models.ncgru import NCGRU
from trainables.models.scornn import ScoRNN

INPUTS, N = 11, 256


def assert_uniform(values: torch.Tensor, bound: float) -> None:
    """U(±bound): inside the bound, reaching near it, centred, with spread bound/√3."""
    values = values.detach().flatten().double()
    assert values.abs().max() <= bound
    assert values.abs().max() > 0.9 * bound
    assert abs(values.mean()) < 5 * bound / math.sqrt(3 * values.numel())
    assert values.std() == pytest.approx(bound / math.sqrt(3), rel=0.06)


def assert_normal(values: torch.Tensor, std: float, cut: float | None = None) -> None:
    values = values.detach().flatten().double()
    assert abs(values.mean()) < 5 * std / math.sqrt(values.numel())
    assert values.std() == pytest.approx(std, rel=0.06)
    if cut is not None:
        assert values.abs().max() <= cut


def ncgru(orthogonal: str, init: str) -> NCGRU:
    torch.manual_seed(0)
    return NCGRU(INPUTS, N, orthogonal=orthogonal, rho=N // 2, init=init)


@pytest.mark.parametrize("orthogonal", ["c", "rc"])
def test_ncgru_paper_init_is_uniform_over_root_n_with_zero_biases(orthogonal: str) -> None:
    model = ncgru(orthogonal, "paper")
    assert_uniform(model.input_weight, 1 / math.sqrt(N))
    for weight in model.plain.values():
        assert_uniform(weight, 1 / math.sqrt(N))
    assert torch.count_nonzero(model.gate_bias) == 0
    assert torch.count_nonzero(model.activation.bias) == 0


def test_ncgru_synthetic_code_single_orthogonal_uses_one_gate_kernel_over_x_and_h() -> None:
    model = ncgru("c", "synthetic_code")
    bound = math.sqrt(6 / (INPUTS + N))  # he_uniform over the [x; h] kernel
    assert_uniform(model.input_weight[N:], bound)
    assert set(model.plain) == {"r", "u"}
    for weight in model.plain.values():
        assert_uniform(weight, bound)
    assert torch.count_nonzero(model.gate_bias) == 0
    assert_normal(model.input_weight[:N], math.sqrt(2 / INPUTS), cut=2 * math.sqrt(2 / INPUTS) / 0.8796)
    assert_uniform(model.activation.bias, 0.1)


def test_ncgru_synthetic_code_two_orthogonal_splits_gate_kernels_and_draws_normal_biases() -> None:
    model = ncgru("rc", "synthetic_code")
    assert_uniform(model.input_weight[N:], math.sqrt(6 / INPUTS))
    assert set(model.plain) == {"u"}
    assert_uniform(model.plain["u"], math.sqrt(6 / N))
    assert_normal(model.gate_bias, 1.0)
    assert_normal(model.input_weight[:N], math.sqrt(2 / INPUTS), cut=2 * math.sqrt(2 / INPUTS) / 0.8796)
    assert_uniform(model.activation.bias, 0.1)


def test_ncgru_ptb_code_init() -> None:
    model = ncgru("c", "ptb_code")
    small = 1 / math.sqrt(N)
    assert_uniform(model.input_weight[:N], 0.01)
    assert_uniform(model.input_weight[N:], small)
    for weight in model.plain.values():
        assert_uniform(weight, small)
    bias = model.gate_bias.detach().double()
    assert bias.abs().max() <= 2 * small  # the sum of an input and a hidden bias, each U(±1/√n)
    assert bias.std() == pytest.approx(small * math.sqrt(2 / 3), rel=0.1)
    assert torch.count_nonzero(model.activation.bias) == 0


def test_ncgru_rejects_an_unknown_init() -> None:
    with pytest.raises(ValueError, match="init"):
        NCGRU(INPUTS, 8, init="xavier")


def test_goru_init_follows_the_publication_code() -> None:
    torch.manual_seed(0)
    model = GORU(INPUTS, N, layout="tunable", capacity=2)
    assert_uniform(model.input_weight, 0.01)
    assert_uniform(model.gate_weight, 0.01)
    reset, update = model.gate_bias[:N], model.gate_bias[N:]
    assert torch.all(reset == 2.0)
    assert_uniform(update, math.sqrt(3 / N))  # TF1's default glorot_uniform on a length-n vector
    assert torch.allclose(model.activation.bias, torch.full((N,), 0.01))
    assert_uniform(model.rotations.angles, math.pi)


def test_goru_without_reset_gate_keeps_the_update_bias_scheme() -> None:
    torch.manual_seed(0)
    model = GORUNoReset(INPUTS, N, layout="tunable", capacity=2)
    assert model.gate_bias.numel() == N
    assert_uniform(model.gate_bias, math.sqrt(3 / N))


@pytest.mark.parametrize("make", [lambda: EURNN(INPUTS, N, layout="tunable"), lambda: ScoRNN(INPUTS, N)])
def test_eurnn_and_scornn_input_weights_are_uniform_one_hundredth(make) -> None:
    torch.manual_seed(0)
    model = make()
    assert_uniform(model.input_weight, 0.01)
    assert torch.count_nonzero(model.activation.bias) == 0


def test_he_normal_matches_tensorflow_truncated_variance_scaling() -> None:
    torch.manual_seed(0)
    values = he_normal_(torch.empty(200_000), fan_in=50)
    assert_normal(values, math.sqrt(2 / 50), cut=2 * math.sqrt(2 / 50) / 0.87962566103423978)


def test_sum_of_uniforms_is_triangular() -> None:
    torch.manual_seed(0)
    values = sum_of_uniforms_(torch.empty(200_000), 0.5)
    assert values.abs().max() <= 1.0
    assert values.std().item() == pytest.approx(0.5 * math.sqrt(2 / 3), rel=0.02)
    assert (values.abs() < 0.5).double().mean().item() == pytest.approx(0.75, abs=0.01)

"""The initial-weight distributions of the publication code, named after what that code called them.

Early dynamics, and so the numbers a reproduction gets, depend on them; the models pick among
these per parameter, and the tests pin each one's range, mean and spread.
"""

from __future__ import annotations

import math

import torch

# The input weights' bound in the EUNN, scoRNN and NC-GRU code: U(±0.01).
REFERENCE_INPUT_BOUND = 0.01
# TensorFlow's variance-scaling "truncated_normal" draws from N(0, σ') cut at ±2σ', with σ'
# enlarged by 1 / 0.8796… so that the truncated distribution keeps the intended spread.
TRUNCATED_NORMAL_STD_FACTOR = 0.87962566103423978


def uniform_(tensor: torch.Tensor, bound: float) -> torch.Tensor:
    """U(−bound, bound), in place."""
    return tensor.uniform_(-bound, bound)


def he_uniform_bound(fan_in: int) -> float:
    """The bound of TensorFlow's `he_uniform`: U(±√(6 / fan_in))."""
    return math.sqrt(6.0 / fan_in)


def glorot_uniform_bound(fan_in: int, fan_out: int) -> float:
    """The bound of TensorFlow's `glorot_uniform` (TF1's default variable initializer)."""
    return math.sqrt(6.0 / (fan_in + fan_out))


def he_normal_(tensor: torch.Tensor, fan_in: int) -> torch.Tensor:
    """TensorFlow's `he_normal`: a normal truncated at two of its deviations whose spread after
    truncation is √(2 / fan_in)."""
    std = math.sqrt(2.0 / fan_in) / TRUNCATED_NORMAL_STD_FACTOR
    return torch.nn.init.trunc_normal_(tensor, 0.0, std, -2 * std, 2 * std)


def sum_of_uniforms_(tensor: torch.Tensor, bound: float) -> torch.Tensor:
    """The sum of two independent U(±bound): PyTorch's recurrent cells keep an input and a hidden
    bias, each U(±1/√n), whose sum is the effective gate bias of a cell that folds them into one."""
    return uniform_(tensor, bound).add_(uniform_(torch.empty_like(tensor), bound))

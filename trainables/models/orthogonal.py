"""Orthogonal parametrizations: Givens rotations (EURNN, GORU) and the scaled Cayley transform
(scoRNN, NC-GRU), with NC-GRU's Neumann-series maintenance of the inverse.

Both build the whole n×n matrix once per forward pass, so a recurrent loop does one GEMM per time
step instead of re-applying the parametrization at every step. The model's `kernel` setting
picks the build (`scans.choice.build_matrix`): the ATen ops, the reference and the CPU's path, or
on CUDA Triton kernels (`scans.givens_matrix`, `scans.cayley_matrix`), where each ATen op would
be a launch of its own.

Convention: `GivensRotations.matrix()` returns M with `h @ M` equal to U h for a column vector h,
so models multiply row-major batches of states by M; a Cayley matrix U is used as `h @ U.T`.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

from trainables.models.hyperparams import KERNEL, NEUMANN_ORDER, RESET_INTERVAL
from trainables.models.scans.choice import build_matrix
from trainables.models.scans.self_check import KernelRecord

GivensLayout = Literal["fft", "tunable"]


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def resolve_layout(layout: str, n: int) -> GivensLayout:
    """`auto` means FFT (the GORU publication default) when n is a power of two, else tunable."""
    if layout == "auto":
        return "fft" if is_power_of_two(n) else "tunable"
    if layout == "fft" and not is_power_of_two(n):
        raise ValueError(
            f"layout 'fft' needs a hidden size that is a power of two, got {n}; choose 'tunable' or 'auto'"
        )
    if layout not in ("fft", "tunable"):
        raise ValueError(f"layout: expected auto, fft or tunable, got {layout!r}")
    return layout  # type: ignore[return-value]


def givens_pairs(n: int, layout: GivensLayout, capacity: int) -> list[list[tuple[int, int]]]:
    """The disjoint index pairs (p, q) each layer rotates.

    Tunable: layers alternate (0,1),(2,3),… and (1,2),(3,4),…; `capacity` layers, and capacity n
    reaches all of SO(n). FFT: log2 n layers, layer i pairs j with j XOR n/2^(i+1).
    """
    if layout == "fft":
        layers = []
        for i in range(int(math.log2(n))):
            stride = n >> (i + 1)
            layers.append([(j, j + stride) for j in range(n) if not j & stride])
        return layers
    return [[(p, p + 1) for p in range(layer % 2, n - 1, 2)] for layer in range(capacity)]


class GivensRotations(nn.Module):
    """U = product of layers of 2×2 rotations h'_p = cos θ h_p − sin θ h_q, h'_q = sin θ h_p + cos θ h_q.

    One angle per pair, initialized U(−π, π); there is no diagonal, so det U = +1. A layer acts on
    all pairs at once as h * C + h[partner] * S, the coefficient rows C, S gathered from cos θ and
    sin θ so that every layer costs three vector operations. `kernel` (the owning model's setting)
    picks how `matrix` builds M (`scans.choice.build_matrix`); `record` (the model's) hears a
    fallback.
    """

    def __init__(
        self,
        n: int,
        layout: GivensLayout,
        capacity: int,
        kernel: str = "auto",
        record: KernelRecord | None = None,
    ) -> None:
        super().__init__()
        self.n = n
        self.layout = layout
        self.kernel = kernel
        self.record = record
        layers = givens_pairs(n, layout, capacity)
        n_angles = sum(len(pairs) for pairs in layers)
        self.angles = nn.Parameter(torch.empty(n_angles).uniform_(-math.pi, math.pi))
        partner = [list(range(n)) for _ in layers]
        cos_index = [[n_angles] * n for _ in layers]  # n_angles points at the appended 1
        sin_index = [[2 * n_angles] * n for _ in layers]  # 2·n_angles points at the appended 0
        k = 0
        for l, pairs in enumerate(layers):
            for p, q in pairs:
                partner[l][p], partner[l][q] = q, p
                cos_index[l][p] = cos_index[l][q] = k
                sin_index[l][p], sin_index[l][q] = n_angles + k, k  # −sin θ at p, +sin θ at q
                k += 1
        for name, table in (("partner", partner), ("cos_index", cos_index), ("sin_index", sin_index)):
            index = torch.tensor(table, dtype=torch.long).reshape(len(layers), n)
            self.register_buffer(name, index, persistent=False)

    @property
    def n_layers(self) -> int:
        return self.partner.shape[0]

    def coefficients(self, angles: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Per layer and index, the C and S of h' = h * C + h[partner] * S (layers, n), from the
        module's angles or, for a self-check that differentiates a copy, from `angles`."""
        angles = self.angles if angles is None else angles
        cos, sin = torch.cos(angles), torch.sin(angles)
        C = torch.cat([cos, cos.new_ones(1)])[self.cos_index]
        S = torch.cat([sin, -sin, sin.new_zeros(1)])[self.sin_index]
        return C, S

    def rotate(self, h: torch.Tensor, angles: torch.Tensor | None = None) -> torch.Tensor:
        """Apply the layers one after another to the rows of `h` (…, n); `angles` as `coefficients`'."""
        C, S = self.coefficients(angles)
        for l in range(self.n_layers):
            h = h * C[l] + h.index_select(-1, self.partner[l]) * S[l]
        return h

    def tables(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The layers as the fused kernels read them: `coefficients` detached (the gradient reaches
        the angles through `matrix`) and the partners as int32."""
        with torch.no_grad():
            C, S = self.coefficients()
        return C.contiguous(), S.contiguous(), self.partner.to(torch.int32).contiguous()

    def matrix(self) -> torch.Tensor:
        """M with h @ M = U h: the layers are linear, so rotating the identity's rows gives U once.

        Each of `rotate`'s small ops is a launch of its own on a GPU, forward and backward, so
        where `kernel` takes the kernels, one Triton launch builds M and two give the angles'
        gradient (`scans.givens_matrix`). The ATen build stays the reference and the CPU's path.
        """
        key = ("givens matrix", self.n, self.n_layers, self.angles.dtype)
        build = self._kernel_matrix, self._aten_matrix
        return build_matrix(self.kernel, self.record, key, *build, [self.angles])

    def _aten_matrix(self, angles: torch.Tensor) -> torch.Tensor:
        return self.rotate(torch.eye(self.n, dtype=angles.dtype, device=angles.device), angles)

    def _kernel_matrix(self, angles: torch.Tensor) -> torch.Tensor:
        from trainables.models.scans import givens_matrix  # imports Triton, which the CPU never needs

        return givens_matrix.givens_matrix(angles, self.partner, self.cos_index, self.sin_index)

    def forward(self) -> torch.Tensor:
        return self.matrix()

    def extra_repr(self) -> str:
        return f"n={self.n}, layout={self.layout}, layers={self.n_layers}"


def henaff_skew_init(n: int) -> torch.Tensor:
    """Strict-upper-triangle values of the paper's initial A (scoRNN, after Henaff et al.).

    s_i ~ U(0, π/2) and A[2i, 2i+1] = −tan(s_i/2), so each 2×2 block of the Cayley image is a
    rotation by s_i: eigenvalues spread over the unit circle, none near −1.
    """
    rows, _ = torch.triu_indices(n, n, 1)
    upper = torch.zeros(rows.numel())
    blocks = torch.arange(0, n - 1, 2)
    s = torch.empty(blocks.numel()).uniform_(0, math.pi / 2)
    positions = blocks * n - blocks * (blocks + 1) // 2  # index of (2i, 2i+1) in row-major triu order
    upper[positions] = -torch.tan(s / 2)
    return upper


def neumann_inverse_update(inverse: torch.Tensor, delta: torch.Tensor, order: int) -> torch.Tensor:
    """(I + A − δA)^{-1} from B = (I + A)^{-1} by a Neumann series of the given order.

    (I + A − δA)^{-1} = (I − BδA)^{-1} B = Σ_i (B δA)^i B, truncated after i = order and evaluated
    Horner-style: order k costs k + 1 GEMMs of n×n, and the error is O(‖B δA‖^{k+1}).
    """
    X = inverse @ delta
    result = inverse
    for _ in range(order):
        result = torch.addmm(inverse, X, result)  # eq. 18, one more term: B + X(…)
    return result


class _ScaledCayleyFn(torch.autograd.Function):
    """W = B (I − A) D with the paper's gradient for A, given B ≈ (I + A)^{-1} from outside."""

    @staticmethod
    def forward(ctx, upper, A, inverse, d, rows, cols, fused):  # type: ignore[override]
        if fused:
            from trainables.models.scans import cayley_matrix  # imports Triton, which the CPU never needs

            W = cayley_matrix.cayley_matrix(upper, inverse, d)  # eq. 2 / eq. 4, one launch
        else:
            eye = torch.eye(A.shape[0], dtype=A.dtype, device=A.device)
            W = (inverse @ (eye - A)) * d  # eq. 2 / eq. 4, D on the right scales columns
        ctx.save_for_backward(inverse, W, d, rows, cols)
        return W

    @staticmethod
    def backward(ctx, G):  # type: ignore[override]
        inverse, W, d, rows, cols = ctx.saved_tensors
        V = inverse.T @ torch.addmm(G * d, G, W.T)  # eq. 6: V = (I + A)^{-T} G (D + Wᵀ)
        grad_A = V.T - V  # eq. 5: ∇_A L = Vᵀ − V
        return grad_A[rows, cols], None, None, None, None, None, None


def scaled_cayley(
    upper: torch.Tensor,
    A: torch.Tensor | None,
    inverse: torch.Tensor,
    d: torch.Tensor,
    rows: torch.Tensor,
    cols: torch.Tensor,
    fused: bool = False,
) -> torch.Tensor:
    """U = B (I − A) D from the strict upper triangle `upper` of A (A itself given detached).

    `fused`: one Triton launch builds U from `upper` (`scans.cayley_matrix`), and A is not read
    (None will do). The backward is the paper's eqs. 5–6 with the given B, which for an exact
    inverse equals autograd through a solve, and for NC-GRU's maintained inverse is what
    Algorithm 1 uses.
    """
    return _ScaledCayleyFn.apply(upper, A, inverse, d, rows, cols, fused)


def skew_from_upper(upper: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, n: int) -> torch.Tensor:
    """A = X − Xᵀ with X holding `upper` strictly above the diagonal."""
    X = upper.new_zeros(n, n).index_put((rows, cols), upper)
    return X - X.T


def scaling_diagonal(n: int, rho: int) -> torch.Tensor:
    """The diagonal of D: ones, with the last ρ entries −1 (scoRNN)."""
    if not 0 <= rho <= n:
        raise ValueError(f"rho (negative ones in D) must be between 0 and the hidden size {n}, got {rho}")
    d = torch.ones(n)
    d[n - rho :] = -1.0
    return d


class ScaledCayley(nn.Module):
    """U = (I + A)^{-1}(I − A) D, A skew-symmetric, D = diag(±1) with ρ entries −1 at the end.

    A is parametrized by its strict upper triangle, so it is skew-symmetric by construction and
    the parameter count is the true n(n − 1)/2; the gradient on those entries is exactly the
    paper's ∇_A = Vᵀ − V (eq. 5), so any elementwise optimizer (SGD, RMSProp, Adam) takes the
    paper's step.

    `neumann_order=None` (scoRNN) solves for the exact inverse in every forward pass. Otherwise
    (NC-GRU, Algorithm 1) the inverse B is carried across optimizer steps in a buffer and updated
    by `after_optimizer_step`: exactly every `reset_interval` steps (and on every step for order
    0), else by the Neumann series of that order with δA the step the optimizer actually took, so
    the series is right for Adam and RMSProp as well as SGD.

    `kernel` (the owning model's setting) picks how U is built from B
    (`scans.choice.build_matrix`): the ATen ops or one Triton launch; `record` (the model's) hears
    a fallback.
    """

    def __init__(
        self,
        n: int,
        rho: int,
        neumann_order: int | None = None,
        reset_interval: int = RESET_INTERVAL.default,
        kernel: str = KERNEL.default,
        record: KernelRecord | None = None,
    ) -> None:
        super().__init__()
        self.kernel = kernel
        self.record = record
        if neumann_order is not None:
            NEUMANN_ORDER.validate(neumann_order)
        RESET_INTERVAL.validate(reset_interval)
        self.n = n
        self.rho = rho
        self.neumann_order = neumann_order
        self.reset_interval = reset_interval
        rows, cols = torch.triu_indices(n, n, 1)
        self.register_buffer("rows", rows, persistent=False)
        self.register_buffer("cols", cols, persistent=False)
        self.register_buffer("d", scaling_diagonal(n, rho), persistent=False)
        self.upper = nn.Parameter(henaff_skew_init(n))
        self._last_step: tuple[torch.Tensor, torch.Tensor] | None = None
        if neumann_order is not None:
            A = self.skew().detach()
            self.register_buffer("inverse", self._exact_inverse(A))
            self.register_buffer("previous_A", A)
            self.register_buffer("steps", torch.zeros((), dtype=torch.long))
            # `steps` mirrored on the host: deciding a reset must not wait for the GPU every step
            self._step_count = 0
            self.register_load_state_dict_post_hook(ScaledCayley._count_loaded_steps)

    def skew(self) -> torch.Tensor:
        return skew_from_upper(self.upper, self.rows, self.cols, self.n)

    @staticmethod
    def _exact_inverse(A: torch.Tensor) -> torch.Tensor:
        """(I + A)^{-1}, which exists for every skew A (eigenvalues 1 + iλ, never 0): so the
        error flag of the LU is not read, which would wait for the GPU at every forward pass."""
        eye = torch.eye(A.shape[0], dtype=A.dtype, device=A.device)
        return torch.linalg.inv_ex(eye + A, check_errors=False).inverse  # eq. 2: (I + A)^{-1}

    def forward(self) -> torch.Tensor:
        """The orthogonal matrix U, differentiable in `upper` through eqs. 5–6."""
        exact = self.skew().detach() if self.neumann_order is None else None
        inverse = self.inverse if exact is None else self._exact_inverse(exact)

        def aten(upper: torch.Tensor, inverse: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
            A = exact if exact is not None else skew_from_upper(upper, self.rows, self.cols, self.n).detach()
            return scaled_cayley(upper, A, inverse, d, self.rows, self.cols)

        def kernels(upper: torch.Tensor, inverse: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
            return scaled_cayley(upper, None, inverse, d, self.rows, self.cols, fused=True)  # A from `upper`

        # B from the LU is column-major, from the series row-major: each compiles, and is checked, apart
        key = ("cayley matrix", self.n, self.upper.dtype, inverse.stride())
        return build_matrix(self.kernel, self.record, key, kernels, aten, [self.upper, inverse, self.d])

    @torch.no_grad()
    def after_optimizer_step(self) -> None:
        """Algorithm 1, lines 6–7: carry (I + A)^{-1} over the step just taken on A."""
        if self.neumann_order is None:
            return
        A = self.skew()
        delta = self.previous_A - A  # δA with A_new = A_old − δA, as in eq. 16
        self.steps += 1
        self._step_count += 1
        self._last_step = (self.inverse, delta)
        if self.neumann_order == 0 or self._step_count % self.reset_interval == 0:
            self.inverse = self._exact_inverse(A)
        else:
            self.inverse = neumann_inverse_update(self.inverse, delta, self.neumann_order)  # eq. 18
        self.previous_A = A

    @staticmethod
    def _count_loaded_steps(module: nn.Module, incompatible_keys: object) -> None:
        module._step_count = int(module.steps)

    @torch.no_grad()
    def neumann_condition(self) -> float:
        """‖(I + A)^{-1} δA‖₂ of the last step, which the series needs below 1 (paper section 5.3)."""
        if self._last_step is None:
            return 0.0
        inverse, delta = self._last_step
        return spectral_norm(inverse @ delta)

    def extra_repr(self) -> str:
        inverse = "exact" if self.neumann_order is None else f"neumann {self.neumann_order}"
        return f"n={self.n}, rho={self.rho}, inverse={inverse}, reset_interval={self.reset_interval}"


def spectral_norm(X: torch.Tensor) -> float:
    """‖X‖₂ through the eigenvalues of XᵀX, which is cheaper than an SVD."""
    return math.sqrt(max(float(torch.linalg.eigvalsh(X.T @ X).max()), 0.0))


@torch.no_grad()
def orthogonality_error(M: torch.Tensor) -> float:
    """‖MᵀM − I‖₂, the largest deviation of a squared singular value of M from one."""
    E = M.T @ M - torch.eye(M.shape[0], dtype=M.dtype, device=M.device)
    return float(torch.linalg.eigvalsh(E).abs().max())


def orthogonal_diagnostics(matrices: list[torch.Tensor], parameters: list[nn.Parameter]) -> dict[str, float]:
    """`ortho_error` = max‖UᵀU − I‖₂ over the model's orthogonal matrices, and the gradient norm
    of the orthogonal parameters (which the orthogonal optimizer sees) from the last backward."""
    grads = [p.grad.detach().flatten() for p in parameters if p.grad is not None]
    return {
        "ortho_error": max(orthogonality_error(M) for M in matrices),
        "orth_grad_norm": float(torch.cat(grads).norm()) if grads else 0.0,
    }

import math

import pytest
import torch

from trainables.models.orthogonal import (
    GivensRotations,
    ScaledCayley,
    givens_pairs,
    henaff_skew_init,
    neumann_inverse_update,
    orthogonality_error,
    resolve_layout,
    scaled_cayley,
    scaling_diagonal,
    skew_from_upper,
)
from trainables.optimizers import make_optimizer

OPTIMIZERS = ("rmsprop", "rmsprop_tf", "adam", "sgd")


def givens_matrix(n: int, p: int, q: int, theta: torch.Tensor) -> torch.Tensor:
    """The rotation of one pair as an n×n matrix acting on column vectors."""
    G = torch.eye(n, dtype=theta.dtype)
    G[p, p] = G[q, q] = torch.cos(theta)
    G[p, q], G[q, p] = -torch.sin(theta), torch.sin(theta)
    return G


@pytest.mark.parametrize(("n", "layout", "capacity"), [(8, "fft", 0), (8, "tunable", 4), (7, "tunable", 3)])
def test_givens_product_equals_rotations_one_by_one(n: int, layout: str, capacity: int) -> None:
    torch.manual_seed(0)
    rotations = GivensRotations(n, layout, capacity).double()
    U = torch.eye(n, dtype=torch.float64)
    k = 0
    for pairs in givens_pairs(n, layout, capacity):
        for p, q in pairs:
            U = givens_matrix(n, p, q, rotations.angles[k].detach()) @ U
            k += 1
    assert k == rotations.angles.numel()
    M = rotations.matrix().detach()
    assert torch.allclose(M.T, U, atol=1e-12)  # h @ M == U h
    h = torch.randn(5, n, dtype=torch.float64)
    assert torch.allclose(h @ M, rotations.rotate(h).detach(), atol=1e-12)
    assert orthogonality_error(M) < 1e-12
    assert torch.linalg.det(M).item() == pytest.approx(1.0)


def test_givens_layouts() -> None:
    fft = givens_pairs(8, "fft", 0)
    assert fft == [
        [(0, 4), (1, 5), (2, 6), (3, 7)],
        [(0, 2), (1, 3), (4, 6), (5, 7)],
        [(0, 1), (2, 3), (4, 5), (6, 7)],
    ]
    tunable = givens_pairs(6, "tunable", 3)
    assert tunable == [[(0, 1), (2, 3), (4, 5)], [(1, 2), (3, 4)], [(0, 1), (2, 3), (4, 5)]]
    assert GivensRotations(128, "tunable", 4).angles.numel() == 2 * 127
    assert GivensRotations(128, "fft", 0).angles.numel() == 7 * 64
    assert resolve_layout("auto", 128) == "fft" and resolve_layout("auto", 100) == "tunable"
    with pytest.raises(ValueError, match="layout 'fft'"):
        resolve_layout("fft", 100)


def test_full_tunable_capacity_reaches_any_rotation() -> None:
    """With capacity n the layers can be fitted to a random rotation (SO(n) is reachable)."""
    torch.manual_seed(0)
    n = 6
    target = torch.linalg.qr(torch.randn(n, n, dtype=torch.float64))[0]
    if torch.linalg.det(target) < 0:
        target[:, 0] = -target[:, 0]
    rotations = GivensRotations(n, "tunable", n).double()
    optimizer = torch.optim.LBFGS(
        rotations.parameters(),
        max_iter=1000,
        tolerance_grad=1e-12,
        tolerance_change=1e-15,
        line_search_fn="strong_wolfe",
    )

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = (rotations.matrix() - target).square().sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    assert (rotations.matrix() - target).abs().max() < 1e-6


def test_henaff_init_gives_rotation_blocks() -> None:
    torch.manual_seed(0)
    n = 6
    rows, cols = torch.triu_indices(n, n, 1)
    A = skew_from_upper(henaff_skew_init(n).double(), rows, cols, n)
    assert torch.equal(A, -A.T)
    nonzero = {(i, j) for i, j in (A != 0).nonzero().tolist()}
    assert nonzero == {(0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4)}
    U = torch.linalg.solve(torch.eye(n, dtype=torch.float64) + A, torch.eye(n, dtype=torch.float64) - A)
    angle = torch.atan2(U[1, 0], U[0, 0]).abs()  # block 0 rotates by s ∈ (0, π/2)
    assert 0 < angle < math.pi / 2


def test_scaling_diagonal_puts_negative_ones_last() -> None:
    assert scaling_diagonal(5, 2).tolist() == [1, 1, 1, -1, -1]
    assert scaling_diagonal(3, 0).tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="rho"):
        scaling_diagonal(3, 4)


@pytest.mark.parametrize("rho", [0, 2, 5])
def test_cayley_gradient_equals_autograd_through_exact_solve(rho: int) -> None:
    """Eqs. 5–6 with an exact inverse are the true derivative of U with respect to A's upper triangle."""
    torch.manual_seed(0)
    n = 5
    rows, cols = torch.triu_indices(n, n, 1)
    d = scaling_diagonal(n, rho).double()
    upper = torch.randn(rows.numel(), dtype=torch.float64, requires_grad=True)

    def paper(upper: torch.Tensor) -> torch.Tensor:
        A = skew_from_upper(upper.detach(), rows, cols, n)
        inverse = torch.linalg.inv(torch.eye(n, dtype=torch.float64) + A)
        return scaled_cayley(upper, A, inverse, d, rows, cols)

    def solve(upper: torch.Tensor) -> torch.Tensor:
        A = skew_from_upper(upper, rows, cols, n)
        eye = torch.eye(n, dtype=torch.float64)
        return torch.linalg.solve(eye + A, eye - A) * d

    assert torch.autograd.gradcheck(paper, (upper,))
    G = torch.randn(n, n, dtype=torch.float64)
    (g_paper,) = torch.autograd.grad((paper(upper) * G).sum(), upper)
    (g_solve,) = torch.autograd.grad((solve(upper) * G).sum(), upper)
    assert torch.allclose(g_paper, g_solve, atol=1e-12)


def test_cayley_gradient_is_the_papers_v_formula() -> None:
    """The gradient on A's upper triangle is (Vᵀ − V) there, V = (I + A)^{-T} G (D + Uᵀ)."""
    torch.manual_seed(1)
    n = 6
    cayley = ScaledCayley(n, rho=2).double()
    G = torch.randn(n, n, dtype=torch.float64)
    U = cayley()
    (U * G).sum().backward()
    A = cayley.skew().detach()
    eye = torch.eye(n, dtype=torch.float64)
    D = torch.diag(cayley.d)
    V = torch.linalg.inv(eye + A).T @ G @ (D + U.detach().T)
    assert torch.allclose(cayley.upper.grad, (V.T - V)[cayley.rows, cayley.cols], atol=1e-12)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_neumann_error_is_order_k_plus_one(order: int) -> None:
    torch.manual_seed(0)
    n = 16
    eye = torch.eye(n, dtype=torch.float64)
    X = torch.randn(n, n, dtype=torch.float64)
    A, S = (X - X.T) / 4, torch.randn(n, n, dtype=torch.float64)
    S = (S - S.T) / 2
    B = torch.linalg.inv(eye + A)
    scales = torch.logspace(-3, -1, 5, dtype=torch.float64)
    sizes, errors = [], []
    for scale in scales:
        delta = scale * S
        exact = torch.linalg.inv(eye + A - delta)
        errors.append(torch.linalg.matrix_norm(neumann_inverse_update(B, delta, order) - exact, 2))
        sizes.append(torch.linalg.matrix_norm(B @ delta, 2))
    slope = torch.diff(torch.log(torch.stack(errors))) / torch.diff(torch.log(torch.stack(sizes)))
    assert slope.min() > order + 1 - 0.2 and slope.max() < order + 1 + 0.2


def test_neumann_order_zero_terms_is_the_old_inverse() -> None:
    B, delta = torch.eye(3), torch.ones(3, 3)
    assert torch.equal(neumann_inverse_update(B, delta, 0), B)


def _steps(cayley: ScaledCayley, optimizer_name: str, lr: float, steps: int, seed: int = 0) -> list[float]:
    """Train U towards a random target with one optimizer; the orthogonality error after each step."""
    torch.manual_seed(seed)
    target = torch.linalg.qr(torch.randn(cayley.n, cayley.n, dtype=torch.float64))[0]
    optimizer = make_optimizer(optimizer_name, [cayley.upper], lr)
    errors = []
    for _ in range(steps):
        optimizer.zero_grad()
        (cayley() - target).square().sum().backward()
        optimizer.step()
        cayley.after_optimizer_step()
        errors.append(orthogonality_error(cayley().detach()))
    return errors


@pytest.mark.parametrize("optimizer_name", OPTIMIZERS)
def test_paper_full_matrix_step_keeps_a_skew_and_equals_upper_triangle_step(optimizer_name: str) -> None:
    """Stepping a full A with the paper's gradient Vᵀ − V keeps A skew under every optimizer,
    and is the same step as ours on A's upper triangle."""
    torch.manual_seed(0)
    n = 6
    cayley = ScaledCayley(n, rho=1).double()
    full_A = torch.nn.Parameter(cayley.skew().detach().clone())
    ours = make_optimizer(optimizer_name, [cayley.upper], 1e-2)
    paper = make_optimizer(optimizer_name, [full_A], 1e-2)
    target = torch.linalg.qr(torch.randn(n, n, dtype=torch.float64))[0]
    for _ in range(20):
        ours.zero_grad()
        (cayley() - target).square().sum().backward()
        upper_grad = cayley.upper.grad
        full_A.grad = skew_from_upper(upper_grad, cayley.rows, cayley.cols, n)  # Vᵀ − V, skew
        ours.step()
        paper.step()
        assert torch.equal(full_A.detach(), -full_A.detach().T)
        assert torch.allclose(full_A.detach(), cayley.skew().detach(), atol=1e-12)
        A = cayley.skew().detach()
        assert torch.equal(A, -A.T)


@pytest.mark.parametrize("optimizer_name", OPTIMIZERS)
def test_exact_cayley_stays_orthogonal_after_200_steps(optimizer_name: str) -> None:
    cayley = ScaledCayley(8, rho=3).double()
    assert orthogonality_error(cayley().detach()) < 1e-12
    errors = _steps(cayley, optimizer_name, 1e-2, 200)
    assert max(errors) < 1e-5


def test_neumann_inverse_error_is_bounded_and_reset_to_machine_precision() -> None:
    interval = 10
    cayley = ScaledCayley(16, rho=4, neumann_order=2, reset_interval=interval).double()
    errors = _steps(cayley, "adam", 5e-3, 40)
    resets = errors[interval - 1 :: interval]
    between = [e for i, e in enumerate(errors) if (i + 1) % interval]
    assert max(resets) < 1e-12
    assert max(between) < 1e-3
    assert max(between) > 1e3 * max(resets)  # the test does see the series drift between resets
    assert 0 < cayley.neumann_condition() < 1


def test_neumann_order_zero_is_exact_every_step() -> None:
    cayley = ScaledCayley(16, rho=4, neumann_order=0, reset_interval=50).double()
    assert max(_steps(cayley, "adam", 2e-2, 20)) < 1e-12


def test_maintained_inverse_is_saved_with_the_model() -> None:
    cayley = ScaledCayley(6, rho=1, neumann_order=2, reset_interval=50).double()
    _steps(cayley, "sgd", 1e-2, 3)
    state = cayley.state_dict()
    assert {"upper", "inverse", "previous_A", "steps"} <= set(state)
    restored = ScaledCayley(6, rho=1, neumann_order=2, reset_interval=50).double()
    restored.load_state_dict(state)
    assert torch.equal(restored(), cayley())


def test_cayley_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="neumann_order"):
        ScaledCayley(4, 0, neumann_order=4)
    with pytest.raises(ValueError, match="reset_interval"):
        ScaledCayley(4, 0, neumann_order=2, reset_interval=0)


def test_a_restored_inverse_keeps_its_reset_schedule() -> None:
    """The step count that decides the exact resets comes back with the model, also through a
    parent module's state dict."""
    interval = 4
    cayley = ScaledCayley(6, rho=1, neumann_order=2, reset_interval=interval).double()
    _steps(cayley, "sgd", 1e-2, 3)
    parent = torch.nn.ModuleDict({"cayley": ScaledCayley(6, rho=1, neumann_order=2, reset_interval=interval)})
    parent.double().load_state_dict(torch.nn.ModuleDict({"cayley": cayley}).state_dict())
    restored = parent["cayley"]
    assert restored._step_count == 3
    errors = _steps(restored, "sgd", 1e-2, 1)  # its fourth step: an exact reset
    assert errors[0] < 1e-12

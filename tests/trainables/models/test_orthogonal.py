import importlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from trainables.catalog import load_all
from trainables.models.base import OrthogonalModel
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
from trainables.models.scans import choice, self_check
from trainables.optimizers import make_optimizer
from trainables.registry import MODELS

load_all()

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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_the_exact_inverse_is_bit_for_bit_the_one_linalg_inv_gives(dtype: torch.dtype) -> None:
    """Reading no error flag changes no number: scoRNN's U and NC-GRU's reset inverse are those
    `torch.linalg.inv` gave."""
    torch.manual_seed(0)
    n = 24
    eye = torch.eye(n, dtype=dtype)
    scornn = ScaledCayley(n, rho=3).to(dtype)
    with torch.no_grad():
        scornn.upper.add_(0.5 * torch.randn_like(scornn.upper))
    A = scornn.skew().detach()
    inverse = torch.linalg.inv(eye + A)
    assert torch.equal(scornn(), scaled_cayley(scornn.upper, A, inverse, scornn.d, scornn.rows, scornn.cols))
    ncgru = ScaledCayley(n, rho=3, neumann_order=0).to(dtype)
    with torch.no_grad():
        ncgru.upper.add_(0.5 * torch.randn_like(ncgru.upper))
    ncgru.after_optimizer_step()
    assert torch.equal(ncgru.inverse, torch.linalg.inv(eye + ncgru.skew().detach()))


def host_reads(run: Callable[[], None]) -> list[str]:
    """Where `run` reads a tensor's value back to the host (`aten::_local_scalar_dense`, which on
    CUDA waits for the GPU), as the chain of ops it ran in. The CPU's LU solve checks its pivots
    that way and the CUDA one does not, so reads inside `aten::linalg_lu_solve` are left out."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        run()
    reads = []
    for event in profile.events():
        chain, parent = [event.name], event.cpu_parent
        while parent is not None:
            chain.append(parent.name)
            parent = parent.cpu_parent
        if event.name == "aten::_local_scalar_dense" and "aten::linalg_lu_solve" not in chain:
            reads.append(" in ".join(chain))
    return reads


@pytest.mark.parametrize(
    ("neumann_order", "interval"),
    [(None, 50), (0, 50), (2, 2)],
    ids=["scornn exact", "ncgru order 0", "ncgru order 2 with resets"],
)
def test_the_cayley_update_never_reads_from_the_device(neumann_order: int | None, interval: int) -> None:
    """Forward, backward and Algorithm 1's inverse update (series and reset) read nothing back:
    `torch.linalg.inv` read its error flag at every call, which syncs a GPU with the host."""
    torch.manual_seed(0)
    cayley = ScaledCayley(8, rho=2, neumann_order=neumann_order, reset_interval=interval)

    def step() -> None:
        (cayley() * torch.randn(8, 8)).sum().backward()
        with torch.no_grad():  # the optimizer's own reads are its business, not the parametrization's
            cayley.upper -= 1e-2 * cayley.upper.grad
        cayley.upper.grad = None
        cayley.after_optimizer_step()

    assert host_reads(lambda: [step() for _ in range(3)]) == []
    # and it sees a read where there is one
    assert host_reads(lambda: torch.linalg.inv(torch.eye(3))) != []


# The `kernel` setting picks the matrices' builds as it picks the time loop's implementation:
# `loop` the ATen ops, `fused` the Triton kernels, `auto` the kernels on CUDA after a self-check.
# Here the kernels run in Triton's interpreter on CPU tensors; `kernels_resolve_as_on_cuda` makes
# the builds (only they: the scans keep the loop) resolve the setting as on a GPU.
BUILDS = {
    "eurnn": "givens_matrix",
    "goru": "givens_matrix",
    "scornn": "cayley_matrix",
    "ncgru": "cayley_matrix",
}


def model_of(name: str, kernel: str) -> OrthogonalModel:
    torch.manual_seed(0)
    return MODELS.get(name).create(3, 8, kernel=kernel)


def spy_on_kernels(monkeypatch: pytest.MonkeyPatch, name: str, fault: str | None = None) -> list[int]:
    """Count the calls of the model's Triton build (`givens_matrix.givens_matrix` or
    `cayley_matrix.cayley_matrix`), which `fault` breaks: a wrong matrix or an error at launch."""
    module = importlib.import_module(f"trainables.models.scans.{BUILDS[name]}")
    build, calls = getattr(module, BUILDS[name]), []

    def spied(*args: Any, **kwargs: Any) -> torch.Tensor:
        calls.append(1)
        if fault == "error":
            raise RuntimeError("out of resources: shared memory, required: 395264, hardware limit: 232448")
        matrix = build(*args, **kwargs)
        return matrix * 1.01 if fault == "mismatch" else matrix

    monkeypatch.setattr(module, BUILDS[name], spied)
    return calls


@pytest.fixture
def kernels_resolve_as_on_cuda(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    pytest.importorskip("triton", reason="the Triton builds need Triton (a test dependency)")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    resolve = choice.resolve_kernel

    def as_on_cuda(setting: str, device: torch.device, dtype: torch.dtype, dtypes: tuple) -> str:
        return resolve(setting, torch.device("cuda"), dtype, dtypes)

    monkeypatch.setattr(choice, "resolve_kernel", as_on_cuda)
    self_check.forget()
    yield
    self_check.forget()


def aten_matrices(model: OrthogonalModel) -> list[torch.Tensor]:
    """The model's matrices as the ATen ops build them."""
    matrices = []
    for part in model.parametrizations():
        setting, part.kernel = part.kernel, "loop"
        matrices.append(part.matrix() if isinstance(part, GivensRotations) else part())
        part.kernel = setting
    return matrices


@pytest.mark.parametrize("name", BUILDS)
def test_kernel_loop_builds_with_aten_even_where_the_kernels_could_run(
    name: str, monkeypatch: pytest.MonkeyPatch, kernels_resolve_as_on_cuda: None
) -> None:
    calls = spy_on_kernels(monkeypatch, name)
    model = model_of(name, "loop")
    x = torch.randn(4, 2, 3)
    model(x)[0].sum().backward()
    assert calls == [] and model.kernel_record.kernel == "loop"


@pytest.mark.parametrize("name", BUILDS)
def test_kernel_fused_builds_with_the_kernels_unchecked(
    name: str, monkeypatch: pytest.MonkeyPatch, kernels_resolve_as_on_cuda: None
) -> None:
    calls = spy_on_kernels(monkeypatch, name)
    model = model_of(name, "fused")
    matrices = model.orthogonal_matrices()
    assert len(calls) == len(matrices)  # one launch each: no self-check ran first
    for got, want in zip(matrices, aten_matrices(model), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_kernel_fused_where_the_builds_cannot_run_names_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match=r"kernel: 'fused' cannot run here: the device is cpu"):
        model_of("eurnn", "fused").orthogonal_matrices()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    rotations = GivensRotations(8, "fft", 1, kernel="fused").half()
    with pytest.raises(ValueError, match=r"the fused kernels compute in float32 or float64"):
        rotations.matrix()


@pytest.mark.parametrize("name", BUILDS)
def test_auto_checks_each_build_once_then_takes_the_kernels(
    name: str, monkeypatch: pytest.MonkeyPatch, kernels_resolve_as_on_cuda: None
) -> None:
    calls = spy_on_kernels(monkeypatch, name)
    model = model_of(name, "auto")
    x = torch.randn(4, 2, 3)
    out, _ = model(x)
    checked = len(calls)
    model(x)
    matrices = len(model.parametrizations())
    assert checked == matrices + 1 and len(calls) == checked + matrices  # one check, kept for the process
    assert model.kernel_record.kernel == "loop" and model.kernel_record.problems == []
    torch.testing.assert_close(out, model_of(name, "loop")(x)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fault", ["mismatch", "error"])
@pytest.mark.parametrize("name", BUILDS)
def test_a_build_that_fails_its_self_check_falls_back_to_aten_and_says_so(
    name: str,
    fault: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    kernels_resolve_as_on_cuda: None,
) -> None:
    calls = spy_on_kernels(monkeypatch, name, fault)
    model = model_of(name, "auto")
    x = torch.randn(4, 2, 3)
    for _ in range(2):  # checked once; the verdict holds for the process
        out, last = model(x)
    assert len(calls) == 1
    reference = model_of(name, "loop")(x)
    assert torch.equal(out, reference[0]) and torch.equal(last, reference[1])  # the ATen build's numbers
    record = model.kernel_record
    assert record.kernel == f"loop+{self_check.MATRIX_FELL_BACK}" and len(record.problems) == 1
    assert not any(c in record.kernel for c in " ,")  # one word of the trial's `kernel` metric
    expected = "out of resources" if fault == "error" else "the matrix differs from the ATen build's"
    assert expected in record.problems[0]
    assert sum("failed its self-check" in message for message in caplog.messages) == 1


@pytest.mark.parametrize("name", BUILDS)
def test_auto_on_a_cpu_builds_with_aten_bit_for_bit(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the CPU's trials ran before the kernels existed, to the bit, and no self-check."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # the interpreter could run the kernels: still not taken

    def no_check(*args: Any) -> None:
        raise AssertionError("a CPU checked a Triton build")

    monkeypatch.setattr(self_check, "build_verdict", no_check)
    model = model_of(name, "auto")
    for part in model.parametrizations():
        if isinstance(part, GivensRotations):
            built, want = part.matrix(), part.rotate(torch.eye(part.n))
        else:
            A = part.skew().detach()
            eye = torch.eye(part.n)
            inverse = torch.linalg.inv(eye + A) if part.neumann_order is None else part.inverse
            built, want = part(), (inverse @ (eye - A)) * part.d
        assert torch.equal(built, want)

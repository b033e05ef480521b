"""Fused recurrences: the time loops of `loop` as Triton kernels.

A loop in Python launches about a dozen small kernels per time step, and on a GPU the launches,
not the arithmetic, set the pace. Here the whole forward scan is one launch and the backward one
more, spread over the GPU as `plan` decides (the path, the programs and what each keeps on chip);
the kernels are in `reset_after_kernels` and `reset_before_kernels`. The weight gradients stay
one GEMM over all steps, outside the kernels.

Arithmetic is float32; the products' operands are IEEE float32 unless a precision is asked for
(`tf32x3`: three TF32 products, about float32's accuracy; `tf32`: one, about 1e-3). The plain
implementation in `loop` is the reference these are tested against (under `TRITON_INTERPRET=1`
on a CPU, and on CUDA), and the one `self_check` falls back to.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import triton

from trainables.models.scans import loop, reset_after_kernels, reset_before_kernels, self_check
from trainables.models.scans.barrier import raise_if_stalled, stall_flag
from trainables.models.scans.loop import UpdateGate
from trainables.models.scans.plan import Precision, ScanPlan, gpu_of, plan_reset_after, plan_reset_before
from trainables.models.scans.self_check import KernelRecord

UPDATE_CODES = {None: 0, "keeps": 1, "admits": 2}
GivensTables = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # cos, sin (layers, n), partner (int32)


def compile_options(plan: ScanPlan, one_launch: bool = True) -> dict[str, object]:
    """The constants a plan compiles its kernels with (and the launch options that go with them)."""
    split = plan.path == "split"
    options: dict[str, object] = dict(
        SPLIT=split,
        RESIDENT=plan.resident,
        GRID_SYNC=split and one_launch,
        ROWS=plan.rows,
        BLOCK_N=plan.block_n,
        BLOCK_K=plan.block_k,
        KC=plan.chunk,
        PRECISION=plan.precision,
        SPIN_LIMIT=plan.spin_limit,
        num_warps=plan.warps,
    )
    if split and one_launch:
        options["launch_cooperative_grid"] = True  # the driver refuses a grid that cannot all be resident
    return options


def _launch(kernel: triton.JITFunction, plan: ScanPlan, T: int, backward: bool, phases: int, tensors: list, ints: list, **flags) -> None:  # fmt: skip
    """All T steps in one launch, or, where a split scan's programs cannot wait for each other, one
    launch per phase of each step (a kernel of several `phases` per step takes PHASE); the kernels
    take (tensors…, sync counters, stall flag, t0, steps, ints…)."""
    split = plan.path == "split"
    device = tensors[0].device
    one_launch = not split or (plan.grid_sync if plan.grid_sync is not None else device.type == "cuda")
    grid = (plan.slices, plan.row_blocks)
    flag = stall_flag(device)
    options = {**compile_options(plan, one_launch), **flags}
    # barrier counters, one per row block, where programs meet in one launch (else never read)
    sync = torch.zeros(plan.row_blocks, dtype=torch.int32, device=device) if options["GRID_SYNC"] else flag
    if one_launch:
        launches = [(0, T, -1)]
    else:
        order = range(T - 1, -1, -1) if backward else range(T)
        launches = [(t, 1, phase if phases > 1 else -1) for t in order for phase in range(phases)]
    for t0, steps, phase in launches:
        if phases > 1:
            options["PHASE"] = phase
        kernel[grid](*tensors, sync, flag, t0, steps, *ints, **options)
    if device.type != "cuda":  # the interpreter: reading the flag costs nothing
        raise_if_stalled(device)


def _states(h0: torch.Tensor, T: int) -> torch.Tensor:
    states = h0.new_empty(T + 1, *h0.shape)
    states[0] = h0
    return states


def _scratch(plan: ScanPlan, like: torch.Tensor) -> torch.Tensor:
    """Each program's rows of partner-exchange memory, where the rotation layers need it."""
    if not plan.in_memory:
        return like.new_empty(1)
    return like.new_empty(plan.row_blocks * plan.rows, plan.block_n)


def _blocks(M: torch.Tensor, n: int, reset: bool, update: bool) -> tuple[torch.Tensor, ...]:
    """Views of U, W_r, W_z inside M = [U | W_r | W_z] (an absent block is M itself, never read)."""
    reset_view = M[:, n:] if reset else M
    update_view = M[:, (1 + reset) * n :] if update else M
    return M, reset_view, update_view


class _ResetAfterScan(torch.autograd.Function):
    """`loop.reset_after_scan`, fused; the modReLU recurrence is the case without gates.

    On the givens path the kernels apply U as its rotation layers (`tables`) and read only the
    gate blocks of M; M's gradient is the same GEMM either way, and autograd carries U's part back
    to the angles through `GivensRotations.matrix`.
    """

    @staticmethod
    def forward(ctx, projected, h0, M, bias, eps, reset, update, tables, plan):  # type: ignore[override]
        projected, M = projected.contiguous(), M.contiguous()
        T, B, W = projected.shape
        n = h0.shape[1]
        code = UPDATE_CODES[update]
        givens = plan.path == "givens"
        cos, sin, partner = tables if givens else (M, M, M)
        save = any(ctx.needs_input_grad[:4]) and (reset or code != 0)
        states = _states(h0, T)
        hm = torch.empty_like(projected) if save else projected.new_empty(1)
        threshold = (bias + eps).contiguous()
        scratch = _scratch(plan, projected)
        tensors = [
            projected,
            *_blocks(M, n, reset, code != 0),
            cos,
            sin,
            partner,
            scratch,
            threshold,
            states,
            hm,
        ]
        flags = dict(RESET=reset, UPDATE=code, SAVE=save, GIVENS=givens, IN_MEMORY=plan.in_memory)
        _launch(
            reset_after_kernels.reset_after_forward,
            plan,
            T,
            False,
            1,
            tensors,
            [B, n, W, W, cos.shape[0]],
            **flags,
        )
        ctx.save_for_backward(projected, M, cos, sin, partner, threshold, states, hm)
        ctx.reset, ctx.code, ctx.plan = reset, code, plan
        return states[1:], states[T].clone()

    @staticmethod
    def backward(ctx, grad_outputs, grad_last):  # type: ignore[override]
        projected, M, cos, sin, partner, threshold, states, hm = ctx.saved_tensors
        T, B, W = projected.shape
        n = states.shape[2]
        plan, reset, code = ctx.plan, ctx.reset, ctx.code
        carry = grad_last.contiguous().clone()
        d_hm = torch.empty_like(projected)
        d_xc = projected.new_empty(T, B, n) if reset else projected.new_empty(1)
        d_bias = projected.new_zeros(plan.row_blocks, n)
        tensors = [
            projected, *_blocks(M, n, reset, code != 0), cos, sin, partner, _scratch(plan, projected),
            threshold, states, hm, grad_outputs.contiguous(), carry, d_hm, d_xc, d_bias,
        ]  # fmt: skip
        flags = dict(RESET=reset, UPDATE=code, GIVENS=plan.path == "givens", IN_MEMORY=plan.in_memory)
        _launch(
            reset_after_kernels.reset_after_backward,
            plan,
            T,
            True,
            2,
            tensors,
            [B, n, W, W, cos.shape[0]],
            **flags,
        )
        d_M = states[:-1].reshape(-1, n).T @ d_hm.reshape(-1, W)  # one GEMM over all steps
        d_projected = torch.cat([d_xc, d_hm[..., n:]], dim=-1) if reset else d_hm
        return d_projected, carry, d_M, d_bias.sum(0), None, None, None, None, None


class _ResetBeforeScan(torch.autograd.Function):
    """`loop.reset_before_scan`, fused."""

    @staticmethod
    def forward(ctx, projected, h0, M_ru, M_c, bias, eps, plan):  # type: ignore[override]
        projected, M_ru, M_c = projected.contiguous(), M_ru.contiguous(), M_c.contiguous()
        T, B, _ = projected.shape
        n = h0.shape[1]
        save = any(ctx.needs_input_grad[:5])
        kept = T if save else 1  # without a backward, one step's scratch is enough
        states = _states(h0, T)
        gates = projected.new_empty(kept, B, 2 * n)
        rh = projected.new_empty(kept, B, n)
        cand = projected.new_empty(kept, B, n)
        threshold = (bias + eps).contiguous()
        tensors = [projected, M_ru, M_ru[:, n:], M_c, threshold, states, gates, rh, cand]
        ints = [B, n, B * n if save else 0]
        _launch(reset_before_kernels.reset_before_forward, plan, T, False, 2, tensors, ints, SAVE=save)
        ctx.save_for_backward(M_ru, M_c, states, gates, rh, cand)
        ctx.plan = plan
        return states[1:], states[T].clone()

    @staticmethod
    def backward(ctx, grad_outputs, grad_last):  # type: ignore[override]
        M_ru, M_c, states, gates, rh, cand = ctx.saved_tensors
        T, B, n = rh.shape
        carry = grad_last.contiguous().clone()
        d_pre = states.new_empty(T, B, 3 * n)
        d_bias = states.new_zeros(ctx.plan.row_blocks, n)
        tensors = [
            M_ru,
            M_ru[:, n:],
            M_c,
            states,
            gates,
            cand,
            grad_outputs.contiguous(),
            carry,
            d_pre,
            d_bias,
        ]
        _launch(reset_before_kernels.reset_before_backward, ctx.plan, T, True, 3, tensors, [B, n])
        d_M_ru = states[:-1].reshape(-1, n).T @ d_pre[..., n:].reshape(-1, 2 * n)
        d_M_c = rh.reshape(-1, n).T @ d_pre[..., :n].reshape(-1, n)
        return d_pre, carry, d_M_ru, d_M_c, d_bias.sum(0), None, None


def reset_after_scan(
    projected: torch.Tensor,
    h0: torch.Tensor,
    M: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
    reset: bool,
    update: UpdateGate,
    *,
    givens: GivensTables | None = None,
    precision: Precision = "ieee",
    plan: ScanPlan | None = None,
    check: bool = False,
    record: KernelRecord | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused `loop.reset_after_scan`; with `reset=False, update=None` the modReLU recurrence
    h_t = modReLU(x_t + h_{t−1} M) of EURNN and scoRNN.

    `givens`: U = M[:, :n] as rotation layers (`GivensRotations.tables`), which the givens path
    applies directly. `plan` fixes the launch (tests, benchmarks); `check` runs `self_check`'s
    self-check at the plan's first use and falls back to the loop when it fails; `record` hears
    what ran.
    """
    _, B, W = projected.shape
    n = h0.shape[1]
    if plan is None:
        gates = W // n - 1
        plan = plan_reset_after(n, B, gates, givens is not None, precision, gpu_of(projected.device))

    def fused_scan(p: torch.Tensor, h: torch.Tensor, m: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        return _ResetAfterScan.apply(p, h, m, b, eps, reset, update, givens, plan.for_batch(p.shape[1]))

    def loop_scan(p: torch.Tensor, h: torch.Tensor, m: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        return loop.reset_after_scan(p, h, m, b, eps, reset, update)

    return _run(
        (_variant(plan), reset, update), plan, fused_scan, loop_scan, [projected, h0, M, bias], check, record
    )


def reset_before_scan(
    projected: torch.Tensor,
    h0: torch.Tensor,
    M_ru: torch.Tensor,
    M_c: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
    *,
    precision: Precision = "ieee",
    plan: ScanPlan | None = None,
    check: bool = False,
    record: KernelRecord | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused `loop.reset_before_scan` (NC-GRU eq. 19); options as `reset_after_scan`'s."""
    B, n = h0.shape
    plan = plan or plan_reset_before(n, B, precision, gpu_of(projected.device))

    def fused_scan(p, h, m_ru, m_c, b):  # type: ignore[no-untyped-def]
        return _ResetBeforeScan.apply(p, h, m_ru, m_c, b, eps, plan.for_batch(p.shape[1]))

    def loop_scan(p, h, m_ru, m_c, b):  # type: ignore[no-untyped-def]
        return loop.reset_before_scan(p, h, m_ru, m_c, b, eps)

    return _run(_variant(plan), plan, fused_scan, loop_scan, [projected, h0, M_ru, M_c, bias], check, record)


def _variant(plan: ScanPlan) -> tuple:
    """What makes a compiled kernel differ, so the self-check runs once per variant."""
    return (plan.scan, plan.path, plan.rows, plan.block_n, plan.block_k, plan.resident, plan.precision)


def _run(key, plan: ScanPlan, fused_scan, loop_scan, inputs: Sequence[torch.Tensor], check: bool, record: KernelRecord | None):  # type: ignore[no-untyped-def]  # fmt: skip
    """The fused scan, unless its self-check failed in this process: then the loop, said so."""
    problem = self_check.verdict(key, fused_scan, loop_scan, inputs, plan.precision) if check else None
    if record is not None:
        record.hear(plan, problem)
    return loop_scan(*inputs) if problem else fused_scan(*inputs)

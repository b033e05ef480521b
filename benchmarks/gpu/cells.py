"""Speed of the recurrent cells, measured in one run so every figure shares the machine's state.

Prints (1) forward+backward time per batch of every registered model relative to `nn.GRU` at the
same hidden size, with the path each model's time loop took (`torch` for PyTorch's own RNNs —
cuDNN on a GPU —, the fused launch for the Triton kernels: path, rows per program, programs,
SMs and precision —, `loop` for the plain loop); on a GPU the orthogonal models run fused and
once more as `<model> loop`; (2) NC-GRU's inverse update
by Neumann series of order 1–3 against the exact inverse, and (3) the share of a whole training
step spent on the orthogonal parametrization (building U, its backward, and Algorithm 1's
inverse update): on a GPU with the Triton builds of U the models take there, and beside it with
the ATen ops they replace (`aten update ms`). The figures are also written to
`benchmarks/results/cells-<device>.json`.

Models are timed round-robin, one batch each per round, and each figure is the fastest of its
rounds: load from other processes only ever adds time, so on a shared machine the minimum is the
most repeatable estimate, and round-robin keeps a long burst of load from hitting one model only.

    python -m benchmarks.gpu.cells            # the issue's sizes
    python -m benchmarks.gpu.cells --quick    # shorter sequences and fewer rounds
    python -m benchmarks.gpu.cells --size 64,100,128 --neumann-sizes 128,256
    python -m benchmarks.gpu.cells --device cuda   # on a GPU (each timing waits for the GPU to finish)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch

from benchmarks import figures_file
from trainables.catalog import load_all
from trainables.models.base import OrthogonalModel, RecurrentModel
from trainables.models.orthogonal import GivensRotations, ScaledCayley, neumann_inverse_update
from trainables.optimizers import make_optimizer
from trainables.registry import MODELS

INPUT_SIZE = 10
DEFAULT_SIZES = ((128, 200, 128), (32, 1000, 256), (32, 50, 512), (32, 50, 2048))
QUICK_SIZES = ((128, 50, 128), (32, 100, 256))
ONLY = {2048: ("gru", "eurnn")}  # EURNN alone reaches 2048 units (PTB); the others stop near 1000
DEFAULT_NEUMANN_SIZES = (128, 512, 1024)
VARIANTS = {  # settings that change the cell's work per step, beyond the registered defaults
    "ncgru c": ("ncgru", {"orthogonal": "c"}),
    "ncgru ruc": ("ncgru", {"orthogonal": "ruc"}),
    "ncgru after": ("ncgru", {"reset": "after"}),
    "ncgru order 0": ("ncgru", {"neumann_order": 0}),
    "goru tunable 4": ("goru", {"layout": "tunable", "capacity": 4}),
}


def parse_triple(text: str) -> tuple[int, int, int]:
    B, T, H = (int(v) for v in text.split(","))
    return B, T, H


def synchronize() -> None:
    """Wait for queued GPU work, so that a timing holds the work it started (a no-op on a CPU)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def fastest_round(tasks: dict[str, Callable[[], None]], rounds: int) -> dict[str, float]:
    """Fastest seconds per call of each task, calling them round-robin after one warm-up each."""
    for task in tasks.values():
        task()
    synchronize()
    times: dict[str, list[float]] = {name: [] for name in tasks}
    for _ in range(rounds):
        for name, task in tasks.items():
            started = time.perf_counter()
            task()
            synchronize()
            times[name].append(time.perf_counter() - started)
    return {name: min(values) for name, values in times.items()}


def forward_backward(model: RecurrentModel, x: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        model.zero_grad(set_to_none=True)
        out, _ = model(x)
        out.square().mean().backward()

    return run


def training_step(model: RecurrentModel, x: torch.Tensor) -> Callable[[], None]:
    """What `trainables.train` does per step: both optimizers, then the model's step hook."""
    orthogonal = model.orthogonal_parameters()
    ids = {id(p) for p in orthogonal}
    optimizers = [make_optimizer("rmsprop", [p for p in model.parameters() if id(p) not in ids], 1e-4)]
    if orthogonal:
        optimizers.append(make_optimizer("rmsprop", orthogonal, 1e-5))

    def run() -> None:
        for optimizer in optimizers:
            optimizer.zero_grad(set_to_none=True)
        out, _ = model(x)
        out.square().mean().backward()
        for optimizer in optimizers:
            optimizer.step()
        model.after_optimizer_step()

    return run


def orthogonal_update(model: RecurrentModel, kernel: str | None = None) -> Callable[[], None]:
    """Only the parametrization's work in a training step: U built, its backward, the inverse update.
    `kernel` as the parametrizations take it: None the model's setting (the Triton builds on CUDA
    under `auto`), `loop` the ATen ops they replace."""
    parts = [m for m in model.modules() if isinstance(m, GivensRotations | ScaledCayley)]

    def run() -> None:
        for part in parts:
            setting = part.kernel
            part.kernel = kernel or setting
            U = part.matrix() if isinstance(part, GivensRotations) else part()
            U.backward(torch.ones_like(U))
            if isinstance(part, ScaledCayley):
                part.after_optimizer_step()
            part.kernel = setting

    return run


def path(model: RecurrentModel) -> str:
    """Which implementation ran the model's time loop: the fused launch (path, rows per program,
    programs, SMs, precision), the loop, or PyTorch's own."""
    if not isinstance(model, OrthogonalModel):
        return "torch"
    return model.kernel_record.path or "loop"


def cells(sizes: list[tuple[int, int, int]], rounds: int, device: torch.device) -> list[dict]:
    configs = {name: (name, {}) for name in MODELS.names()} | VARIANTS
    if device.type == "cuda":  # the loop each fused kernel replaces, timed beside it
        orthogonal = [name for name, (model, _) in configs.items() if MODELS.get(model).orthogonal]
        configs |= {
            f"{name} loop": (configs[name][0], {**configs[name][1], "kernel": "loop"}) for name in orthogonal
        }
    rows = []
    for B, T, H in sizes:
        torch.manual_seed(0)
        x = torch.randn(T, B, INPUT_SIZE, device=device)
        chosen = {n: c for n, c in configs.items() if c[0] in ONLY.get(H, MODELS.names())}
        models = {
            name: MODELS.get(model).create(INPUT_SIZE, H, **hp).to(device)
            for name, (model, hp) in chosen.items()
        }
        fwd_bwd = fastest_round({name: forward_backward(m, x) for name, m in models.items()}, rounds)
        steps = fastest_round({name: training_step(m, x) for name, m in models.items()}, rounds)
        orthogonal = {name: m for name, m in models.items() if m.orthogonal_parameters()}
        updates = fastest_round({name: orthogonal_update(m) for name, m in orthogonal.items()}, rounds)
        aten = {}  # on a GPU, the ATen build each Triton build replaces, timed beside it
        if device.type == "cuda":
            tasks = {name: orthogonal_update(m, kernel="loop") for name, m in orthogonal.items()}
            aten = fastest_round(tasks, rounds)
        print(f"\nforward+backward per batch, B={B} T={T} H={H} (relative to nn.GRU, same run)")
        paths = {name: path(model) for name, model in models.items()}
        wide, wide_path = max(map(len, models)) + 2, max(map(len, paths.values())) + 2
        print(
            f"{'model':<{wide}}{'path':<{wide_path}}{'fwd+bwd ms':>12}{'× gru':>8}{'step ms':>10}{'orth update ms':>16}{'share':>8}"
            + (f"{'aten update ms':>16}" if aten else "")
        )
        for name in models:
            update = updates.get(name)
            share = f"{100 * update / steps[name]:7.1f}%" if update is not None else f"{'-':>8}"
            update_ms = f"{1000 * update:16.2f}" if update is not None else f"{'-':>16}"
            taken = paths[name]
            aten_ms = (f"{1000 * aten[name]:16.2f}" if name in aten else f"{'-':>16}") if aten else ""
            print(
                f"{name:<{wide}}{taken:<{wide_path}}{1000 * fwd_bwd[name]:12.2f}{fwd_bwd[name] / fwd_bwd['gru']:8.2f}"
                f"{1000 * steps[name]:10.2f}{update_ms}{share}{aten_ms}"
            )
            rows.append(
                {
                    "B": B,
                    "T": T,
                    "H": H,
                    "model": name,
                    "path": taken,
                    "fwd_bwd_ms": 1000 * fwd_bwd[name],
                    "times_gru": fwd_bwd[name] / fwd_bwd["gru"],
                    "step_ms": 1000 * steps[name],
                    "orth_update_ms": None if update is None else 1000 * update,
                    "orth_update_aten_ms": 1000 * aten[name] if name in aten else None,
                }
            )
    return rows


def neumann(sizes: list[int], rounds: int, device: torch.device) -> list[dict]:
    print("\nNC-GRU inverse update after one optimizer step (ms; speed-up = exact / Neumann)")
    print(f"{'n':>6}{'exact inv':>11}" + "".join(f"{f'order {k}':>10}{'speed-up':>10}" for k in (1, 2, 3)))
    rows = []
    for n in sizes:
        torch.manual_seed(0)
        X = torch.randn(n, n, device=device)
        A = (X - X.T) / (2 * n**0.5)
        delta = 1e-3 * (A - A.T)
        eye = torch.eye(n, device=device)
        inverse = torch.linalg.inv(eye + A)
        tasks = {"exact": partial(torch.linalg.inv_ex, eye + A - delta, check_errors=False)}  # as the model
        for k in (1, 2, 3):
            tasks[f"order {k}"] = partial(neumann_inverse_update, inverse, delta, k)
        times = fastest_round(tasks, rounds)
        row = f"{n:>6}{1000 * times['exact']:11.2f}"
        for k in (1, 2, 3):
            t = times[f"order {k}"]
            row += f"{1000 * t:10.2f}{times['exact'] / t:9.2f}×"
        print(row)
        rows.append({"n": n, **{f"{name} ms": 1000 * t for name, t in times.items()}})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="shorter sequences and fewer rounds")
    parser.add_argument("--size", action="append", type=parse_triple, metavar="B,T,H", help="repeatable")
    parser.add_argument("--neumann-sizes", type=lambda s: [int(v) for v in s.split(",")], metavar="N,N,…")
    parser.add_argument("--rounds", type=int, help="timed rounds per figure (fastest reported)")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's own choice)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    parser.add_argument(
        "--out", type=Path, help="figures file [default: benchmarks/results/cells-DEVICE.json]"
    )
    args = parser.parse_args()
    device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    load_all()
    sizes = args.size or list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    rounds = args.rounds or (3 if args.quick else 5)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {where}, float32, input size {INPUT_SIZE}"
    )
    figures = {
        "cells": cells(sizes, rounds, device),
        "neumann": neumann(
            args.neumann_sizes or list(DEFAULT_NEUMANN_SIZES), 5 if args.quick else 10, device
        ),
    }
    figures_file.write(f"cells-{device.type}{'-quick' if args.quick else ''}", str(device), figures, args.out)


if __name__ == "__main__":
    main()

"""How a fused scan spreads over a GPU: the path, the programs, and what each keeps on chip.

A recurrence is serial in time, so a scan is fast when each step's path is short and the whole GPU
works on it. Three paths, chosen from the hidden size, the batch and the device:

- `givens`: the Givens models (EURNN; GORU where its gates fit on chip) apply their rotation layers
  to the state directly, `h·cos + gather(h, partner)·sin` per layer, instead of a dense product;
  1–4 batch rows per program, the state in registers across all steps.
- `rows`: a dense recurrence whose matrices fit in one program's shared memory (n ≤ 128 at three
  n × n blocks): 2–4 batch rows per program, the matrices loaded once before the time loop, the
  state in registers.
- `split`: any other dense recurrence. Each program owns a slice of the hidden units for a block
  of rows and keeps its columns of the matrices on chip (where they fit); the programs sharing rows
  meet at a barrier every step. Never more programs than SMs, so all are co-resident.

Everything here is arithmetic on sizes, so tests can plan for a 132-SM H100 on any machine.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

import torch

Path = Literal["givens", "rows", "split"]
Precision = Literal["ieee", "tf32x3", "tf32"]
PRECISIONS: tuple[Precision, ...] = ("ieee", "tf32x3", "tf32")

# A barrier spins at most this many polls (a poll is one L2 atomic, about a microsecond) before it
# gives up and marks the scan as stalled: seconds, never a hang.
SPIN_LIMIT = 1 << 22
# Shared memory a program keeps for Triton's own scratch (layout conversions, gathers, reductions).
SCRATCH_BYTES = 16 * 1024
# Elements of a full-width operand (rows × padded hidden size) a program may hold in registers.
ROW_ELEMENTS = 16 * 1024
# An FMA `tl.dot` holds its whole shared dimension in each thread's registers: past this padded
# hidden size (half of it for tf32x3's split operands) a split product streams its matrix in
# chunks of STREAM_CHUNK instead of keeping it on chip (sm_90 builds spill beyond).
RESIDENT_WIDTH = 256
STREAM_CHUNK = 64
# `tl.gather` keeps a whole row within one warp; past this padded size the rotation layers
# exchange partners through the program's scratch memory instead (sm_90 builds spill beyond).
GATHER_WIDTH = 512


@dataclass(frozen=True)
class GPU:
    """What planning needs of a device: its SMs and the shared memory one program may use."""

    name: str
    sms: int
    shared_bytes: int


H100 = GPU("NVIDIA H100 (132 SMs, 227 KiB shared memory per program)", 132, 232_448)


def gpu_of(device: torch.device) -> GPU:
    """The device's own figures on CUDA; the interpreter plans as for the H100 the kernels target."""
    if device.type != "cuda":
        return H100
    return _cuda_gpu(device.index if device.index is not None else torch.cuda.current_device())


@cache
def _cuda_gpu(index: int) -> GPU:
    props = torch.cuda.get_device_properties(index)
    shared = getattr(props, "shared_memory_per_block_optin", H100.shared_bytes)
    return GPU(props.name, props.multi_processor_count, shared)


def next_power_of_2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def padded(n: int) -> int:
    """The hidden size as a kernel's block: a power of two, at least the 16 `tl.dot` needs."""
    return max(16, next_power_of_2(n))


@dataclass(frozen=True)
class ScanPlan:
    """One scan's launch: `slices` programs along the hidden units × `row_blocks` along the batch.

    `block_k` is the units a program owns (`block_n`, the padded hidden size, unless split), `rows`
    the batch rows a program owns. `resident`: the program's matrix columns are loaded once, before
    the time loop; otherwise streamed from memory every step. `grid_sync`: the split path runs all
    steps in one launch with a barrier after each phase; without it (Triton's interpreter, which runs
    programs one after another) it launches once per phase of a step.
    """

    scan: str
    path: Path
    matrices: int
    n: int
    batch: int
    rows: int
    block_k: int
    resident: bool
    warps: int
    precision: Precision
    gpu: GPU
    grid_sync: bool | None = None  # None: in one launch on a GPU, one phase per launch elsewhere
    spin_limit: int = SPIN_LIMIT
    in_memory: bool = False  # the rotation layers exchange partners through scratch memory

    @property
    def block_n(self) -> int:
        return padded(self.n)

    @property
    def slices(self) -> int:
        return cdiv(self.n, self.block_k)

    @property
    def row_blocks(self) -> int:
        return cdiv(self.batch, self.rows)

    @property
    def chunk(self) -> int:
        """The shared-dimension chunk of a streamed product."""
        return min(self.block_n, STREAM_CHUNK)

    @property
    def programs(self) -> int:
        return self.slices * self.row_blocks

    @property
    def programs_per_sm(self) -> int:
        return cdiv(self.programs, self.gpu.sms)

    def for_batch(self, batch: int) -> ScanPlan:
        """The same kernels over another batch: only the number of row blocks changes."""
        return replace(self, batch=batch)

    def describe(self) -> str:
        """One line for logs and benchmarks: the path, what a program owns, the grid on the device."""
        owns = f"{self.rows} row{'s' if self.rows > 1 else ''}"
        if self.path == "split":
            owns += f" × {self.block_k} units"
        where = (
            "no matrices"
            if not self.matrices
            else "matrices on chip"
            if self.resident
            else "matrices from L2"
        )
        return (
            f"{self.path} ({owns} per program, {where}, {self.precision}): "
            f"{self.programs} programs on {self.gpu.sms} SMs, {self.programs_per_sm} per SM"
        )

    def tag(self) -> str:
        """The same, compact enough to be one `key=value` word of a log line (a trial's `kernel_path`)."""
        return (
            f"{self.path},rows={self.rows},programs={self.programs},sms={self.gpu.sms},"
            f"per_sm={self.programs_per_sm},{self.precision}"
        )

    def grid_record(self) -> dict[str, object]:
        return {
            "scan": self.scan,
            "shape": [self.batch, None, self.n],
            "path": self.path,
            "programs": self.programs,
            "sms": self.gpu.sms,
            "programs_per_sm": self.programs_per_sm,
        }


def matrix_bytes(matrices: int, block_n: int, block_k: int, precision: Precision) -> int:
    """Shared memory for `matrices` column slices of block_n × block_k float32 held as dot operands;
    tf32x3 keeps a high and a low part of each (measured on sm_90 builds)."""
    return matrices * block_n * block_k * 4 * (2 if precision == "tf32x3" else 1)


def _rows_for(batch: int, gpu: GPU, low: int, high: int) -> int:
    """Rows per program: enough programs to cover the SMs, within [low, high]."""
    return min(max(next_power_of_2(cdiv(batch, gpu.sms)), low), high)


def _split(scan: str, n: int, batch: int, matrices: int, precision: Precision, gpu: GPU) -> ScanPlan:
    block_n = padded(n)
    max_rows = max(1, ROW_ELEMENTS // block_n)
    block_k = 16
    while True:
        slices = cdiv(n, block_k)
        rows = next_power_of_2(cdiv(batch * slices, gpu.sms))
        if (slices <= gpu.sms and rows <= max_rows) or block_k >= block_n:
            break
        block_k *= 2
    rows = min(rows, max_rows)
    while slices * cdiv(batch, rows) > gpu.sms and rows < batch:  # never more programs than SMs
        rows *= 2
    width = RESIDENT_WIDTH // (2 if precision == "tf32x3" else 1)
    budget = gpu.shared_bytes - SCRATCH_BYTES
    resident = block_n <= width and matrix_bytes(matrices, block_n, block_k, precision) <= budget
    return ScanPlan(scan, "split", matrices, n, batch, rows, block_k, resident, 8, precision, gpu)


def _whole(
    scan: str, path: Path, matrices: int, n: int, batch: int, rows: int, precision: Precision, gpu: GPU
) -> ScanPlan:
    """A program owns every hidden unit of its rows: no barrier, the state stays in registers."""
    in_memory = path == "givens" and padded(n) > GATHER_WIDTH
    warps = 8 if matrices or in_memory else 4
    return ScanPlan(
        scan, path, matrices, n, batch, rows, padded(n), True, warps, precision, gpu, in_memory=in_memory
    )


def fits_on_chip(matrices: int, n: int, precision: Precision, gpu: GPU) -> bool:
    block_n = padded(n)
    return (
        matrices == 0
        or matrix_bytes(matrices, block_n, block_n, precision) <= gpu.shared_bytes - SCRATCH_BYTES
    )


def plan_reset_after(
    n: int, batch: int, gates: int, givens: bool, precision: Precision = "ieee", gpu: GPU = H100
) -> ScanPlan:
    """The reset-after-product cell (EURNN, scoRNN, GORU and its ablations, NC-GRU `after`) with
    `gates` gate blocks beside the orthogonal one; `givens`: U is available as rotation layers."""
    if givens and fits_on_chip(gates, n, precision, gpu):
        return _whole("reset_after", "givens", gates, n, batch, _rows_for(batch, gpu, 1, 4), precision, gpu)
    if fits_on_chip(1 + gates, n, precision, gpu):
        return _whole("reset_after", "rows", 1 + gates, n, batch, _rows_for(batch, gpu, 2, 4), precision, gpu)
    return _split("reset_after", n, batch, 1 + gates, precision, gpu)


def plan_reset_before(n: int, batch: int, precision: Precision = "ieee", gpu: GPU = H100) -> ScanPlan:
    """NC-GRU eq. 19: three n × n blocks (U_r, U_u, U_c)."""
    if fits_on_chip(3, n, precision, gpu):
        return _whole("reset_before", "rows", 3, n, batch, _rows_for(batch, gpu, 2, 4), precision, gpu)
    return _split("reset_before", n, batch, 3, precision, gpu)

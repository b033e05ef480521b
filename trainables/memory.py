"""A trial's memory: what its process holds on the host against `memory_limit_mb`, and its share
of a GPU's memory (`gpu_memory_fraction`): trials packed on one GPU are not isolated from each
other otherwise. Either way it outgrows its memory as `TrialOutOfMemory`, with the size named."""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager

import torch


class TrialOutOfMemory(RuntimeError):
    """The trial outgrew its memory limit: stopped before it takes its worker, or the node, down."""


def resident_mb() -> float:
    """Memory the process holds now (current, not peak: a reused worker's past trials don't count)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:  # not Linux: the peak is the best available figure
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


@contextmanager
def gpu_memory_share(device: torch.device, fraction: float) -> Iterator[None]:
    """Cap the process's share of the GPU's memory (trials packed on one GPU are not isolated
    from each other otherwise), and turn running out of it into `TrialOutOfMemory` naming it."""
    if device.type != "cuda":
        yield
        return
    capped = 0.0 < fraction < 1.0
    if capped:  # torch's cap takes an index: `cuda` alone names the current device
        index = torch.cuda.current_device() if device.index is None else device.index
        torch.cuda.set_per_process_memory_fraction(fraction, index)
    try:
        yield
    except torch.OutOfMemoryError as exc:
        total = torch.cuda.get_device_properties(device).total_memory / 2**20
        share = f"its share of {fraction:g} ({fraction * total:.0f} MB)" if capped else "all"
        raise TrialOutOfMemory(
            f"ran out of GPU memory: it may take {share} of {torch.cuda.get_device_name(device)}'s "
            f"{total:.0f} MB ({str(exc).splitlines()[0]})"
        ) from None

"""The host's side of the split scans' grid barrier (`kernel_parts.grid_sync`): the flag a
barrier sets when it gives up.

A barrier that waits longer than its bound (its programs were not all resident) sets a flag on
the device and lets the scan finish with wrong results; the host reads the flag where it reads
anyway (the interpreter after each launch, a trial at its reports, the self-check) and raises.
"""

from __future__ import annotations

import torch


class GridBarrierTimeout(RuntimeError):
    """A split scan's barrier gave up waiting: its programs were not all running at once."""


_stall_flags: dict[torch.device, torch.Tensor] = {}


def stall_flag(device: torch.device) -> torch.Tensor:
    """The device's flag that a barrier sets when it gives up (read without waiting on each step)."""
    if device not in _stall_flags:
        _stall_flags[device] = torch.zeros(1, dtype=torch.int32, device=device)
    return _stall_flags[device]


def raise_if_stalled(device: torch.device) -> None:
    """Raise when a barrier on `device` gave up since the last look: that scan's results are wrong.
    Reading the flag waits for the GPU, so it is read where the host reads anyway (reports)."""
    flag = _stall_flags.get(device)
    if flag is not None and int(flag.item()):
        flag.zero_()
        raise GridBarrierTimeout(
            "a fused scan's grid barrier waited longer than its bound, so its programs were not all "
            "resident at once; its results were discarded. Use kernel: loop, or report this device"
        )

"""Which code, device and machine recorded a run: a table holds curves only from one training
code, and says which machine's clock its seconds are."""

from __future__ import annotations

import hashlib
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sweeper.spec.trial_cost import machine_name

ROOT = Path(__file__).resolve().parents[2]


def code_version(device: str) -> dict[str, Any]:
    """What decides a run's curve: the training code (a digest of `trainables/`, per file), the
    device and torch; with the commit, machine and date it was first used."""
    import torch

    files = sorted(p for p in (ROOT / "trainables").rglob("*") if p.suffix == ".py")
    digests = {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in files}
    whole = hashlib.sha256("".join(f"{k}={v}\n" for k, v in digests.items()).encode()).hexdigest()[:16]
    return {
        "trainables": whole,
        "device": device_name(device),
        "torch": torch.__version__,
        "commit": _commit(),
        "machine": machine_name(),
        "python": platform.python_version(),
        "first_run": datetime.now(UTC).strftime("%Y-%m-%d"),
        "files": digests,
    }


def device_name(device: str) -> str:
    import torch

    if device == "cuda":
        return f"cuda: {torch.cuda.get_device_name()}"
    return "cpu"


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"

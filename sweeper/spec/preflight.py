"""What would stop a sweep's trials, found before anything is written or started.

A launch (and `--dry-run`) checks that the study database can be reached, and, where the trials
run on this machine (a local Ray), that the task's data files are here and that the GPUs the
spec asks for exist. A cluster's workers have their own disks and GPUs, which the driver cannot
see: there the trials find out, and fail with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from sweeper.spec.sweep import SweepSpec
from sweeper.store.credentials import redact
from sweeper.store.database import StoreError, check_url
from sweeper.store.locations import sqlite_file

NO_GPUS_OVERRIDE = "add --no-gpus to train on the CPU"
# A local Ray declares this many GPUs, whatever the machine has: for tests of GPU scheduling on a
# host without GPUs (their trials then need SWEEPER_GPU_TRIALS_ON_CPU=1, `sweeper.run.tune.trial`).
DECLARED_GPUS_ENV = "SWEEPER_DECLARED_GPUS"


def storage_problems(url: str) -> list[str]:
    """Why the study database at `url` cannot be used, without creating it."""
    try:
        check_url(url)
    except StoreError as exc:
        return [str(exc)]
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = sqlite_file(url)
        if path is None:
            return []
        folder = path.resolve().parent
        existing = next(p for p in (folder, *folder.parents) if p.exists())
        if not existing.is_dir() or not os.access(existing, os.W_OK):
            return [f"storage {redact(url)}: {existing} is not a folder this user can write to"]
        return []
    engine = create_engine(
        url, connect_args={"connect_timeout": 10} if parsed.get_backend_name() == "postgresql" else {}
    )
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return [f"cannot use storage {redact(url)}: {reason}"]
    except ImportError as exc:
        return [f"cannot use storage {redact(url)}: its database driver is missing ({exc})"]
    finally:
        engine.dispose()
    return []


def data_problems(spec: SweepSpec) -> list[str]:
    """The files the sweep's task needs that are not on this machine, with how to get them."""
    from trainables.catalog import load_all
    from trainables.data import DataError
    from trainables.registry import TASKS

    load_all()
    entry = TASKS.get(spec.task.name)
    try:
        entry.check_data(spec.task.settings)
    except DataError as exc:
        return [f"data: {exc}"]
    return []


def declared_gpus() -> int | None:
    """The GPUs `DECLARED_GPUS_ENV` declares for a local Ray, or None (Ray finds the machine's)."""
    declared = os.environ.get(DECLARED_GPUS_ENV, "").strip()
    if not declared:
        return None
    if not declared.isdigit():
        raise ValueError(f"{DECLARED_GPUS_ENV}={declared!r}: expected a whole number of GPUs")
    return int(declared)


def local_gpus() -> int:
    """GPUs a local Ray would find on this machine (those `nvidia-smi` lists, within
    `CUDA_VISIBLE_DEVICES`, or those declared), told without starting Ray or importing torch."""
    declared = declared_gpus()
    if declared is not None:
        return declared
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return 0
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    found = sum(1 for line in listed.splitlines() if line.startswith("GPU "))
    return found if visible is None else min(found, len([v for v in visible.split(",") if v.strip()]))


def gpu_problems(specs: list[SweepSpec], gpus: float, override: str) -> list[str]:
    """Trials that ask for GPUs where there are none: they would wait forever."""
    if gpus > 0:
        return []
    asking: dict[float, list[str]] = {}
    for spec in specs:
        for model in spec.models:
            share = spec.resources.for_model(model)["gpu"]
            if share > 0:
                asking.setdefault(share, []).append(model)
    if not asking:
        return []
    shares = "; ".join(f"{g:g} for {', '.join(models)}" for g, models in sorted(asking.items()))
    return [
        f"resources: the trials ask for GPUs ({shares}) and this machine has none; "
        f"{override}, or join a cluster with GPU workers (--address)"
    ]


def preflight(spec: SweepSpec, storage_url: str, local: bool) -> list[str]:
    """Every problem found; `local`: the trials would run on this machine (no --address)."""
    problems = storage_problems(storage_url)
    if local:
        problems += data_problems(spec)
        problems += gpu_problems([spec], local_gpus(), NO_GPUS_OVERRIDE)
    return problems

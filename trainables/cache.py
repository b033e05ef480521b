"""What a task derives from its data files, cached on disk once for every later trial.

A sweep starts many trial processes that would each tokenize the same corpus or compute the
same spectrograms; the first one writes the result and the others read it. Entries live beside
the data, in `<data_dir>/.sweeper-cache/`, or, where the data directory is read-only (a shared
mount), in the user's cache directory. Each is keyed by a hash of the files' names and contents
and of how the result is derived, so a changed file or setting gets a new key and a stale entry
is never read; writing an entry removes the older ones of the same prefix.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import torch

log = logging.getLogger(__name__)

CACHE_DIR = ".sweeper-cache"
T = TypeVar("T")
_PROCESS_CACHES: list[Any] = []


def process_cache(maxsize: int) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """`functools.lru_cache`, registered so that `clear_process_caches` empties it: what a task
    keeps in a reused worker process for the trials after the first."""

    def wrap(function: Callable[..., T]) -> Callable[..., T]:
        cached = functools.lru_cache(maxsize=maxsize)(function)
        _PROCESS_CACHES.append(cached)
        return cached

    return wrap


def clear_process_caches() -> None:
    """Empty what the tasks keep in this process, as a new worker process starts (benchmarks of
    a trial's start time this way without a new process)."""
    for cached in _PROCESS_CACHES:
        cached.cache_clear()


def content_key(recipe: str, paths: Iterable[Path], root: Path) -> str:
    """SHA-256 of `recipe` (how the result is derived) and of each file's name under `root`,
    size and content, in the order given."""
    digest = hashlib.sha256(recipe.encode())
    for path in paths:
        digest.update(f"\0{path.relative_to(root).as_posix()}\0{path.stat().st_size}\0".encode())
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def file_stamps(paths: Iterable[Path]) -> tuple[tuple[int, int], ...]:
    """Each file's modification time and size: part of a per-process cache key, so a trial that
    reuses a worker after a data file changed reads the file again (the content key then decides
    whether the disk cache still holds)."""
    return tuple((stat.st_mtime_ns, stat.st_size) for stat in (path.stat() for path in paths))


def cache_dirs(data_dir: Path) -> list[Path]:
    """Where an entry may live, in order: beside the data, then the user's cache directory."""
    user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return [data_dir / CACHE_DIR, user_cache / "sweeper" / "corpora"]


def load_cached(data_dir: Path, prefix: str, key: str) -> dict[str, Any] | None:
    """The entry of `key` (tensors, lists and numbers only), or None when there is none or it is
    unreadable."""
    for directory in cache_dirs(data_dir):
        path = directory / f"{prefix}-{key}.pt"
        if not path.is_file():
            continue
        try:
            return torch.load(path, weights_only=True)
        except Exception as exc:  # a damaged file fails in many ways (zip, pickle, index errors)
            log.warning("ignoring the unreadable cache %s: %s", path, exc)
    return None


def store_cached(data_dir: Path, prefix: str, key: str, entry: dict[str, Any]) -> None:
    """Write the entry atomically to the first writable cache directory, replacing the entries of
    earlier versions of the same files; concurrent trials may race, and either write wins whole."""
    for directory in cache_dirs(data_dir):
        tmp = None
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{prefix}-", suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                torch.save(entry, f)
            target = directory / f"{prefix}-{key}.pt"
            os.replace(tmp, target)
        except OSError as exc:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            log.info("cannot cache %s in %s: %s", prefix, directory, exc)
            continue
        for stale in directory.glob(f"{prefix}-*.pt"):
            if stale != target:
                stale.unlink(missing_ok=True)
        return


def load_or_build(
    data_dir: Path,
    prefix: str,
    key: str,
    build: Callable[[], T],
    to_entry: Callable[[T], dict[str, Any]],
    from_entry: Callable[[dict[str, Any]], T],
) -> T:
    """The cached result of `key`, or else `build()`'s, which is then cached for later trials."""
    entry = load_cached(data_dir, prefix, key)
    if entry is not None:
        return from_entry(entry)
    result = build()
    store_cached(data_dir, prefix, key, to_entry(result))
    return result

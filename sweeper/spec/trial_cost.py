"""What one trial costs, the one estimator every price reads: the sweep's (`spec.price`), a
reproduction's (`reproduce --dry-run`) and the search tables' estimate.

A trial's seconds are its start (data, network, the first step) + its steps x one step's seconds +
its evaluations x one evaluation's seconds (`trial_seconds`), each timed apart on the device the
trial runs on (`trainables.step_time`). A configuration timed once is kept, per machine, device,
threads, training code (a digest of `trainables/`) and torch version, in the user's cache
directory (`SWEEPER_CACHE_DIR`, else `$XDG_CACHE_HOME/sweeper` or `~/.cache/sweeper`): the second
price of a spec on the same machine and code reads it instead of training again. A timing is a
reading of this machine's load at the time; a cached one is as good as the first.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CACHE_ENV = "SWEEPER_CACHE_DIR"
CACHE_FILE = "trial-costs.json"


def trial_seconds(
    start: float, step: float, evaluation: float, iterations: float, evaluations: float
) -> float:
    """A trial's seconds from its timed parts (see the module's docstring)."""
    return start + iterations * step + evaluations * evaluation


@dataclass(frozen=True)
class TrialCost:
    start: float  # seconds: data, network, and the first step
    step: float  # seconds of one training step
    evaluation: float  # seconds of one evaluation of the validation set

    def seconds(self, iterations: float, evaluations: float) -> float:
        return trial_seconds(self.start, self.step, self.evaluation, iterations, evaluations)


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sweeper"


@cache
def training_code() -> str:
    """A digest of the training code, `trainables/`'s Python files by name and content."""
    import trainables

    root = Path(trainables.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@cache
def machine_name() -> str:
    """The processor and its cores, as /proc/cpuinfo names them where it can."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores"


def device_name(device: str) -> str:
    """The device a trial of `device` ("cpu", "cuda", "auto") computes on, by name."""
    import torch

    if device != "cpu" and torch.cuda.is_available():
        return f"cuda: {torch.cuda.get_device_name()}"
    return "cpu"


def cost_key(config: Mapping[str, Any], steps: int) -> str:
    """What a timing of `config` is valid for: this machine, device, threads, code and torch."""
    import torch

    settings = {k: v for k, v in config.items() if k != "seed"}
    where = {
        "machine": machine_name(),
        "device": device_name(str(config.get("device", "cpu"))),
        "threads": torch.get_num_threads(),
        "code": training_code(),
        "torch": torch.__version__,
        "steps": steps,
    }
    text = json.dumps({"config": settings, "where": where}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):  # none yet, or one cut short: time again
        return {}


def _write(path: Path, entries: dict[str, Any]) -> None:
    """Atomically: a reader never sees a file half written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as out:
            json.dump(entries, out)
        os.replace(out.name, path)
    except OSError:  # a cache that cannot be written costs the next price a timing, nothing else
        pass


def kept(config: Mapping[str, Any], steps: int = 2) -> bool:
    """Whether this machine and code have timed `config` before."""
    return cost_key(config, steps) in _read(cache_dir() / CACHE_FILE)


def measured(
    config: Mapping[str, Any], steps: int = 2, say: Callable[[str], None] | None = None, what: str = ""
) -> TrialCost:
    """`config`'s cost, kept from an earlier timing or timed now (`say` hears `what` is being
    timed while it is)."""
    from trainables.step_time import trial_costs

    path = cache_dir() / CACHE_FILE
    key = cost_key(config, steps)
    entries = _read(path)
    if key in entries:
        return TrialCost(*(float(v) for v in entries[key]))
    if say is not None:
        say(f"timing {what or config.get('model', 'a trial')}")
    costs = trial_costs(config, steps)
    entries = _read(path)  # another process may have written meanwhile
    entries[key] = [costs.start, costs.step, costs.evaluation]
    _write(path, entries)
    return TrialCost(costs.start, costs.step, costs.evaluation)

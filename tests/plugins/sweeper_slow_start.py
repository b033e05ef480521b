"""A module that makes every Ray worker but the first slow to become ready, when preloaded.

The first process to import it goes on at once; each later one sleeps `SWEEPER_SLOW_START_S`
seconds first. Listed in `RAY_preload_python_modules`, it gives a sweep one worker that is ready
long before the others, which is how a short trial finishes while the next trial's own actor is
still starting (`tests/sweeper/run/tune/test_throughput.py`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_first = Path(os.environ["SWEEPER_SLOW_START_DIR"]) / "first"
try:
    _first.touch(exist_ok=False)
except FileExistsError:
    time.sleep(float(os.environ.get("SWEEPER_SLOW_START_S", "3")))

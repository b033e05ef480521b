"""What of a driver-side object Tune may pickle."""

from __future__ import annotations

from typing import Any


def driver_only_state(obj: Any) -> dict[str, Any]:
    """What Tune may pickle of a driver-side object: its plain settings, never its connections.

    Tune pickles its configuration for `Tuner.restore`; sweeper resumes from the studies instead,
    so a restored copy only needs to exist, not to work.
    """
    return {k: v for k, v in vars(obj).items() if isinstance(v, (str, int, float, bool, type(None)))}

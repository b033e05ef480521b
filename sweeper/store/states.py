"""The words for where things stand, one enum each, stored in the database as these strings.

A sweep is created, runs, and ends finished, interrupted (Ctrl-C, SIGTERM, a lost database:
`resume` continues it) or failed. A confirmation run is pending until it runs, then complete or
failed. A trial ends COMPLETE (its last step reached), PRUNED (stopped by the scheduler), FAIL
(with its reason), or INTERRUPTED (cut by a stop; it does not count, and `resume` runs it again).
"""

from __future__ import annotations

from enum import StrEnum


class SweepStatus(StrEnum):
    CREATED = "created"
    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class ConfirmationStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"


class TrialEnd(StrEnum):
    COMPLETE = "COMPLETE"
    PRUNED = "PRUNED"
    FAIL = "FAIL"
    INTERRUPTED = "INTERRUPTED"

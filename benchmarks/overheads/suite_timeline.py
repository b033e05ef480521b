"""A pytest plugin for `suite_cpu`: each test's phases, start and end, written by the worker that
ran it to a file of its own in the folder `SUITE_TIMELINE_DIR` names (nothing where it is unset)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

TIMELINE_ENV = "SUITE_TIMELINE_DIR"  # the folder each worker writes its tests' spans to


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    folder = os.environ.get(TIMELINE_ENV)
    if folder is None or getattr(report, "node", None) is not None:  # xdist's controller: a worker wrote it
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    span = {
        "worker": worker,
        "id": report.nodeid,
        "when": report.when,
        "start": report.start,
        "stop": report.stop,
    }
    with (Path(folder) / f"{worker}.jsonl").open("a") as out:
        out.write(json.dumps(span) + "\n")

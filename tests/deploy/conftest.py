"""Fixtures for the deployment tests: each overlay rendered once per session, the KubeRay CRDs, and
checkov in a virtual environment of its own.

checkov pins packages that conflict with the project's (an older networkx, among others), so it
never shares the test environment: the first session on a machine creates
`tests/checkov-<version>-py<python version>/` in sweeper's user cache (`cache_folder()`, where
MLflow's migrated store is kept too), and later sessions, from this checkout or any other, reuse it.
"""

from __future__ import annotations

import copy
import fcntl
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sweeper.run.tracking.local_store import cache_folder
from tests.deploy.workloads import CRD_DIR, OVERLAYS, render_overlay

CHECKOV_VERSION = "3.3.30"
CHECKOV_VENV = (
    cache_folder() / "tests" / f"checkov-{CHECKOV_VERSION}-py{sys.version_info.major}{sys.version_info.minor}"
)
CHECKOV_INSTALLED = CHECKOV_VENV / "installed"  # written once an install is complete

_rendered: dict[str, list[dict[str, Any]]] = {}


@pytest.fixture(params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def resources(overlay: str) -> list[dict[str, Any]]:
    """The overlay's rendered resources; a deep copy, so a test may mutate what it gets."""
    if overlay not in _rendered:
        _rendered[overlay] = render_overlay(overlay)
    return copy.deepcopy(_rendered[overlay])


@pytest.fixture(scope="session")
def crd_dir() -> Path:
    return CRD_DIR


@pytest.fixture(scope="session")
def checkov() -> Path:
    """The checkov executable, installed at the pinned version in its own virtual environment.
    A marker file written after a complete install tells a usable environment from a broken one."""
    executable = CHECKOV_VENV / "bin" / "checkov"
    CHECKOV_VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(CHECKOV_VENV.with_name(f"{CHECKOV_VENV.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a test session of another checkout may be installing it
        if not (CHECKOV_INSTALLED.is_file() and (CHECKOV_VENV / "bin" / "python").exists()):
            install_checkov()
    return executable


def install_checkov() -> None:
    """A new environment, whatever a broken one left behind."""
    shutil.rmtree(CHECKOV_VENV, ignore_errors=True)
    # no pip of its own (this interpreter's pip installs into it) and no byte-compiling of the
    # whole of botocore: checkov imports a small part of what it pins
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(CHECKOV_VENV)], check=True, timeout=300
    )
    pip = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(CHECKOV_VENV / "bin" / "python"),
        "install",
        "--quiet",
        "--no-compile",
        "--disable-pip-version-check",
    ]
    done = subprocess.run([*pip, f"checkov=={CHECKOV_VERSION}"], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        pytest.fail(f"installing checkov {CHECKOV_VERSION} failed:\n{done.stderr[-3000:]}")
    CHECKOV_INSTALLED.write_text(f"checkov=={CHECKOV_VERSION}\n")

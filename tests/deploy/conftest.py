"""Fixtures for the deployment tests: each overlay rendered once per session, and the KubeRay CRDs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.workloads import CRD_DIR, OVERLAYS, render_overlay

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

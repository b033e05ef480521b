from __future__ import annotations

from types import ModuleType

import pytest

from tests import corpora as corpora_module


@pytest.fixture(scope="session")
def corpora() -> ModuleType:
    """The writers of small data sets in the real file formats."""
    return corpora_module

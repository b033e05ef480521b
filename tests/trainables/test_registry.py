"""Plugins: the modules SWEEPER_PLUGINS names, and those a trial is handed by its driver."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from trainables.catalog import PLUGINS_ENV, load_all, plugin_modules


def test_plugin_modules_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PLUGINS_ENV, " my_models, ,my_tasks,")
    assert plugin_modules() == ("my_models", "my_tasks")
    monkeypatch.delenv(PLUGINS_ENV)
    assert plugin_modules() == ()


def test_a_trial_imports_the_plugins_its_driver_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on a cluster's machine, whose environment lacks the driver's SWEEPER_PLUGINS."""
    name = f"sweeper_probe_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text("IMPORTS = []\nIMPORTS.append(1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv(PLUGINS_ENV, raising=False)
    load_all((name,))
    load_all((name,))
    assert sys.modules[name].IMPORTS == [1]
    with pytest.raises(ModuleNotFoundError, match="no_such_plugin"):
        load_all(("no_such_plugin",))

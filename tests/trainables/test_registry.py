"""Plugins: the modules SWEEPER_PLUGINS names, and those a trial is handed by its driver; the
built-in entries: declarations read without importing their code."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from trainables.catalog import PLUGINS_ENV, load_all, plugin_modules
from trainables.registry import MODELS, PROJECT, TASKS, defined_in, resolved


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


def test_every_config_is_validated_without_importing_torch_or_any_models_code() -> None:
    """The registries are declarations: a launch's validation, `status` and `summarize` read them
    in a fresh interpreter without paying torch's imports."""
    probe = textwrap.dedent(
        f"""
        import glob, json, sys
        from sweeper.spec.loading import load_spec
        paths = sorted(glob.glob({str(PROJECT / "configs" / "*.yaml")!r}))
        for path in paths:
            load_spec(path)
        heavy = [m for m in sys.modules if m.split(".")[0] in ("torch", "triton", "ray", "mlflow", "matplotlib")]
        code = [m for m in sys.modules if m.startswith(("trainables.models.", "trainables.tasks.")) and not
                m.endswith((".declared", ".hyperparams", ".settings"))]
        print(json.dumps({{"specs": len(paths), "heavy": heavy, "code": code}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=PROJECT, capture_output=True, text=True, check=True
    )
    loaded = json.loads(done.stdout)
    assert loaded["specs"] >= 10
    assert loaded["heavy"] == [] and loaded["code"] == [], loaded


def test_a_declared_entry_is_located_before_its_code_is_imported_where_its_code_is() -> None:
    """Every built-in entry: a test worker's registries may also hold the test plugins that other
    tests imported (their code under `tests/`, in hand)."""
    load_all()
    built_in = [e for e in (*MODELS, *TASKS) if not e.defined_in.startswith("tests/")]
    assert {"goru", "lstm", "babi", "parenthesis"} <= {e.name for e in built_in}
    for entry in built_in:
        assert isinstance(entry.build, str), entry.name
        assert entry.defined_in == defined_in(resolved(entry.build)), entry.name
    assert MODELS.get("goru").defined_in == "trainables/models/goru.py"
    assert TASKS.get("babi").defined_in == "trainables/tasks/babi.py"

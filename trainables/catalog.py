"""Everything that can be registered: the built-in models and tasks, and the user's plugins.

Importing a model or task module registers what it defines (`trainables.registry`); this is the
one place that imports them all, so the registry itself imports none of them.
"""

from __future__ import annotations

import importlib
import os

PLUGINS_ENV = "SWEEPER_PLUGINS"


def plugin_modules() -> tuple[str, ...]:
    """The modules `SWEEPER_PLUGINS` names (comma-separated): models or tasks of a user's own."""
    return tuple(filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))))


def load_all(plugins: tuple[str, ...] = ()) -> None:
    """Import the model and task packages, whose modules register themselves, and the plugins:
    those `SWEEPER_PLUGINS` names here and `plugins` (what it named in the driver, which a trial
    on another machine is handed, since that machine's environment may not have the variable)."""
    import trainables.models
    import trainables.tasks  # noqa: F401

    for module in (*plugin_modules(), *plugins):
        if module not in _loaded_plugins:
            importlib.import_module(module)
            _loaded_plugins.add(module)


_loaded_plugins: set[str] = set()

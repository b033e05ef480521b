"""Everything that can be registered: the built-in models and tasks, and the user's plugins.

The built-in models and tasks are declared by name (`trainables.models.declared`,
`trainables.tasks.declared`), their code imported only when a trial builds one; a plugin module
registers what it defines when imported. This is the one place that imports them all, so the
registry itself imports none of them.
"""

from __future__ import annotations

import importlib
import os

PLUGINS_ENV = "SWEEPER_PLUGINS"


def plugin_modules() -> tuple[str, ...]:
    """The modules `SWEEPER_PLUGINS` names (comma-separated): models or tasks of a user's own."""
    return tuple(filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))))


def load_all(plugins: tuple[str, ...] = ()) -> None:
    """Import the built-in declarations and the plugins, whose modules register themselves:
    those `SWEEPER_PLUGINS` names here and `plugins` (what it named in the driver, which a trial
    on another machine is handed, since that machine's environment may not have the variable)."""
    import trainables.models.declared
    import trainables.tasks.declared  # noqa: F401

    for module in (*plugin_modules(), *plugins):
        if module not in _loaded_plugins:
            importlib.import_module(module)
            _loaded_plugins.add(module)


_loaded_plugins: set[str] = set()

"""A new SQLite MLflow store starts as a copy of an empty, already migrated one.

MLflow builds a new SQLite store by running every one of its schema migrations, seconds of CPU
on each sweep's first launch in a folder. The migrated schema depends only on MLflow's
version, so it is built once per version in the user's cache and copied; the copy holds no
experiment, so MLflow creates its default experiment itself on first open, with the artifact
location and times it would have given a store it migrated.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from sweeper.store.locations import sqlite_file


def cache_folder() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "sweeper"


def migrated_template(folder: Path) -> Path:
    """The empty store of this MLflow version, built through MLflow the first time it is asked for."""
    import mlflow
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    template = folder / f"mlflow-{mlflow.__version__}-empty.db"
    if template.exists():
        return template
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as building:
        path = Path(building) / "store.db"
        store = SqlAlchemyStore(f"sqlite:///{path}", str(Path(building) / "artifacts"))
        store.engine.dispose()
        with sqlite3.connect(path) as connection:
            connection.execute("DELETE FROM experiments")
        connection.close()
        os.replace(path, template)  # atomic: a store building beside this one writes the same
    return template


def prepare_sqlite_store(tracking_uri: str) -> None:
    """Put a migrated empty store where a SQLite tracking URI names a file that does not
    exist yet. Anything that goes wrong leaves the file absent, and MLflow builds it as usual."""
    path = sqlite_file(tracking_uri) if tracking_uri.startswith("sqlite") else None
    if path is None or path.exists() or not path.parent.is_dir():
        return
    try:
        template = migrated_template(cache_folder())
        staged = path.with_name(f".{path.name}.{os.getpid()}")
        try:
            shutil.copyfile(template, staged)  # a new file: its mode follows the umask, as MLflow's
            os.link(staged, path)  # never over a store another process has just created
        finally:
            staged.unlink(missing_ok=True)
    except Exception:  # MLflow's own path below builds the store: only the shortcut is lost
        return

"""A new SQLite MLflow store is a copy of a migrated empty one, and the same store MLflow builds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sweeper.run.tracking import local_store
from sweeper.run.tracking.tracker import Tracker


def schema(path: Path) -> tuple[list[tuple], list[tuple]]:
    """Each table's and index's definition, its clauses sorted (MLflow's migrations themselves
    write a table's constraints in an order that differs from run to run), and the revision."""
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        version = connection.execute("SELECT * FROM alembic_version").fetchall()
    connection.close()
    clauses = [(kind, name, sorted(line.strip().rstrip(",") for line in (sql or "").splitlines())) for kind, name, sql in rows]  # fmt: skip
    return clauses, version


def test_only_a_missing_sqlite_file_is_prepared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    template = tmp_path / "template.db"
    with sqlite3.connect(template) as connection:
        connection.execute("CREATE TABLE alembic_version (version_num)")
        connection.execute("INSERT INTO alembic_version VALUES ('marker')")
    connection.close()
    monkeypatch.setattr(local_store, "migrated_template", lambda folder: template)

    local_store.prepare_sqlite_store(f"sqlite:///{tmp_path / 'new.db'}")
    assert schema(tmp_path / "new.db")[1] == [("marker",)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.db", "template.db"]  # nothing staged left

    (tmp_path / "kept.db").write_bytes(b"a store in use")
    local_store.prepare_sqlite_store(f"sqlite:///{tmp_path / 'kept.db'}")
    assert (tmp_path / "kept.db").read_bytes() == b"a store in use"

    for uri in (
        "http://mlflow:5000",
        "postgresql://u@h/db",
        "sqlite://",
        f"sqlite:///{tmp_path / 'no' / 'x.db'}",
    ):
        local_store.prepare_sqlite_store(uri)
    assert not (tmp_path / "no").exists()


@pytest.mark.slow
def test_a_copied_store_is_the_store_mlflow_migrates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mlflow.store.db.utils
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    migrated = MlflowClient(f"sqlite:///{tmp_path / 'migrated.db'}").search_experiments()  # MLflow's own
    copied = Tracker(f"sqlite:///{tmp_path / 'copied.db'}").client.search_experiments()
    assert schema(tmp_path / "copied.db") == schema(tmp_path / "migrated.db")
    assert [(e.experiment_id, e.name, e.artifact_location) for e in copied] == [
        (e.experiment_id, e.name, e.artifact_location) for e in migrated
    ]

    def no_migrations(engine: object) -> None:
        raise AssertionError("a copied store runs no migration")

    with monkeypatch.context() as patched:
        patched.setattr(mlflow.store.db.utils, "_initialize_tables", no_migrations)
        tracker = Tracker(f"sqlite:///{tmp_path / 'second.db'}")
        assert tracker.client.create_experiment("e") == "1"

    (tmp_path / "unusable").write_text("a file where the cache folder should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "unusable"))  # MLflow migrates as usual
    fallback = Tracker(f"sqlite:///{tmp_path / 'fallback.db'}").client.search_experiments()
    assert [e.name for e in fallback] == ["Default"]

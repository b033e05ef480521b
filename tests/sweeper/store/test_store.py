"""The study database: one contract, run against SQLite and PostgreSQL alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweeper.store.credentials import redact
from sweeper.store.database import Store, StoreError, StudyRecord, SweepRecord
from sweeper.store.locations import sqlite_file


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    else:
        url = request.getfixturevalue("postgres_url")
    store = Store(url)
    yield store
    store.dispose()


def make_record(store: Store, spec_name: str = "demo") -> SweepRecord:
    record = SweepRecord(
        name=store.next_sweep_name(spec_name),
        spec_name=spec_name,
        spec_yaml="name: demo\n",
        spec_hash="0" * 64,
        status="created",
    )
    record.studies.append(StudyRecord(study_name=f"{record.name}/denoise/gru", task="denoise", model="gru"))
    return store.add_sweep(record)


def test_sweeps_are_named_in_sequence_and_listed(store):
    first = make_record(store)
    second = make_record(store)
    assert (first.name, second.name) == ("demo-1", "demo-2")
    assert [r.name for r in store.list_sweeps()] == ["demo-1", "demo-2"]
    assert store.latest_sweep().name == "demo-2"
    assert store.get_sweep("demo-1").studies[0].model == "gru"


def test_updates_persist(store):
    record = make_record(store)
    store.update_sweep(record.id, status="interrupted", elapsed_s=12.5)
    again = store.get_sweep(record.name)
    assert (again.status, again.elapsed_s) == ("interrupted", 12.5)


def test_unknown_sweep_names_recent_ones(store):
    make_record(store)
    with pytest.raises(StoreError, match=r"no sweep named 'nope'.*recent: demo-1"):
        store.get_sweep("nope")


def test_optuna_storage_shares_the_database(store):
    import optuna

    study = optuna.create_study(study_name="s", storage=store.optuna)
    study.tell(study.ask(), 1.0)
    assert optuna.load_study(study_name="s", storage=store.optuna).best_value == 1.0


def test_a_study_read_without_alembic_is_the_study_optuna_writes(store):
    """`Store.study` reads through a `StudyReader` (Optuna's storage without its table creation
    and Alembic's checks), once per Store: it reads what Optuna's own storage reads, and sees the
    trials that finish and start after its first read. The reader holds every attribute that
    `RDBStorage` sets but its schema's version manager: an Optuna upgrade that adds one fails here,
    not in `sweeper status`."""
    import optuna
    from optuna.distributions import FloatDistribution

    from sweeper.store.database import StudyReader

    written = optuna.create_study(study_name="s", storage=store.optuna)
    written.set_user_attr("sampler", "tpe")
    space = {"lr": FloatDistribution(1e-4, 1e-1, log=True)}
    written.tell(written.ask(space), 0.5)
    running = written.ask(space)
    running.report(0.7, step=10)
    reading = Store(store.url, create=False)
    try:
        read = reading.study("s")
        assert reading.study("s") is read
        assert read.get_trials() == optuna.load_study(study_name="s", storage=store.optuna).get_trials()
        assert read.user_attrs == {"sampler": "tpe"} and read.best_value == 0.5
        written.tell(running, 0.25)
        written.tell(written.ask(space), 0.75)
        assert [(t.state.name, t.value) for t in read.get_trials()] == [
            ("COMPLETE", 0.5),
            ("COMPLETE", 0.25),
            ("COMPLETE", 0.75),
        ]
        assert set(vars(store.optuna)) - set(vars(StudyReader(reading.engine))) == {"_version_manager"}
    finally:
        reading.dispose()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("mysql://root@127.0.0.1/test", "dialect 'mysql' is not supported"),
        ("not a url", "is not a SQLAlchemy URL"),
        ("postgresql+psycopg2://alice:s3cret@127.0.0.1:1/none", "cannot use storage"),
    ],
)
def test_bad_urls_are_clear_and_never_show_the_password(url, expected):
    with pytest.raises(StoreError, match=expected) as info:
        Store(url)
    assert "s3cret" not in str(info.value)


def test_sqlite_file_names_the_file_of_a_sqlite_url_only():
    assert sqlite_file("sqlite:////abs/m.db?timeout=5") == Path("/abs/m.db")
    assert sqlite_file("sqlite:///relative/m.db") == Path("relative/m.db")
    for url in ("sqlite://", "sqlite:///:memory:", "postgresql://u@h/db", "http://mlflow:5000"):
        assert sqlite_file(url) is None, url


def test_redact_hides_passwords():
    assert redact("postgresql://alice:s3cret@db/x") == "postgresql://alice:***@db/x"


def test_sqlite_commits_in_wal_mode_without_a_sync_per_commit_on_both_engines(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    try:
        for engine in (store.engine, store.optuna.engine):
            with engine.connect() as connection:
                assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
                assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
    finally:
        store.dispose()


def test_a_database_from_before_a_new_column_gets_it_and_keeps_its_sweeps(store):
    """An upgrade that adds a column to sweeper's tables adds it to an existing database when the
    database is next opened, reading or writing; its sweeps stay, the new field empty."""
    from sqlalchemy import inspect, text

    make_record(store)
    with store.engine.begin() as connection:  # as a database made by the version before
        for column in ("job_id", "image"):
            connection.execute(text(f"ALTER TABLE sweeper_sweeps DROP COLUMN {column}"))
    assert "job_id" not in {c["name"] for c in inspect(store.engine).get_columns("sweeper_sweeps")}
    for create in (False, True):
        reopened = Store(store.url, create=create)
        try:
            (record,) = reopened.list_sweeps()
            assert record.name == "demo-1" and record.job_id is None and record.image is None
        finally:
            reopened.dispose()

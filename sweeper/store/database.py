"""The study database: SQLAlchemy engine, the sweep registry tables, and Optuna's RDB storage.

Optuna's tables and ours live in the same database (SQLite by default, PostgreSQL on a cluster),
so one URL is all a sweep needs, and `sweeper list` works wherever the studies are.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import optuna
from sqlalchemy import (
    ForeignKey,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    func,
    inspect,
    select,
    text,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    Session,
    mapped_column,
    relationship,
    scoped_session,
    sessionmaker,
)

from sweeper.store.credentials import redact
from sweeper.store.locations import sqlite_file
from sweeper.store.states import ConfirmationStatus

SUPPORTED_DIALECTS = ("sqlite", "postgresql")
ELSEWHERE = "point to the database of your sweeps with --storage or SWEEPER_STORAGE"
# what a lost or refusing database raises, through SQLAlchemy or through Optuna's storage
DATABASE_ERRORS = (SQLAlchemyError, optuna.exceptions.StorageInternalError)


class StoreError(Exception):
    """The database cannot be used: bad URL, unreachable server, unknown sweep."""


class NoDatabase(StoreError):
    """A command that only reads found no study database where it looked."""


def engine_kwargs(url: str) -> dict[str, Any]:
    dialect = make_url(url).get_backend_name()
    if dialect == "postgresql":
        # Optuna only adds pre-ping for MySQL; long sweeps outlive idle server connections
        return {"pool_pre_ping": True, "pool_recycle": 300, "pool_size": 2, "max_overflow": 4}
    if dialect == "sqlite":
        return {"connect_args": {"timeout": 60}}
    return {}


def _sqlite_pragmas(connection: Any, record: Any) -> None:
    """WAL, so `sweeper status` reads while the driver writes, and no fsync per commit.

    A trial costs a dozen commits (ask, parameters, reports, tell, attributes); with SQLite's
    default each waits for the disk, and together they sat between one trial and the next. In WAL
    mode with synchronous=NORMAL a commit survives a crash or kill of any process; only an
    operating-system crash or power cut can undo the last few.
    """
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _tune_sqlite(engine: Engine) -> None:
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
        engine.dispose()  # connections opened before the listener get the pragmas on reopening


def check_url(url: str) -> None:
    """Reject URLs we cannot serve, naming the (redacted) URL."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreError(
            f"storage URL {redact(url)!r} is not a SQLAlchemy URL (e.g. sqlite:///sweeps/sweeper.db)"
        ) from None
    if parsed.get_backend_name() not in SUPPORTED_DIALECTS:
        raise StoreError(
            f"storage URL {redact(url)!r}: dialect {parsed.get_backend_name()!r} is not supported; "
            f"use one of: {', '.join(SUPPORTED_DIALECTS)}"
        )


class Base(DeclarativeBase):
    pass


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class SweepRecord(Base):
    """One launched sweep: its resolved spec, where it ran and how it ended."""

    __tablename__ = "sweeper_sweeps"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    spec_name: Mapped[str] = mapped_column(String(64))
    spec_yaml: Mapped[str] = mapped_column(Text)
    spec_hash: Mapped[str] = mapped_column(String(64))
    profile: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))  # a SweepStatus
    created_at: Mapped[dt.datetime] = mapped_column(default=_now)
    started_at: Mapped[dt.datetime | None]
    ended_at: Mapped[dt.datetime | None]
    elapsed_s: Mapped[float] = mapped_column(default=0.0)
    ray_address: Mapped[str | None] = mapped_column(String(256))
    job_id: Mapped[str | None] = mapped_column(String(128))  # the Ray job's submission id, if submitted
    image: Mapped[str | None] = mapped_column(String(512))  # the container image its driver ran in
    tracking_uri: Mapped[str | None] = mapped_column(String(1024))
    mlflow_experiment_id: Mapped[str | None] = mapped_column(String(64))
    message: Mapped[str | None] = mapped_column(Text)
    # what the latest `confirm` of the leaders said (`separation.Decision.as_dict` and its line)
    confirmation_json: Mapped[str | None] = mapped_column(Text)

    studies: Mapped[list[StudyRecord]] = relationship(
        back_populates="sweep", order_by="StudyRecord.id", cascade="all, delete-orphan"
    )


class StudyRecord(Base):
    """One (task, model) Optuna study of a sweep, and its MLflow parent run."""

    __tablename__ = "sweeper_studies"

    id: Mapped[int] = mapped_column(primary_key=True)
    sweep_id: Mapped[int] = mapped_column(ForeignKey("sweeper_sweeps.id"))
    study_name: Mapped[str] = mapped_column(String(256), unique=True)
    task: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(64))
    mlflow_parent_run_id: Mapped[str | None] = mapped_column(String(64))

    sweep: Mapped[SweepRecord] = relationship(back_populates="studies")


class ConfirmationRecord(Base):
    """One seeded retraining of a study's best configuration (`sweeper confirm`)."""

    __tablename__ = "sweeper_confirmations"
    __table_args__ = (UniqueConstraint("study_id", "source_trial", "seed"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("sweeper_studies.id"))
    source_trial: Mapped[int]  # the Optuna trial number whose parameters are retrained
    seed: Mapped[int]
    params_json: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default=ConfirmationStatus.PENDING)
    objective: Mapped[float | None]
    metrics_json: Mapped[str | None] = mapped_column(Text)
    mlflow_run_id: Mapped[str | None] = mapped_column(String(64))
    message: Mapped[str | None] = mapped_column(Text)
    ended_at: Mapped[dt.datetime | None]

    study: Mapped[StudyRecord] = relationship()


def _add_new_columns(engine: Engine) -> None:
    """Bring sweeper's own tables up to this version: a column added since a database was created
    (all are nullable) is added to it, so an older database keeps working after an upgrade."""
    existing = inspect(engine)
    for table in Base.metadata.sorted_tables:
        if not existing.has_table(table.name):
            continue
        present = {column["name"] for column in existing.get_columns(table.name)}
        missing = [column for column in table.columns if column.name not in present]
        if not missing:
            continue
        with engine.begin() as connection:
            for column in missing:
                kind = column.type.compile(dialect=engine.dialect)
                connection.execute(text(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}'))


class StudyReader(optuna.storages.RDBStorage):
    """Optuna's storage of studies a launch has made, opened on the Store's engine to read them.

    Opening `RDBStorage` itself creates any table missing, writes a version row and an Alembic
    stamp where there are none, and checks the schema against Optuna's migration scripts: it
    imports Alembic (and through it SQLAlchemy's every dialect) and parses those scripts, 0.2-0.3 s
    of the 1.1 s `sweeper status` took (issue 89), and may write to a database that a command that
    only reads must leave as it is. Its `skip_table_creation` and `skip_compatibility_check` still
    import Alembic to read the stamp, so this sets what its `__init__` sets for reading (the engine,
    a session per thread, no heartbeat) and skips the rest. The tables exist wherever a study does:
    a launch made it through `Store.optuna`, which checked the schema then.
    """

    def __init__(self, engine: Engine) -> None:  # RDBStorage's own would check and stamp the schema
        self.url = engine.url.render_as_string(hide_password=False)
        self.engine_kwargs: dict[str, Any] = {}
        self.skip_compatibility_check = True
        self.heartbeat_interval = None
        self.grace_period = None
        self.heartbeat_stale_trial_callback = None
        self.failed_trial_callback = None
        self.engine = engine
        self.scoped_session = scoped_session(sessionmaker(bind=engine))


class Store:
    """The database of one storage URL: registry sessions and Optuna storages on one engine."""

    def __init__(self, url: str, create: bool = True) -> None:
        """`create=False` (the commands that only read) refuses, naming where it looked, a
        database that does not exist yet instead of creating an empty one there."""
        check_url(url)
        self.url = url
        path = sqlite_file(url)
        if path is not None:
            if not create and not path.is_file():
                raise NoDatabase(f"no study database at {path.resolve()}; {ELSEWHERE}")
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.engine: Engine = create_engine(url, **engine_kwargs(url))
            _tune_sqlite(self.engine)
            with self.engine.connect():
                pass
            if create:
                Base.metadata.create_all(self.engine)
            elif not inspect(self.engine).has_table(SweepRecord.__tablename__):
                raise NoDatabase(f"{redact(url)} holds no sweeper tables; {ELSEWHERE}")
            _add_new_columns(self.engine)
        except (SQLAlchemyError, NoSuchModuleError) as exc:
            reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
            raise StoreError(f"cannot use storage {redact(url)}: {reason}") from None
        except ImportError as exc:  # e.g. postgresql:// means psycopg 3, which is not installed
            raise StoreError(
                f"cannot use storage {redact(url)}: its database driver is missing ({exc}); "
                "for PostgreSQL use postgresql+psycopg2://"
            ) from None
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._optuna: optuna.storages.RDBStorage | None = None
        self._reader: StudyReader | None = None
        self._studies: dict[str, optuna.Study] = {}

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self._sessions() as session, session.begin():
            yield session

    @property
    def optuna(self) -> optuna.storages.RDBStorage:
        """Optuna's storage on the same database (created once per Store)."""
        if self._optuna is None:
            self._optuna = optuna.storages.RDBStorage(self.url, engine_kwargs=engine_kwargs(self.url))
            _tune_sqlite(self._optuna.engine)
        return self._optuna

    def study(self, name: str) -> optuna.Study:
        """The study `name` of a registered sweep, to read: loaded once per Store, so the summaries,
        the odds and the verdict of one command read each finished trial once (Optuna's study keeps
        those it has read, and reads again only the unfinished ones and any new ones). It reads
        through the writing storage where that is open already, else through a `StudyReader`."""
        if name not in self._studies:
            if self._optuna is None and self._reader is None:
                self._reader = StudyReader(self.engine)
            storage = self._optuna if self._optuna is not None else self._reader
            self._studies[name] = optuna.load_study(study_name=name, storage=storage)
        return self._studies[name]

    def next_sweep_name(self, spec_name: str) -> str:
        """`<spec name>-<n>`, n counting the sweeps launched from that spec name."""
        with self.session() as session:
            count = session.scalar(select(func.count()).where(SweepRecord.spec_name == spec_name))
            name = f"{spec_name}-{count + 1}"
            while session.scalar(select(SweepRecord.id).where(SweepRecord.name == name)) is not None:
                count += 1
                name = f"{spec_name}-{count + 1}"
        return name

    def get_sweep(self, name: str) -> SweepRecord:
        with self.session() as session:
            record = session.scalar(select(SweepRecord).where(SweepRecord.name == name))
            if record is None:
                names = session.scalars(
                    select(SweepRecord.name).order_by(SweepRecord.id.desc()).limit(10)
                ).all()
                known = ", ".join(names) if names else "none yet"
                raise StoreError(f"no sweep named {name!r} in {redact(self.url)} (recent: {known})")
            record.studies  # noqa: B018  (load the studies while the session is open)
            return record

    def latest_sweep(self) -> SweepRecord | None:
        with self.session() as session:
            record = session.scalar(select(SweepRecord).order_by(SweepRecord.id.desc()).limit(1))
            if record is not None:
                record.studies  # noqa: B018
            return record

    def list_sweeps(self) -> list[SweepRecord]:
        with self.session() as session:
            records = session.scalars(select(SweepRecord).order_by(SweepRecord.id)).all()
            for record in records:
                record.studies  # noqa: B018
            return list(records)

    def update_sweep(self, sweep_id: int, **values: Any) -> None:
        with self.session() as session:
            record = session.get(SweepRecord, sweep_id)
            for key, value in values.items():
                setattr(record, key, value)

    def add_sweep(self, record: SweepRecord) -> SweepRecord:
        with self.session() as session:
            session.add(record)
        return record

    def dispose(self) -> None:
        if self._reader is not None:
            self._reader.remove_session()  # its engine is the Store's, disposed below
        if self._optuna is not None:
            self._optuna.remove_session()
            self._optuna.engine.dispose()
        self.engine.dispose()


def now() -> dt.datetime:
    return _now()

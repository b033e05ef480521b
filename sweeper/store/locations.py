"""Where a sweep's records live unless told otherwise, and how a stored address is used again:
the study database and the MLflow store under `./sweeps/`, the credentials a stored tracking URI
gets back from the environment, and the MLflow UI pages that open on a sweep's answer."""

from __future__ import annotations

import os
from pathlib import Path

from sweeper.store.credentials import redact

DEFAULT_HOME = Path("sweeps")
ANSWER_VIEW = "answer"  # the shared MLflow view (`?viewStateShareKey=answer`) a sweep's runs open on


def default_storage_url(home: Path = DEFAULT_HOME) -> str:
    return f"sqlite:///{(home / 'sweeper.db').resolve()}"


def default_tracking_uri(home: Path = DEFAULT_HOME) -> str:
    return f"sqlite:///{(home / 'mlflow.db').resolve()}"


def sqlite_file(url: str) -> Path | None:
    """The file a SQLite URL names; None for an in-memory database or any other backend."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def resolve_tracking_uri(stored: str) -> str:
    """The URI to connect with: a sweep stores its tracking URI without credentials, and gets
    them back from `SWEEPER_TRACKING_URI` when that names the same server."""
    given = os.environ.get("SWEEPER_TRACKING_URI")
    return given if given and redact(given) == stored else stored


def ui_command(tracking_uri: str) -> str:
    return f"mlflow ui --backend-store-uri {redact(tracking_uri)}"


def runs_page(base_url: str, experiment_id: str | None) -> str:
    """The MLflow UI page of a sweep's runs, opened on the answer's shared view."""
    if not experiment_id:
        return base_url
    return f"{base_url.rstrip('/')}/#/experiments/{experiment_id}/runs?viewStateShareKey={ANSWER_VIEW}"

"""Secrets: a database password given to sweeper never leaves the environment variable it came in.

The session's PostgreSQL sweep ran with a storage URL that carries a password, and its outage sweep
with an MLflow URL that does; afterwards every command's output, every row of every table, every
MLflow name and value and every file the sweep wrote is searched for it (`tests/conftest.py`
launches both). And a spec, which is shared and committed, must not be a place for credentials.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml
from sqlalchemy.pool import NullPool

from sweeper.spec.loading import SpecError, parse_spec
from sweeper.store.credentials import redact
from tests.helpers import SECRET, FinishedSweep, cli_env, outage_environment, run_cli, tiny_spec

COMMAND_TIMEOUT_S = 300  # a read command takes seconds; a hung one should fail, not stall CI


def every_row(url: str) -> dict[str, list[str]]:
    """Each table of the database (sweeper's and Optuna's alike) as the text of its rows."""
    engine = sa.create_engine(url, poolclass=NullPool)
    tables = sa.MetaData()
    tables.reflect(engine)
    with engine.connect() as conn:
        rows = {
            name: [repr(tuple(row)) for row in conn.execute(table.select())]
            for name, table in tables.tables.items()
        }
    engine.dispose()
    return rows


def every_mlflow_text(tracking_uri: str, experiment_name: str) -> list[str]:
    """The experiment's own record and, for each run, its params, tags and metric names."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.get_experiment_by_name(experiment_name)
    assert experiment is not None, f"no MLflow experiment {experiment_name!r}"
    texts = [repr(experiment)]
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    assert runs, "the sweep logged no MLflow runs"
    for run in runs:
        texts.append(repr(run.info))
        texts.extend(f"{key}={value}" for key, value in run.data.params.items())
        texts.extend(f"{key}={value}" for key, value in run.data.tags.items())
        texts.extend(run.data.metrics)
    return texts


def files_holding(root: Path, needle: bytes) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and needle in path.read_bytes()]


@pytest.mark.slow
@pytest.mark.postgres
def test_a_password_in_the_storage_url_appears_in_no_output_row_or_file(
    postgres_sweep: FinishedSweep, tmp_path: Path
) -> None:
    """Given the documented way, by environment: the launch, then every command that reads or writes
    the database, each the same way; then everything it printed or stored is searched."""
    url, name = postgres_sweep.storage, postgres_sweep.name
    assert SECRET in url
    env = cli_env({"SWEEPER_STORAGE": url})
    outputs = {"launch": postgres_sweep.launch.stdout + postgres_sweep.launch.stderr}
    commands = {
        "status": ["status"],
        "summarize": ["summarize", name, "--format", "json"],
        "summarize markdown": ["summarize", name, "--format", "markdown"],
        "list": ["list"],
        "report": ["report", name, "--out", str(tmp_path / "report"), "--no-figures"],
        "export": ["export", name, "--out", str(tmp_path / "export")],
    }
    for label, args in commands.items():
        result = run_cli(args, postgres_sweep.cwd, env, timeout=COMMAND_TIMEOUT_S)
        assert result.returncode == 0, (label, result.stdout, result.stderr)
        outputs[label] = result.stdout + result.stderr
    unknown = run_cli(["status", "ghost-1"], postgres_sweep.cwd, env)
    assert unknown.returncode == 2 and "***" in unknown.stderr, unknown.stderr
    outputs["error of status ghost-1"] = unknown.stdout + unknown.stderr

    role = sa.engine.make_url(url).username
    assert f"{role}:***@" in outputs["list"], "the URL did not reach the outputs: the search proves nothing"
    assert name in outputs["list"] and "gru" in outputs["status"]
    assert [label for label, text in outputs.items() if SECRET in text] == []

    rows = every_row(url)
    for table in ("sweeper_sweeps", "sweeper_studies", "trials", "trial_params", "trial_user_attributes"):
        assert rows.get(table), f"table {table} is empty: the search below would prove nothing"
    assert "sweeper_confirmations" in rows and "trial_system_attributes" in rows
    assert [name for name, texts in rows.items() if any(SECRET in text for text in texts)] == []

    mlflow = every_mlflow_text(postgres_sweep.tracking, name)
    assert [text for text in mlflow if SECRET in text] == []

    assert any((postgres_sweep.cwd / "sweeps" / "ray_results").rglob("*")), "Ray Tune wrote no results folder"
    assert (tmp_path / "export").is_dir() and (tmp_path / "report").is_dir()
    assert files_holding(postgres_sweep.cwd, SECRET.encode()) == []
    assert files_holding(tmp_path, SECRET.encode()) == []


@pytest.mark.slow
def test_a_password_in_the_tracking_uri_appears_in_no_output_or_row(outage_sweep: FinishedSweep) -> None:
    """The MLflow server's password, given by environment; the server is down, which is when the
    most warnings are written (`tests.helpers.outage_environment`)."""
    assert SECRET in outage_sweep.tracking
    env = outage_environment(outage_sweep.tracking)
    outputs = {"launch": outage_sweep.launch.stdout + outage_sweep.launch.stderr}
    for args in (["status"], ["list"], ["summarize", outage_sweep.name, "--format", "json"]):
        result = run_cli(args, outage_sweep.cwd, env, timeout=COMMAND_TIMEOUT_S)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        outputs[args[0]] = result.stdout + result.stderr
    assert [label for label, text in outputs.items() if SECRET in text] == []
    rows = every_row(outage_sweep.storage)
    assert rows["sweeper_sweeps"], "the sweep was not registered"
    assert [name for name, texts in rows.items() if any(SECRET in text for text in texts)] == []
    assert files_holding(outage_sweep.cwd, SECRET.encode()) == []


@pytest.mark.parametrize(
    ("field", "url"),
    [
        ("storage", f"postgresql+psycopg2://sweeper:{SECRET}@db.example/studies"),
        ("storage", f"postgresql+psycopg2://:{SECRET}@db.example/studies"),
        ("tracking_uri", f"https://sweeper:{SECRET}@mlflow.example"),
        ("tracking_uri", f"postgresql://sweeper:{SECRET}@db.example/mlflow"),
        pytest.param(
            "storage",
            f"postgresql+psycopg2://sweeper:{SECRET}/x@db.example/studies",
            id="storage-slash-in-password",
        ),
        pytest.param(
            "tracking_uri",
            f"https://sweeper:{SECRET}/x@mlflow.example",
            id="tracking-slash-in-password",
        ),
        pytest.param(
            "storage",
            f"postgresql+psycopg2://sweeper@db.example/studies?password={SECRET}",
            id="storage-password-in-query",
        ),
    ],
)
def test_a_spec_carrying_a_password_is_refused(field: str, url: str) -> None:
    """Specs are shared and stored with every sweep; a password there leaks to all who read them."""
    with pytest.raises(SpecError) as refused:
        parse_spec(yaml.safe_dump(tiny_spec(**{field: url})), "f.yaml")
    variable = {"storage": "SWEEPER_STORAGE", "tracking_uri": "SWEEPER_TRACKING_URI"}[field]
    (message,) = refused.value.errors
    assert message.startswith("f.yaml:") and f"{field}: " in message, message
    assert "password" in message and variable in message and SECRET not in message


def test_redact_hides_a_password_given_as_a_query_parameter() -> None:
    """From SWEEPER_STORAGE such a URL is legitimate, and `list` prints the redacted URL."""
    redacted = redact(f"postgresql+psycopg2://sweeper@db.example/studies?password={SECRET}")
    assert SECRET not in redacted and "db.example/studies" in redacted


@pytest.mark.parametrize(
    ("field", "url"),
    [
        ("storage", "postgresql+psycopg2://sweeper@db.example/studies"),
        ("tracking_uri", "https://mlflow.example"),
    ],
)
def test_a_spec_naming_a_server_without_credentials_is_accepted(field: str, url: str) -> None:
    """The refusal above must not cost specs their ability to say where the database is."""
    spec = parse_spec(yaml.safe_dump(tiny_spec(**{field: url})), "f.yaml")
    assert getattr(spec, field) == url

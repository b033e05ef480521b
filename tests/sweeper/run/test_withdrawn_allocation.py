"""`allocate: curves`, withdrawn: a new spec saying it is refused (`tests/sweeper/spec/test_spec.py`,
`tests/sweeper/cli/test_cli.py`); a sweep stored with it still reads for `status` and `summarize`,
and `resume` runs it on as `equal`, saying so. No Ray: the stored sweep is written in SQLite here."""

from __future__ import annotations

import optuna
import pytest
import yaml
from click.testing import CliRunner
from optuna.distributions import FloatDistribution

from sweeper.cli import main
from sweeper.run.launch import create_sweep, study_searcher, withdrawn_allocation
from sweeper.run.tune.runtime import RunEnd
from sweeper.spec.loading import parse_spec, stored_spec
from sweeper.store.database import Store
from sweeper.store.states import SweepStatus
from sweeper.store.trial_record import RACE_STOP_ATTR, SHARE_ATTR
from tests.helpers import tiny_spec

DROPPED = "raced out at iteration 30 of 30: P(level or ahead) < 0.05 against gru"


@pytest.fixture
def curves_sweep(tmp_path, monkeypatch):
    """A sweep of lstm and gru stored as the curves race left it: allocate: curves and a
    drop_below of its own in its spec, lstm dropped after two trials and its other two given
    to gru."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SWEEPER_STORAGE", raising=False)
    monkeypatch.delenv("SWEEPER_TRACKING_URI", raising=False)
    store = Store(f"sqlite:///{tmp_path / 'sweeps' / 'sweeper.db'}")
    spec = parse_spec(yaml.safe_dump(tiny_spec()), "t.yaml")
    record = create_sweep(spec, store, f"sqlite:///{tmp_path / 'm.db'}", None, None, home=tmp_path)
    text = spec.to_yaml()
    assert "allocate: equal" in text and "drop_below: 0.03" in text
    stored = text.replace("allocate: equal", "allocate: curves").replace(
        "drop_below: 0.03", "drop_below: 0.05"
    )
    store.update_sweep(record.id, spec_yaml=stored, status=SweepStatus.INTERRUPTED)
    lr = FloatDistribution(1e-3, 3e-2, log=True)
    for study_record in record.studies:
        study = optuna.load_study(study_name=study_record.study_name, storage=store.optuna)
        dropped = study_record.model == "lstm"
        for number in range(2 if dropped else 6):
            study.add_trial(
                optuna.trial.create_trial(
                    params={"lr": 0.01},
                    distributions={"lr": lr},
                    value=(0.5 if dropped else 0.1) + number / 100,
                    intermediate_values={10: 0.6, 30: 0.5 if dropped else 0.1},
                )
            )
        study.set_user_attr(SHARE_ATTR, 2 if dropped else 6)
        if dropped:
            study.set_user_attr(
                RACE_STOP_ATTR,
                {"cut": 0, "reason": DROPPED, "iteration": 30, "of": 30, "p_win": 0.01, "against": "gru"},
            )
    yield store, store.get_sweep(record.name)
    store.dispose()


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_a_stored_curves_sweep_still_reads_for_status_and_summarize(curves_sweep) -> None:
    _, record = curves_sweep
    budget = stored_spec(record).budget
    assert (budget.allocate, budget.drop_below) == ("curves", 0.05)
    status = invoke("status", record.name)
    assert status.exit_code == 0, status.output
    assert DROPPED in status.output  # what its race did, as it did it
    summary = invoke("summarize", record.name, "--format", "markdown")
    assert summary.exit_code == 0, summary.output
    assert "| gru |" in summary.output and "| lstm |" in summary.output


def test_resume_runs_a_stored_curves_sweep_as_equal_and_says_so(curves_sweep, monkeypatch) -> None:
    import sweeper.run.launch

    store, record = curves_sweep
    note = withdrawn_allocation(stored_spec(record))
    assert note == (
        "allocate: curves is withdrawn, so it runs on as allocate: equal, each model to 4 trials, "
        "those its race dropped too"
    )
    searcher = study_searcher(store, record, None)  # what `resume` runs (`run_sweep`)
    assert searcher.race is None
    assert {p.model: (p.budget, p.done, p.remaining > 0) for p in searcher.plans} == {
        "lstm": (4, 2, True),  # dropped by its race, it runs again to an equal budget
        "gru": (4, 6, False),
    }
    for plan in searcher.plans:  # status no longer shows the race's drop or shares
        assert (
            plan.study.user_attrs.get(RACE_STOP_ATTR) is None
            and plan.study.user_attrs.get(SHARE_ATTR) is None
        )

    ran = []

    def resume(store, record, where):  # Ray's part: what it runs is `study_searcher`'s, above
        ran.append(record.name)
        return 0, RunEnd(record.name, SweepStatus.INTERRUPTED, "stopped")

    monkeypatch.setattr(sweeper.run.launch, "resume", resume)
    resumed = invoke("resume", record.name)
    assert ran == [record.name], resumed.output
    assert f"sweep {record.name}: {note}" in resumed.output.splitlines()
    assert DROPPED not in resumed.output


def test_no_note_for_a_sweep_on_an_allocation_still_offered() -> None:
    for allocate in ("equal", "race"):
        spec = parse_spec(yaml.safe_dump(tiny_spec(budget={"trials": 4, "allocate": allocate})), "t.yaml")
        assert withdrawn_allocation(spec) is None

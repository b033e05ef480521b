"""Running a reproduction, without Ray: every run registered before any starts, the runs left to
run found again after a stop, and a reproduction with none left marked finished."""

from __future__ import annotations

from sqlalchemy import update

from sweeper.papers.running import pending_jobs, register_runs, run_reproduction
from sweeper.papers.table_runs import plan, spec_for
from sweeper.run.launch import Where, create_sweep
from sweeper.store.database import ConfirmationRecord, Store
from sweeper.store.states import ConfirmationStatus, SweepStatus


def test_runs_are_registered_then_found_pending_then_finished(tmp_path) -> None:
    repro = plan("ncgru", "Table 2", seeds=2, profile="smoke", only={"T": 200})
    (part,) = repro.parts
    spec = spec_for(repro, part, gpus=False)
    store = Store(f"sqlite:///{tmp_path / 'sweeper.db'}")
    try:
        record = create_sweep(spec, store, f"sqlite:///{tmp_path / 'mlflow.db'}", "smoke", None, tmp_path)
        register_runs(store, record, part, repro.seeds)
        jobs = pending_jobs(store, record)
        runs = [row for row in part.rows if row.runs_of == row.index]
        assert len(jobs) == 2 * len(runs) and len({(j.source_trial, j.seed) for j in jobs}) == len(jobs)
        with store.session() as session:
            session.execute(update(ConfirmationRecord).values(status=ConfirmationStatus.COMPLETE))
        assert pending_jobs(store, record) == []
        where = Where(store.url, f"sqlite:///{tmp_path / 'mlflow.db'}", None, None, False, tmp_path)
        end = run_reproduction(store, store.get_sweep(record.name), where)  # nothing left: no Ray
        assert end.status == SweepStatus.FINISHED
        assert store.get_sweep(record.name).status == SweepStatus.FINISHED
    finally:
        store.dispose()

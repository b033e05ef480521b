"""Confirmation runs read back from the registry: the best configurations retrained on fresh seeds,
with their mean and spread.

`sweeper confirm` (`sweeper.run.confirm`) writes them; `status`, `report` and the MLflow parent runs
read them here, without Ray.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from sweeper.spec.loading import stored_spec
from sweeper.store.database import ConfirmationRecord, Store, SweepRecord
from sweeper.store.states import ConfirmationStatus


def test_metric(metric: str) -> str:
    """The test-split counterpart of a validation metric (`valid_loss` → `test_loss`)."""
    return "test_" + metric.removeprefix("valid_")


@dataclass(frozen=True)
class ConfirmedStudy:
    task: str
    model: str
    source_trial: int
    params: dict[str, Any]
    seeds: list[int]
    objectives: list[float]
    tests: list[float]
    failed: int

    @property
    def objective(self) -> tuple[float | None, float | None]:
        return mean_std(self.objectives)

    @property
    def test(self) -> tuple[float | None, float | None]:
        return mean_std(self.tests)


def mean_std(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (n − 1); no spread is claimed from a single run."""
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def confirmed(store: Store, record: SweepRecord) -> list[ConfirmedStudy]:
    """The confirmations of each study's latest confirmed configuration, from the registry."""
    metric = test_metric(stored_spec(record).resolved_objective().metric)
    results = []
    with store.session() as session:
        for study_record in record.studies:
            rows = session.scalars(
                select(ConfirmationRecord)
                .where(ConfirmationRecord.study_id == study_record.id)
                .order_by(ConfirmationRecord.id)
            ).all()
            if not rows:
                continue
            source = rows[-1].source_trial
            rows = [r for r in rows if r.source_trial == source]
            done = [r for r in rows if r.status == ConfirmationStatus.COMPLETE]
            tests = [json.loads(r.metrics_json).get(metric) for r in done]
            results.append(
                ConfirmedStudy(
                    task=study_record.task,
                    model=study_record.model,
                    source_trial=source,
                    params=json.loads(rows[-1].params_json),
                    seeds=[r.seed for r in done],
                    objectives=[r.objective for r in done],
                    tests=[t for t in tests if t is not None],
                    failed=sum(r.status == ConfirmationStatus.FAILED for r in rows),
                )
            )
    return results

"""A study's summary: the price set beside what its trials spent in their workers."""

from __future__ import annotations

from pathlib import Path

import optuna
import yaml
from rich.console import Console

from sweeper.results.summaries import StudySummary, cost_line, study_summaries
from sweeper.results.tables import STATUS_LEGEND, UNTIMED_LEGEND, status_table
from sweeper.spec.loading import parse_spec
from sweeper.store.database import Store, StudyRecord, SweepRecord
from tests.helpers import add_queued_trials, tiny_spec


def summary(model: str, priced: tuple[float, float], worker_seconds: float, seconds: float) -> StudySummary:
    return StudySummary(
        f"s/denoise/{model}",
        "denoise",
        model,
        {},
        0,
        None,
        seconds=seconds,
        worker_seconds=worker_seconds,
        predicted_hours=priced,
    )


def test_the_cost_is_the_trials_time_in_their_workers_not_their_wait_for_one() -> None:
    # 1.8 + 1.8 = 3.6 s in the workers: 0.001 worker-hours, within the price, though the trials
    # counted 36 s from their suggestion, most of it queued for a free worker
    studies = [summary("gru", (0.0004, 0.0006), 1.8, 18.0), summary("lstm", (0.0004, 0.0006), 1.8, 18.0)]
    assert cost_line(studies) == (
        "cost: priced at 0.0008-0.0012 worker-hours at launch, spent 0.001 in the workers (within)"
    )
    studies[0].worker_seconds = 7.2
    assert cost_line(studies).endswith("spent 0.0025 in the workers (2.1x its high end)")
    assert cost_line([summary("gru", (0.0004, 0.0006), 1.296, 2.0)]).endswith("(0.9x its low end)")
    assert cost_line([StudySummary("s/denoise/gru", "denoise", "gru", {}, 0, None)]) is None


def test_a_large_sweeps_cost_reads_in_plain_numbers() -> None:
    assert cost_line([summary("gru", (200.0, 1800.0), 3600 * 1534.2, 0.0)]) == (
        "cost: priced at 200-1,800 worker-hours at launch, spent 1,534 in the workers (within)"
    )


def queued_sweep(
    folder: Path, walls: dict[str, list[float]], unrecorded: tuple[str, ...] = ()
) -> tuple[Store, SweepRecord]:
    """A finished sweep whose studies ran these trials (seconds in their workers) two at a time,
    each suggested at the start: the later ones waited for a free slot. The `unrecorded` models'
    trials recorded no time of their own."""
    spec = tiny_spec(name="queued", models=tuple(walls), budget={"trials": 6, "max_concurrent": 2})
    spec["budget"]["study_time"] = "5m"
    store = Store(f"sqlite:///{folder / 'sweeper.db'}")
    parsed = parse_spec(yaml.safe_dump(spec), "queued.yaml")
    record = SweepRecord(name="queued-1", spec_yaml=parsed.to_yaml(), status="finished", elapsed_s=31.0)
    for model, seconds in walls.items():
        name = f"queued-1/denoise/{model}"
        study = optuna.create_study(study_name=name, storage=store.optuna)
        add_queued_trials(study, seconds, slots=2, recorded=model not in unrecorded)
        record.studies.append(StudyRecord(study_name=name, task="denoise", model=model))
    return store, record


def shown(table: object) -> str:
    console = Console(width=80, record=True)
    console.print(table)
    return console.export_text()


def time_cells(text: str) -> dict[str, str]:
    """The status table's time column, by model."""
    rows = [line.split("│") for line in text.splitlines() if line.startswith("│")]
    return {row[1].split()[0]: row[-2].strip() for row in rows}


def test_the_status_tables_time_is_the_trials_own_in_their_workers_not_their_wait_for_one(tmp_path) -> None:
    # six trials on two slots: gru 6 x 10 s in its workers, 10 + 10 + 20 + 20 + 30 + 30 s from
    # the suggestions; lstm 6 x 5 s, 60 s
    store, record = queued_sweep(tmp_path, {"gru": [10.0] * 6, "lstm": [5.0] * 6})
    summaries = study_summaries(store, record)
    assert [(s.model, s.worker_seconds, s.seconds) for s in summaries] == [
        ("gru", 60.0, 120.0),
        ("lstm", 30.0, 60.0),
    ]
    text = shown(status_table(record, summaries))
    assert time_cells(text) == {"gru": "60s of 300s", "lstm": "30s of 300s"}  # `budget.study_time` alike
    assert " ".join(STATUS_LEGEND.split()) in " ".join(text.split())
    assert "≤" not in text
    store.dispose()


def test_a_study_with_no_worker_time_recorded_shows_its_suggested_time_marked(tmp_path) -> None:
    store, record = queued_sweep(tmp_path, {"gru": [10.0] * 6, "lstm": [5.0] * 6}, unrecorded=("lstm",))
    text = shown(status_table(record, study_summaries(store, record)))
    assert time_cells(text) == {"gru": "60s of 300s", "lstm": "≤60s of 300s"}
    assert " ".join(UNTIMED_LEGEND.split()) in " ".join(text.split())
    store.dispose()

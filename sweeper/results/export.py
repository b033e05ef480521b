"""Export of a sweep's trials, so it can be analysed or shared without the database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from sweeper.store.database import Store, SweepRecord
from sweeper.store.trial_record import FAIL_REASON_ATTR, INTERRUPTED_ATTR, SEED_ATTR

Format = Literal["csv", "parquet"]


def trial_frames(store: Store, record: SweepRecord) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every trial of every study (one row each) and every intermediate value (one row each)."""
    rows: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    for study_record in record.studies:
        study = store.study(study_record.study_name)
        for trial in study.get_trials(deepcopy=False):
            duration = trial.duration.total_seconds() if trial.duration is not None else None
            rows.append(
                {
                    "study": study_record.study_name,
                    "task": study_record.task,
                    "model": study_record.model,
                    "number": trial.number,
                    "state": trial.state.name,
                    "value": trial.value,
                    "seed": trial.user_attrs.get(SEED_ATTR),
                    "interrupted": bool(trial.user_attrs.get(INTERRUPTED_ATTR, False)),
                    "fail_reason": trial.user_attrs.get(FAIL_REASON_ATTR),
                    "datetime_start": trial.datetime_start,
                    "datetime_complete": trial.datetime_complete,
                    "duration_s": duration,
                    "params": json.dumps(trial.params, sort_keys=True),
                    **{f"param.{k}": v for k, v in trial.params.items()},
                }
            )
            steps.extend(
                {"study": study_record.study_name, "number": trial.number, "step": step, "value": value}
                for step, value in sorted(trial.intermediate_values.items())
            )
    trials = pd.DataFrame(rows)
    intermediate = pd.DataFrame(steps, columns=["study", "number", "step", "value"])
    return trials, intermediate


def export_sweep(store: Store, record: SweepRecord, out: Path, fmt: Format = "csv") -> list[Path]:
    """Write `<out>/<sweep>/{spec.yaml, trials.<fmt>, intermediate_values.<fmt>}`; return the paths."""
    target = out / record.name.replace("/", "_")
    target.mkdir(parents=True, exist_ok=True)
    trials, intermediate = trial_frames(store, record)
    spec_path = target / "spec.yaml"
    spec_path.write_text(record.spec_yaml)
    written = [spec_path]
    for name, frame in (("trials", trials), ("intermediate_values", intermediate)):
        path = target / f"{name}.{fmt}"
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
        written.append(path)
    return written

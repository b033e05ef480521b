"""`sweeper export` without Ray: a recorded sweep's trials and intermediate values as files."""

from __future__ import annotations

import pandas as pd
import pytest

from sweeper.results.export import export_sweep
from sweeper.store.database import Store
from tests.helpers import recorded_sweep


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_writes_the_spec_trials_and_curves(tmp_path, fmt) -> None:
    folder = recorded_sweep(tmp_path / "home")
    store = Store(f"sqlite:///{folder / 'sweeps' / 'sweeper.db'}")
    try:
        record = store.get_sweep("denoise-1")
        spec, trials, curves = export_sweep(store, record, tmp_path / "out", fmt)
    finally:
        store.dispose()
    assert spec.read_text() == record.spec_yaml
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    table, intermediate = read(trials), read(curves)
    models = {study.model for study in record.studies}
    assert len(table) == 2 * len(models) and set(table["model"]) == models
    assert set(intermediate["step"]) == {20, 40}

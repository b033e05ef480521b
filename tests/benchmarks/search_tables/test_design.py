"""A table records whole points: a papers' point that leaves a value to the sampler is recorded
only where the run ignores that value (capacity under the FFT layout), at its range's low end."""

from __future__ import annotations

import pytest

from benchmarks.search_tables.design import base_spec, paper_design
from benchmarks.search_tables.table import Settings

SCALED = Settings(hidden=None, hidden_scale=0.25)


def test_a_papers_point_at_a_power_of_two_is_recorded_with_the_capacity_it_ignores() -> None:
    spec = base_spec("shortest_path", SCALED, ["goru", "eurnn"])
    for model in ("goru", "eurnn"):
        (point,) = paper_design(spec, SCALED, model)
        assert point.label == f"goru2019 Table 3, {model}"
        assert point.params["hidden_size"] == 32  # the paper's 128, a quarter: the FFT layout
        assert point.params["capacity"] == 2 == point.config["capacity"]


def test_a_papers_point_leaving_a_value_the_run_reads_is_refused() -> None:
    settings = Settings(hidden=None, hidden_scale=0.2)  # 128 x 0.2 = 26: the tunable layout reads capacity
    spec = base_spec("shortest_path", settings, ["goru"])
    with pytest.raises(ValueError, match="leaves capacity to the sampler"):
        paper_design(spec, settings, "goru")

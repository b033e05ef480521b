"""The rule that chooses the default: behind random in no (table, task, W), then the lowest median
90%-right point; a point never reached counts as behind and as infinite; where every candidate is
behind somewhere, the fewest such cells."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.search_tables import choose_default


def replay(**strategies: list[tuple[float | None, float | None]]) -> dict:
    """A replay's JSON with one task at W = 4 and 8: per strategy, (90%-right point, lower end)."""
    cells = {}
    for w, index in (("W=4", 0), ("W=8", 1)):
        cells[w] = {
            "strategies": {
                name: {"ratio_90": values[index][0], "ratio_90_interval": [values[index][1], None]}
                for name, values in strategies.items()
            }
        }
    return {"tasks": {"copying": cells}}


def test_the_default_is_behind_random_nowhere_with_the_lowest_median() -> None:
    replays = {
        "first": replay(
            default=[(0.9, 0.8), (0.7, 0.6)], transfer=[(0.5, 0.4), (0.6, 0.5)], old=[(0.3, 1.1), (0.2, 0.1)]
        ),
        "second": replay(
            default=[(1.0, 0.9), (0.8, 0.7)],
            transfer=[(None, None), (0.4, 0.3)],
            old=[(0.3, 0.2), (0.2, 0.1)],
        ),
    }
    result = choose_default.judged(replays, ("default", "transfer", "old"))
    assert result["chosen"] == "default" and result["behind_random_nowhere"]
    assert result["candidates"]["transfer"]["behind_random"] == 1  # never 90% right in one cell
    assert result["candidates"]["old"]["behind_random"] == 1  # its interval's lower end above 1
    assert result["candidates"]["transfer"]["median_ratio_90"] == pytest.approx(0.55)
    worst = {"first": replay(a=[(0.5, 1.2), (None, None)], b=[(0.9, 1.1), (0.7, 0.6)])}
    fallback = choose_default.judged(worst, ("a", "b"))
    assert fallback["chosen"] == "b" and not fallback["behind_random_nowhere"]
    assert fallback["candidates"]["a"]["median_ratio_90"] is None  # never right in half its cells


def test_the_choice_is_written_with_its_command_and_a_missing_replay_refused(tmp_path: Path) -> None:
    path = tmp_path / "first.json"
    path.write_text(json.dumps(replay(default=[(0.9, 0.8), (0.7, 0.6)])))
    out = tmp_path / "choice.json"
    assert choose_default.main([str(path), "--candidates", "default", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["chosen"] == "default" and written["command"].startswith(
        "python -m benchmarks.search_tables"
    )
    assert choose_default.main([str(tmp_path / "none.json")]) == 2

"""The rule that chooses the default: behind random in no (table, task, W), then the lowest median
90%-right point over the cells with a B; a point never reached counts as behind and as infinite;
where every candidate is behind somewhere, the fewest such cells; an exact tie goes to the first
given; a cell is read once however many replays hold it; chosen with transfer and for a first
sweep, and the spec's defaults follow both."""

from __future__ import annotations

import itertools
import json
import shlex
from pathlib import Path

import pytest

from benchmarks.search_tables import choose_default
from benchmarks.search_tables.strategies import STRATEGIES
from sweeper.spec.sections import Budget, Sampler, Scheduler


def replay(**strategies: list[tuple[float | None, float | None]]) -> dict:
    """A replay's JSON with one task at W = 4 and 8: per strategy, (90%-right point, lower end)."""
    cells = {}
    for w, index in (("W=4", 0), ("W=8", 1)):
        cells[w] = {
            "strategies": {
                name: {"ratio_90": values[index][0], "ratio_90_interval": [values[index][1], None]}
                for name, values in strategies.items()
            },
            "B_hours": 1.0,
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


def test_a_cell_random_never_gets_right_counts_behind_only_who_is_never_right_there_either() -> None:
    """No B where random is never 90% right: a candidate is behind there only if it is never 90%
    right within its budget either, and the median is over the cells with a B."""
    unreached = replay(default=[(None, None), (None, None)], old=[(None, None), (None, None)])
    for verdict in unreached["tasks"]["copying"].values():
        verdict["B_hours"] = None
        verdict["strategies"]["old"]["hours_90"] = 0.7
    measured = replay(default=[(0.9, 0.8), (0.7, 0.6)], old=[(0.8, 0.7), (0.6, 0.5)])
    result = choose_default.judged({"first": measured, "second": unreached}, ("default", "old"))
    old, default = result["candidates"]["old"], result["candidates"]["default"]
    assert old["behind_random"] == 0 and default["behind_random"] == 2
    assert result["chosen"] == "old" and result["behind_random_nowhere"]
    assert old["median_ratio_90"] == pytest.approx(0.7) and default["median_ratio_90"] == pytest.approx(0.8)
    assert [c["random_never_right"] for c in old["cells"]] == [False, False, True, True]
    assert [c["hours_90"] for c in old["cells"] if c["random_never_right"]] == [0.7, 0.7]


def committed_choice(name: str, candidates: tuple[str, ...]) -> dict:
    """A committed choice, checked to be what the rule chooses again from the replays its command
    names (a choice not written again after its replays or the candidates changed fails)."""
    root = Path(__file__).parents[3]
    choice = json.loads((root / "benchmarks/results" / name).read_text())
    words = shlex.split(choice["command"])
    files = [w for before, w in itertools.pairwise(words) if w.endswith(".json") and before != "--out"]
    replays = {Path(f).stem: json.loads((root / f).read_text()) for f in files}
    again = choose_default.judged(replays, candidates)
    assert json.loads(json.dumps(again)) == {
        k: v for k, v in choice.items() if k not in ("command", "machine")
    }
    return choice


def test_the_service_default_is_the_candidate_the_rule_chose() -> None:
    """A new replay that moves the choice fails here until the spec's defaults follow it, and a
    choice not written again after its replays or the candidates changed fails too."""
    choice = committed_choice("default-choice.json", choose_default.CANDIDATES)
    chosen = STRATEGIES[choice["chosen"]]
    assert chosen.sampler != "old", "independent TPE is not a spec setting"
    sampler = Sampler()
    assert (sampler.name, sampler.paper_points, sampler.transfer, sampler.multivariate) == (
        chosen.sampler,
        chosen.paper_points,
        chosen.transfer,
        chosen.multivariate,
    )
    scheduler = Scheduler()
    assert (scheduler.name, scheduler.grace_period, scheduler.judge_paper_points) == (
        chosen.scheduler,
        None,
        chosen.judge_points,
    )
    budget = Budget()
    assert budget.allocate == chosen.allocate
    assert not chosen.warm and not chosen.late_grace


def test_a_cell_is_read_once_and_an_exact_tie_goes_to_the_first_given() -> None:
    """A replay of a few strategies repeats the full one's cells for the strategies both hold:
    read once. Two candidates equal on cells behind and median: the first given."""
    full = replay(default=[(0.5, 0.4), (0.6, 0.5)], a=[(0.5, 0.4), (0.6, 0.5)])
    few = replay(default=[(0.5, 0.4), (0.6, 0.5)], b=[(0.5, 0.4), (0.6, 0.5)])
    unreached = replay(a=[(None, None), (None, None)], b=[(None, None), (None, None)])
    for verdict in unreached["tasks"]["copying"].values():
        verdict["B_hours"] = None
        verdict["strategies"]["a"]["hours_90"] = 0.5
        verdict["strategies"]["b"]["hours_90"] = 0.6
    for data, folder in ((full, "benchmarks/results/t1"), (few, "/elsewhere/t1"), (unreached, "t2")):
        data["settings"] = {"table": folder}
    result = choose_default.judged({"full": full, "few": few, "unreached": unreached}, ("default", "a", "b"))
    assert len(result["candidates"]["default"]["cells"]) == 2  # not 4: the two replays of t1 repeat it
    assert [c["table"] for c in result["candidates"]["b"]["cells"]] == [
        "few",
        "few",
        "unreached",
        "unreached",
    ]
    assert result["candidates"]["a"]["median_ratio_90"] == result["candidates"]["b"]["median_ratio_90"]
    assert result["candidates"]["a"]["behind_random"] == result["candidates"]["b"]["behind_random"] == 0
    both = {"full": full, "few": few, "unreached": unreached}
    assert choose_default.judged(both, ("a", "b"))["chosen"] == "a"
    assert choose_default.judged(both, ("b", "a"))["chosen"] == "b"


def test_a_first_sweeps_default_is_the_candidate_the_rule_chose_for_it() -> None:
    """The choice for a database without other tasks: the portfolio is on by default exactly when
    the rule chose `first-sweep` over the searches that need no other task's sweep."""
    choice = committed_choice("default-choice-first.json", choose_default.FIRST_CANDIDATES)
    assert Sampler().portfolio == (choice["chosen"] == "first-sweep")

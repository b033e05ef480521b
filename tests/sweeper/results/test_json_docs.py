"""docs/json.md says what every definition and field of the `--json` schemas is, and which version
added it; the rendering refuses a schema that does not (that the page is current is
tests/sweeper/cli/test_terminal.py's)."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic.json_schema import models_json_schema

from sweeper.results.json_docs import arrivals, problems, schemas_markdown
from sweeper.results.outputs import SCHEMAS, Output, Report, Study, SweepStatus, VerdictOdds, described


def test_every_definition_and_field_of_the_schemas_says_what_it_is_and_when_it_came() -> None:
    assert problems(SCHEMAS) == []


def test_a_definition_arrives_with_the_field_that_first_holds_it_in_each_kind() -> None:
    held = arrivals(SCHEMAS)
    assert held[SweepStatus] == {"status": 1}
    assert held[VerdictOdds] == {"status": 2, "report": 2}
    assert held[Study] == {"status": 1}
    # every definition the JSON Schema has, each command's and the ones they share, is walked
    _, shared = models_json_schema([(schema, "validation") for schema in set(SCHEMAS.values())])
    assert {model.__name__ for model in held} == set(shared["$defs"])


class Bare(Output):
    count: int  # a comment is no description


class Top(Output):
    """A schema whose shared definition says nothing."""

    kind: Literal["top"] = described("the command", "top")
    version: Literal[2] = described("its version", 2)
    bare: Bare = described("what it holds")


class Later(Output):
    """A schema whose second version added nothing it names, and a field dated past its version."""

    kind: Literal["later"] = described("the command", "later")
    version: Literal[2] = described("its version", 2)
    said: int = described("a field from a future version", 0, later=3)
    odds: VerdictOdds | None = described("a definition added before its holder", None, report=2)


def test_a_definition_or_field_that_says_nothing_is_refused() -> None:
    assert problems({"top": Top}) == [
        "Bare: no docstring",
        "Bare.count: no description",
        "top version 2: no field says it added it",
    ]
    with pytest.raises(ValueError, match=r"Bare\.count: no description"):
        schemas_markdown({"top": Top})


def test_a_version_no_field_can_have_is_refused() -> None:
    found = problems({"later": Later})
    assert "Later.said: later version 3, outside 1-2" in found
    assert "Later.odds: added to report, which does not hold Later" in found
    assert "later version 2: no field says it added it" in found


def test_each_field_states_the_version_that_added_it_in_each_kind_that_holds_it() -> None:
    page = schemas_markdown()
    assert "| `p_tie` | number or null | status 4, report 3 |" in page
    assert "| `few_draws` | object of array of integer | status 6, report 4 |" in page
    assert "| `odds` | [VerdictOdds](#verdictodds) or null | 2 |" in page
    assert "Held by status since version 6, confirm since version 1." in page  # ConfirmationClaim
    assert Report.model_fields["odds"].description in page

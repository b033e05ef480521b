"""docs/json.md, rendered from the `--json` schemas (`sweeper.results.outputs`), so the page says
what the code validates and cannot drift from it:

    python -m sweeper.results.json_docs > docs/json.md

Each command's schema, then the definitions they share, once each: what it is, a table of its
fields (type, the version that added it, what it holds) and its JSON Schema. A definition
without a docstring, a field without a description, or a version that cannot be right (a field
added before its definition, after its kind's current version, or a current version that added
nothing) stops the rendering: `problems` lists them.
"""

from __future__ import annotations

import json
import typing
from typing import Any

from pydantic.fields import FieldInfo
from pydantic.json_schema import models_json_schema

from sweeper.results.outputs import REPORT_VERSION, SCHEMAS, STATUS_VERSION, VERSION, Output

ANNOTATIONS = ("title", "description", "added")  # said in the tables, not repeated in the JSON


def kinds(schemas: dict[str, type[Output]]) -> dict[str, type[Output]]:
    """Each top-level schema under the first command that names it: the kind a field's `added`
    versions are keyed by (`summarize` shares `status`'s schema, and its versions)."""
    named: dict[str, type[Output]] = {}
    for command, schema in schemas.items():
        if schema not in named.values():
            named[command] = schema
    return named


def _added(info: FieldInfo) -> dict[str, int]:
    extra = info.json_schema_extra
    return dict(extra.get("added", {})) if isinstance(extra, dict) else {}


def _nested(annotation: Any) -> list[type[Output]]:
    """The definitions a field's type holds (`list[Study]`, `VerdictOdds | None`)."""
    if isinstance(annotation, type) and issubclass(annotation, Output):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _nested(arg)]


def field_versions(info: FieldInfo, arrived: dict[str, int]) -> dict[str, int]:
    """The version of each kind that added a field, of a definition that arrived at `arrived`."""
    added = _added(info)
    return {kind: added.get(kind, version) for kind, version in arrived.items()}


def arrivals(schemas: dict[str, type[Output]]) -> dict[type[Output], dict[str, int]]:
    """Each definition, with the version of each kind that first held it (through the field that
    holds it: `VerdictOdds` came with status's `odds`, version 2)."""
    found: dict[type[Output], dict[str, int]] = {}

    def walk(model: type[Output], arrived: dict[str, int]) -> None:
        held = found.setdefault(model, {})
        for kind, version in arrived.items():
            held[kind] = min(held.get(kind, version), version)
        for info in model.model_fields.values():
            for nested in _nested(info.annotation):
                walk(nested, field_versions(info, arrived))

    for kind, schema in kinds(schemas).items():
        walk(schema, {kind: 1})
    return found


def current_versions(schemas: dict[str, type[Output]]) -> dict[str, int]:
    return {kind: schema.model_fields["version"].default for kind, schema in kinds(schemas).items()}


def problems(schemas: dict[str, type[Output]]) -> list[str]:
    """What keeps the schemas from documenting themselves, one line each; none when each
    definition and field says what it is and each version names what it added."""
    current = current_versions(schemas)
    found, named = [], {kind: {1} for kind in current}
    for model, arrived in arrivals(schemas).items():
        if not (model.__doc__ or "").strip():
            found.append(f"{model.__name__}: no docstring")
        for name, info in model.model_fields.items():
            where = f"{model.__name__}.{name}"
            if not (info.description or "").strip():
                found.append(f"{where}: no description")
            for kind in set(_added(info)) - set(arrived):
                found.append(f"{where}: added to {kind}, which does not hold {model.__name__}")
            for kind, version in field_versions(info, arrived).items():
                named[kind].add(version)
                if not arrived[kind] <= version <= current[kind]:
                    found.append(
                        f"{where}: {kind} version {version}, outside {arrived[kind]}-{current[kind]}"
                    )
    for kind, versions in named.items():
        unnamed = sorted(set(range(1, current[kind] + 1)) - versions)
        found += [f"{kind} version {version}: no field says it added it" for version in unnamed]
    return found


def _type(schema: dict[str, Any]) -> str:
    """A property's JSON type in words, its definitions linked."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in schema:
        return " or ".join(_type(option) for option in schema["anyOf"])
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if schema.get("type") == "array":
        return f"array of {_grouped(_type(schema.get('items', {})))}"
    if schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_grouped(_type(schema['additionalProperties']))}"
    return schema.get("type", "any")


def _grouped(words: str) -> str:
    return f"({words})" if " or " in words else words


def _validation_only(schema: Any) -> Any:
    """A JSON Schema without its annotations, which the tables state once."""
    if isinstance(schema, list):
        return [_validation_only(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept = {}
    for key, value in schema.items():
        if key == "properties":
            kept[key] = {name: _validation_only(sub) for name, sub in value.items()}
        elif key not in ANNOTATIONS:
            kept[key] = _validation_only(value)
    return kept


def _since(versions: dict[str, int], top: bool) -> str:
    """A field's versions: the number alone in its command's own schema, by kind where shared."""
    if top:
        return str(next(iter(versions.values())))
    return ", ".join(f"{kind} {version}" for kind, version in versions.items())


def _definition(model: type[Output], schema: dict[str, Any], arrived: dict[str, int], top: bool) -> list[str]:
    """A definition's text, its fields' table and its JSON Schema."""
    lines = [" ".join((model.__doc__ or "").split()), ""]
    if not top:
        since = ", ".join(f"{kind} since version {version}" for kind, version in arrived.items())
        lines += [f"Held by {since}.", ""]
    lines += ["| field | type | since | holds |", "| --- | --- | --- | --- |"]
    for name, info in model.model_fields.items():
        since = _since(field_versions(info, arrived), top)
        meaning = (info.description or "").replace("|", "\\|")
        kind = _type(schema["properties"][name]).replace("|", "\\|")
        lines.append(f"| `{name}` | {kind} | {since} | {meaning} |")
    body = json.dumps(_validation_only(schema), indent=1)
    return [
        *lines,
        "",
        "<details><summary>JSON Schema</summary>",
        "",
        "```json",
        body,
        "```",
        "",
        "</details>",
        "",
    ]


def schemas_markdown(schemas: dict[str, type[Output]] = SCHEMAS) -> str:
    """docs/json.md: each command's schema once (commands that share one, under one heading), then
    the definitions they share, once each; refused while `problems` finds any."""
    found = problems(schemas)
    if found:
        raise ValueError("the --json schemas do not document themselves:\n" + "\n".join(found))
    tops = list(kinds(schemas).values())
    _, shared = models_json_schema([(top, "validation") for top in tops], ref_template="#/$defs/{model}")
    definitions = dict(shared["$defs"])
    held = arrivals(schemas)
    lines = [
        "# `--json` output",
        "",
        "Generated by `python -m sweeper.results.json_docs > docs/json.md` from the schemas in",
        "`sweeper/results/outputs.py`; the tests check that it is current and that every command's",
        "output validates against these schemas. Each document names its `kind` (the command) and its",
        f"schema's `version`: status and summarize {STATUS_VERSION}, report {REPORT_VERSION}, the others "
        f"{VERSION}.",
        "A new field comes with a new version and none is renamed: a field's `since` is the version of",
        "its schema that added it (`status` stands for summarize too, which shares its schema). A type",
        "that names a definition links to it under [Shared definitions](#shared-definitions).",
        "",
    ]
    for top in tops:
        commands = [command for command, schema in schemas.items() if schema is top]
        heading = "## " + ", ".join(f"sweeper {command} --json" for command in commands)
        lines += [heading, "", *_definition(top, definitions.pop(top.__name__), held[top], top=True)]
    lines += ["## Shared definitions", ""]
    by_name = {model.__name__: model for model in held}
    for name, schema in sorted(definitions.items()):
        lines += [f"### {name}", "", *_definition(by_name[name], schema, held[by_name[name]], top=False)]
    return "\n".join(lines)


if __name__ == "__main__":
    print(schemas_markdown(), end="")

"""Reading a spec: YAML without aliases, profiles merged, every error located by file, line and
key path; and the spec of a sweep already stored, parsed once.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import (
    ValidationError,
)

from sweeper.spec.sweep import SweepSpec
from sweeper.spec.values import Loc, LocatedErrors, pydantic_message

if TYPE_CHECKING:
    from sweeper.store.database import SweepRecord

MAX_SPEC_BYTES = 1_000_000


class SpecError(Exception):
    """A spec that cannot run; `errors` holds one human-readable line per problem."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


class _NoAliasLoader(yaml.SafeLoader):
    """Safe loader that refuses anchors and aliases: they buy nothing here and allow YAML bombs."""

    max_depth = 50  # a deeper spec is garbage, and far deeper ones would exhaust the stack

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > self.max_depth:
                raise yaml.constructor.ConstructorError(
                    None, None, f"nested more than {self.max_depth} levels deep", self.peek_event().start_mark
                )
            return self._compose_checked(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        """Refuse a key given twice: YAML would silently keep the last one."""
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)):
                continue
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}: each key may appear once", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)

    def _compose_checked(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.constructor.ConstructorError(
                None,
                None,
                "anchors and aliases (&name / *name) are not allowed in sweep specs",
                event.start_mark,
            )
        return super().compose_node(parent, index)


def _line_index(node: yaml.Node, path: Loc = ()) -> dict[Loc, int]:
    """Key path → 1-based line, for every node of a composed YAML document."""
    lines: dict[Loc, int] = {path: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = (*path, key.value)
            lines[child] = key.start_mark.line + 1
            lines.update({k: v for k, v in _line_index(value, child).items() if k != child})
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines.update(_line_index(item, (*path, i)))
    return lines


def _line_for(loc: Loc, *indexes: dict[Loc, int]) -> int | None:
    for end in range(len(loc), -1, -1):
        for index in indexes:
            if loc[:end] in index:
                return index[loc[:end]]
    return None


def _deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _format_loc(loc: Loc) -> str:
    return ".".join(str(part) for part in loc) or "(top level)"


def _compose_and_load(text: str) -> tuple[Any, Any]:
    """The node tree (for line numbers) and the data built from it: one parse, not two."""
    loader = _NoAliasLoader(text)
    try:
        node = loader.get_single_node()
        return node, None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def parse_spec(
    text: str, source: str = "<spec>", profile: str | None = None, *, trusted: bool = False
) -> SweepSpec:
    """Parse YAML text into a validated spec; raises SpecError naming source, line and key.

    `trusted`: the text is a sweep's stored spec, validated against the registries at launch.
    """
    if len(text.encode()) > MAX_SPEC_BYTES:
        raise SpecError([f"{source}: the file is larger than {MAX_SPEC_BYTES} bytes"])
    try:
        node, raw = _compose_and_load(text)
    except RecursionError:
        raise SpecError([f"{source}: nested too deeply to be a sweep spec"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError([f"{where}: not valid YAML: {problem}"]) from None
    if not isinstance(raw, dict):
        raise SpecError([f"{source}:1: a sweep spec must be a mapping of keys (name, task, models, ...)"])
    base_lines = _line_index(node) if node is not None else {}
    profile_lines: dict[Loc, int] = {}
    missing_sections: set[str] = set()
    if profile is not None:
        profiles = raw.get("profiles") or {}
        if not isinstance(profiles, dict) or profile not in profiles:
            known = ", ".join(map(str, profiles)) if isinstance(profiles, dict) and profiles else "none"
            raise SpecError([f"{source}: no profile {profile!r} (profiles: {known})"])
        override = profiles[profile]
        if not isinstance(override, dict):
            line = base_lines.get(("profiles", profile))
            raise SpecError(
                [f"{source}:{line}: profiles.{profile}: a profile must be a mapping of overrides"]
            )
        if "profiles" in override:
            raise SpecError([f"{source}: profiles.{profile}: a profile cannot define profiles"])
        prefix: Loc = ("profiles", profile)
        profile_lines = {k[2:]: v for k, v in base_lines.items() if k[:2] == prefix and len(k) > 2}
        missing_sections = {key for key in override if key not in raw}
        raw = _deep_merge(raw, override)
    try:
        return SweepSpec.model_validate(raw, context={"trusted": trusted})
    except ValidationError as exc:
        located = _collect(exc)
    except LocatedErrors as exc:
        located = exc.errors
    messages = []
    for loc, msg in located:
        if profile and msg == "Field required" and loc and loc[0] in missing_sections:
            # the profile only adds to a section the spec itself lacks: the spec is what to fix
            messages.append(
                f"{source}:1: {loc[0]}: the spec has no {loc[0]}: section (profile {profile} only adds to it)"
            )
            continue
        line = _line_for(loc, profile_lines, base_lines)
        where = f"{source}:{line}" if line else source
        via = f" (profile {profile})" if profile and _line_for(loc, profile_lines) else ""
        messages.append(f"{where}: {_format_loc(loc)}{via}: {msg}")
    raise SpecError(messages)


def _collect(exc: ValidationError) -> list[tuple[Loc, str]]:
    located: list[tuple[Loc, str]] = []
    for err in exc.errors():
        ctx_error = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_error, LocatedErrors):
            located.extend(ctx_error.errors)
            continue
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p in _UNION_TAGS)))
        located.append((loc, pydantic_message(err)))
    return _dedupe_union_errors(located)


_UNION_TAGS = {"IntRange", "FloatRange", "Choice", "Grid", "Fraction", "Match", "str", "int", "float", "bool"}


def _dedupe_union_errors(located: list[tuple[Loc, str]]) -> list[tuple[Loc, str]]:
    """A bad search value fails every member of the union: report it once, plainly, with the
    reason of the member its keys chose (`{float: [1.0, 0.1]}` is a reversed range, not a
    choice without `choice:`)."""
    by_param: dict[Loc, list[tuple[Loc, str]]] = {}
    result = []
    for loc, msg in located:
        width = 2 if loc and loc[0] == "params" else 3 if loc and loc[0] == "per_model" else 0
        if width and len(loc) >= width:
            by_param.setdefault(loc[:width], []).append((loc, msg))
        else:
            result.append((loc, msg))
    for param, errors in by_param.items():
        messages = list(dict.fromkeys(msg for _, msg in errors))
        specific = [
            m
            for m in messages
            if m not in ("unknown key", "Field required") and not m.startswith("Input should")
        ]
        if len(errors) > 2 or specific:
            result.append(
                (
                    param,
                    specific[0]
                    if specific
                    else "expected a value or {int|float: [low, high]} or {choice: [...]}",
                )
            )
        else:
            result.extend(errors)
    return result


def spec_text(path: str | Path) -> str:
    """A spec file's text; raises SpecError for a missing or unreadable file."""
    path = Path(path)
    if not path.is_file():
        raise SpecError([f"{path}: no such file"])
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([f"{path}: cannot read: {exc}"]) from None


def load_spec(path: str | Path, profile: str | None = None) -> SweepSpec:
    """Read and validate a spec file; raises SpecError for a missing, unreadable or bad file."""
    return parse_spec(spec_text(path), str(path), profile)


@functools.lru_cache(maxsize=256)
def _stored(spec_yaml: str, name: str) -> SweepSpec:
    return parse_spec(spec_yaml, f"sweep {name}", trusted=True)


def stored_spec(record: SweepRecord) -> SweepSpec:
    """A stored sweep's resolved spec, parsed once per process: it was validated when launched,
    so reading it needs no model or task code."""
    return _stored(record.spec_yaml, record.name)

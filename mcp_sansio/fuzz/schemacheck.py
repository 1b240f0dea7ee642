"""A small JSON Schema validator (2020-12, and the draft-07 spellings the older MCP
schemas use), and a check that a tool's schema is itself well-formed.

Why our own: the core may not depend on ``jsonschema`` (a dev dependency only), and the
oracles need two things from it: whether a value fits a schema (results against the
revision's ``schema.json``; ``structuredContent`` against ``outputSchema``; generated
arguments against ``inputSchema``) and a short path to the first few misfits. ``$ref`` is
followed inside the document (JSON pointers such as ``#/$defs/Tool``); a reference to
another document is not followed and constrains nothing. ``pattern`` uses Python's
:mod:`re`, and a pattern Python cannot compile constrains nothing (ECMA-262 syntax such
as ``\\p{L}`` is not a schema error), so a misfit reported here is a real one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Final

__all__ = ["TYPE_NAMES", "json_type", "pointer", "schema_problems", "validate"]

TYPE_NAMES: Final = ("null", "boolean", "object", "array", "number", "string", "integer")
_MAX_ERRORS: Final = 8
_MAX_DEPTH: Final = 64


def json_type(value: object) -> str:
    """The JSON type name of a decoded value (``integer`` for whole numbers)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _fits_type(value: object, name: object) -> bool:
    actual = json_type(value)
    return actual == name or (name == "number" and actual == "integer")


def _equal(a: object, b: object) -> bool:
    """JSON equality: ``1 == 1.0`` but ``True != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a == b


def pointer(root: object, ref: str) -> object | None:
    """The schema ``ref`` points to inside ``root``, or ``None``."""
    if not ref.startswith("#"):
        return None
    node = root
    for raw in ref[1:].split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _pattern(source: str) -> re.Pattern[str] | None:
    try:
        return re.compile(source)
    except re.error:
        return None


class _Validator:
    """One validation run: the root (for ``$ref``) and the misfits found so far."""

    def __init__(self, root: object) -> None:
        self.root = root
        self.errors: list[str] = []

    def fail(self, path: str, message: str) -> None:
        if len(self.errors) < _MAX_ERRORS:
            self.errors.append(f"{path or '/'}: {message}")

    def ok(self, value: object, schema: object, depth: int) -> bool:
        """Whether ``value`` fits, without recording why not (for anyOf and friends)."""
        probe = _Validator(self.root)
        probe.check(value, schema, "", depth)
        return not probe.errors

    def check(self, value: object, schema: object, path: str, depth: int) -> None:
        if schema is False:
            self.fail(path, "no value is allowed here")
        if not isinstance(schema, dict) or depth > _MAX_DEPTH:
            return
        ref = schema.get("$ref")
        if isinstance(ref, str):
            self.check(value, pointer(self.root, ref), path, depth + 1)
        self._generic(value, schema, path, depth)
        if isinstance(value, dict):
            self._object(value, schema, path, depth)
        elif isinstance(value, list):
            self._array(value, schema, path, depth)
        elif isinstance(value, str):
            self._string(value, schema, path)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self._number(value, schema, path)

    def _generic(self, value: object, schema: Mapping[str, object], path: str, depth: int) -> None:
        kind = schema.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else None
        if kinds is not None and not any(_fits_type(value, k) for k in kinds):
            self.fail(path, f"{json_type(value)} is not of type {'/'.join(map(str, kinds))}")
        if "const" in schema and not _equal(value, schema["const"]):
            self.fail(path, f"is not the constant {schema['const']!r}")
        enum = schema.get("enum")
        if isinstance(enum, list) and not any(_equal(value, item) for item in enum):
            self.fail(path, "is not one of the enum values")
        for sub in _schemas(schema.get("allOf")):
            self.check(value, sub, path, depth + 1)
        anyof = _schemas(schema.get("anyOf"))
        if anyof and not any(self.ok(value, sub, depth + 1) for sub in anyof):
            self.fail(path, "matches none of anyOf")
        oneof = _schemas(schema.get("oneOf"))
        if oneof and sum(self.ok(value, sub, depth + 1) for sub in oneof) != 1:
            self.fail(path, "does not match exactly one of oneOf")
        if "not" in schema and self.ok(value, schema["not"], depth + 1):
            self.fail(path, "matches the schema under not")
        if "if" in schema:
            branch = "then" if self.ok(value, schema["if"], depth + 1) else "else"
            self.check(value, schema.get(branch, True), path, depth + 1)

    def _object(
        self, value: Mapping[str, object], schema: Mapping[str, object], path: str, depth: int
    ) -> None:
        required = schema.get("required")
        for name in required if isinstance(required, list) else []:
            if isinstance(name, str) and name not in value:
                self.fail(path, f"required property {name!r} is missing")
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        patterns = schema.get("patternProperties")
        patterns = patterns if isinstance(patterns, dict) else {}
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            where = f"{path}/{key}"
            matched = key in props
            if matched:
                self.check(item, props[key], where, depth + 1)
            for source, sub in patterns.items():
                compiled = _pattern(source)
                if compiled is not None and compiled.search(key):
                    matched = True
                    self.check(item, sub, where, depth + 1)
            if not matched:
                if extra is False:
                    self.fail(where, "additional property is not allowed")
                else:
                    self.check(item, extra, where, depth + 1)
            if "propertyNames" in schema:
                self.check(key, schema["propertyNames"], where, depth + 1)
        _bound(self, path, len(value), schema, "minProperties", "maxProperties", "properties")

    def _array(self, value: Sequence[object], schema: Mapping[str, object], path: str, depth: int) -> None:
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, list):  # draft-07 tuple form
            prefix, items = items, schema.get("additionalItems", True)
        head = prefix if isinstance(prefix, list) else []
        for index, item in enumerate(value):
            sub = head[index] if index < len(head) else items if items is not None else True
            self.check(item, sub, f"{path}/{index}", depth + 1)
        _bound(self, path, len(value), schema, "minItems", "maxItems", "items")
        if schema.get("uniqueItems") is True and any(
            _equal(value[i], value[j]) for i in range(len(value)) for j in range(i)
        ):
            self.fail(path, "items are not unique")
        if "contains" in schema and not any(self.ok(item, schema["contains"], depth + 1) for item in value):
            self.fail(path, "no item matches contains")

    def _string(self, value: str, schema: Mapping[str, object], path: str) -> None:
        _bound(self, path, len(value), schema, "minLength", "maxLength", "characters")
        source = schema.get("pattern")
        compiled = _pattern(source) if isinstance(source, str) else None
        if compiled is not None and not compiled.search(value):
            self.fail(path, f"does not match the pattern {source!r}")

    def _number(self, value: float, schema: Mapping[str, object], path: str) -> None:
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            bound = _as_number(schema.get(key))
            if bound is not None and _NUMBER_TESTS[key](value, bound):
                self.fail(path, f"{value!r} breaks {key} {bound!r}")
        step = _as_number(schema.get("multipleOf"))
        if step is not None and step > 0 and not _multiple(value, step):
            self.fail(path, f"{value!r} is not a multiple of {step!r}")


_NUMBER_TESTS: Final[Mapping[str, Callable[[float, float], bool]]] = {
    "minimum": lambda v, b: v < b,
    "maximum": lambda v, b: v > b,
    "exclusiveMinimum": lambda v, b: v <= b,
    "exclusiveMaximum": lambda v, b: v >= b,
}


def _as_number(value: object) -> float | None:
    """``value`` if it is a finite JSON number (not a boolean), else ``None``."""
    return value if isinstance(value, int | float) and _is_number(value) else None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _multiple(value: float, step: float) -> bool:
    quotient = value / step
    return math.isfinite(quotient) and abs(quotient - round(quotient)) < 1e-9


def _bound(
    v: _Validator, path: str, size: int, schema: Mapping[str, object], low: str, high: str, unit: str
) -> None:
    least, most = schema.get(low), schema.get(high)
    if isinstance(least, int) and size < least:
        v.fail(path, f"has {size} {unit}, fewer than {low} {least}")
    if isinstance(most, int) and size > most:
        v.fail(path, f"has {size} {unit}, more than {high} {most}")


def _schemas(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def validate(value: object, schema: object, root: object | None = None) -> list[str]:
    """The misfits of ``value`` against ``schema`` (at most eight, each ``path: why``);
    empty when it fits. ``root`` is the document ``$ref`` pointers resolve in (default:
    ``schema`` itself)."""
    validator = _Validator(schema if root is None else root)
    validator.check(value, schema, "", 0)
    return validator.errors


_SCHEMA_MAPS: Final = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS: Final = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE: Final = (
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
)
_COUNTS: Final = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_NUMBERS: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


def schema_problems(schema: object) -> list[str]:
    """Why ``schema`` is not a well-formed JSON Schema 2020-12 document (the MCP default
    dialect): wrong keyword value types, unknown type names, a ``required`` that is not a
    list of strings. Empty when well-formed. Keywords outside the vocabulary are allowed
    (the spec permits them), and a draft-07 ``items`` list is accepted when the root's
    ``$schema`` names draft-07.
    """
    draft07 = isinstance(schema, dict) and "draft-07" in str(schema.get("$schema", ""))
    return _problems(schema, "", 0, draft07)


def _problems(schema: object, path: str, depth: int, draft07: bool) -> list[str]:
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return [f"{path or '/'}: a schema must be an object or a boolean, not {json_type(schema)}"]
    if depth > _MAX_DEPTH:
        return []
    found: list[str] = []
    here = path or "/"
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if "type" in schema else []
    if (not kinds and "type" in schema) or any(k not in TYPE_NAMES for k in kinds):
        found.append(f"{here}: type {kind!r} is not a JSON type name (or a list of them)")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        found.append(f"{here}: required must be an array of strings, not {required!r}")
    for key in _COUNTS:
        if key in schema and not (
            isinstance(schema[key], int) and not isinstance(schema[key], bool) and schema[key] >= 0
        ):
            found.append(f"{here}: {key} must be a non-negative integer")
    found += [
        f"{here}: {key} must be a number" for key in _NUMBERS if key in schema and not _is_number(schema[key])
    ]
    if "enum" in schema and not isinstance(schema["enum"], list):
        found.append(f"{here}: enum must be an array")
    for key in _SCHEMA_MAPS:
        sub = schema.get(key, {})
        if not isinstance(sub, dict):
            found.append(f"{here}: {key} must be an object of schemas")
            continue
        for name, item in sub.items():
            found += _problems(item, f"{path}/{key}/{name}", depth + 1, draft07)
    for key in _SCHEMA_LISTS:
        sub = schema.get(key, [None])
        if not isinstance(sub, list) or not sub:
            found.append(f"{here}: {key} must be a non-empty array of schemas")
            continue
        for index, item in enumerate(sub if key in schema else []):
            found += _problems(item, f"{path}/{key}/{index}", depth + 1, draft07)
    for key in (k for k in _SCHEMA_ONE if k in schema):
        found += _problems(schema[key], f"{path}/{key}", depth + 1, draft07)
    items = schema.get("items", True)
    for index, item in enumerate(items if isinstance(items, list) and draft07 else [items]):
        found += _problems(
            item, f"{path}/items" + (f"/{index}" if isinstance(items, list) else ""), depth + 1, draft07
        )
    return found

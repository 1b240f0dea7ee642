"""Values from a JSON Schema: valid ones, boundary ones, and ones that break exactly one
constraint (for tool arguments, prompt arguments and template variables).

Every generator is checked by :func:`~mcp_sansio.fuzz.schemacheck.validate` before it is
used as what it claims to be: a "valid" value that misfits is dropped, and so is a
"violation" that still fits. An oracle therefore never blames a server for answering an
input we only believed was invalid. Violations use values no lax parser coerces (a
word for a number, an object for a string), so a server that "accepts" one really skipped
validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec

from .rng import Rng
from .schemacheck import json_type, pointer, validate

__all__ = ["EDGE_STRINGS", "Variant", "boundary_values", "valid_value", "violations"]

EDGE_STRINGS: Final = (
    "",
    " ",
    "0",
    "null",
    "\n\r\t",
    "\x00",
    "\u202e\u0301\U0001f600" * 8,
    "'; DROP TABLE t; --",
    "../../../../etc/passwd",
    "%s%n{0}${x}",
    "A" * 4096,
)
_FORMATS: Final[Mapping[str, str]] = {
    "uri": "file:///tmp/fuzz",
    "uri-reference": "/fuzz",
    "date-time": "2025-01-02T03:04:05Z",
    "date": "2025-01-02",
    "time": "03:04:05Z",
    "email": "fuzz@example.com",
    "hostname": "example.com",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
}
# A value of another JSON type that no lax parser turns into the wanted one.
_WRONG: Final[Mapping[str, object]] = {
    "string": {"fuzz": ["not", "a", "string"]},
    "integer": "not a number",
    "number": "not a number",
    "boolean": "not a boolean",
    "array": "not an array",
    "object": "not an object",
    "null": "not null",
}
# A value of another JSON type that lax parsers do turn into the wanted one (pydantic's lax
# mode takes ``true`` for an integer and ``"true"`` for a boolean): the schema still forbids it.
_COERCIBLE: Final[Mapping[str, object]] = {"integer": True, "number": True, "boolean": "true"}
_MAX_DEPTH: Final = 6


class Variant(msgspec.Struct, frozen=True, kw_only=True):
    """One generated value and what it is: ``valid``, ``boundary:<keyword>`` or
    ``invalid:<keyword>`` at JSON pointer ``path``."""

    kind: str
    path: str
    value: object


def _resolve(schema: object, root: object, depth: int = 0) -> Mapping[str, object]:
    """``schema`` as a mapping, with a local ``$ref`` followed (``{}`` for ``true``)."""
    if not isinstance(schema, dict):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and depth < _MAX_DEPTH:
        target = pointer(root, ref)
        merged = {**_resolve(target, root, depth + 1), **{k: v for k, v in schema.items() if k != "$ref"}}
        return merged
    return schema


def _types(schema: Mapping[str, object]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list) and kind:
        return [k for k in kind if isinstance(k, str)]
    if "properties" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    return ["string", "integer", "boolean", "null", "object"] if not schema else ["string"]


def valid_value(schema: object, rng: Rng, root: object | None = None, depth: int = 0) -> object:
    """A value meant to fit ``schema`` (check it with ``validate``: ``pattern`` and
    combinations can defeat the generator)."""
    top = schema if root is None else root
    node = _resolve(schema, top)
    if "const" in node:
        return node["const"]
    enum = node.get("enum")
    if isinstance(enum, list) and enum:
        return rng.choice(enum)
    for key in ("anyOf", "oneOf"):
        options = node.get(key)
        if isinstance(options, list) and options:
            return valid_value(rng.choice(options), rng, top, depth + 1)
    parts = node.get("allOf")
    if isinstance(parts, list) and parts:
        merged: dict[str, object] = {}
        for part in parts:
            merged.update(_resolve(part, top))
        return valid_value({**merged, **{k: v for k, v in node.items() if k != "allOf"}}, rng, top, depth + 1)
    kind = rng.choice(_types(node))
    if depth > _MAX_DEPTH and kind in ("object", "array"):
        kind = "null"  # a recursive schema ends here (the value may misfit; callers validate)
    return _of_type(kind, node, rng, top, depth)


def _of_type(kind: str, node: Mapping[str, object], rng: Rng, root: object, depth: int) -> object:
    if kind == "object":
        return _object(node, rng, root, depth)
    if kind == "array":
        items = node.get("items", {})
        least = _int(node.get("minItems"), 0)
        most = _int(node.get("maxItems"), least + 3)
        return [valid_value(items, rng, root, depth + 1) for _ in range(rng.randint(least, max(least, most)))]
    if kind in ("integer", "number"):
        return _number(node, rng, kind == "integer")
    if kind == "boolean":
        return rng.chance(0.5)
    if kind == "null":
        return None
    return _string(node, rng)


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _object(node: Mapping[str, object], rng: Rng, root: object, depth: int) -> dict[str, object]:
    props = node.get("properties")
    props = props if isinstance(props, dict) else {}
    required = node.get("required")
    required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    out: dict[str, object] = {}
    for name, sub in props.items():
        if name in required or rng.chance(0.5):
            out[name] = valid_value(sub, rng, root, depth + 1)
    for name in required:
        if name not in out:
            out[name] = valid_value(node.get("additionalProperties", {}), rng, root, depth + 1)
    return out


def _number(node: Mapping[str, object], rng: Rng, integer: bool) -> int | float:
    low, high = _range(node, integer)
    step = node.get("multipleOf")
    if integer or (isinstance(step, int) and not isinstance(step, bool) and step > 0):
        value: int | float = rng.randint(int(low), int(high)) if int(low) <= int(high) else int(low)
        if isinstance(step, int) and not isinstance(step, bool) and step > 0:
            value = value - value % step + (step if value % step else 0)
        return value
    return low + (high - low) * rng.random()


def _range(node: Mapping[str, object], integer: bool) -> tuple[float, float]:
    low: float = -1000
    high: float = 1000
    minimum, maximum = node.get("minimum"), node.get("maximum")
    ex_min, ex_max = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    nudge = 1 if integer else 1e-6
    if _num(minimum):
        low = float(minimum)  # type: ignore[arg-type]  # checked by _num
    if _num(ex_min):
        low = float(ex_min) + nudge  # type: ignore[arg-type]  # checked by _num
    if _num(maximum):
        high = float(maximum)  # type: ignore[arg-type]  # checked by _num
    if _num(ex_max):
        high = float(ex_max) - nudge  # type: ignore[arg-type]  # checked by _num
    if integer:
        low, high = float(-(-low // 1)), float(high // 1)
    return low, max(low, high)


def _num(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _string(node: Mapping[str, object], rng: Rng) -> str:
    form = node.get("format")
    if isinstance(form, str) and form in _FORMATS:
        return _FORMATS[form]
    least = _int(node.get("minLength"), 0)
    most = _int(node.get("maxLength"), max(least, 12))
    pattern = node.get("pattern")
    candidates = [EDGE_STRINGS[rng.below(len(EDGE_STRINGS))], "fuzz", "a1", "x" * least]
    if isinstance(pattern, str):
        fitting = [c for c in candidates if not validate(c, node)]
        if fitting:
            return fitting[0]
    text = "fuzz" + "z" * rng.below(8)
    return (text * (least // len(text) + 1))[: max(least, min(len(text), most))]


def boundary_values(schema: object, rng: Rng) -> list[Variant]:
    """Arguments that fit ``schema`` (an object schema) with one property at an edge: a
    bound itself, the empty or longest string, an edge string, the empty array. Only
    values that still fit are returned."""
    root = schema
    node = _resolve(schema, root)
    props = node.get("properties")
    if not isinstance(props, dict):
        return []
    base = valid_value(node, rng, root)
    if not isinstance(base, dict):
        return []
    found: list[Variant] = []
    for name, sub in props.items():
        spec = _resolve(sub, root)
        candidates: list[tuple[str, object]] = []
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            bound = spec.get(key)
            if _num(bound):
                candidates.append((key, bound))
        for key in ("minLength", "maxLength"):
            size = spec.get(key)
            if isinstance(size, int) and not isinstance(size, bool) and size <= 65536:
                candidates.append((key, "b" * size))
        kinds = _types(spec)
        if "string" in kinds:
            candidates += [("edge-string", text) for text in EDGE_STRINGS]
        if "array" in kinds:
            candidates.append(("empty-array", []))
        if "integer" in kinds or "number" in kinds:
            candidates += [("zero", 0), ("negative", -1)]
        if "number" in kinds:  # floats near the largest double: arithmetic on them overflows to inf
            candidates += [
                ("huge", 1.7976931348623157e308),
                ("huge", -1.7976931348623157e308),
                ("huge", 4.5e307),
            ]
        for key, value in candidates:
            variant = {**base, name: value}
            if not validate(variant, schema):
                found.append(Variant(kind=f"boundary:{key}", path=f"/{name}", value=variant))
    return found


def violations(schema: object, rng: Rng) -> list[Variant]:
    """Arguments that break ``schema`` (an object schema) in exactly one place each: a
    required property left out, a property of the wrong type (one no parser coerces, and
    one lax parsers do: ``true`` for a number, ``"true"`` for a boolean), a bound crossed,
    a value outside the enum, an unexpected property where none are allowed, a non-object.
    Each is confirmed to misfit."""
    root = schema
    node = _resolve(schema, root)
    base = valid_value(node, rng, root)
    if not isinstance(base, dict) or validate(base, schema):
        return []
    found: list[tuple[str, str, object]] = [("type", "", [base])]
    required = node.get("required")
    for name in required if isinstance(required, list) else []:
        if isinstance(name, str) and name in base:
            found.append(("required", f"/{name}", {k: v for k, v in base.items() if k != name}))
    props = node.get("properties")
    for name, sub in (props if isinstance(props, dict) else {}).items():
        spec = _resolve(sub, root)
        kinds = _types(spec) if "type" in spec else []
        wrong = [_WRONG[k] for k in _WRONG if k not in kinds and not (k == "number" and "integer" in kinds)]
        if kinds and wrong:
            found.append(("type", f"/{name}", {**base, name: wrong[0]}))
        found += [
            ("type-coercible", f"/{name}", {**base, name: _COERCIBLE[k]}) for k in kinds if k in _COERCIBLE
        ]
        for key, value in _crossings(spec):
            found.append((key, f"/{name}", {**base, name: value}))
    if node.get("additionalProperties") is False:
        found.append(("additionalProperties", "/fuzz_unexpected", {**base, "fuzz_unexpected": 1}))
    return [
        Variant(kind=f"invalid:{key}", path=path, value=value)
        for key, path, value in found
        if validate(value, schema)
    ]


def _crossings(spec: Mapping[str, object]) -> list[tuple[str, object]]:
    """Values just past each bound of one property schema."""
    out: list[tuple[str, object]] = []
    integer = "integer" in _types(spec)
    delta = 1 if integer else 0.5
    for key, sign in (("minimum", -1), ("maximum", 1), ("exclusiveMinimum", 0), ("exclusiveMaximum", 0)):
        bound = spec.get(key)
        if _num(bound):
            out.append((key, bound + sign * delta))  # type: ignore[operator]  # checked by _num
    least, most = spec.get("minLength"), spec.get("maxLength")
    if isinstance(least, int) and not isinstance(least, bool) and least > 0:
        out.append(("minLength", "c" * (least - 1)))
    if isinstance(most, int) and not isinstance(most, bool) and most < 65536:
        out.append(("maxLength", "c" * (most + 1)))
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        out.append(("enum", "fuzz-not-in-enum" if all(json_type(e) == "string" for e in enum) else None))
    pattern = spec.get("pattern")
    if isinstance(pattern, str):
        out.append(("pattern", "\x00 fuzz does not match"))
    return out

"""The fuzzer's pure generators: the seeded PRNG, the JSON Schema validator and the value
generators (valid, boundary, one-constraint violations)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio.fuzz import Rng, boundary_values, schema_problems, valid_value, validate, violations
from mcp_sansio.fuzz.schemacheck import json_type, pointer

SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 9},
        "s": {"type": "string", "minLength": 2, "maxLength": 5},
        "e": {"enum": ["a", "b"]},
        "f": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "l": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2},
        "p": {"type": "string", "pattern": "^fu"},
        "r": {"$ref": "#/$defs/thing"},
    },
    "required": ["n", "s"],
    "additionalProperties": False,
    "$defs": {"thing": {"type": "object", "properties": {"k": {"const": 3}}}},
}


def test_same_seed_gives_the_same_stream() -> None:
    assert [Rng(7).next64() for _ in range(3)] == [Rng(7).next64() for _ in range(3)]
    a, b = Rng(7), Rng(7)
    assert [a.randint(1, 6) for _ in range(20)] == [b.randint(1, 6) for _ in range(20)]


def test_forked_streams_are_deterministic_and_distinct() -> None:
    assert Rng(1).fork("x").next64() == Rng(1).fork("x").next64()
    assert Rng(1).fork("x").next64() != Rng(1).fork("y").next64()


@given(st.integers(min_value=0, max_value=2**64))
def test_draws_stay_in_their_ranges(seed: int) -> None:
    rng = Rng(seed)
    assert 0 <= rng.random() < 1
    assert 3 <= rng.randint(3, 5) <= 5
    assert rng.choice("abc") in "abc"
    assert isinstance(rng.chance(0.5), bool)


def test_validate_reports_each_keyword() -> None:
    cases: list[tuple[object, object]] = [
        ("x", {"type": "integer"}),
        (2, {"const": 3}),
        ("c", {"enum": ["a"]}),
        ({}, {"required": ["a"]}),
        ({"z": 1}, {"properties": {}, "additionalProperties": False}),
        ({"z": 1}, {"additionalProperties": {"type": "string"}}),
        ({"ab": 1}, {"patternProperties": {"^a": {"type": "string"}}}),
        ({"Ab": 1}, {"propertyNames": {"pattern": "^[a-z]+$"}}),
        ([1, 1], {"uniqueItems": True}),
        ([1], {"contains": {"type": "string"}}),
        ([1, "x"], {"prefixItems": [{"type": "integer"}, {"type": "integer"}]}),
        ([1, "x"], {"items": [{"type": "integer"}], "additionalItems": False}),
        ([], {"minItems": 1}),
        ({"a": 1}, {"maxProperties": 0}),
        ("abc", {"maxLength": 2}),
        ("abc", {"pattern": "^x"}),
        (5, {"minimum": 6}),
        (5, {"exclusiveMaximum": 5}),
        (5, {"multipleOf": 2}),
        (5, {"anyOf": [{"type": "string"}, {"type": "null"}]}),
        (5, {"oneOf": [{"type": "integer"}, {"type": "number"}]}),
        (5, {"not": {"type": "integer"}}),
        (5, {"if": {"type": "integer"}, "then": {"minimum": 9}}),
        (5, {"allOf": [{"type": "string"}]}),
        (5, False),
        (5, {"$ref": "#/$defs/s", "$defs": {"s": {"type": "string"}}}),
    ]
    for value, schema in cases:
        assert validate(value, schema), (value, schema)


def test_validate_accepts_what_fits() -> None:
    assert validate({"n": 3, "s": "ab", "r": {"k": 3}}, SCHEMA) == []
    assert validate(1.0, {"type": "integer"}) == []
    assert validate(True, {"type": "boolean", "enum": [True]}) == []
    assert (
        validate(5, {"pattern": "(", "$ref": "other.json#/x"}) == []
    )  # uncompilable, foreign: no constraint
    assert validate(4, {"multipleOf": 2, "if": {"type": "string"}, "else": {"minimum": 1}}) == []


def test_json_types_and_pointers() -> None:
    values: list[object] = [None, True, 1, 1.5, 2.0, "s", [], {}]
    assert [json_type(v) for v in values] == [
        "null",
        "boolean",
        "integer",
        "number",
        "integer",
        "string",
        "array",
        "object",
    ]
    assert pointer({"a": [{"b~/": 1}]}, "#/a/0/b~0~1") == 1
    assert pointer({"a": []}, "#/a/3") is None
    assert pointer({}, "x.json") is None


def test_schema_problems_names_malformed_keywords() -> None:
    assert schema_problems(SCHEMA) == []
    assert schema_problems(True) == []
    bad = [
        ["not", "a schema"],
        {"type": "text"},
        {"type": []},
        {"required": True},
        {"minLength": -1},
        {"maximum": "9"},
        {"enum": "a"},
        {"properties": []},
        {"anyOf": []},
        {"properties": {"a": {"type": "float"}}},
        {"items": [{"type": "string"}]},
        {"not": 3},
    ]
    for schema in bad:
        assert schema_problems(schema), schema
    assert schema_problems({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{}]}) == []


@settings(max_examples=60)
@given(st.integers(min_value=0, max_value=2**32))
def test_valid_values_fit_and_violations_misfit(seed: int) -> None:
    rng = Rng(seed)
    value = valid_value(SCHEMA, rng)
    assert validate(value, SCHEMA) == [] or "p" in value  # type: ignore[operator]  # a dict
    for variant in violations(SCHEMA, rng):
        assert variant.kind.startswith("invalid:")
        assert validate(variant.value, SCHEMA)
    for variant in boundary_values(SCHEMA, rng):
        assert variant.kind.startswith("boundary:")
        assert validate(variant.value, SCHEMA) == []


def test_numbers_get_huge_boundaries() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
    huge = [v.value for v in boundary_values(schema, Rng(1)) if v.kind == "boundary:huge"]
    assert {"x": 1.7976931348623157e308} in huge and {"x": 4.5e307} in huge


def test_violations_break_one_constraint_each() -> None:
    kinds = {v.kind + " " + v.path for v in violations(SCHEMA, Rng(3))}
    assert {
        "invalid:type-coercible /n",
        "invalid:required /n",
        "invalid:type /n",
        "invalid:minimum /n",
        "invalid:maxLength /s",
        "invalid:enum /e",
        "invalid:additionalProperties /fuzz_unexpected",
        "invalid:type ",
    } <= kinds


def test_generators_cover_every_json_type() -> None:
    rng = Rng(5)
    seen = {json_type(valid_value({}, rng)) for _ in range(200)}
    assert seen >= {"string", "integer", "boolean", "null", "object"}
    assert valid_value({"anyOf": [{"const": 1}]}, rng) == 1
    assert valid_value({"allOf": [{"type": "integer", "minimum": 5, "maximum": 5}]}, rng) == 5
    assert valid_value({"type": "string", "format": "date"}, rng) == "2025-01-02"
    assert valid_value({"type": "integer", "multipleOf": 7, "minimum": 1, "maximum": 20}, rng) % 7 == 0  # type: ignore[operator]
    assert isinstance(valid_value({"type": "number"}, rng), float)
    assert valid_value({"items": {"const": 0}, "minItems": 2, "maxItems": 2}, rng) == [0, 0]
    assert boundary_values({"type": "string"}, rng) == []
    # No valid base value can be generated for this pattern: no violation is trusted either.
    assert (
        violations(
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "^z"}}, "required": ["a"]},
            rng,
        )
        == []
    )


def test_validator_edges() -> None:
    assert validate([1, {"a": [2]}], {"enum": [[1, {"a": [2]}]]}) == []
    assert validate([1, {"a": [3]}], {"enum": [[1, {"a": [2]}]]})
    assert validate("x", {"pattern": "("}) == []  # a pattern Python cannot compile constrains nothing
    assert len(validate(list(range(20)), {"items": {"type": "string"}})) == 8  # at most eight misfits
    assert validate(
        {"b": 1}, {"patternProperties": {"^a": {"type": "string"}}, "additionalProperties": False}
    )
    deep: dict[str, object] = {"type": "object"}
    for _ in range(70):
        deep = {"properties": {"a": deep}}
    assert schema_problems(deep) == []
    draft07 = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "nope"}]}
    assert schema_problems(draft07) == ["/items/0: type 'nope' is not a JSON type name (or a list of them)"]
    assert schema_problems({"anyOf": [{"type": 1}]}) == [
        "/anyOf/0: type 1 is not a JSON type name (or a list of them)"
    ]


def test_generator_edges() -> None:
    rng = Rng(11)
    assert valid_value(True, rng) is not None or True  # any value fits ``true``
    assert json_type(valid_value({"type": ["integer", "string", 5]}, rng)) in ("integer", "string")
    assert isinstance(valid_value({"properties": {"a": {"const": 1}}, "required": ["a"]}, rng), dict)
    nested: dict[str, object] = {"type": ["object", "null"], "properties": {}}
    for _ in range(10):
        nested = {"type": ["object", "null"], "properties": {"a": nested}, "required": ["a"]}
    assert validate(valid_value(nested, rng), nested) == []
    recursive = {
        "$ref": "#/$defs/n",
        "$defs": {"n": {"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["a"]}},
    }
    assert validate(valid_value(recursive, rng), recursive)  # cut off, so it cannot fit: callers check
    assert valid_value({"type": "object", "required": ["x"], "additionalProperties": {"const": 2}}, rng) == {
        "x": 2
    }
    assert boundary_values({"type": "string", "properties": {"a": {}}}, rng) == []
    assert violations({"type": "object", "required": [1], "properties": {}}, rng) != []

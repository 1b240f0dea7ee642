"""The Streamable HTTP header helpers of 2026-07-28: value encoding, ``Mcp-Method`` /
``Mcp-Name``, ``x-mcp-header`` annotations and the ``Mcp-Param-*`` headers they produce
("Standard Request Headers", "Custom Headers from Tool Parameters").
"""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st
from modern_helpers import Json

from mcp_sansio.modern import encode_header_value, mcp_param_headers, standard_headers, tool_header_paths

SAFE_MAX = 2**53 - 1


def _decoded(header: str) -> str:
    """What a server reads from a header value: the sentinel form decoded, else as is."""
    if header.startswith("=?base64?") and header.endswith("?=") and len(header) >= 11:
        return base64.b64decode(header[9:-2]).decode("utf-8")
    return header


def _schema(**properties: object) -> Json:
    return {"type": "object", "properties": properties}


# -- encode_header_value --------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "encoded"), [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
], ids=["plain-ascii", "non-ascii", "leading-trailing-space", "newline", "sentinel-looking"])
def test_header_values_follow_the_spec_table(value: str, encoded: str) -> None:
    assert encode_header_value(value) == encoded


@pytest.mark.parametrize("value", ["", "a\tb", "with inner spaces", "=?base64?", "?=", "=?base64?x", "x?="],
                         ids=["empty", "inner-tab", "inner-spaces", "prefix-only", "suffix-only",
                              "starts-like-sentinel", "ends-like-sentinel"])
def test_safe_values_stay_plain(value: str) -> None:
    assert encode_header_value(value) == value


@pytest.mark.parametrize("value", ["\tlead", "trail\t", "a\rb", "nul\x00", "del\x7f", "😀", "é"],
                         ids=["leading-tab", "trailing-tab", "cr", "nul", "del", "non-bmp", "latin-1"])
def test_unsafe_values_are_base64(value: str) -> None:
    encoded = encode_header_value(value)
    assert encoded.startswith("=?base64?") and encoded.endswith("?=")
    assert _decoded(encoded) == value


@given(st.text())
def test_every_value_becomes_a_header_safe_value_that_decodes_back(value: str) -> None:
    encoded = encode_header_value(value)
    assert all(0x20 <= ord(c) <= 0x7E or c == "\t" for c in encoded)
    assert encoded == encoded.strip(" \t")
    assert _decoded(encoded) == value


# -- standard_headers --------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "params", "headers"), [
    ("tools/call", {"name": "get_weather"}, [("mcp-method", "tools/call"), ("mcp-name", "get_weather")]),
    ("prompts/get", {"name": "greet"}, [("mcp-method", "prompts/get"), ("mcp-name", "greet")]),
    ("resources/read", {"uri": "file:///projects/myapp/config.json", "name": "ignored"},
     [("mcp-method", "resources/read"), ("mcp-name", "file:///projects/myapp/config.json")]),
    ("tools/list", {"name": "not a named request"}, [("mcp-method", "tools/list")]),
    ("tools/call", None, [("mcp-method", "tools/call")]),
    ("tools/call", {"name": 5}, [("mcp-method", "tools/call")]),
    ("resources/read", {"name": "x"}, [("mcp-method", "resources/read")]),
], ids=["tools/call", "prompts/get", "resources/read-uses-uri", "unnamed-method", "no-params",
        "name-not-a-string", "read-without-uri"])
def test_standard_headers(method: str, params: Json | None, headers: list[tuple[str, str]]) -> None:
    assert standard_headers(method, params) == headers


def test_mcp_name_outside_the_safe_set_is_base64() -> None:
    assert standard_headers("tools/call", {"name": "météo"}) == [
        ("mcp-method", "tools/call"), ("mcp-name", encode_header_value("météo"))]


def test_mcp_method_cannot_carry_a_line_break() -> None:
    ((name, value),) = standard_headers("x/evil\r\nInjected: 1", None)
    assert name == "mcp-method"
    assert "\r" not in value and "\n" not in value
    assert _decoded(value) == "x/evil\r\nInjected: 1"


# -- tool_header_paths -----------------------------------------------------------------------------


def test_annotated_properties_map_to_their_header_names() -> None:
    schema = _schema(
        region={"type": "string", "x-mcp-header": "Region"},
        query={"type": "string"},
        options={"type": "object", "properties": {
            "tenant": {"type": "integer", "x-mcp-header": "Tenant-Id"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry_Run"},
        }},
    )
    assert tool_header_paths(schema) == {
        ("region",): "Region", ("options", "tenant"): "Tenant-Id", ("options", "dry"): "Dry_Run"}


@pytest.mark.parametrize("schema", [{}, {"type": "object"}, _schema(a={"type": "string"}), {"properties": 5},
                                    _schema(a=True), _schema(a={"items": {"type": "string"}})],
                         ids=["empty", "no-properties", "no-annotation", "properties-not-an-object",
                              "boolean-subschema", "items-without-annotation"])
def test_schemas_without_annotations_have_no_headers(schema: Json) -> None:
    assert tool_header_paths(schema) == {}


def test_every_token_character_is_allowed_in_a_header_name() -> None:
    name = "!#$%&'*+-.^_`|~09azAZ"
    assert tool_header_paths(_schema(a={"type": "string", "x-mcp-header": name})) == {("a",): name}


@pytest.mark.parametrize("kind", [["string", "null"], ["integer", "boolean"]], ids=["nullable", "primitives"])
def test_unions_of_primitives_may_be_annotated(kind: list[str]) -> None:
    assert tool_header_paths(_schema(a={"type": kind, "x-mcp-header": "A"})) == {("a",): "A"}


@pytest.mark.parametrize("name", ["", "Bad Name", "a:b", "é", "x\r\n", 5, None],
                         ids=["empty", "space", "colon", "non-ascii", "crlf", "number", "null"])
def test_header_names_that_are_not_tokens_are_refused(name: object) -> None:
    with pytest.raises(ValueError, match=r"x-mcp-header .* on a is not an HTTP token"):
        tool_header_paths(_schema(a={"type": "string", "x-mcp-header": name}))


def test_duplicate_header_names_are_refused_case_insensitively() -> None:
    schema = _schema(a={"type": "string", "x-mcp-header": "Region"},
                     b={"type": "object", "properties": {"c": {"type": "string", "x-mcp-header": "REGION"}}})
    with pytest.raises(ValueError, match="'REGION' is used twice"):
        tool_header_paths(schema)


@pytest.mark.parametrize("kind", ["number", "object", "array", None, ["string", "number"], ["null"], [],
                                  [{"type": "string"}]],
                         ids=["number", "object", "array", "missing", "with-number", "only-null",
                              "empty-list", "not-type-names"])
def test_annotations_on_non_primitive_types_are_refused(kind: object) -> None:
    prop: Json = {"x-mcp-header": "A"} if kind is None else {"type": kind, "x-mcp-header": "A"}
    with pytest.raises(ValueError, match="on a needs a string, integer or boolean"):
        tool_header_paths(_schema(a=prop))


def test_annotation_on_the_schema_root_is_refused() -> None:
    with pytest.raises(ValueError, match="on the schema root needs"):
        tool_header_paths({"type": "object", "x-mcp-header": "Root"})


ANNOTATED: Json = {"type": "string", "x-mcp-header": "Hidden"}


@pytest.mark.parametrize("schema", [
    _schema(a={"type": "array", "items": ANNOTATED}),
    _schema(a={"type": "array", "prefixItems": [ANNOTATED]}),
    _schema(a={"anyOf": [ANNOTATED, {"type": "null"}]}),
    _schema(a={"oneOf": [ANNOTATED]}),
    {"type": "object", "allOf": [_schema(b=ANNOTATED)]},
    _schema(a={"not": ANNOTATED}),
    {"type": "object", "if": _schema(b=ANNOTATED)},
    {"type": "object", "then": _schema(b=ANNOTATED)},
    {"type": "object", "else": _schema(b=ANNOTATED)},
    {**_schema(a={"$ref": "#/$defs/A"}), "$defs": {"A": ANNOTATED}},
    {**_schema(a={"$ref": "#/definitions/A"}), "definitions": {"A": _schema(b=ANNOTATED)}},
    _schema(a={"type": "object", "additionalProperties": ANNOTATED}),
    _schema(a={"type": "object", "patternProperties": {"^x": ANNOTATED}}),
    _schema(a={"type": "array", "items": {"type": "object", "properties": {"b": ANNOTATED}}}),
], ids=["items", "prefixItems", "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref-to-$defs",
        "$ref-to-definitions", "additionalProperties", "patternProperties", "properties-under-items"])
def test_annotations_not_reachable_through_properties_alone_are_refused(schema: Json) -> None:
    with pytest.raises(ValueError, match=r"x-mcp-header on .* is not reachable through properties alone"):
        tool_header_paths(schema)


# -- mcp_param_headers -------------------------------------------------------------------------


PATHS = {("region",): "Region", ("options", "tenant"): "Tenant", ("flag",): "Flag"}


@pytest.mark.parametrize(("arguments", "headers"), [
    ({"region": "us-west1"}, [("mcp-param-region", "us-west1")]),
    ({}, []),
    (None, []),
    ({"region": None, "flag": None}, []),
    ({"flag": True}, [("mcp-param-flag", "true")]),
    ({"flag": False}, [("mcp-param-flag", "false")]),
    ({"options": {"tenant": 42}}, [("mcp-param-tenant", "42")]),
    ({"options": {"tenant": -7}}, [("mcp-param-tenant", "-7")]),
    ({"options": {"tenant": SAFE_MAX}}, [("mcp-param-tenant", str(SAFE_MAX))]),
    ({"options": {"tenant": -SAFE_MAX}}, [("mcp-param-tenant", str(-SAFE_MAX))]),
    ({"options": {"tenant": SAFE_MAX + 1}}, []),
    ({"options": {"tenant": -SAFE_MAX - 1}}, []),
    ({"options": "not an object"}, []),
    ({"options": {}}, []),
    ({"region": 1.5, "flag": [1], "options": {"tenant": {"x": 1}}}, []),
    ({"region": "Hello, 世界"}, [("mcp-param-region", "=?base64?SGVsbG8sIOS4lueVjA==?=")]),
], ids=["string", "missing", "no-arguments", "null", "true", "false", "integer", "negative", "max-safe",
        "min-safe", "unsafe-high", "unsafe-low", "parent-not-an-object", "nested-missing", "other-types",
        "non-ascii"])
def test_param_headers(arguments: Json | None, headers: list[tuple[str, str]]) -> None:
    assert mcp_param_headers(PATHS, arguments) == headers


def test_param_headers_follow_the_annotation_order() -> None:
    arguments = {"flag": True, "region": "eu", "options": {"tenant": 1}}
    assert [name for name, _ in mcp_param_headers(PATHS, arguments)] == [
        "mcp-param-region", "mcp-param-tenant", "mcp-param-flag"]

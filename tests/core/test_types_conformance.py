"""The wire types against the MCP JSON Schemas of 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25.

Hypothesis builds instances of every params and result type the method tables name, shaped
for each revision that has the method; each must survive an encode/decode round trip and
validate against that revision's schema. Further tests check that the tables, the struct
fields and the Literal enums cover the schemas exactly, and decode examples from the spec.
The schemas are read from ``$MCP_SPEC_DIR`` (default: the copies in ``tests/spec``).
"""

import base64
import json
import os
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from types import NoneType, UnionType
from typing import Any, Literal, TypeGuard, Union, get_args, get_origin

import jsonschema  # type: ignore[import-untyped]  # types-jsonschema is not a dev dependency
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcp_sansio.types as wire
from mcp_sansio.versions import rules_for

Schema = dict[str, Any]
Strategy = st.SearchStrategy[object]

SPEC_DIR = Path(os.environ.get("MCP_SPEC_DIR", Path(__file__).resolve().parents[1] / "spec"))
REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST = REVISIONS[-1]
MODERN = "2026-07-28"
EXAMPLES_PER_CASE = 12

# -- the schemas -------------------------------------------------------------------------


@cache
def _document(revision: str) -> Schema:
    document: Schema = json.loads((SPEC_DIR / revision / "schema.json").read_text("utf-8"))
    return document


def _defs_key(revision: str) -> str:
    return "$defs" if "$defs" in _document(revision) else "definitions"


def _defs(revision: str) -> dict[str, Schema]:
    defs: dict[str, Schema] = _document(revision)[_defs_key(revision)]
    return defs


def _pointer(revision: str, *path: str) -> str:
    return "#/" + "/".join((_defs_key(revision), *path))


def _resolve(revision: str, schema: Schema) -> Schema:
    """Follow ``$ref`` pointers inside the revision's document."""
    while "$ref" in schema:
        node: Any = _document(revision)
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


@cache
def _validator(revision: str, pointer: str) -> Any:
    document = _document(revision)
    return jsonschema.validators.validator_for(document)({**document, "$ref": pointer})


_UNIONS = {
    "ClientRequest": wire.CLIENT_REQUEST_METHODS,
    "ServerRequest": wire.SERVER_REQUEST_METHODS,
    "ClientNotification": wire.CLIENT_NOTIFICATION_METHODS,
    "ServerNotification": wire.SERVER_NOTIFICATION_METHODS,
}


@cache
def _envelopes(revision: str) -> dict[str, dict[str, str]]:
    """Dispatch union name -> {method -> envelope definition name}."""
    defs = _defs(revision)
    envelopes: dict[str, dict[str, str]] = {}
    for union in _UNIONS:
        names = [ref["$ref"].rsplit("/", 1)[1] for ref in defs[union]["anyOf"]]
        envelopes[union] = {defs[name]["properties"]["method"]["const"]: name for name in names}
    return envelopes


def _envelope(revision: str, method: str) -> str:
    for methods in _envelopes(revision).values():
        if method in methods:
            return methods[method]
    raise KeyError(method)


def _case_pointer(kind: str, method: str, revision: str) -> str:
    """The schema of the params or result of ``method`` in ``revision``."""
    envelope = _envelope(revision, method)
    if kind != "result":
        return _pointer(revision, envelope, "properties", "params")
    result = envelope.removesuffix("Request") + "Result"
    return _pointer(revision, result if result in _defs(revision) else "EmptyResult")


_TABLES = {
    "request": wire.REQUEST_PARAMS,
    "result": wire.RESULT_TYPES,
    "notification": wire.NOTIFICATION_PARAMS,
}


def _cases() -> Iterator[tuple[str, str, str]]:
    """(kind, method, revision) for every method each revision defines."""
    for revision in REVISIONS:
        for union, methods in _envelopes(revision).items():
            kinds = ("request", "result") if union.endswith("Request") else ("notification",)
            for method in methods:
                for kind in kinds:
                    yield kind, method, revision


CASES = sorted(set(_cases()))

# -- strategies ----------------------------------------------------------------------------

_INT = st.integers(-(2**53), 2**53)
_FLOAT = st.floats(allow_nan=False, allow_infinity=False)
_UNIT = st.floats(0.0, 1.0)
_TEXT = st.text(max_size=8)
# Generated object keys never collide with a property name a schema constrains.
_KEY = _TEXT.map(lambda text: "x-" + text)
_JSON: Strategy = st.recursive(
    st.none() | st.booleans() | _INT | _FLOAT | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEY, inner, max_size=3),
    max_leaves=8,
)
_JSON_OBJECT = st.dictionaries(_KEY, _JSON, max_size=3)
_META = st.none() | st.fixed_dictionaries({}, optional={"progressToken": _TEXT | _INT, "x-vendor/key": _JSON})
_OBJECT_SCHEMA = st.fixed_dictionaries(
    {"type": st.just("object")},
    optional={
        "properties": st.dictionaries(_KEY, _JSON_OBJECT, max_size=3),
        "required": st.lists(_TEXT, max_size=2),
        "additionalProperties": st.booleans(),
        "$defs": st.dictionaries(_KEY, _JSON_OBJECT, max_size=2),
    },
)
_PRIMITIVE_SCHEMAS = (
    {"type": "string"},
    {"type": "string", "format": "email", "minLength": 1, "title": "Email"},
    {"type": "number", "minimum": 0, "maximum": 10},
    {"type": "integer", "description": "How many"},
    {"type": "boolean", "default": False},
    {"type": "string", "enum": ["a", "b"]},
)
_FORM_SCHEMA = st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.dictionaries(_KEY, st.sampled_from(_PRIMITIVE_SCHEMAS), max_size=3),
    },
    optional={"required": st.lists(_TEXT, max_size=2)},
)
_BASE64 = st.binary(max_size=12).map(lambda data: base64.b64encode(data).decode())

# The revision that introduced each content type; older revisions must not see it.
_TAG_SINCE = {
    "audio": "2025-03-26",
    "resource_link": "2025-06-18",
    "tool_use": "2025-11-25",
    "tool_result": "2025-11-25",
}


def _since(revision: str, first: str) -> bool:
    return REVISIONS.index(revision) >= REVISIONS.index(first)


def _is_struct(tp: object) -> TypeGuard[type[msgspec.Struct]]:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _in_revision(member: object, revision: str) -> bool:
    if _is_struct(member):
        tag = member.__struct_config__.tag
        return not isinstance(tag, str) or _since(revision, _TAG_SINCE.get(tag, REVISIONS[0]))
    return True


def _sampling_content(revision: str) -> Strategy:
    one = _strategy(wire.SamplingContent, revision)
    return one | st.lists(one, max_size=3) if _since(revision, LATEST) else one


def _cancelled_request_id(revision: str) -> Strategy:
    request_id = _TEXT | _INT
    return st.none() | request_id if _since(revision, LATEST) else request_id


def _elicited_content(revision: str) -> Strategy:
    value: Strategy = _TEXT | _INT | st.booleans()
    if _since(revision, LATEST):
        value |= st.lists(_TEXT, max_size=2)
    return st.none() | st.dictionaries(_KEY, value, max_size=3)


def _elicit_params(revision: str) -> Strategy:
    common = {"message": _TEXT, "task": _strategy(wire.TaskMetadata | None, revision)}
    form = st.builds(
        wire.ElicitRequestParams,
        mode=st.sampled_from([None, "form"]),
        requested_schema=_FORM_SCHEMA,
        meta=_META,
        **common,
    )
    url = st.builds(
        wire.ElicitRequestParams,
        mode=st.just("url"),
        url=_TEXT,
        elicitation_id=_TEXT,
        meta=_META,
        **common,
    )
    return form | url if _since(revision, LATEST) else form


def _resource_contents(revision: str) -> Strategy:
    common = {"uri": _TEXT, "mime_type": st.none() | _TEXT, "meta": _META}
    return st.builds(wire.ResourceContents, text=_TEXT, **common) | st.builds(
        wire.ResourceContents, blob=_BASE64, **common
    )


# Types whose valid shapes the annotations alone do not pin down.
_TYPE_OVERRIDES: dict[type, Callable[[str], Strategy]] = {
    wire.ElicitRequestParams: _elicit_params,
    wire.ResourceContents: _resource_contents,
}
def _structured_content(revision: str) -> Strategy:
    """``structuredContent``: any JSON value in 2026-07-28, an object before."""
    rules = rules_for(revision)
    return st.none() | (_JSON if rules is not None and rules.structured_any_value else _JSON_OBJECT)


_FIELD_OVERRIDES: dict[tuple[type, str], Callable[[str], Strategy]] = {
    (wire.CallToolResult, "structured_content"): _structured_content,
    (wire.ToolResultContent, "structured_content"): _structured_content,
    (wire.Annotations, "priority"): lambda _: st.none() | _UNIT,
    (wire.ModelPreferences, "cost_priority"): lambda _: st.none() | _UNIT,
    (wire.ModelPreferences, "speed_priority"): lambda _: st.none() | _UNIT,
    (wire.ModelPreferences, "intelligence_priority"): lambda _: st.none() | _UNIT,
    (wire.Tool, "input_schema"): lambda _: _OBJECT_SCHEMA,
    (wire.Tool, "output_schema"): lambda _: st.none() | _OBJECT_SCHEMA,
    (wire.SamplingMessage, "content"): _sampling_content,
    (wire.CreateMessageResult, "content"): _sampling_content,
    (wire.CancelledNotificationParams, "request_id"): _cancelled_request_id,
    (wire.ElicitResult, "content"): _elicited_content,
}
_SCALARS: dict[object, Strategy] = {
    str: _TEXT,
    int: _INT,
    float: _FLOAT,
    bool: st.booleans(),
    object: _JSON,
    NoneType: st.none(),
}


@cache
def _strategy(tp: object, revision: str) -> Strategy:
    """JSON-compatible values of annotation ``tp`` that ``revision`` allows."""
    origin, args = get_origin(tp), get_args(tp)
    if tp in _SCALARS:
        return _SCALARS[tp]
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (Union, UnionType):
        return st.one_of([_strategy(arg, revision) for arg in args if _in_revision(arg, revision)])
    if origin is list:
        return st.lists(_strategy(args[0], revision), max_size=3)
    if origin is dict:
        return st.dictionaries(_KEY, _strategy(args[1], revision), max_size=3)
    if _is_struct(tp):
        return _struct_strategy(tp, revision)
    raise TypeError(f"no strategy for {tp!r}")


def _struct_strategy(cls: type[msgspec.Struct], revision: str) -> Strategy:
    if cls in _TYPE_OVERRIDES:
        return _TYPE_OVERRIDES[cls](revision)
    fields: dict[str, Strategy] = {}
    for field in msgspec.structs.fields(cls):
        override = _FIELD_OVERRIDES.get((cls, field.name))
        if override is not None:
            fields[field.name] = override(revision)
        elif field.encode_name == "_meta":
            fields[field.name] = _META
        else:
            fields[field.name] = _strategy(field.type, revision)
    return st.builds(cls, **fields)


# -- round trip and schema conformance ----------------------------------------------------


@pytest.mark.parametrize(("kind", "method", "revision"), CASES)
@settings(max_examples=EXAMPLES_PER_CASE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_instances_round_trip_and_match_the_schema(
    kind: str, method: str, revision: str, data: st.DataObject
) -> None:
    tp = _TABLES[kind][method]
    value = data.draw(_strategy(tp, revision))
    encoded = msgspec.json.encode(value)
    _validator(revision, _case_pointer(kind, method, revision)).validate(json.loads(encoded))
    assert msgspec.json.decode(encoded, type=tp) == value


# Examples from the spec's prose (the schema files have no ``examples``):
# (kind, method or definition name, revision, JSON).
_EXAMPLES = [
    (
        "request",
        "initialize",
        "2025-06-18",
        b'{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true},'
        b'"sampling":{},"elicitation":{}},"clientInfo":{"name":"ExampleClient",'
        b'"title":"Example Client Display Name","version":"1.0.0"}}',
    ),
    (
        "result",
        "initialize",
        "2025-11-25",
        b'{"protocolVersion":"2025-11-25","capabilities":{"logging":{},"prompts":'
        b'{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"tools":'
        b'{"listChanged":true},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},'
        b'"serverInfo":{"name":"ExampleServer","title":"Example Server","version":"1.0.0",'
        b'"description":"An example","icons":[{"src":"https://example.com/icon.png",'
        b'"mimeType":"image/png","sizes":["48x48"],"theme":"light"}],'
        b'"websiteUrl":"https://example.com"},"instructions":"Optional instructions"}',
    ),
    (
        "result",
        "tools/list",
        "2025-06-18",
        b'{"tools":[{"name":"get_weather","title":"Weather Information Provider",'
        b'"description":"Get current weather information for a location","inputSchema":'
        b'{"type":"object","properties":{"location":{"type":"string","description":'
        b'"City name or zip code"}},"required":["location"]},"outputSchema":{"type":"object",'
        b'"properties":{"temperature":{"type":"number"}},"required":["temperature"]},'
        b'"annotations":{"readOnlyHint":true,"openWorldHint":true}}],'
        b'"nextCursor":"next-page-cursor"}',
    ),
    (
        "request",
        "tools/call",
        "2025-11-25",
        b'{"name":"get_weather","arguments":{"city":"New York"},"task":{"ttl":60000},'
        b'"_meta":{"progressToken":17}}',
    ),
    (
        "result",
        "tools/call",
        "2025-06-18",
        b'{"content":[{"type":"text","text":"{\\"temperature\\": 22.5}"},{"type":"resource_link",'
        b'"uri":"file:///project/src/main.rs","name":"main.rs","mimeType":"text/x-rust"}],'
        b'"structuredContent":{"temperature":22.5},"isError":true}',
    ),
    (
        "definition",
        "CreateTaskResult",
        "2025-11-25",
        b'{"task":{"taskId":"786512e2","status":"working","createdAt":"2025-11-25T10:30:00Z",'
        b'"lastUpdatedAt":"2025-11-25T10:30:00Z","ttl":60000,"pollInterval":5000}}',
    ),
    (
        "result",
        "tasks/get",
        "2025-11-25",
        b'{"taskId":"786512e2","status":"input_required","statusMessage":"Waiting for input",'
        b'"createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:40:00Z","ttl":null}',
    ),
    (
        "result",
        "resources/read",
        "2024-11-05",
        b'{"contents":[{"uri":"file:///project/src/main.rs","mimeType":"text/x-rust",'
        b'"text":"fn main() {}"},{"uri":"file:///logo.png","mimeType":"image/png",'
        b'"blob":"iVBORw0KGgo="}]}',
    ),
    (
        "result",
        "resources/templates/list",
        "2024-11-05",
        b'{"resourceTemplates":[{"uriTemplate":"file:///{path}","name":"Project Files",'
        b'"description":"Access files in the project directory","mimeType":'
        b'"application/octet-stream"}]}',
    ),
    (
        "result",
        "prompts/get",
        "2024-11-05",
        b'{"description":"Code review prompt","messages":[{"role":"user","content":'
        b'{"type":"text","text":"Please review this Python code"}},{"role":"assistant",'
        b'"content":{"type":"resource","resource":{"uri":"resource://example","mimeType":'
        b'"text/plain","text":"Resource content"}}}]}',
    ),
    (
        "request",
        "completion/complete",
        "2025-06-18",
        b'{"ref":{"type":"ref/prompt","name":"code_review"},"argument":{"name":"language",'
        b'"value":"py"},"context":{"arguments":{"framework":"flask"}}}',
    ),
    (
        "result",
        "completion/complete",
        "2024-11-05",
        b'{"completion":{"values":["python","pytorch","pyside"],"total":10,"hasMore":true}}',
    ),
    (
        "request",
        "sampling/createMessage",
        "2024-11-05",
        b'{"messages":[{"role":"user","content":{"type":"text","text":"What is the capital of '
        b'France?"}}],"modelPreferences":{"hints":[{"name":"claude-3-sonnet"}],'
        b'"intelligencePriority":0.8,"speedPriority":0.5},"systemPrompt":"You are a helpful '
        b'assistant.","includeContext":"thisServer","maxTokens":100}',
    ),
    (
        "result",
        "sampling/createMessage",
        "2025-11-25",
        b'{"role":"assistant","content":[{"type":"tool_use","id":"call_abc123","name":'
        b'"get_weather","input":{"city":"Paris"}}],"model":"claude-3-sonnet-20240307",'
        b'"stopReason":"toolUse"}',
    ),
    (
        "request",
        "elicitation/create",
        "2025-06-18",
        b'{"message":"Please provide your GitHub username","requestedSchema":{"type":"object",'
        b'"properties":{"name":{"type":"string"}},"required":["name"]}}',
    ),
    (
        "request",
        "elicitation/create",
        "2025-11-25",
        b'{"mode":"url","message":"Please provide your API key to continue.","url":'
        b'"https://mcp.example.com/ui/set_api_key","elicitationId":"550e8400"}',
    ),
    ("result", "elicitation/create", "2025-06-18", b'{"action":"accept","content":{"n":"octo"}}'),
    (
        "notification",
        "notifications/message",
        "2024-11-05",
        b'{"level":"error","logger":"database","data":{"error":"Connection failed"}}',
    ),
    (
        "notification",
        "notifications/progress",
        "2025-03-26",
        b'{"progressToken":"abc123","progress":50.5,"total":100.0,"message":"Reticulating"}',
    ),
    (
        "notification",
        "notifications/cancelled",
        "2024-11-05",
        b'{"requestId":"123","reason":"User requested cancellation"}',
    ),
]


@pytest.mark.parametrize(("kind", "name", "revision", "example"), _EXAMPLES)
def test_spec_example_validates_decodes_and_reencodes_unchanged(
    kind: str, name: str, revision: str, example: bytes
) -> None:
    if kind == "definition":
        tp, pointer = _MODELLED[name], _pointer(revision, name)
    else:
        tp, pointer = _TABLES[kind][name], _case_pointer(kind, name, revision)
    _validator(revision, pointer).validate(json.loads(example))
    value = msgspec.json.decode(example, type=tp)
    assert json.loads(msgspec.json.encode(value)) == json.loads(example)


# -- coverage of the schemas ---------------------------------------------------------------


def test_method_sets_are_the_schema_dispatch_unions() -> None:
    for union, methods in _UNIONS.items():
        in_schemas = {method for rev in REVISIONS for method in _envelopes(rev)[union]}
        assert in_schemas == methods, union


def test_tables_name_a_type_for_every_method() -> None:
    requests = wire.CLIENT_REQUEST_METHODS | wire.SERVER_REQUEST_METHODS
    notifications = wire.CLIENT_NOTIFICATION_METHODS | wire.SERVER_NOTIFICATION_METHODS
    assert set(wire.REQUEST_PARAMS) == requests
    assert set(wire.RESULT_TYPES) == requests
    assert set(wire.NOTIFICATION_PARAMS) == notifications


# Schema definition -> the Python type that models it.
_MODELLED: dict[str, Any] = {
    "Annotations": wire.Annotations,
    "AudioContent": wire.AudioContent,
    "BlobResourceContents": wire.ResourceContents,
    "CallToolRequestParams": wire.CallToolRequestParams,
    "CallToolResult": wire.CallToolResult,
    "CancelTaskResult": wire.CancelTaskResult,
    "CancelledNotificationParams": wire.CancelledNotificationParams,
    "ClientCapabilities": wire.ClientCapabilities,
    "CompleteRequestParams": wire.CompleteRequestParams,
    "CompleteResult": wire.CompleteResult,
    "ContentBlock": wire.ContentBlock,
    "CreateMessageRequestParams": wire.CreateMessageRequestParams,
    "CreateMessageResult": wire.CreateMessageResult,
    "CreateTaskResult": wire.CreateTaskResult,
    "ElicitRequestFormParams": wire.ElicitRequestParams,
    "ElicitRequestParams": wire.ElicitRequestParams,
    "ElicitRequestURLParams": wire.ElicitRequestParams,
    "ElicitResult": wire.ElicitResult,
    "EmbeddedResource": wire.EmbeddedResource,
    "EmptyResult": wire.EmptyResult,
    "GetPromptRequestParams": wire.GetPromptRequestParams,
    "GetPromptResult": wire.GetPromptResult,
    "GetTaskPayloadResult": wire.GetTaskPayloadResult,
    "GetTaskResult": wire.GetTaskResult,
    "Icon": wire.Icon,
    "ImageContent": wire.ImageContent,
    "Implementation": wire.Implementation,
    "InitializeRequestParams": wire.InitializeRequestParams,
    "InitializeResult": wire.InitializeResult,
    "ListPromptsResult": wire.ListPromptsResult,
    "ListResourceTemplatesResult": wire.ListResourceTemplatesResult,
    "ListResourcesResult": wire.ListResourcesResult,
    "ListRootsResult": wire.ListRootsResult,
    "ListTasksResult": wire.ListTasksResult,
    "ListToolsResult": wire.ListToolsResult,
    "LoggingLevel": wire.LoggingLevel,
    "LoggingMessageNotificationParams": wire.LoggingMessageNotificationParams,
    "ModelHint": wire.ModelHint,
    "ModelPreferences": wire.ModelPreferences,
    "NotificationParams": wire.NotificationParams,
    "PaginatedRequestParams": wire.PaginatedRequestParams,
    "ProgressNotificationParams": wire.ProgressNotificationParams,
    "ProgressToken": wire.ProgressToken,
    "Prompt": wire.Prompt,
    "PromptArgument": wire.PromptArgument,
    "PromptMessage": wire.PromptMessage,
    "PromptReference": wire.PromptReference,
    "ReadResourceRequestParams": wire.ReadResourceRequestParams,
    "ReadResourceResult": wire.ReadResourceResult,
    "RelatedTaskMetadata": wire.RelatedTaskMetadata,
    "RequestId": wire.RequestId,
    "RequestParams": wire.RequestParams,
    "Resource": wire.Resource,
    "ResourceContents": wire.ResourceContents,
    "ResourceLink": wire.ResourceLink,
    "ResourceReference": wire.ResourceTemplateReference,
    "ResourceRequestParams": wire.ResourceRequestParams,
    "ResourceTemplate": wire.ResourceTemplate,
    "ResourceTemplateReference": wire.ResourceTemplateReference,
    "ResourceUpdatedNotificationParams": wire.ResourceUpdatedNotificationParams,
    "Role": wire.Role,
    "Root": wire.Root,
    "SamplingMessage": wire.SamplingMessage,
    "SamplingMessageContentBlock": wire.SamplingContent,
    "ServerCapabilities": wire.ServerCapabilities,
    "SetLevelRequestParams": wire.SetLevelRequestParams,
    "SubscribeRequestParams": wire.SubscribeRequestParams,
    "Task": wire.Task,
    "TaskMetadata": wire.TaskMetadata,
    "TaskStatus": wire.TaskStatus,
    "TaskStatusNotificationParams": wire.TaskStatusNotificationParams,
    "TextContent": wire.TextContent,
    "TextResourceContents": wire.ResourceContents,
    "Tool": wire.Tool,
    "ToolAnnotations": wire.ToolAnnotations,
    "ToolChoice": wire.ToolChoice,
    "ToolExecution": wire.ToolExecution,
    "ToolResultContent": wire.ToolResultContent,
    "ToolUseContent": wire.ToolUseContent,
    "UnsubscribeRequestParams": wire.UnsubscribeRequestParams,
}
_RAW_SCHEMA = "elicitation requestedSchema is kept as the raw JSON Schema object"
_ENVELOPE = "JSON-RPC envelope, the jsonrpc layer's job"
_BASE = "abstract base or mixin; its fields are declared on each concrete type"
# Deliberately not modelled, with the reason. Request and notification envelopes (anything
# with a ``method`` property) are left out too: the method tables model their params.
_EXCLUDED = {
    "Annotated": _BASE,
    "BaseMetadata": _BASE,
    "Icons": _BASE,
    "PaginatedResult": _BASE,
    "Result": _BASE,
    "TaskAugmentedRequestParams": _BASE,
    "BooleanSchema": _RAW_SCHEMA,
    "EnumSchema": _RAW_SCHEMA,
    "LegacyTitledEnumSchema": _RAW_SCHEMA,
    "MultiSelectEnumSchema": _RAW_SCHEMA,
    "NumberSchema": _RAW_SCHEMA,
    "PrimitiveSchemaDefinition": _RAW_SCHEMA,
    "SingleSelectEnumSchema": _RAW_SCHEMA,
    "StringSchema": _RAW_SCHEMA,
    "TitledMultiSelectEnumSchema": _RAW_SCHEMA,
    "TitledSingleSelectEnumSchema": _RAW_SCHEMA,
    "UntitledMultiSelectEnumSchema": _RAW_SCHEMA,
    "UntitledSingleSelectEnumSchema": _RAW_SCHEMA,
    "ClientNotification": "dispatch union: CLIENT_NOTIFICATION_METHODS and NOTIFICATION_PARAMS",
    "ClientRequest": "dispatch union: CLIENT_REQUEST_METHODS and REQUEST_PARAMS",
    "ClientResult": "dispatch union: RESULT_TYPES",
    "ServerNotification": "dispatch union: SERVER_NOTIFICATION_METHODS and NOTIFICATION_PARAMS",
    "ServerRequest": "dispatch union: SERVER_REQUEST_METHODS and REQUEST_PARAMS",
    "ServerResult": "dispatch union: RESULT_TYPES",
    "Cursor": "a plain str",
    "Error": _ENVELOPE,
    "JSONRPCBatchRequest": _ENVELOPE,
    "JSONRPCBatchResponse": _ENVELOPE,
    "JSONRPCError": _ENVELOPE,
    "JSONRPCErrorResponse": _ENVELOPE,
    "JSONRPCMessage": _ENVELOPE,
    "JSONRPCResponse": _ENVELOPE,
    "JSONRPCResultResponse": _ENVELOPE,
    "URLElicitationRequiredError": _ENVELOPE + "; its error data is modelled",
}


def test_every_schema_definition_is_modelled_or_deliberately_excluded() -> None:
    others = {
        name
        for revision in REVISIONS
        for name, schema in _defs(revision).items()
        if "method" not in schema.get("properties", {})
    }
    assert not set(_MODELLED) & set(_EXCLUDED)
    assert others == set(_MODELLED) | set(_EXCLUDED)


def _members(tp: object) -> list[object]:
    """The non-None members of a union, or ``[tp]``."""
    if get_origin(tp) in (Union, UnionType):
        return [arg for arg in get_args(tp) if arg is not NoneType]
    return [tp]


def _tag(schema: Schema) -> str | None:
    """The ``type`` constant a tagged-union member's schema pins, if any."""
    tag: str | None = schema.get("properties", {}).get("type", {}).get("const")
    return tag


class _Walk:
    """Pairs each type with the schema objects it models, across revisions.

    ``properties[cls]`` collects every property name the schemas give ``cls``, and
    ``enums[literal]`` every enum value the schemas give a ``Literal`` type.
    """

    def __init__(self) -> None:
        self.properties: dict[type, set[str]] = {}
        self.enums: dict[object, set[object]] = {}

    def visit(self, tp: object, schema: Schema, revision: str) -> None:
        schema = _resolve(revision, schema)
        members = _members(tp)
        if len(members) > 1:
            self._visit_union(members, schema, revision)
            return
        tp = members[0]
        if get_origin(tp) is Literal:
            values = schema.get("enum", [schema.get("const")])
            self.enums.setdefault(tp, set()).update(values)
        elif get_origin(tp) is list and "items" in schema:
            self.visit(get_args(tp)[0], schema["items"], revision)
        elif _is_struct(tp):
            self._visit_struct(tp, schema, revision)

    def _visit_union(self, members: list[object], schema: Schema, revision: str) -> None:
        structs = {m.__struct_config__.tag: m for m in members if _is_struct(m)}
        if not structs:
            return  # a union of scalars such as RequestId
        lists = [m for m in members if get_origin(m) is list]
        for unresolved in schema.get("anyOf", [schema]):
            option = _resolve(revision, unresolved)
            if "items" in option:
                self.visit(lists[0], option, revision)
            else:
                tag = _tag(option)
                assert tag in structs, f"{revision}: no type for {option}"
                self.visit(structs[tag], option, revision)

    def _visit_struct(self, cls: type[msgspec.Struct], schema: Schema, revision: str) -> None:
        for part in schema.get("allOf", []) + schema.get("anyOf", []):
            self.visit(cls, part, revision)
        properties: dict[str, Schema] = schema.get("properties", {})
        self.properties.setdefault(cls, set()).update(properties)
        for field in msgspec.structs.fields(cls):
            if field.encode_name in properties:
                self.visit(field.type, properties[field.encode_name], revision)


@cache
def _walk() -> _Walk:
    walk = _Walk()
    for revision in REVISIONS:
        defs = _defs(revision)
        for name, tp in _MODELLED.items():
            if name in defs:
                walk.visit(tp, defs[name], revision)
        for kind, method, case_revision in CASES:
            if case_revision == revision:
                pointer = _case_pointer(kind, method, revision)
                walk.visit(_TABLES[kind][method], {"$ref": pointer}, revision)
    error = _defs(LATEST)["URLElicitationRequiredError"]["properties"]["error"]
    walk.visit(wire.URLElicitationRequiredErrorData, error["allOf"][1]["properties"]["data"], LATEST)
    return walk


_STRUCTS = sorted(
    {obj for name in wire.__all__ if _is_struct(obj := getattr(wire, name)) and obj is not wire.WireStruct},
    key=lambda cls: cls.__name__,
)


def _modern_properties(cls: type[msgspec.Struct]) -> set[str]:
    """Properties the 2026-07-28 schema gives the definition of the same name (the wire
    types carry its additions, such as caching hints and ``extensions``, for both eras)."""
    document: Schema = json.loads((SPEC_DIR / MODERN / "schema.json").read_text("utf-8"))
    return set(document["$defs"].get(cls.__name__, {}).get("properties", {}))


@pytest.mark.parametrize("cls", _STRUCTS, ids=lambda cls: cls.__name__)
def test_struct_fields_are_exactly_the_schema_properties(cls: type[msgspec.Struct]) -> None:
    in_schemas = _walk().properties.get(cls)
    assert in_schemas is not None, f"{cls.__name__} models no schema object"
    names = {field.encode_name for field in msgspec.structs.fields(cls)}
    tag_field = cls.__struct_config__.tag_field
    assert names - in_schemas - _modern_properties(cls) - {"_meta"} == set(), "fields no revision defines"
    assert in_schemas - names - {tag_field} == set(), "schema properties not modelled"


def _literals(tp: object) -> Iterator[object]:
    if get_origin(tp) is Literal:
        yield tp
    for arg in get_args(tp) if get_origin(tp) is not Literal else ():
        yield from _literals(arg)


def test_literal_types_are_exactly_the_schema_enums() -> None:
    literals = {
        literal
        for cls in _STRUCTS
        for field in msgspec.structs.fields(cls)
        for literal in _literals(field.type)
    }
    enums = _walk().enums
    for literal in literals:
        assert enums.get(literal) == set(get_args(literal)), literal

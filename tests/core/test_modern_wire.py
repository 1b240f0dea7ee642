"""The stateless era's wire shapes against the 2026-07-28 JSON Schema.

Hypothesis builds the Structs of :mod:`mcp_sansio.modern`; each must validate against
its schema definition once encoded and survive an encode/decode round trip. Then every
message the client sends in the modern era (the probe, requests with their ``_meta``,
an MRTR retry, ``subscriptions/listen``, ``notifications/cancelled``) is checked against
the schema's definition for its method: the conformance suite's "wire-schema-valid".
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from helpers import drain_events, take_messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from modern_helpers import MODERN_SERVER, Json, discover_result, schema_errors

from mcp_sansio import ClientConfig, ServerRequestReceived, StdioClient
from mcp_sansio.modern import DiscoverResult, InputRequest, ResultHead, request_meta
from mcp_sansio.types import ClientCapabilities, RootsCapability, ServerCapabilities

SERVER = MODERN_SERVER
# The schema definition of each request the client sends, by method.
REQUEST_DEFINITIONS = {
    "server/discover": "DiscoverRequest",
    "tools/call": "CallToolRequest",
    "tools/list": "ListToolsRequest",
    "prompts/list": "ListPromptsRequest",
    "prompts/get": "GetPromptRequest",
    "resources/list": "ListResourcesRequest",
    "resources/templates/list": "ListResourceTemplatesRequest",
    "resources/read": "ReadResourceRequest",
    "completion/complete": "CompleteRequest",
    "subscriptions/listen": "SubscriptionsListenRequest",
}
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
WIRE = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- strategies --------------------------------------------------------------------------------

names = st.text(min_size=1, max_size=12)
json_values: st.SearchStrategy[object] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=3)
implementations = st.fixed_dictionaries({"name": names, "version": names},
                                        optional={"title": names, "description": st.text(max_size=10)})
_FLAGS = st.booleans()
_FEATURES: dict[str, st.SearchStrategy[object]] = {
    "tools": st.fixed_dictionaries({}, optional={"listChanged": _FLAGS}),
    "prompts": st.fixed_dictionaries({}, optional={"listChanged": _FLAGS}),
    "resources": st.fixed_dictionaries({}, optional={"listChanged": _FLAGS, "subscribe": _FLAGS}),
    "logging": st.just({}),
    "completions": st.just({}),
}
_EXPERIMENTAL: dict[str, st.SearchStrategy[object]] = {
    "experimental": st.dictionaries(names, st.just({}), max_size=2)}
server_capabilities = st.fixed_dictionaries({}, optional={**_FEATURES, **_EXPERIMENTAL})
every_feature = st.fixed_dictionaries(_FEATURES, optional=_EXPERIMENTAL)
"""Server capabilities that let the client send every request it has."""
client_capabilities = st.builds(
    ClientCapabilities,
    roots=st.none() | st.builds(RootsCapability, list_changed=st.none() | st.booleans()),
    sampling=st.none() | st.sampled_from([{}, {"tools": {}}, {"context": {}, "tools": {}}]),
    elicitation=st.none() | st.sampled_from([{}, {"form": {}}, {"form": {}, "url": {}}]),
    experimental=st.none() | st.dictionaries(names, st.just({}), max_size=2),
)
elicit_params = st.fixed_dictionaries(
    {"message": st.text(max_size=20), "requestedSchema": st.fixed_dictionaries({
        "type": st.just("object"),
        "properties": st.dictionaries(names, st.sampled_from(
            [{"type": "string"}, {"type": "boolean"}, {"type": "integer", "minimum": 0}]), max_size=3),
    })},
    optional={"mode": st.just("form")},
)
sampling_params = st.fixed_dictionaries(
    {"messages": st.lists(st.fixed_dictionaries({
        "role": st.sampled_from(["user", "assistant"]),
        "content": st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}),
    }), max_size=2), "maxTokens": st.integers(1, 10_000)},
    optional={"systemPrompt": st.text(max_size=20), "temperature": st.floats(0, 2)},
)
input_requests: st.SearchStrategy[Json] = st.one_of(
    st.fixed_dictionaries({"method": st.just("elicitation/create"), "params": elicit_params}),
    st.fixed_dictionaries({"method": st.just("sampling/createMessage"), "params": sampling_params}),
    st.fixed_dictionaries({"method": st.just("roots/list")}, optional={"params": st.just({})}),
)
answers = {
    "elicitation/create": st.one_of(
        st.fixed_dictionaries({"action": st.just("accept"), "content": st.dictionaries(
            names, st.text(max_size=5) | st.booleans(), max_size=2)}),
        st.fixed_dictionaries({"action": st.sampled_from(["decline", "cancel"])}),
    ),
    "sampling/createMessage": st.fixed_dictionaries({
        "role": st.just("assistant"), "model": names,
        "content": st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}),
    }, optional={"stopReason": st.sampled_from(["endTurn", "maxTokens"])}),
    "roots/list": st.fixed_dictionaries({"roots": st.lists(st.fixed_dictionaries(
        {"uri": st.just("file:///w")}, optional={"name": names}), max_size=2)}),
}


def _raw(value: object) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.encode(value))


discover_results = st.builds(
    DiscoverResult,
    supported_versions=st.lists(st.text(max_size=12), max_size=3),
    capabilities=server_capabilities.map(lambda caps: msgspec.convert(caps, ServerCapabilities)),
    result_type=st.just("complete"),
    instructions=st.none() | st.text(max_size=20),
    meta=st.none() | implementations.map(lambda info: {"io.modelcontextprotocol/serverInfo": info}),
    ttl_ms=st.integers(0, 2**40),
    cache_scope=st.sampled_from(["public", "private"]),
)
input_request_structs = input_requests.map(
    lambda r: InputRequest(method=r["method"], params=_raw(r["params"])) if "params" in r
    else InputRequest(method=r["method"]))
result_heads = st.builds(
    ResultHead,
    result_type=st.just("input_required"),
    input_requests=st.none() | st.dictionaries(names, input_requests.map(_raw), max_size=3),
    request_state=st.none() | st.text(max_size=20),
)


def _round_trips(value: msgspec.Struct, definition: str) -> None:
    encoded = msgspec.json.encode(value)
    assert schema_errors(json.loads(encoded), definition) == []
    assert msgspec.json.decode(encoded, type=type(value)) == value


# -- the Structs of mcp_sansio.modern -----------------------------------------------------------


@WIRE
@given(discover_results)
def test_discover_result_round_trips_and_is_schema_valid(value: DiscoverResult) -> None:
    _round_trips(value, "DiscoverResult")


@WIRE
@given(input_request_structs)
def test_input_request_round_trips_and_is_schema_valid(value: InputRequest) -> None:
    _round_trips(value, "InputRequest")


@WIRE
@given(result_heads)
def test_result_head_round_trips_and_is_schema_valid(value: ResultHead) -> None:
    _round_trips(value, "InputRequiredResult")


def test_the_spec_discover_example_decodes() -> None:
    example = {
        "resultType": "complete", "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}, "resources": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "ExampleServer", "version": "1.0.0"}},
        "instructions": "This server provides weather and resource utilities.",
        "ttlMs": 3600000, "cacheScope": "public",
    }
    assert schema_errors(example, "DiscoverResult") == []
    found = msgspec.convert(example, DiscoverResult)
    assert (found.supported_versions, found.ttl_ms, found.cache_scope, found.result_type) == (
        ["2026-07-28"], 3600000, "public", "complete")
    assert msgspec.to_builtins(found) == example


@WIRE
@given(client_capabilities, implementations, st.none() | st.sampled_from(LEVELS))
def test_request_meta_is_a_schema_valid_request_meta_object(
        capabilities: ClientCapabilities, info: Json, level: str | None) -> None:
    meta = msgspec.to_builtins(request_meta("2026-07-28", capabilities, info, level))
    assert schema_errors(meta, "RequestMetaObject") == []
    assert meta.get("io.modelcontextprotocol/logLevel") == level


def test_unset_fields_are_left_out_when_encoding() -> None:
    empty = DiscoverResult(supported_versions=[])
    assert msgspec.json.encode(empty) == b'{"supportedVersions":[],"capabilities":{}}'
    assert msgspec.json.encode(ResultHead()) == b"{}"


# -- what the client sends ------------------------------------------------------------------------


def _check_sent(messages: list[Json]) -> None:
    for message in messages:
        if "id" in message:
            definition = REQUEST_DEFINITIONS[message["method"]]
            assert schema_errors(message, "JSONRPCRequest") == []
        else:
            definition = "ClientNotification"
        assert schema_errors(message, definition) == [], (definition, message)


def _modern(capabilities: ClientCapabilities, info: Json, server: Json, log_level: str | None) -> StdioClient:
    config = ClientConfig(client_name=info["name"], client_version=info["version"],
                          client_title=info.get("title"))
    client = StdioClient(config, capabilities)
    client.start(now=0.0)
    _check_sent(take_messages(client))  # the probe
    client.receive_data(discover_result(capabilities=server), 0.0)
    drain_events(client)
    if log_level is not None:
        client.set_logging_level(log_level, now=0.0)
        drain_events(client)
    return client


@WIRE
@given(client_capabilities, implementations, every_feature, st.none() | st.sampled_from(LEVELS),
       names, json_objects, st.dictionaries(names, st.text(max_size=5), max_size=2), st.text(max_size=10))
def test_every_modern_request_is_schema_valid(
    capabilities: ClientCapabilities, info: Json, server: Json, log_level: str | None, name: str,
    arguments: Json, prompt_arguments: dict[str, str], cursor: str,
) -> None:
    client = _modern(capabilities, info, server, log_level)
    pinged = client.ping(now=1.0)
    calls: list[Any] = [
        lambda: client.request("prompts/list", {"cursor": cursor} if cursor else None, now=1.0),
        lambda: client.request("resources/list", None, now=1.0),
        lambda: client.request("resources/templates/list", None, now=1.0),
        lambda: client.list_tools(now=1.0, cursor=cursor or None),
        lambda: client.call_tool(name, arguments, now=1.0),
        lambda: client.get_prompt(name, prompt_arguments, now=1.0),
        lambda: client.read_resource(f"file:///{name}", now=1.0),
        lambda: client.complete({"type": "ref/prompt", "name": name}, "arg", cursor, now=1.0,
                                context_arguments=prompt_arguments),
    ]
    for call in calls:
        call()
    client.listen(now=1.0)
    if server["resources"].get("subscribe"):
        client.subscribe_resource(f"file:///{name}", now=1.0)
    client.cancel(pinged, now=1.0, reason="no longer needed")
    _check_sent(take_messages(client))


@WIRE
@given(st.dictionaries(names, input_requests, min_size=1, max_size=3), st.none() | st.text(max_size=20),
       st.data())
def test_mrtr_retry_is_schema_valid(inputs: Json, state: str | None, data: st.DataObject) -> None:
    capabilities = ClientCapabilities(roots=RootsCapability(), sampling={}, elicitation={})
    client = _modern(capabilities, {"name": "c", "version": "1"}, {"tools": {}}, None)
    client.call_tool("t", {"a": [1, {"b": None}]}, now=1.0)
    client.data_to_send()
    result: Json = {"resultType": "input_required", "inputRequests": inputs}
    if state is not None:
        result["requestState"] = state
    assert schema_errors(result, "InputRequiredResult") == []
    client.receive_data(SERVER.result(2, result), 2.0)
    for event in drain_events(client):
        assert isinstance(event, ServerRequestReceived)
        client.respond(event.request_id, data.draw(answers[event.method]), now=1.0)
    (retry,) = take_messages(client)
    _check_sent([retry])
    assert set(retry["params"]["inputResponses"]) == set(inputs)
    assert retry["params"].get("requestState") == state

"""Requests in the stateless era: per-request ``_meta``, the log level in ``_meta``,
``ping`` as ``server/discover``, ``subscriptions/listen`` for subscriptions, and no
server-to-client requests (2026-07-28 changelog items 2, 4, 5 and 7).
"""

from __future__ import annotations

import msgspec
import pytest
from helpers import drain_events, ready_client, take_messages
from modern_helpers import MODERN, MODERN_SERVER, Json, modern_client, modern_meta

from mcp_sansio import (
    FailureReason,
    LocalProtocolError,
    NotificationReceived,
    RequestFailed,
    ResponseReceived,
)
from mcp_sansio.types import CallToolRequestParams, EmptyResult

SERVER = MODERN_SERVER
LISTEN_ALL: Json = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}


class _NoMeta(msgspec.Struct, rename="camel"):
    """A caller's params type without a ``meta`` field."""

    tool_name: str
    extra: object = None


class _ByPosition(msgspec.Struct, array_like=True):
    """A caller's params type that encodes as a JSON array."""

    name: str
    meta: dict[str, object] | None = None


def _request(request_id: int, method: str, params: Json) -> Json:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def _listen(request_id: int, notifications: Json) -> Json:
    return _request(request_id, "subscriptions/listen",
                    {"notifications": notifications, "_meta": modern_meta(progress_token=request_id)})


def _cancelled(request_id: int, reason: str) -> Json:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason}}


def _local(request_id: int, method: str) -> ResponseReceived:
    return ResponseReceived(request_id=request_id, method=method, result=EmptyResult(),
                            raw=msgspec.Raw(b"{}"))


# -- _meta on every request ------------------------------------------------------------------


def test_requests_carry_the_modern_meta_and_a_progress_token() -> None:
    client = modern_client()
    assert client.call_tool("add", {"a": 1}, now=1.0) == 2
    assert take_messages(client) == [_request(2, "tools/call", {
        "name": "add", "arguments": {"a": 1}, "_meta": modern_meta(progress_token=2)})]


def test_request_without_params_gets_the_modern_meta() -> None:
    client = modern_client()
    client.request("prompts/list", None, now=1.0)
    assert take_messages(client) == [_request(2, "prompts/list", {"_meta": modern_meta(progress_token=2)})]


def test_later_list_pages_carry_the_modern_meta() -> None:
    client = modern_client()
    client.list_tools(now=1.0)
    client.data_to_send()
    client.receive_data(SERVER.result(2, {"tools": [], "nextCursor": "c2"}), 1.0)
    assert take_messages(client) == [_request(3, "tools/list", {
        "cursor": "c2", "_meta": modern_meta(progress_token=3)})]


def test_invalid_later_page_fails_the_list() -> None:
    client = modern_client()
    client.list_tools(now=1.0)
    client.receive_data(SERVER.result(2, {"tools": [], "nextCursor": "c2"}), 1.0)
    client.receive_data(SERVER.result(3, {"tools": 5}), 1.0)
    (event,) = drain_events(client)
    assert isinstance(event, RequestFailed)
    assert (event.request_id, event.reason) == (2, FailureReason.INVALID_RESULT)


def test_caller_meta_is_kept_beside_the_modern_meta() -> None:
    client = modern_client()
    client.request("tools/call", {"name": "t", "_meta": {"com.example/trace": "abc"}}, now=1.0)
    (message,) = take_messages(client)
    assert message["params"]["_meta"] == {"com.example/trace": "abc", **modern_meta(progress_token=2)}


def test_caller_struct_is_copied_not_changed() -> None:
    client = modern_client()
    params = CallToolRequestParams(name="t", arguments={"a": 1})
    client.request("tools/call", params, now=1.0)
    assert params.meta is None
    (message,) = take_messages(client)
    assert message["params"]["_meta"] == modern_meta(progress_token=2)


def test_caller_struct_without_meta_field_gets_the_modern_meta() -> None:
    client = modern_client()
    client.request("x/custom", _NoMeta(tool_name="t", extra=msgspec.Raw(b'{"raw":true}')), now=1.0)
    assert take_messages(client) == [_request(2, "x/custom", {
        "toolName": "t", "extra": {"raw": True}, "_meta": modern_meta(progress_token=2)})]


@pytest.mark.parametrize("params", [_ByPosition(name="t"), _NoMeta(tool_name="t", extra=object())],
                         ids=["json-array", "unencodable"])
def test_params_that_cannot_be_a_json_object_are_refused(params: msgspec.Struct) -> None:
    client = modern_client()
    with pytest.raises(LocalProtocolError, match="params"):
        client.request("x/custom", params, now=1.0)
    assert take_messages(client) == []
    assert client.pending_requests() == []
    assert client.call_tool("t", now=1.0) == 2  # no id was spent


# -- the log level -------------------------------------------------------------------------------


def test_set_logging_level_completes_locally() -> None:
    client = modern_client()
    assert client.set_logging_level("debug", now=1.0) == 2
    assert drain_events(client) == [_local(2, "logging/setLevel")]
    assert take_messages(client) == []


def test_log_level_rides_on_later_requests() -> None:
    client = modern_client()
    client.set_logging_level("warning", now=1.0)
    client.call_tool("t", now=1.0)
    (message,) = take_messages(client)
    assert message["params"]["_meta"] == modern_meta(log_level="warning", progress_token=3)


def test_unknown_log_level_is_refused() -> None:
    client = modern_client()
    with pytest.raises(LocalProtocolError, match="not a logging level"):
        client.set_logging_level("verbose", now=1.0)
    assert drain_events(client) == []
    client.call_tool("t", now=1.0)
    (message,) = take_messages(client)
    assert "io.modelcontextprotocol/logLevel" not in message["params"]["_meta"]


def test_set_logging_level_needs_the_logging_capability() -> None:
    client = modern_client(server_capabilities={"tools": {}})
    with pytest.raises(LocalProtocolError, match="logging"):
        client.set_logging_level("debug", now=1.0)
    assert drain_events(client) == []


# -- ping --------------------------------------------------------------------------------------------


def test_ping_becomes_server_discover() -> None:
    client = modern_client()
    assert client.ping(now=1.0, timeout=5.0) == 2
    assert take_messages(client) == [_request(2, "server/discover", {"_meta": modern_meta(progress_token=2)})]
    assert client.next_deadline() == 6.0
    client.receive_data(SERVER.result(2, {"resultType": "complete", "supportedVersions": [MODERN]}), 2.0)
    (event,) = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert (event.request_id, event.method) == (2, "server/discover")


# -- subscriptions/listen ----------------------------------------------------------------------------


def test_subscribe_opens_listen_with_the_filter_and_completes_locally() -> None:
    client = modern_client()
    assert client.subscribe_resource("file:///a", now=1.0) == 3
    assert take_messages(client) == [_listen(2, {**LISTEN_ALL, "resourceSubscriptions": ["file:///a"]})]
    assert drain_events(client) == [_local(3, "resources/subscribe")]


def test_listen_has_no_deadline() -> None:
    client = modern_client(max_request_timeout=10.0)
    client.subscribe_resource("file:///a", now=1.0)
    drain_events(client)
    assert client.next_deadline() is None
    client.handle_timeout(1e12)
    assert drain_events(client) == []
    assert client.pending_requests() == [2]


def test_progress_on_the_listen_keeps_it_without_a_deadline() -> None:
    client = modern_client()
    client.listen(now=1.0)
    client.receive_data(SERVER.progress(2, 1), 2.0)
    drain_events(client)
    assert client.next_deadline() is None


def test_subscribing_another_uri_reopens_listen_and_cancels_the_old_one() -> None:
    client = modern_client()
    client.subscribe_resource("file:///b", now=1.0)
    client.data_to_send()
    assert client.subscribe_resource("file:///a", now=2.0) == 5
    assert take_messages(client) == [
        _cancelled(2, "the subscription filter changed"),
        _listen(4, {**LISTEN_ALL, "resourceSubscriptions": ["file:///a", "file:///b"]}),
    ]
    assert drain_events(client) == [_local(3, "resources/subscribe"), _local(5, "resources/subscribe")]
    assert client.pending_requests() == [4]


def test_subscribing_the_same_uri_again_keeps_the_listen() -> None:
    client = modern_client()
    client.subscribe_resource("file:///a", now=1.0)
    client.data_to_send()
    client.subscribe_resource("file:///a", now=2.0)
    assert take_messages(client) == []
    assert client.pending_requests() == [2]


def test_unsubscribe_reopens_listen_without_the_uri() -> None:
    client = modern_client()
    client.subscribe_resource("file:///a", now=1.0)
    client.data_to_send()
    drain_events(client)
    assert client.unsubscribe_resource("file:///a", now=2.0) == 5
    assert take_messages(client) == [_cancelled(2, "the subscription filter changed"), _listen(4, LISTEN_ALL)]
    assert drain_events(client) == [_local(5, "resources/unsubscribe")]


def test_unsubscribing_an_unknown_uri_keeps_the_listen() -> None:
    client = modern_client()
    client.subscribe_resource("file:///a", now=1.0)
    client.data_to_send()
    client.unsubscribe_resource("file:///other", now=2.0)
    assert take_messages(client) == []


def test_subscribe_needs_the_resources_subscribe_capability() -> None:
    client = modern_client(server_capabilities={"resources": {}})
    with pytest.raises(LocalProtocolError, match=r"resources\.subscribe"):
        client.subscribe_resource("file:///a", now=1.0)
    assert (take_messages(client), drain_events(client)) == ([], [])


def test_listen_filter_follows_the_server_capabilities() -> None:
    client = modern_client(server_capabilities={"tools": {"listChanged": True}})
    client.listen(now=1.0)
    assert take_messages(client) == [_listen(2, {"toolsListChanged": True})]


def test_listen_filter_asks_only_for_what_the_server_has() -> None:
    client = modern_client(server_capabilities={"resources": {"subscribe": True}})
    client.subscribe_resource("file:///a", now=1.0)
    assert take_messages(client) == [_listen(2, {"resourcesListChanged": True,
                                                 "resourceSubscriptions": ["file:///a"]})]


def test_listen_reopens_an_open_listen() -> None:
    client = modern_client()
    client.listen(now=1.0)
    client.listen(now=2.0)
    assert take_messages(client) == [
        _listen(2, LISTEN_ALL), _cancelled(2, "the subscription filter changed"), _listen(3, LISTEN_ALL)]
    assert drain_events(client) == []


def test_server_ending_the_listen_answers_it_and_a_subscribe_reopens_it() -> None:
    client = modern_client()
    client.subscribe_resource("file:///a", now=1.0)
    client.data_to_send()
    drain_events(client)
    client.receive_data(SERVER.result(2, {"resultType": "complete",
                                          "_meta": {"io.modelcontextprotocol/subscriptionId": 2}}), 2.0)
    (event,) = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert (event.request_id, event.method) == (2, "subscriptions/listen")
    client.subscribe_resource("file:///a", now=3.0)  # same set, but no listen is open
    assert take_messages(client) == [_listen(4, {**LISTEN_ALL, "resourceSubscriptions": ["file:///a"]})]


def test_listen_notifications_arrive_as_notifications() -> None:
    client = modern_client()
    client.listen(now=1.0)
    client.receive_data(SERVER.notification("notifications/tools/list_changed",
                                            {"_meta": {"io.modelcontextprotocol/subscriptionId": 2}}), 2.0)
    (event,) = drain_events(client)
    assert isinstance(event, NotificationReceived)
    assert event.method == "notifications/tools/list_changed"


def test_listen_in_the_legacy_era_does_nothing() -> None:
    client = ready_client()
    client.listen(now=1.0)
    assert (take_messages(client), drain_events(client)) == ([], [])


@pytest.mark.parametrize("call", ["subscribe", "unsubscribe", "listen", "set_logging_level"])
def test_modern_local_calls_after_close_are_refused_and_change_nothing(call: str) -> None:
    client = modern_client()
    client.close(now=1.0)
    drain_events(client)
    client.data_to_send()
    with pytest.raises(LocalProtocolError, match="closed"):
        if call == "subscribe":
            client.subscribe_resource("file:///a", now=2.0)
        elif call == "unsubscribe":
            client.unsubscribe_resource("file:///a", now=2.0)
        elif call == "listen":
            client.listen(now=2.0)
        else:
            client.set_logging_level("debug", now=2.0)
    assert (take_messages(client), drain_events(client), client.pending_requests()) == ([], [], [])


def test_timeout_of_a_request_still_sends_cancelled() -> None:
    client = modern_client()
    client.call_tool("t", now=0.0, timeout=5.0)
    client.data_to_send()
    client.handle_timeout(5.0)
    (event,) = drain_events(client)
    assert isinstance(event, RequestFailed) and event.reason is FailureReason.TIMEOUT
    assert take_messages(client) == [_cancelled(2, "request timed out")]


# -- no server-to-client requests -----------------------------------------------------------------


@pytest.mark.parametrize("method", ["ping", "roots/list", "sampling/createMessage", "elicitation/create"])
def test_server_requests_are_refused_in_the_modern_era(method: str) -> None:
    client = modern_client()
    client.receive_data(SERVER.request("s1", method, {}), 1.0)
    assert drain_events(client) == []
    assert take_messages(client) == [{"jsonrpc": "2.0", "id": "s1",
                                      "error": {"code": -32601, "message": f"method not found: {method}"}}]


# -- the transport's hook: a lost request sent again (Streamable HTTP, a broken stream) ----------


def test_reissue_sends_a_request_safe_to_repeat_as_it_was_under_a_new_id() -> None:
    client = modern_client()
    client.get_prompt("p", {"a": "1"}, now=1.0, timeout=10.0)
    client.data_to_send()
    assert client.session.reissue([2], 1.0)
    assert take_messages(client) == [_request(3, "prompts/get", {
        "name": "p", "arguments": {"a": "1"}, "_meta": modern_meta(progress_token=3)})]
    assert (client.pending_requests(), client.next_deadline()) == ([2], 11.0)
    client.receive_data(SERVER.result(3, {"messages": []}), 2.0)
    (event,) = drain_events(client)
    assert isinstance(event, ResponseReceived) and event.request_id == 2


def test_reissue_refuses_a_request_not_safe_to_repeat_or_already_repeated() -> None:
    client = modern_client()
    client.call_tool("t", {"a": 1}, now=1.0)
    client.get_prompt("p", now=1.0)
    client.data_to_send()
    assert not client.session.reissue([2], 1.0)  # a tool call may have done its work
    assert client.session.reissue([3], 1.0)
    assert not client.session.reissue([4], 1.0)  # once per request
    assert [m["id"] for m in take_messages(client)] == [4]

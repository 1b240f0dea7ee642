""""List everything": pages followed by cursor and merged into one answer for the origin id."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest
from helpers import FIRST_REQUEST_ID, Json, ScriptedServer, drain_events, ready_client, take_messages

from mcp_sansio import (
    FailureReason,
    PaginationError,
    ProgressReceived,
    RequestFailed,
    ResponseReceived,
    StdioClient,
)
from mcp_sansio.types import ListToolsResult, Tool

SERVER = ScriptedServer()
ORIGIN = FIRST_REQUEST_ID


def _tool(name: str) -> Json:
    return {"name": name, "inputSchema": {"type": "object"}}


def _page(request_id: int, names: list[str], cursor: str | None = None) -> bytes:
    result: Json = {"tools": [_tool(n) for n in names]}
    if cursor is not None:
        result["nextCursor"] = cursor
    return SERVER.result(request_id, result)


def _failure(client: StdioClient) -> RequestFailed:
    [event] = drain_events(client)
    assert isinstance(event, RequestFailed)
    return event


def test_pages_are_merged_into_one_answer_for_the_origin_id() -> None:
    client = ready_client()
    assert client.list_tools(now=0.0) == ORIGIN
    assert take_messages(client) == [{"jsonrpc": "2.0", "id": ORIGIN, "method": "tools/list",
                                      "params": {"_meta": {"progressToken": ORIGIN}}}]
    client.receive_data(_page(ORIGIN, ["a", "b"], "c1"), 1.0)
    assert drain_events(client) == []
    assert take_messages(client) == [{"jsonrpc": "2.0", "id": ORIGIN + 1, "method": "tools/list",
                                      "params": {"cursor": "c1", "_meta": {"progressToken": ORIGIN + 1}}}]
    last = _page(ORIGIN + 1, ["c"])
    client.receive_data(last, 2.0)
    tools = [Tool(name=n, input_schema={"type": "object"}) for n in "abc"]
    assert drain_events(client) == [ResponseReceived(
        request_id=ORIGIN, method="tools/list", result=ListToolsResult(tools=tools),
        raw=msgspec.Raw(last[last.index(b'"result":') + 9 : -2]),
    )]
    assert client.pending_requests() == []
    assert client.next_deadline() is None


@pytest.mark.parametrize(
    ("method", "call", "field", "item"),
    [
        ("resources/list", lambda c: c.list_resources(now=0.0), "resources", {"uri": "u", "name": "n"}),
        ("resources/templates/list", lambda c: c.list_resource_templates(now=0.0),
         "resourceTemplates", {"uriTemplate": "u/{x}", "name": "n"}),
        ("prompts/list", lambda c: c.list_prompts(now=0.0), "prompts", {"name": "p"}),
        ("tools/list", lambda c: c.list_tools(now=0.0), "tools", _tool("t")),
    ],
)
def test_every_list_method_merges_its_items(
    method: str, call: Callable[[StdioClient], int], field: str, item: Json
) -> None:
    client = ready_client()
    origin = call(client)
    client.receive_data(SERVER.result(origin, {field: [item], "nextCursor": "next"}), 0.0)
    client.receive_data(SERVER.result(origin + 1, {field: [item, item]}), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert (event.request_id, event.method) == (origin, method)
    merged = msgspec.to_builtins(event.result)
    assert len(merged[field]) == 3
    assert "nextCursor" not in merged


def test_single_page_without_a_cursor_answers_at_once() -> None:
    client = ready_client()
    client.list_tools(now=0.0)
    client.receive_data(_page(ORIGIN, ["a"]), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert event.result == ListToolsResult(tools=[Tool(name="a", input_schema={"type": "object"})])


def test_empty_cursor_ends_the_list() -> None:
    client = ready_client()
    client.list_tools(now=0.0)
    take_messages(client)
    client.receive_data(_page(ORIGIN, ["a"], ""), 0.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]
    assert take_messages(client) == []


def test_one_page_at_a_time_returns_the_cursor() -> None:
    client = ready_client()
    rid = client.list_tools(now=0.0, cursor="c0", all_pages=False)
    take_messages(client)
    client.receive_data(_page(rid, ["a"], "c1"), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert isinstance(event.result, ListToolsResult)
    assert event.result.next_cursor == "c1"
    assert take_messages(client) == []


def test_repeated_cursor_fails_the_list() -> None:
    client = ready_client()
    client.list_tools(now=0.0)
    client.receive_data(_page(ORIGIN, ["a"], "loop"), 0.0)
    client.receive_data(_page(ORIGIN + 1, ["b"], "loop"), 0.0)
    failure = _failure(client)
    assert (failure.request_id, failure.reason) == (ORIGIN, FailureReason.PAGINATION)
    assert failure.message == "tools/list: the server repeated cursor 'loop'"
    assert isinstance(failure.to_exception(), PaginationError)
    assert len(take_messages(client)) == 2  # the first page and the second, no third
    assert client.pending_requests() == []


def test_page_bound_stops_the_list() -> None:
    client = ready_client(max_list_pages=3)
    client.list_tools(now=0.0)
    for page in range(3):
        client.receive_data(_page(ORIGIN + page, ["t"], f"c{page}"), 0.0)
    failure = _failure(client)
    assert (failure.request_id, failure.reason) == (ORIGIN, FailureReason.PAGINATION)
    assert failure.message == "tools/list: gave up after 3 pages"
    assert len(take_messages(client)) == 3


def test_error_on_a_later_page_fails_the_origin() -> None:
    client = ready_client()
    client.list_tools(now=0.0)
    client.receive_data(_page(ORIGIN, ["a"], "c1"), 0.0)
    client.receive_data(SERVER.error(ORIGIN + 1, -32602, "bad cursor"), 0.0)
    failure = _failure(client)
    assert (failure.request_id, failure.reason) == (ORIGIN, FailureReason.ERROR_RESPONSE)


def test_later_page_is_pending_under_the_origin_id() -> None:
    client = ready_client()
    client.list_tools(now=0.0)
    client.receive_data(_page(ORIGIN, ["a"], "c1"), 0.0)
    assert client.pending_requests() == [ORIGIN]


def test_progress_on_a_later_page_is_reported_for_the_origin() -> None:
    client = ready_client()
    client.list_tools(now=0.0)
    client.receive_data(_page(ORIGIN, ["a"], "c1") + SERVER.progress(ORIGIN + 1, 5), 0.0)
    assert drain_events(client) == [ProgressReceived(request_id=ORIGIN, progress=5, total=None, message=None)]


def test_each_page_gets_a_fresh_deadline() -> None:
    client = ready_client(request_timeout=10.0)
    client.list_tools(now=0.0)
    client.receive_data(_page(ORIGIN, ["a"], "c1"), 8.0)
    assert client.next_deadline() == 18.0


def test_page_deadlines_stay_within_max_request_timeout() -> None:
    client = ready_client(request_timeout=10.0, max_request_timeout=12.0)
    client.list_tools(now=0.0)
    client.receive_data(_page(ORIGIN, ["a"], "c1"), 8.0)
    assert client.next_deadline() == 12.0


def test_timeout_of_a_later_page_fails_the_origin_and_cancels_the_page() -> None:
    client = ready_client(request_timeout=10.0)
    client.list_tools(now=0.0)
    client.receive_data(_page(ORIGIN, ["a"], "c1"), 1.0)
    take_messages(client)
    client.handle_timeout(11.0)
    failure = _failure(client)
    assert (failure.request_id, failure.reason) == (ORIGIN, FailureReason.TIMEOUT)
    assert take_messages(client) == [{"jsonrpc": "2.0", "method": "notifications/cancelled",
                                      "params": {"requestId": ORIGIN + 1, "reason": "request timed out"}}]


def test_cancel_by_origin_id_cancels_the_current_page() -> None:
    client = ready_client()
    client.list_tools(now=0.0)
    client.receive_data(_page(ORIGIN, ["a"], "c1"), 0.0)
    take_messages(client)
    client.cancel(ORIGIN, now=1.0)
    failure = _failure(client)
    assert (failure.request_id, failure.reason) == (ORIGIN, FailureReason.CANCELLED)
    assert take_messages(client)[0]["params"]["requestId"] == ORIGIN + 1
    client.receive_data(_page(ORIGIN + 1, ["b"]), 2.0)
    assert drain_events(client) == []


def test_connection_lost_mid_list_fails_the_origin() -> None:
    client = ready_client()
    client.list_tools(now=0.0)
    client.receive_data(_page(ORIGIN, ["a"], "c1"), 0.0)
    client.session.connection_lost("gone", now=0.0)
    events = drain_events(client)
    assert isinstance(events[0], RequestFailed)
    assert (events[0].request_id, events[0].reason) == (ORIGIN, FailureReason.CONNECTION_LOST)


# -- caching hints of the merged list (2026-07-28 "Caching", "Interaction with Pagination") --


def _hinted(request_id: int, ttl_ms: int | None, scope: str | None, cursor: str | None) -> bytes:
    result: Json = {"tools": [_tool(f"t{request_id}")]}
    for key, value in (("nextCursor", cursor), ("ttlMs", ttl_ms), ("cacheScope", scope)):
        if value is not None:
            result[key] = value
    return SERVER.result(request_id, result)


@pytest.mark.parametrize(("first", "second", "merged"), [
    ((10_000, "public"), (60_000, "public"), (8000, "public")),  # page 1 is fresh until 11.0
    ((60_000, "public"), (5000, "private"), (5000, "private")),
    ((10_000, None), (60_000, None), (8000, None)),
    ((10_000, "public"), (60_000, None), (8000, "private")),
    ((10_000, "public"), (None, None), (None, None)),
    ((1000, "public"), (60_000, "public"), (0, "public")),  # page 1 went stale meanwhile
])
def test_merged_pages_are_fresh_while_every_page_is(
        first: tuple[int | None, str | None], second: tuple[int | None, str | None],
        merged: tuple[int | None, str | None]) -> None:
    client = ready_client()
    client.list_tools(now=0.0)
    client.receive_data(_hinted(ORIGIN, *first, cursor="c1"), 1.0)
    client.receive_data(_hinted(ORIGIN + 1, *second, cursor=None), 3.0)
    [event] = drain_events(client)
    assert isinstance(event, ResponseReceived) and isinstance(event.result, ListToolsResult)
    assert (event.result.ttl_ms, event.result.cache_scope) == merged
    assert len(event.result.tools) == 2


def test_a_single_page_keeps_its_hints() -> None:
    client = ready_client()
    client.list_tools(now=0.0)
    client.receive_data(_hinted(ORIGIN, 5, "public", cursor=None), 7.0)
    [event] = drain_events(client)
    assert isinstance(event, ResponseReceived) and isinstance(event.result, ListToolsResult)
    assert (event.result.ttl_ms, event.result.cache_scope) == (5, "public")

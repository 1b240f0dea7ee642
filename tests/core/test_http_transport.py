"""HttpClient over Streamable HTTP: the handshake, headers, JSON and SSE answers, the GET
stream and closing. One behaviour per test; the server is scripted, time moves by hand.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import broken, drain_events
from http_helpers import (
    URL,
    ScriptedHttpServer,
    chunk,
    chunked_head,
    http_client,
    init_result,
    json_body,
    ready_http_client,
    sse_event,
    tool_result,
)

from mcp_sansio import ClientConfig, LocalProtocolError
from mcp_sansio.connections import OpenConnection, SocketStage
from mcp_sansio.events import (
    ConnectionTerminated,
    FailureReason,
    GetStreamAbandoned,
    InitializeCompleted,
    MessageDiscarded,
    NotificationReceived,
    ProgressReceived,
    RequestFailed,
    ResponseReceived,
    ServerRequestReceived,
)
from mcp_sansio.http_transport import HttpClient, TransportMode
from mcp_sansio.retry import RetryPolicy
from mcp_sansio.session import Phase
from mcp_sansio.types import ClientCapabilities, RootsCapability

ACCEPT_BOTH = "application/json, text/event-stream"


def started(**kwargs: Any) -> tuple[HttpClient, ScriptedHttpServer]:
    """A client that has just POSTed ``initialize`` (at 0.0), and its server."""
    client = http_client(URL, **kwargs)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    return client, server


# ----------------------------------------------------------------- construction


def test_non_http_url_is_refused() -> None:
    with pytest.raises(LocalProtocolError):
        http_client("ftp://example.com/mcp")


@pytest.mark.parametrize("name", ["bad name", "x:y", "", "x\r\n"])
def test_malformed_header_name_is_refused(name: str) -> None:
    with pytest.raises(LocalProtocolError):
        http_client(URL, headers={name: "v"})


@pytest.mark.parametrize("value", ["a\r\nb", "caf\u00e9", " padded", "nul\0"])
def test_header_value_the_wire_cannot_carry_is_refused(value: str) -> None:
    with pytest.raises(LocalProtocolError):
        http_client(URL, headers={"X-Custom": value})


@pytest.mark.parametrize("name", ["Host", "Content-Length", "Mcp-Session-Id", "Accept", "Last-Event-ID"])
def test_header_the_client_sets_itself_is_refused(name: str) -> None:
    with pytest.raises(LocalProtocolError):
        http_client(URL, headers={name: "v"})


def test_unknown_transport_is_refused() -> None:
    with pytest.raises(LocalProtocolError):
        http_client(URL, transport="websocket")  # an unknown transport: the point of the test


def test_nothing_is_sent_before_connect() -> None:
    client = http_client(URL)
    assert client.next_action() is None
    assert client.connections_with_data() == []
    assert client.next_deadline() is None
    assert client.transport == "streamable-http"
    assert client.session_id is None


def test_connect_twice_is_refused() -> None:
    client, _ = started()
    with pytest.raises(LocalProtocolError):
        client.connect(now=0.0)


# ------------------------------------------------------------------ the handshake


def test_initialize_is_posted_to_the_url_accepting_json_and_sse() -> None:
    _, server = started()
    (init,) = server.pump(now=0.0)
    assert server.opened == [OpenConnection(
        connection=1, host="example.com", port=80, tls=False, server_hostname="example.com")]
    assert (init.method, init.target, init.rpc_method) == ("POST", "/mcp", "initialize")
    assert init.header("accept") == ACCEPT_BOTH
    assert init.header("content-type") == "application/json"
    assert init.header("user-agent") == "mcp-sansio/0.1.0"


def test_initialize_carries_no_session_id_or_protocol_version() -> None:
    _, server = started()
    (init,) = server.pump(now=0.0)
    assert init.header("mcp-session-id") is None
    assert init.header("mcp-protocol-version") is None


def test_https_url_asks_for_tls() -> None:
    client = http_client("https://example.com:8443/mcp")
    client.connect(now=0.0)
    assert client.next_action() == OpenConnection(
        connection=1, host="example.com", port=8443, tls=True, server_hostname="example.com")


def test_user_agent_comes_from_the_config() -> None:
    _, server = started(config=ClientConfig(user_agent="probe/2"))
    (init,) = server.pump(now=0.0)
    assert init.header("user-agent") == "probe/2"


def test_user_headers_go_on_every_request() -> None:
    client, server, _ = ready_http_client(headers={"Authorization": "Bearer t0k", "X-Trace": "7"},
                                          get_stream=200)
    client.ping(now=1.0)
    server.pump(now=1.0)
    client.close(now=2.0)
    server.pump(now=2.0)
    methods = [r.method for r in server.requests]
    assert methods == ["POST", "POST", "GET", "POST", "DELETE"]
    for request in server.requests:
        assert request.header("authorization") == "Bearer t0k"
        assert request.header("x-trace") == "7"


def test_session_id_from_initialize_is_kept() -> None:
    client, _, _ = ready_http_client(session_id="abc-123")
    assert client.session_id == "abc-123"


def test_session_id_is_sent_on_every_request_after_initialize() -> None:
    client, server, _ = ready_http_client(session_id="abc-123", get_stream=200)
    client.ping(now=1.0)
    server.pump(now=1.0)
    assert [r.header("mcp-session-id") for r in server.requests] == [None, "abc-123", "abc-123", "abc-123"]


def test_no_session_id_header_when_the_server_gives_none() -> None:
    client, server, _ = ready_http_client(session_id=None, get_stream=200)
    client.ping(now=1.0)
    server.pump(now=1.0)
    assert client.session_id is None
    assert all(r.header("mcp-session-id") is None for r in server.requests)


def test_session_id_that_is_not_visible_ascii_is_ignored() -> None:
    client, _, _ = ready_http_client(session_id="two words")
    assert client.session_id is None


def test_session_id_of_a_failed_initialize_is_not_kept() -> None:
    client, server = started()
    (init,) = server.pump(now=0.0)
    server.reply(init, 500, b"boom", now=0.0, headers={"Mcp-Session-Id": "s-9"})
    assert client.session_id is None


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_protocol_version_header_follows_the_negotiated_version(version: str) -> None:
    client, server, _ = ready_http_client(version=version, get_stream=200)
    client.ping(now=1.0)
    server.pump(now=1.0)
    assert [r.header("mcp-protocol-version") for r in server.requests] == [None, version, version, version]


def test_2025_03_26_sends_no_protocol_version_header() -> None:
    client, server, _ = ready_http_client(version="2025-03-26", get_stream=200)
    client.ping(now=1.0)
    server.pump(now=1.0)
    assert all(r.header("mcp-protocol-version") is None for r in server.requests)


def test_notifications_initialized_is_posted_after_the_result() -> None:
    _, server, _ = ready_http_client()
    assert [r.rpc_method for r in server.requests[:2]] == ["initialize", "notifications/initialized"]
    assert server.requests[1].json() == {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_initialize_answered_over_sse_completes_the_handshake() -> None:
    client, server = started()
    (init,) = server.pump(now=0.0)
    server.reply_sse(init, [sse_event(init_result())], now=0.0, headers={"Mcp-Session-Id": "s-2"})
    (event,) = drain_events(client)
    assert isinstance(event, InitializeCompleted)
    assert client.session_id == "s-2"
    assert client.phase is Phase.READY


def test_content_type_parameters_and_case_are_ignored() -> None:
    client, server = started()
    (init,) = server.pump(now=0.0)
    server.send(init, chunked_head(content_type="Text/Event-Stream; charset=utf-8")
                + chunk(sse_event(init_result())) + b"0\r\n\r\n", now=0.0)
    assert isinstance(drain_events(client)[0], InitializeCompleted)


# ----------------------------------------------------------------- answers


def test_json_response_answers_the_request() -> None:
    client, server, _ = ready_http_client()
    rid = client.call_tool("echo", {"x": 1}, now=1.0)
    (post,) = server.pump(now=1.0)
    assert post.json()["id"] == rid
    server.reply_json(post, tool_result(rid, "hi"), now=1.5)
    (event,) = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert event.request_id == rid
    assert client.pending_requests() == []


def test_sse_stream_carries_progress_a_server_request_and_the_answer() -> None:
    client, server, _ = ready_http_client(capabilities=ClientCapabilities(roots=RootsCapability()))
    rid = client.call_tool("slow", now=1.0)
    (post,) = server.pump(now=1.0)
    progress = json_body({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": rid, "progress": 1, "total": 2}})
    roots = json_body({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"})
    server.reply_sse(post, [sse_event(progress), sse_event(roots), sse_event(tool_result(rid))], now=1.5)
    events = drain_events(client)
    assert [type(e) for e in events] == [ProgressReceived, ServerRequestReceived, ResponseReceived]
    assert isinstance(events[1], ServerRequestReceived)
    assert events[1].request_id == "srv-1"


def test_answer_to_a_server_request_is_posted() -> None:
    client, server, _ = ready_http_client(capabilities=ClientCapabilities(roots=RootsCapability()))
    rid = client.call_tool("slow", now=1.0)
    (post,) = server.pump(now=1.0)
    roots = json_body({"jsonrpc": "2.0", "id": 9, "method": "roots/list"})
    server.reply_sse(post, [sse_event(roots)], now=1.0, end=False)
    drain_events(client)
    client.respond(9, {"roots": []}, now=1.0)
    (answer,) = server.pump(now=1.1)
    assert answer.json() == {"jsonrpc": "2.0", "id": 9, "result": {"roots": []}}
    assert answer.header("mcp-session-id") == "s-1"
    assert rid in client.pending_requests()


def test_sse_events_other_than_message_are_ignored() -> None:
    client, server, _ = ready_http_client()
    rid = client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_sse(post, [sse_event(b"x", event="other"), sse_event(json_body(
        {"jsonrpc": "2.0", "id": rid, "result": {}}))], now=1.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


def test_sse_message_with_invalid_utf8_is_discarded_as_on_stdio() -> None:
    client, server, _ = ready_http_client()
    rid = client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_sse(post, [sse_event(b'{"jsonrpc": "2.0", "method": "x\xff"}'), sse_event(json_body(
        {"jsonrpc": "2.0", "id": rid, "result": {}}))], now=1.0)
    discarded, answered = drain_events(client)
    assert isinstance(discarded, MessageDiscarded)
    assert isinstance(answered, ResponseReceived)


def test_notification_answered_202_queues_nothing() -> None:
    client, server, _ = ready_http_client()
    client.notify("notifications/roots/list_changed", now=0.0)
    (post,) = server.pump(now=1.0)
    server.accept(post, now=1.0)
    assert drain_events(client) == []
    assert client.next_deadline() is not None  # only the idle connection's keep-alive


def test_request_answered_202_waits_for_its_deadline() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(request_timeout=5.0))
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.accept(post, now=1.0)
    assert drain_events(client) == []
    client.handle_timeout(6.0)
    (failed,) = drain_events(client)
    assert isinstance(failed, RequestFailed)
    assert failed.reason is FailureReason.TIMEOUT


def test_json_body_that_does_not_answer_fails_the_request() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_json(post, json_body({"jsonrpc": "2.0", "method": "notifications/message",
                                       "params": {"level": "info", "data": "x"}}), now=1.0)
    notified, failed = drain_events(client)
    assert isinstance(notified, NotificationReceived)
    assert isinstance(failed, RequestFailed)
    assert failed.reason is FailureReason.PROTOCOL_ERROR


def test_sse_answer_without_the_result_fails_the_request() -> None:
    client, server, _ = ready_http_client(version="2025-03-26")
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_sse(post, [], now=1.0)  # no event, no id: nothing to resume from
    (failed,) = drain_events(client)
    assert isinstance(failed, RequestFailed)
    assert failed.reason is FailureReason.CONNECTION_LOST


# ------------------------------------------------------------------- the GET stream


def test_get_stream_opens_after_initialize() -> None:
    _, server, _ = ready_http_client(get_stream=0)
    get = server.requests[2]
    assert (get.method, get.target) == ("GET", "/mcp")
    assert get.header("accept") == "text/event-stream"
    assert get.header("mcp-session-id") == "s-1"
    assert get.body == b""


def test_get_stream_405_means_no_stream_and_no_retry() -> None:
    client, server, _ = ready_http_client(get_stream=405)
    assert client.next_deadline() is not None  # idle keep-alive connections only
    client.handle_timeout(1000.0)
    assert server.pump(now=1000.0) == []
    assert client.next_deadline() is None


def test_get_stream_error_status_is_not_retried() -> None:
    client, server, _ = ready_http_client(get_stream=500)
    client.handle_timeout(1000.0)
    assert server.pump(now=1000.0) == []
    assert drain_events(client) == []


def test_get_stream_is_not_opened_when_the_config_says_so() -> None:
    _, server, _ = ready_http_client(config=ClientConfig(open_get_stream=False))
    assert [r.method for r in server.requests] == ["POST", "POST"]


def test_server_messages_arrive_on_the_get_stream() -> None:
    client, server, _ = ready_http_client(get_stream=0)
    get = server.requests[2]
    note = json_body({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    server.reply_sse(get, [sse_event(note, id="g1")], now=1.0, end=False)
    (event,) = drain_events(client)
    assert isinstance(event, NotificationReceived)
    assert event.method == "notifications/tools/list_changed"


def test_ended_get_stream_reconnects_with_last_event_id_after_the_server_retry() -> None:
    client, server, _ = ready_http_client(get_stream=0)
    get = server.requests[2]
    server.reply_sse(get, [sse_event(id="g7", retry=1500)], now=1.0)
    assert client.next_deadline() == 2.5
    client.handle_timeout(2.5)
    (again,) = server.pump(now=2.5)
    assert again.method == "GET"
    assert again.header("last-event-id") == "g7"


def test_refused_get_stream_is_retried_a_bounded_number_of_times() -> None:
    client, server, _ = ready_http_client(
        get_stream=0, config=ClientConfig(retry=RetryPolicy(max_attempts=2)))
    get = server.requests[2]
    server.hang_up_idle(now=1.0)  # no keep-alive connection to reuse
    server.hang_up(get, now=1.0)  # after the request went out: reconnect
    for _ in range(2):  # the policy's two retries, each refused
        deadline = client.next_deadline()
        assert deadline is not None
        server.refuse = 1
        client.handle_timeout(deadline)
        server.pump(now=deadline)
    assert len(server.opened) == 4
    assert client.next_deadline() is None
    assert drain_events(client) == [GetStreamAbandoned(
        attempts=2, message="gave up the event stream for server-initiated messages from http://example.com/mcp"
                            " after 2 reconnections in a row:"
                            " cannot connect to example.com:80: Connection refused")]


# ------------------------------------------------------------------------ closing


def test_close_deletes_the_session() -> None:
    client, server, _ = ready_http_client(session_id="abc")
    client.close(now=5.0)
    (delete,) = server.pump(now=5.0)
    assert (delete.method, delete.target) == ("DELETE", "/mcp")
    assert delete.header("mcp-session-id") == "abc"
    assert not client.finished
    server.reply(delete, 204, now=5.1)
    assert client.finished


def test_delete_answered_405_is_tolerated() -> None:
    client, server, _ = ready_http_client()
    client.close(now=5.0)
    (delete,) = server.pump(now=5.0)
    server.reply(delete, 405, b"Method Not Allowed", now=5.1)
    assert client.finished
    assert [type(e) for e in drain_events(client)] == [ConnectionTerminated]


def test_delete_that_fails_to_connect_still_finishes() -> None:
    client, server, _ = ready_http_client()
    server.hang_up_idle(now=4.0)  # no keep-alive connection to reuse
    client.close(now=5.0)
    server.refuse = 1
    server.pump(now=5.0)
    assert client.finished


def test_close_gives_up_on_the_delete_after_close_timeout() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(close_timeout=3.0))
    client.close(now=5.0)
    server.pump(now=5.0)
    assert client.next_deadline() == 8.0
    client.handle_timeout(7.9)
    assert not client.finished
    client.handle_timeout(8.0)
    assert client.finished


def test_finished_client_has_closed_every_connection() -> None:
    client, server, _ = ready_http_client(get_stream=0)
    client.close(now=5.0)
    (delete,) = server.pump(now=5.0)
    server.reply(delete, 200, now=5.0)
    assert client.finished
    assert sorted(server.closed) == sorted(a.connection for a in server.opened)
    assert client.next_deadline() is None


def test_close_without_a_session_id_finishes_at_once() -> None:
    client, server, _ = ready_http_client(session_id=None)
    client.close(now=5.0)
    assert server.pump(now=5.0) == []
    assert client.finished


def test_close_fails_pending_requests() -> None:
    client, server, _ = ready_http_client()
    rid = client.ping(now=1.0)
    server.pump(now=1.0)
    client.close(now=2.0, message="bye")
    failed, terminated = drain_events(client)
    assert failed == RequestFailed(request_id=rid, method="ping", reason=FailureReason.CONNECTION_LOST,
                                   message="bye")
    assert isinstance(terminated, ConnectionTerminated)


def test_close_twice_sends_one_delete() -> None:
    client, server, _ = ready_http_client()
    client.close(now=5.0)
    client.close(now=5.0)
    assert [r.method for r in server.pump(now=5.0)] == ["DELETE"]


def test_close_before_connect_finishes_at_once() -> None:
    client = http_client(URL, transport=TransportMode.STREAMABLE_HTTP)
    client.close(now=0.0)
    assert client.finished
    assert client.next_action() is None


def test_close_during_the_handshake_fails_it() -> None:
    client, server = started()
    server.pump(now=0.0)
    client.close(now=1.0)
    assert client.finished
    assert [type(e).__name__ for e in drain_events(client)] == ["InitializeFailed", "ConnectionTerminated"]


def test_a_get_stream_refused_until_the_policy_gives_up_says_how_often_it_was_tried() -> None:
    config = ClientConfig(retry=RetryPolicy(max_attempts=1))
    client, server, _ = ready_http_client(get_stream=0, config=config)
    get = server.requests[2]
    server.hang_up_idle(now=1.0)
    server.hang_up(get, now=1.0)
    server.refuse = 10
    while (deadline := client.next_deadline()) is not None:
        client.handle_timeout(deadline)
        server.pump(now=deadline)
    [abandoned] = drain_events(client)
    assert isinstance(abandoned, GetStreamAbandoned) and abandoned.attempts == 1
    assert " after 1 reconnection in a row: cannot connect" in abandoned.message


def test_a_get_stream_whose_tls_handshake_fails_is_given_up_at_once() -> None:
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (init,) = server.pump(now=0.0)
    server.refuse, server.refusal = 1, broken("certificate verify failed", SocketStage.TLS)
    server.reply_json(init, init_result(), now=0.0, headers={"Mcp-Session-Id": "s-1"})
    events = drain_events(client)
    assert events[-1] == GetStreamAbandoned(
        attempts=0, message="gave up the event stream for server-initiated messages from http://example.com/mcp:"
                            " cannot connect to example.com:80: the TLS handshake failed:"
                            " certificate verify failed")

"""HttpClient over the 2024-11-05 HTTP+SSE transport: forced with ``transport="sse"``, or
reached from ``"auto"`` when the server refuses the ``initialize`` POST with 400/404/405.
"""

from __future__ import annotations

import pytest
from helpers import drain_events
from http_helpers import (
    URL,
    ReceivedRequest,
    ScriptedHttpServer,
    http_client,
    init_result,
    json_body,
    sse_event,
    tool_result,
)

from mcp_sansio.errors import ConnectError
from mcp_sansio.events import (
    ConnectionTerminated,
    FailureReason,
    InitializeCompleted,
    InitializeFailed,
    NotificationReceived,
    RequestFailed,
    ResponseReceived,
)
from mcp_sansio.http_transport import HttpClient, TransportMode
from mcp_sansio.session import Phase

ENDPOINT = sse_event("/messages?sessionId=abc", event="endpoint")


def legacy() -> tuple[HttpClient, ScriptedHttpServer, ReceivedRequest]:
    """A client in forced SSE mode and its open legacy stream, not answered yet."""
    client = http_client(URL, transport="sse")
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (stream,) = server.pump(now=0.0)
    return client, server, stream


def ready_legacy() -> tuple[HttpClient, ScriptedHttpServer, ReceivedRequest]:
    """A forced-SSE client past the handshake; returns its stream request too."""
    client, server, stream = legacy()
    server.reply_sse(stream, [ENDPOINT], now=0.0, end=False)
    (init,) = server.pump(now=0.0)
    server.accept(init, now=0.0)
    more_events(server, stream, sse_event(init_result(version="2024-11-05")), now=0.0)
    (initialized,) = server.pump(now=0.0)
    server.accept(initialized, now=0.0)
    assert [type(e) for e in drain_events(client)] == [InitializeCompleted]
    return client, server, stream


def more_events(server: ScriptedHttpServer, stream: ReceivedRequest, *events: bytes, now: float) -> None:
    """Write further events on the already started chunked legacy stream."""
    server.send(stream, b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events), now=now)


def test_sse_mode_opens_the_stream_before_any_post() -> None:
    client, _, stream = legacy()
    assert (stream.method, stream.target) == ("GET", "/mcp")
    assert stream.header("accept") == "text/event-stream"
    assert client.transport == "sse"


def test_initialize_waits_for_the_endpoint_event() -> None:
    _, server, stream = legacy()
    server.reply_sse(stream, [b": hello\n\n"], now=0.0, end=False)
    assert server.pump(now=0.0) == []


def test_endpoint_event_releases_initialize_to_the_endpoint() -> None:
    _, server, stream = legacy()
    server.reply_sse(stream, [ENDPOINT], now=0.0, end=False)
    (init,) = server.pump(now=0.0)
    assert (init.method, init.target, init.rpc_method) == ("POST", "/messages?sessionId=abc", "initialize")
    assert init.header("content-type") == "application/json"


def test_legacy_handshake_completes_with_the_answer_on_the_stream() -> None:
    client, server, _ = ready_legacy()
    assert client.protocol_version == "2024-11-05"
    assert client.phase is Phase.READY
    assert [r.method for r in server.requests] == ["GET", "POST", "POST"]  # no GET stream


def test_legacy_requests_carry_no_session_or_version_headers() -> None:
    client, server, _ = ready_legacy()
    client.ping(now=1.0)
    server.pump(now=1.0)
    for request in server.requests:
        assert request.header("mcp-session-id") is None
        assert request.header("mcp-protocol-version") is None


def test_legacy_answers_arrive_on_the_stream() -> None:
    client, server, stream = ready_legacy()
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    assert post.target == "/messages?sessionId=abc"
    server.accept(post, now=1.0)
    assert drain_events(client) == []
    note = json_body({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "working"}})
    more_events(server, stream, sse_event(note), sse_event(tool_result(rid)), now=1.5)
    events = drain_events(client)
    assert [type(e) for e in events] == [NotificationReceived, ResponseReceived]


def test_legacy_post_answered_200_with_a_body_waits_for_the_stream() -> None:
    client, server, stream = ready_legacy()
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 200, b"Accepted", now=1.0, headers={"Content-Type": "text/event-stream"})
    assert drain_events(client) == []
    more_events(server, stream, sse_event(tool_result(rid)), now=1.5)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


def test_legacy_post_error_status_fails_the_request() -> None:
    client, server, _ = ready_legacy()
    rid = client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 404, b"no such session", now=1.0)
    (failed,) = drain_events(client)
    assert isinstance(failed, RequestFailed)
    assert (failed.request_id, failed.reason, failed.status) == (rid, FailureReason.HTTP_ERROR, 404)


def test_endpoint_on_another_origin_fails_the_handshake() -> None:
    client, server, stream = legacy()
    note = json_body({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "x"}})
    one_chunk = sse_event("http://evil.example/messages", event="endpoint") + sse_event(note)
    server.reply_sse(stream, [one_chunk], now=0.0, end=False)
    events = drain_events(client)
    assert [type(e) for e in events] == [InitializeFailed, ConnectionTerminated]  # nothing after
    assert isinstance(events[0], InitializeFailed)
    assert events[0].reason is FailureReason.PROTOCOL_ERROR
    assert "another origin" in events[0].message
    assert server.is_closed(stream)
    assert server.pump(now=0.0) == []


def test_endpoint_that_is_not_a_url_fails_the_handshake() -> None:
    client, server, stream = legacy()
    server.reply_sse(stream, [sse_event("http://[::1", event="endpoint")], now=0.0, end=False)
    failed = drain_events(client)[0]
    assert isinstance(failed, InitializeFailed)
    assert failed.reason is FailureReason.PROTOCOL_ERROR


def test_second_endpoint_event_moves_later_posts() -> None:
    client, server, stream = ready_legacy()
    more_events(server, stream, sse_event("/other", event="endpoint"), now=1.0)
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    assert post.target == "/other"


def test_end_of_the_legacy_stream_ends_the_session() -> None:
    client, server, stream = ready_legacy()
    rid = client.ping(now=1.0)
    server.pump(now=1.0)
    more_events(server, stream, b"", now=2.0)  # the zero-length chunk: the body ends
    failed, terminated = drain_events(client)
    assert isinstance(failed, RequestFailed)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.CONNECTION_LOST)
    assert isinstance(terminated, ConnectionTerminated)
    assert client.phase is Phase.CLOSED


def test_dropped_legacy_stream_is_not_resumed() -> None:
    client, server, stream = ready_legacy()
    server.hang_up(stream, now=2.0)
    assert isinstance(drain_events(client)[-1], ConnectionTerminated)
    client.handle_timeout(100.0)
    assert server.pump(now=100.0) == []


def test_legacy_stream_error_status_fails_the_handshake() -> None:
    client, server, stream = legacy()
    server.reply(stream, 500, b"down", now=0.0)
    failed, terminated = drain_events(client)
    assert isinstance(failed, InitializeFailed)
    assert failed.reason is FailureReason.HTTP_ERROR
    assert isinstance(terminated, ConnectionTerminated)


def test_legacy_stream_answered_without_an_event_stream_fails_the_handshake() -> None:
    client, server, stream = legacy()
    server.reply_json(stream, b"{}", now=0.0)
    failed = drain_events(client)[0]
    assert isinstance(failed, InitializeFailed)
    assert failed.reason is FailureReason.PROTOCOL_ERROR


def test_refused_legacy_stream_fails_the_handshake_at_once() -> None:
    client = http_client(URL, transport=TransportMode.SSE)
    server = ScriptedHttpServer(client)
    server.refuse = 1
    client.connect(now=0.0)
    assert server.pump(now=0.0) == []
    failed, terminated = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.reason is FailureReason.CONNECT_FAILED
    assert failed.message == "cannot connect to example.com:80: Connection refused"
    assert isinstance(failed.to_exception(), ConnectError)
    assert isinstance(terminated, ConnectionTerminated)
    assert client.next_deadline() is None


def test_legacy_close_sends_no_delete() -> None:
    client, server, _ = ready_legacy()
    client.close(now=5.0)
    assert client.finished
    assert server.pump(now=5.0) == []


# ---------------------------------------------------------------- auto fallback


@pytest.mark.parametrize("status", [400, 404, 405])
def test_refused_initialize_post_falls_back_to_the_legacy_stream(status: int) -> None:
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (post,) = server.pump(now=0.0)
    server.reply(post, status, now=0.0)
    assert drain_events(client) == []
    (stream,) = server.pump(now=0.0)
    assert (stream.method, stream.header("accept")) == ("GET", "text/event-stream")
    assert client.transport == "sse"
    server.reply_sse(stream, [ENDPOINT], now=0.0, end=False)
    (init,) = server.pump(now=0.0)
    assert init.body == post.body
    assert init.target == "/messages?sessionId=abc"
    server.accept(init, now=0.0)
    more_events(server, stream, sse_event(init_result(version="2024-11-05")), now=0.0)
    assert [type(e) for e in drain_events(client)] == [InitializeCompleted]


def test_fallback_that_also_fails_reports_the_post_status() -> None:
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (post,) = server.pump(now=0.0)
    server.reply(post, 405, now=0.0)
    (stream,) = server.pump(now=0.0)
    server.reply(stream, 404, now=0.0)
    failed = drain_events(client)[0]
    assert isinstance(failed, InitializeFailed)
    assert failed.message.startswith("HTTP 405 from http://example.com/mcp")


def test_legacy_initialize_refused_does_not_fall_back_again() -> None:
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (post,) = server.pump(now=0.0)
    server.reply(post, 404, now=0.0)
    (stream,) = server.pump(now=0.0)
    server.reply_sse(stream, [ENDPOINT], now=0.0, end=False)
    (init,) = server.pump(now=0.0)
    server.reply(init, 404, now=0.0)
    failed = drain_events(client)[0]
    assert isinstance(failed, InitializeFailed)
    assert failed.status == 404
    assert server.pump(now=0.0) == []


def test_other_status_on_the_initialize_post_does_not_fall_back() -> None:
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (post,) = server.pump(now=0.0)
    server.reply(post, 500, now=0.0)
    assert isinstance(drain_events(client)[0], InitializeFailed)
    assert server.pump(now=0.0) == []
    assert client.transport == "streamable-http"


def test_forced_streamable_http_does_not_fall_back() -> None:
    client = http_client(URL, transport="streamable-http")
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (post,) = server.pump(now=0.0)
    server.reply(post, 405, now=0.0)
    failed = drain_events(client)[0]
    assert isinstance(failed, InitializeFailed)
    assert failed.status == 405
    assert server.pump(now=0.0) == []


def test_2024_11_05_answer_over_streamable_http_opens_no_get_stream() -> None:
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (post,) = server.pump(now=0.0)
    server.reply_json(post, init_result(version="2024-11-05"), now=0.0)
    assert [type(e) for e in drain_events(client)] == [InitializeCompleted]
    assert [r.rpc_method for r in server.pump(now=0.0)] == ["notifications/initialized"]

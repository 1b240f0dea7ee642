"""HttpClient holding the app's messages after the handshake until the GET stream has its
response head: a server may send its requests on that stream only and drop them while none
is open (the TypeScript SDK does), so a request must not reach it before the stream. The wait
is bounded by ``get_stream_wait`` (1 s) and ends at once when the GET fails or is refused.
"""

from __future__ import annotations

import pytest
from helpers import drain_events
from http_helpers import (
    LAST_CHUNK,
    URL,
    ReceivedRequest,
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

from mcp_sansio import ClientConfig
from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.events import ConnectionTerminated, FailureReason, RequestFailed, ResponseReceived
from mcp_sansio.http_transport import HttpClient


def waiting() -> tuple[HttpClient, ScriptedHttpServer, ReceivedRequest]:
    """A client past the handshake at 0.0 whose GET stream has no answer yet, and that GET."""
    client, server, _ = ready_http_client(get_stream=0)
    get = server.requests[2]
    assert get.method == "GET"
    return client, server, get


def test_notifications_initialized_goes_before_the_get_stream_answers() -> None:
    _, server, _ = waiting()
    assert [r.rpc_method for r in server.requests] == ["initialize", "notifications/initialized", None]


def test_a_request_right_after_the_handshake_is_not_written_before_the_get_streams_head() -> None:
    client, server, _ = waiting()
    client.call_tool("t", now=0.01)
    assert server.pump(now=0.01) == []


def test_the_held_request_is_written_when_the_get_streams_head_arrives() -> None:
    client, server, get = waiting()
    rid = client.call_tool("t", now=0.01)
    server.send(get, chunked_head(), now=0.2)
    (post,) = server.pump(now=0.2)
    assert (post.rpc_method, post.json()["id"]) == ("tools/call", rid)
    server.reply_json(post, tool_result(rid), now=0.3)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


def test_a_question_on_the_get_stream_then_reaches_the_app_before_the_answer() -> None:
    client, server, get = waiting()
    rid = client.call_tool("t", now=0.01)
    server.send(get, chunked_head(), now=0.2)
    (post,) = server.pump(now=0.2)
    ping = json_body({"jsonrpc": "2.0", "id": "q1", "method": "ping"})
    server.send(get, chunk(sse_event(ping, id="g1")), now=0.25)  # the server asks as the call arrives
    (pong,) = server.pump(now=0.25)
    assert pong.json() == {"jsonrpc": "2.0", "id": "q1", "result": {}}
    server.reply_json(post, tool_result(rid), now=0.3)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


def test_held_messages_are_written_in_the_order_the_app_sent_them() -> None:
    client, server, get = waiting()
    first = client.call_tool("a", now=0.01)
    client.notify("notifications/roots/list_changed", now=0.02)
    second = client.ping(now=0.03)
    server.send(get, chunked_head(), now=0.2)
    sent = server.pump(now=0.2)
    assert [(r.rpc_method, r.json().get("id")) for r in sent] == [
        ("tools/call", first), ("notifications/roots/list_changed", None), ("ping", second)]


def test_the_wait_is_in_next_deadline_and_the_request_is_written_after_one_second() -> None:
    client, server, _ = waiting()
    rid = client.call_tool("t", now=0.01)
    assert client.next_deadline() == 1.0  # get_stream_wait after the handshake (at 0.0)
    client.handle_timeout(0.99)
    assert server.pump(now=0.99) == []
    client.handle_timeout(1.0)
    (post,) = server.pump(now=1.0)
    assert post.json()["id"] == rid
    assert client.next_deadline() != 1.0


def test_get_stream_wait_comes_from_the_config() -> None:
    client, server, _ = ready_http_client(get_stream=0, config=ClientConfig(get_stream_wait=0.25))
    client.ping(now=0.01)
    assert client.next_deadline() == 0.25
    client.handle_timeout(0.25)
    assert [r.rpc_method for r in server.pump(now=0.25)] == ["ping"]


def test_get_stream_wait_zero_holds_nothing() -> None:
    client, server, _ = ready_http_client(get_stream=0, config=ClientConfig(get_stream_wait=0.0))
    client.ping(now=0.01)
    assert [r.rpc_method for r in server.pump(now=0.01)] == ["ping"]


def test_a_negative_get_stream_wait_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="get_stream_wait must not be negative"):
        ClientConfig(get_stream_wait=-1.0)


def test_the_held_request_is_written_at_once_when_the_get_is_answered_405() -> None:
    client, server, get = waiting()
    client.ping(now=0.01)
    server.reply(get, 405, now=0.05)
    assert [r.rpc_method for r in server.pump(now=0.05)] == ["ping"]
    assert client.next_deadline() != 1.0


def test_the_held_request_is_written_at_once_when_the_get_fails_with_another_status() -> None:
    client, server, get = waiting()
    client.ping(now=0.01)
    server.reply(get, 500, b"boom", now=0.05)
    assert [r.rpc_method for r in server.pump(now=0.05)] == ["ping"]


def test_the_held_request_is_written_at_once_when_the_get_streams_connection_breaks() -> None:
    client, server, get = waiting()
    client.ping(now=0.01)
    server.hang_up(get, now=0.05)
    assert [r.rpc_method for r in server.pump(now=0.05)] == ["ping"]


def test_the_held_request_is_written_at_once_when_the_get_cannot_connect() -> None:
    client, server, _ = ready_http_client(get_stream=405)
    server.hang_up_idle(now=1.0)
    # A new session after expiry opens its GET stream on a fresh connection, which is refused.
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 404, now=1.0)
    (init,) = server.pump(now=1.0)
    server.refuse = 1  # the GET's connection (the initialized POST reuses the initialize's)
    server.reply_json(init, json_body({"jsonrpc": "2.0", "id": init.json()["id"], "result": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}}),
        now=1.1, headers={"Mcp-Session-Id": "s-2"})
    sent = server.pump(now=1.1)
    assert sorted(r.rpc_method or r.method for r in sent) == ["notifications/initialized", "ping"]


def test_a_request_whose_timeout_passes_while_held_fails_as_usual_and_is_never_written() -> None:
    client, server, get = waiting()
    rid = client.ping(now=0.1, timeout=0.5)
    client.handle_timeout(0.6)
    assert drain_events(client) == [RequestFailed(request_id=rid, method="ping", reason=FailureReason.TIMEOUT,
                                                  message="ping got no answer within 0.5 s")]
    assert server.pump(now=0.6) == []  # nor its notifications/cancelled: the server never saw it
    server.send(get, chunked_head(), now=0.7)
    assert server.pump(now=0.7) == []


def test_a_request_timing_out_with_the_wait_still_fails_and_is_not_written() -> None:
    client, server, _ = waiting()
    rid = client.ping(now=0.0, timeout=1.0)  # its deadline is the wait's bound
    client.handle_timeout(1.0)
    [failed] = drain_events(client)
    assert isinstance(failed, RequestFailed)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.TIMEOUT)
    assert server.pump(now=1.0) == []


def test_a_request_cancelled_while_held_is_never_written() -> None:
    client, server, get = waiting()
    rid = client.ping(now=0.1)
    other = client.ping(now=0.1)
    client.cancel(rid, now=0.2)
    [failed] = drain_events(client)
    assert isinstance(failed, RequestFailed) and failed.reason is FailureReason.CANCELLED
    server.send(get, chunked_head(), now=0.3)
    assert [(r.rpc_method, r.json()["id"]) for r in server.pump(now=0.3)] == [("ping", other)]


def test_close_while_held_fails_the_requests_with_the_close_error_and_writes_only_delete() -> None:
    client, server, _ = waiting()
    rid = client.ping(now=0.1)
    client.close(now=0.2, message="bye")
    failed, terminated = drain_events(client)
    assert failed == RequestFailed(request_id=rid, method="ping", reason=FailureReason.CONNECTION_LOST,
                                   message="bye")
    assert isinstance(terminated, ConnectionTerminated)
    assert [r.method for r in server.pump(now=0.2)] == ["DELETE"]
    assert client.next_deadline() == 2.2  # the close bound only: nothing waits for the GET stream
    client.handle_timeout(1.0)
    assert server.pump(now=1.0) == []


def test_a_reconnection_of_the_get_stream_holds_nothing() -> None:
    client, server, _ = ready_http_client(get_stream=200)
    get = server.requests[2]
    server.send(get, chunk(sse_event(id="g1", retry=100)) + LAST_CHUNK, now=1.0)  # the stream ends
    client.ping(now=1.05)  # while the reconnection is scheduled
    assert [r.rpc_method for r in server.pump(now=1.05)] == ["ping"]
    client.handle_timeout(1.1)
    (again,) = server.pump(now=1.1)
    assert (again.method, again.header("last-event-id")) == ("GET", "g1")
    client.ping(now=1.2)  # while the reconnected GET has no answer
    assert [r.rpc_method for r in server.pump(now=1.2)] == ["ping"]


def shaken_hands() -> tuple[HttpClient, ScriptedHttpServer, ReceivedRequest, ReceivedRequest]:
    """A client at 0.0 just past its handshake (session ``s-1``), with its
    ``notifications/initialized`` and its GET stream not answered yet."""
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (init,) = server.pump(now=0.0)
    server.reply_json(init, init_result(), now=0.0, headers={"Mcp-Session-Id": "s-1"})
    initialized, get = sorted(server.pump(now=0.0), key=lambda r: r.method, reverse=True)
    return client, server, initialized, get


def test_a_request_held_when_the_session_expires_is_written_once_on_the_new_session() -> None:
    client, server, initialized, get = shaken_hands()
    rid = client.ping(now=0.1)
    server.reply(initialized, 404, now=0.2)  # the server forgot the session at once
    (again,) = server.pump(now=0.2)
    assert again.rpc_method == "initialize" and server.is_closed(get)
    server.reply_json(again, init_result(again.json()["id"]), now=0.3, headers={"Mcp-Session-Id": "s-2"})
    follow = server.pump(now=0.3)  # the ping waits for the new session's GET stream
    assert sorted(r.rpc_method or r.method for r in follow) == ["GET", "notifications/initialized"]
    (new_get,) = [r for r in follow if r.method == "GET"]
    server.send(new_get, chunked_head(), now=0.4)
    (ping,) = server.pump(now=0.4)
    assert (ping.rpc_method, ping.json()["id"], ping.header("mcp-session-id")) == ("ping", rid, "s-2")
    # Its first time out, not a re-sending: if this session expires too, it is re-sent once more.
    server.reply(ping, 404, now=0.5)
    (third,) = server.pump(now=0.5)
    server.reply_json(third, init_result(third.json()["id"]), now=0.6, headers={"Mcp-Session-Id": "s-3"})
    (third_get,) = [r for r in server.pump(now=0.6) if r.method == "GET"]
    server.send(third_get, chunked_head(), now=0.7)
    (resent,) = server.pump(now=0.7)
    assert (resent.json()["id"], resent.header("mcp-session-id")) == (rid, "s-3")
    assert not [e for e in drain_events(client) if isinstance(e, RequestFailed)]


def test_a_request_timing_out_while_a_new_session_shakes_hands_is_never_written() -> None:
    client, server, initialized, _ = shaken_hands()
    server.reply(initialized, 404, now=0.1)  # the server forgot the session: a new handshake
    (again,) = server.pump(now=0.1)
    rid = client.ping(now=0.2, timeout=0.5)  # held for the new session
    client.handle_timeout(0.7)
    [failed] = [e for e in drain_events(client) if isinstance(e, RequestFailed)]
    assert (failed.request_id, failed.reason) == (rid, FailureReason.TIMEOUT)
    assert server.pump(now=0.7) == []  # nor its notifications/cancelled: the server never saw it
    server.reply_json(again, init_result(again.json()["id"]), now=0.8, headers={"Mcp-Session-Id": "s-2"})
    follow = server.pump(now=0.8)
    (new_get,) = [r for r in follow if r.method == "GET"]
    server.send(new_get, chunked_head(), now=0.9)
    assert "ping" not in [r.rpc_method for r in follow + server.pump(now=0.9)]

"""HttpClient when the server forgets the session: a 404 (or the TypeScript SDK's 400
"No valid session ID") on a live ``Mcp-Session-Id`` starts a new session, re-sends the
requests in flight once, and gives up after ``max_session_restarts``.
"""

from __future__ import annotations

from helpers import drain_events
from http_helpers import (
    URL,
    ReceivedRequest,
    ScriptedHttpServer,
    chunked_head,
    http_client,
    init_result,
    json_body,
    ready_http_client,
    sse_event,
    tool_result,
)

from mcp_sansio import ClientConfig
from mcp_sansio.errors import SessionExpired
from mcp_sansio.events import (
    ConnectionTerminated,
    FailureReason,
    InitializeCompleted,
    InitializeFailed,
    RequestFailed,
    ResponseReceived,
    SessionForgotten,
)
from mcp_sansio.session import Phase

TS_NO_SESSION = json_body({
    "jsonrpc": "2.0", "id": None,
    "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"},
})
NOT_FOUND = json_body({"jsonrpc": "2.0", "id": None,
                       "error": {"code": -32001, "message": "Session not found"}})


def expire(server: ScriptedHttpServer, request: ReceivedRequest, now: float) -> ReceivedRequest:
    """Answer ``request`` 404 and return the new ``initialize`` POST it causes."""
    server.reply_json(request, NOT_FOUND, status=404, now=now)
    (init,) = server.pump(now=now)
    assert init.rpc_method == "initialize"
    return init


def reinitialize(server: ScriptedHttpServer, init: ReceivedRequest, session_id: str, now: float
                 ) -> list[ReceivedRequest]:
    """Answer the new ``initialize``; return the requests that follow (GET stream refused,
    which sends what waited for it)."""
    server.reply_json(init, init_result(init.json()["id"]), now=now, headers={"Mcp-Session-Id": session_id})
    sent = []
    while fresh := server.pump(now=now):
        for request in fresh:
            if request.method == "GET":
                server.reply(request, 405, now=now)
            elif request.rpc_method == "notifications/initialized":
                server.accept(request, now=now)
            else:
                sent.append(request)
    return sent


def test_404_on_a_live_session_reports_session_expired() -> None:
    client, server, _ = ready_http_client()
    client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    expire(server, post, 1.0)
    assert drain_events(client) == [SessionForgotten(status=404, reinitializing=True)]
    assert client.phase is Phase.INITIALIZING
    assert client.session_id is None


def test_new_initialize_after_expiry_carries_no_session_id() -> None:
    client, server, _ = ready_http_client()
    client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    init = expire(server, post, 1.0)
    assert init.header("mcp-session-id") is None
    assert init.header("mcp-protocol-version") is None


def test_request_in_flight_is_resent_on_the_new_session_and_answered() -> None:
    client, server, _ = ready_http_client(session_id="old")
    rid = client.call_tool("t", {"n": 1}, now=1.0)
    (post,) = server.pump(now=1.0)
    init = expire(server, post, 1.0)
    (resent,) = reinitialize(server, init, "new", 1.1)
    assert resent.body == post.body
    assert resent.header("mcp-session-id") == "new"
    server.reply_json(resent, tool_result(rid), now=1.2)
    events = drain_events(client)
    assert [type(e) for e in events] == [SessionForgotten, InitializeCompleted, ResponseReceived]
    assert not any(isinstance(e, RequestFailed) for e in events)


def test_initialized_notification_and_get_stream_follow_the_new_session() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    init = expire(server, post, 1.0)
    server.reply_json(init, init_result(init.json()["id"]), now=1.1, headers={"Mcp-Session-Id": "s-2"})
    follow = server.pump(now=1.1)  # the re-sent ping waits for the new GET stream
    assert sorted((r.method, r.rpc_method or "") for r in follow) == [
        ("GET", ""), ("POST", "notifications/initialized")]
    (get,) = [r for r in follow if r.method == "GET"]
    server.send(get, chunked_head(), now=1.2)
    (ping,) = server.pump(now=1.2)
    assert ping.rpc_method == "ping"
    assert all(r.header("mcp-session-id") == "s-2" for r in [*follow, ping])


def test_every_request_in_flight_is_resent_once() -> None:
    client, server, _ = ready_http_client()
    first = client.call_tool("a", now=1.0)
    second = client.call_tool("b", now=1.0)
    post_a, post_b = server.pump(now=1.0)
    init = expire(server, post_a, 1.0)
    assert server.is_closed(post_b)  # the old session's exchange is abandoned
    resent = reinitialize(server, init, "s-2", 1.1)
    assert sorted(r.json()["id"] for r in resent) == [first, second]


def test_late_answer_on_the_old_session_is_ignored() -> None:
    client, server, _ = ready_http_client()
    first = client.call_tool("a", now=1.0)
    client.call_tool("b", now=1.0)
    post_a, post_b = server.pump(now=1.0)
    init = expire(server, post_b, 1.0)
    server.reply_json(post_a, tool_result(first, "stale"), now=1.05)  # never read: connection closed
    resent = reinitialize(server, init, "s-2", 1.1)
    (again,) = [r for r in resent if r.json()["id"] == first]
    server.reply_json(again, tool_result(first, "fresh"), now=1.2)
    answers = [e for e in drain_events(client) if isinstance(e, ResponseReceived)]
    assert len(answers) == 1
    assert b"fresh" in bytes(answers[0].raw)


def test_typescript_400_no_valid_session_id_is_expiry() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_json(post, TS_NO_SESSION, status=400, now=1.0)
    assert drain_events(client) == [SessionForgotten(status=400, reinitializing=True)]
    (init,) = server.pump(now=1.0)
    assert init.rpc_method == "initialize"


def test_400_about_something_else_is_an_http_error() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    body = json_body({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": None})
    server.reply_json(post, body, status=400, now=1.0)
    (failed,) = drain_events(client)
    assert isinstance(failed, RequestFailed)
    assert (failed.reason, failed.status) == (FailureReason.HTTP_ERROR, 400)


def test_400_with_a_non_json_body_is_an_http_error() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 400, b"no valid session", now=1.0)
    (failed,) = drain_events(client)
    assert isinstance(failed, RequestFailed)
    assert failed.status == 400


def test_400_with_a_deeply_nested_body_is_an_http_error() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_json(post, b'{"detail":' + b"[" * 3000, status=400, now=1.0)
    (failed,) = drain_events(client)
    assert isinstance(failed, RequestFailed)
    assert failed.status == 400


def test_404_with_any_body_is_expiry() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 404, b"<h1>Not Found</h1>", now=1.0)
    assert drain_events(client) == [SessionForgotten(status=404, reinitializing=True)]


def test_404_on_initialize_is_not_expiry() -> None:
    client = http_client(URL, transport="streamable-http")
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (init,) = server.pump(now=0.0)
    server.reply_json(init, NOT_FOUND, status=404, now=0.0)
    (failed,) = drain_events(client)
    assert isinstance(failed, InitializeFailed)
    assert (failed.reason, failed.status) == (FailureReason.HTTP_ERROR, 404)
    assert server.pump(now=0.0) == []


def test_404_without_a_session_id_is_not_expiry() -> None:
    client, server, _ = ready_http_client(session_id=None)
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_json(post, NOT_FOUND, status=404, now=1.0)
    (failed,) = drain_events(client)
    assert isinstance(failed, RequestFailed)
    assert failed.status == 404


def test_404_on_the_get_stream_is_not_expiry() -> None:
    client, server, _ = ready_http_client(get_stream=404)
    assert client.phase is Phase.READY
    assert server.pump(now=0.0) == []


def test_404_on_a_session_that_is_initializing_is_an_ordinary_error() -> None:
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (init,) = server.pump(now=0.0)
    ping = json_body({"jsonrpc": "2.0", "id": "p1", "method": "ping"})
    server.reply_sse(init, [sse_event(ping)], now=0.0, end=False, headers={"Mcp-Session-Id": "s-1"})
    (pong,) = server.pump(now=0.0)
    assert pong.header("mcp-session-id") == "s-1"
    server.reply_json(pong, NOT_FOUND, status=404, now=0.1)
    assert drain_events(client) == []
    assert client.phase is Phase.INITIALIZING


def test_resent_request_that_expires_again_fails_with_session_expired() -> None:
    client, server, _ = ready_http_client()
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    (resent,) = reinitialize(server, expire(server, post, 1.0), "s-2", 1.1)
    drain_events(client)
    init = expire(server, resent, 1.2)
    failed = [e for e in drain_events(client) if isinstance(e, RequestFailed)]
    assert [(f.request_id, f.reason) for f in failed] == [(rid, FailureReason.SESSION_EXPIRED)]
    assert isinstance(failed[0].to_exception(), SessionExpired)
    assert reinitialize(server, init, "s-3", 1.3) == []  # nothing is sent a second time


def test_server_that_expires_every_session_is_given_up_on() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(max_session_restarts=2))
    now = 1.0
    inits = 0
    events = []
    for _ in range(10):  # far more rounds than the bound allows
        if client.phase is Phase.CLOSED:
            break
        client.call_tool("t", now=now)
        for request in server.pump(now=now):
            if request.rpc_method == "tools/call":
                server.reply(request, 404, now=now)
        while (sent := server.pump(now=now)):
            for request in sent:
                if request.rpc_method == "initialize":
                    inits += 1
                    server.reply_json(request, init_result(request.json()["id"]), now=now,
                                      headers={"Mcp-Session-Id": f"s-{now}"})
                elif request.method == "GET":
                    server.reply(request, 405, now=now)
                elif request.rpc_method == "tools/call":
                    server.reply(request, 404, now=now)
                else:
                    server.accept(request, now=now)
        events += drain_events(client)
        now += 1.0
    assert inits == 2
    expired = [e for e in events if isinstance(e, SessionForgotten)]
    assert expired[-1] == SessionForgotten(status=404, reinitializing=False)
    assert [e.reinitializing for e in expired] == [True, True, False]
    assert isinstance(events[-1], ConnectionTerminated)
    assert events[-1].reason is FailureReason.SESSION_EXPIRED
    failed = [e for e in events if isinstance(e, RequestFailed)]
    assert failed
    assert all(f.reason is FailureReason.SESSION_EXPIRED for f in failed)


def test_giving_up_on_an_expired_session_sends_no_delete() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(reinitialize_on_expiry=False))
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 404, now=1.0)
    client.close(now=2.0)
    assert server.pump(now=2.0) == []
    assert client.finished


def test_reinitialize_disabled_fails_pending_requests_with_session_expired() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(reinitialize_on_expiry=False), get_stream=200)
    first = client.call_tool("a", now=1.0)
    second = client.call_tool("b", now=1.0)
    post_a, post_b = server.pump(now=1.0)
    server.reply(post_a, 404, now=1.0)
    events = drain_events(client)
    assert events[0] == SessionForgotten(status=404, reinitializing=False)
    assert [(e.request_id, e.reason) for e in events if isinstance(e, RequestFailed)] == [
        (first, FailureReason.SESSION_EXPIRED), (second, FailureReason.SESSION_EXPIRED)]
    assert isinstance(events[-1], ConnectionTerminated)
    assert server.is_closed(post_b)
    assert server.is_closed(server.requests[2])  # the GET stream of the dead session
    assert client.phase is Phase.CLOSED


def test_request_made_while_reinitializing_is_sent_once_on_the_new_session() -> None:
    client, server, _ = ready_http_client()
    first = client.call_tool("a", now=1.0)
    (post,) = server.pump(now=1.0)
    init = expire(server, post, 1.0)
    second = client.call_tool("b", now=1.05)
    assert server.pump(now=1.05) == []  # held until the new session is ready
    resent = reinitialize(server, init, "s-2", 1.1)
    assert sorted(r.json()["id"] for r in resent) == [first, second]


def test_failed_reinitialize_fails_the_waiting_requests() -> None:
    client, server, _ = ready_http_client()
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    init = expire(server, post, 1.0)
    server.reply(init, 404, now=1.1)  # no fallback to legacy SSE once a session existed
    events = drain_events(client)
    assert [type(e) for e in events] == [SessionForgotten, RequestFailed, InitializeFailed]
    assert isinstance(events[1], RequestFailed)
    assert (events[1].request_id, events[1].reason) == (rid, FailureReason.SESSION_EXPIRED)
    assert client.transport == "streamable-http"
    assert server.pump(now=1.1) == []


def test_restart_bound_counts_only_restarts_without_an_answer_between() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(max_session_restarts=1))
    for round_ in range(3):
        now = float(round_ + 1)
        rid = client.call_tool("t", now=now)
        (post,) = server.pump(now=now)
        (resent,) = reinitialize(server, expire(server, post, now), f"s-{round_}", now)
        server.reply_json(resent, tool_result(rid), now=now)
        assert [type(e) for e in drain_events(client)] == [SessionForgotten, InitializeCompleted,
                                                          ResponseReceived]


def test_error_answer_also_shows_the_new_session_works() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(max_session_restarts=1))
    for round_ in range(2):
        now = float(round_ + 1)
        rid = client.call_tool("t", now=now)
        (post,) = server.pump(now=now)
        (resent,) = reinitialize(server, expire(server, post, now), f"s-{round_}", now)
        server.reply_json(resent, json_body({"jsonrpc": "2.0", "id": rid,
                                             "error": {"code": -32602, "message": "bad"}}), now=now)
        assert SessionForgotten(status=404, reinitializing=True) in drain_events(client)


def test_timeout_does_not_reset_the_restart_bound() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(max_session_restarts=1))
    client.call_tool("a", now=1.0, timeout=5.0)
    (post,) = server.pump(now=1.0)
    assert len(reinitialize(server, expire(server, post, 1.0), "s-2", 1.0)) == 1
    client.handle_timeout(6.0)  # the re-sent request times out: no proof the session works
    server.pump(now=6.0)
    client.call_tool("b", now=7.0)
    (post_b,) = server.pump(now=7.0)
    server.reply(post_b, 404, now=7.0)
    events = drain_events(client)
    assert SessionForgotten(status=404, reinitializing=False) in events


def test_a_restarted_server_is_invisible_to_the_caller() -> None:
    client, server, _ = ready_http_client()
    rid = client.call_tool("t", now=1.0)
    (stale,) = server.pump(now=1.0)  # on the kept-alive connection the old server had
    server.hang_up(stale, now=1.0)  # which closed it unread as it stopped
    (again,) = server.pump(now=1.0)
    assert again.connection != stale.connection and again.json()["id"] == rid
    init = expire(server, again, now=1.1)  # the new process knows no session
    (resent,) = reinitialize(server, init, "s-2", now=1.2)
    server.reply_json(resent, tool_result(rid, "two"), now=1.3)
    events = drain_events(client)
    assert [type(e) for e in events] == [SessionForgotten, InitializeCompleted, ResponseReceived]

"""HttpClient when HTTP goes wrong: authorization, error statuses, garbage, oversized
bodies, silence, refused connections and redirects. Each failure is an event, never a
retry loop and never an exception out of ``receive_data``.
"""

from __future__ import annotations

import json

import pytest
from helpers import broken, drain_events
from http_helpers import (
    LAST_CHUNK,
    URL,
    ScriptedHttpServer,
    chunk,
    chunked_head,
    http_client,
    init_result,
    json_body,
    ready_http_client,
    response,
    sse_event,
    tool_result,
)

from mcp_sansio import ClientConfig
from mcp_sansio.connections import SocketStage
from mcp_sansio.errors import ConnectError, HttpError, MessageTooLarge, RequestTimeout, Unauthorized
from mcp_sansio.events import (
    AuthorizationRequired,
    ErrorData,
    FailureReason,
    InitializeCompleted,
    InitializeFailed,
    RequestFailed,
    ResponseReceived,
)
from mcp_sansio.http_transport import HttpClient
from mcp_sansio.retry import RetryPolicy

CHALLENGE = 'Bearer resource_metadata="https://example.com/.well-known/oauth-protected-resource", scope="a b"'
PARAMS = {"resource_metadata": "https://example.com/.well-known/oauth-protected-resource", "scope": "a b"}


def one_failure(client: HttpClient) -> RequestFailed:
    """The single event queued, which must be a RequestFailed."""
    (event,) = drain_events(client)
    assert isinstance(event, RequestFailed), event
    return event


# ------------------------------------------------------------------ authorization


@pytest.mark.parametrize("status", [401, 403])
def test_unauthorized_status_reports_the_challenge_and_fails_the_request(status: int) -> None:
    client, server, _ = ready_http_client()
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, status, b"no", now=1.0, headers={"WWW-Authenticate": CHALLENGE})
    required, failed = drain_events(client)
    assert required == AuthorizationRequired(status=status, scheme="bearer", params=PARAMS)
    assert isinstance(failed, RequestFailed)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.AUTHORIZATION_REQUIRED)
    error = failed.to_exception()
    assert isinstance(error, Unauthorized)
    assert (error.status, error.params) == (status, PARAMS)


def test_unauthorized_request_is_not_retried() -> None:
    client, server, _ = ready_http_client()
    client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 401, now=1.0, headers={"WWW-Authenticate": CHALLENGE})
    client.handle_timeout(1000.0)
    assert server.pump(now=1000.0) == []


def test_unauthorized_initialize_fails_the_handshake_with_the_challenge() -> None:
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (init,) = server.pump(now=0.0)
    server.reply(init, 401, now=0.0, headers={"WWW-Authenticate": CHALLENGE})
    required, failed = drain_events(client)
    assert isinstance(required, AuthorizationRequired)
    assert isinstance(failed, InitializeFailed)
    error = failed.to_exception()
    assert isinstance(error, Unauthorized)
    assert (error.status, error.params) == (401, PARAMS)
    assert server.pump(now=0.0) == []  # no fallback, no retry


def test_unauthorized_without_a_challenge_has_no_params() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 401, now=1.0)
    required, failed = drain_events(client)
    assert required == AuthorizationRequired(status=401, scheme="", params={})
    assert isinstance(failed, RequestFailed)
    assert failed.detail == {}


def test_non_bearer_challenge_is_reported_when_it_is_the_only_one() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 401, now=1.0, headers={"WWW-Authenticate": 'Basic realm="x"'})
    required = drain_events(client)[0]
    assert required == AuthorizationRequired(status=401, scheme="basic", params={"realm": "x"})


def test_unauthorized_get_stream_reports_the_challenge_and_is_not_retried() -> None:
    client, server, _ = ready_http_client(get_stream=0)
    get = server.requests[2]
    server.reply(get, 401, now=1.0, headers={"WWW-Authenticate": CHALLENGE})
    assert drain_events(client) == [AuthorizationRequired(status=401, scheme="bearer", params=PARAMS)]
    client.handle_timeout(1000.0)
    assert server.pump(now=1000.0) == []


# ---------------------------------------------------------------- error statuses


def test_500_with_html_is_an_http_error_with_a_short_excerpt() -> None:
    client, server, _ = ready_http_client()
    rid = client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    html = b"<html>\n  <body>Internal   Server Error</body>\n</html>\n" + b"x" * 5000
    server.reply(post, 500, html, now=1.0, headers={"Content-Type": "text/html"})
    failed = one_failure(client)
    assert (failed.request_id, failed.reason, failed.status) == (rid, FailureReason.HTTP_ERROR, 500)
    assert failed.message.startswith("HTTP 500 from http://example.com/mcp: <html> <body>Internal Server")
    assert len(failed.message) < 400
    error = failed.to_exception()
    assert isinstance(error, HttpError)
    assert error.status == 500
    assert error.body_excerpt.startswith("<html>\n  <body>")
    assert len(error.body_excerpt) == 300


def test_error_body_is_kept_only_up_to_the_excerpt_bound() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.send(post, chunked_head(500, content_type="text/plain") + chunk(b"a" * 3000), now=1.0)
    server.send(post, chunk(b"b" * 3000) + LAST_CHUNK, now=1.0)
    error = one_failure(client).to_exception()
    assert isinstance(error, HttpError)
    assert error.body_excerpt == "a" * 300


def test_400_with_a_json_rpc_error_for_the_request_is_that_error() -> None:
    client, server, _ = ready_http_client()
    rid = client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    said = "Client did not declare the form elicitation capability"
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32021, "message": said}}).encode()
    server.reply(post, 400, body, now=1.0, headers={"Content-Type": "application/json"})
    failed = one_failure(client)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.ERROR_RESPONSE)
    assert failed.error == ErrorData(code=-32021, message=said)


def test_400_with_a_json_rpc_error_for_another_request_is_an_http_error() -> None:
    client, server, _ = ready_http_client()
    rid = client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    error = {"code": -32600, "message": "no"}
    body = json.dumps({"jsonrpc": "2.0", "id": rid + 100, "error": error}).encode()
    server.reply(post, 400, body, now=1.0, headers={"Content-Type": "application/json"})
    assert one_failure(client).reason is FailureReason.HTTP_ERROR


def test_error_status_without_a_body_names_only_the_status() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 502, now=1.0)
    assert one_failure(client).message == "HTTP 502 from http://example.com/mcp"


def test_error_status_on_initialize_fails_the_handshake_with_the_status() -> None:
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (init,) = server.pump(now=0.0)
    server.reply(init, 503, b"busy", now=0.0)
    (failed,) = drain_events(client)
    assert isinstance(failed, InitializeFailed)
    assert (failed.reason, failed.status) == (FailureReason.HTTP_ERROR, 503)
    error = failed.to_exception()
    assert isinstance(error, HttpError)
    assert (error.status, error.body_excerpt) == (503, "busy")


@pytest.mark.parametrize("status", [301, 302, 303])
def test_redirect_status_other_than_307_308_is_an_http_error(status: int) -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, status, now=1.0, headers={"Location": "/elsewhere"})
    assert one_failure(client).status == status
    assert server.pump(now=1.0) == []


def test_error_status_on_a_notification_queues_nothing() -> None:
    client, server, _ = ready_http_client()
    client.notify("notifications/roots/list_changed", now=0.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 500, now=1.0)
    assert drain_events(client) == []


# ----------------------------------------------------------- oversized and garbage


def test_oversized_json_response_is_message_too_large() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(max_response_bytes=1000))
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_json(post, tool_result(rid, "x" * 1000), now=1.0)
    failed = one_failure(client)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.MESSAGE_TOO_LARGE)
    assert isinstance(failed.to_exception(), MessageTooLarge)


def test_oversized_sse_event_is_message_too_large() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(max_response_bytes=1000))
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_sse(post, [sse_event(tool_result(rid, "x" * 1000))], now=1.0)
    failed = one_failure(client)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.MESSAGE_TOO_LARGE)


def test_oversized_sse_event_after_the_answer_fails_nothing() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(max_response_bytes=1000))
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    one_read = sse_event(tool_result(rid)) + sse_event("x" * 2000)  # the answer is not lost with it
    server.reply_sse(post, [one_read], now=1.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


def test_response_at_the_size_bound_is_accepted() -> None:
    body = tool_result(2, "x" * 1000)
    client, server, _ = ready_http_client(config=ClientConfig(max_response_bytes=len(body)))
    client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_json(post, body, now=1.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


def test_garbage_instead_of_http_fails_the_request() -> None:
    client, server, _ = ready_http_client()
    rid = client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.send(post, b"\x16\x03\x01 this is not HTTP\r\n\r\n", now=1.0)
    failed = one_failure(client)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.CONNECTION_LOST)
    assert "invalid HTTP response" in failed.message
    assert server.pump(now=1.0) == []  # the request is not sent again


def test_garbage_instead_of_http_fails_the_handshake() -> None:
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (init,) = server.pump(now=0.0)
    server.send(init, b"SSH-2.0-OpenSSH_9.6\r\n", now=0.0)
    server.hang_up(init, now=0.0)
    (failed,) = drain_events(client)
    assert isinstance(failed, InitializeFailed)
    assert failed.reason is FailureReason.CONNECTION_LOST


def test_invalid_chunk_in_an_sse_answer_fails_the_request() -> None:
    client, server, _ = ready_http_client(version="2025-03-26")
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.send(post, chunked_head() + chunk(b": keep-alive\n") + b"zz\r\n", now=1.0)
    failed = one_failure(client)
    assert failed.reason is FailureReason.CONNECTION_LOST


def test_non_json_answer_is_discarded_and_fails_the_request() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_json(post, b"<html>oops</html>", now=1.0)
    discarded, failed = drain_events(client)
    assert type(discarded).__name__ == "MessageDiscarded"
    assert isinstance(failed, RequestFailed)
    assert failed.reason is FailureReason.PROTOCOL_ERROR


# ------------------------------------------------------------- silence and loss


def test_unanswered_request_times_out_and_is_cancelled() -> None:
    client, server, _ = ready_http_client()
    rid = client.call_tool("t", now=1.0, timeout=10.0)
    (post,) = server.pump(now=1.0)
    assert client.next_deadline() == 11.0
    client.handle_timeout(11.0)
    failed = one_failure(client)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.TIMEOUT)
    assert isinstance(failed.to_exception(), RequestTimeout)
    (cancel,) = server.pump(now=11.0)
    assert cancel.json() == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": {"requestId": rid, "reason": "request timed out"}}
    assert cancel.header("mcp-session-id") == "s-1"
    assert server.is_closed(post)  # the abandoned exchange's connection is freed


def test_late_answer_after_the_timeout_is_ignored() -> None:
    client, server, _ = ready_http_client()
    rid = client.call_tool("t", now=1.0, timeout=10.0)
    (post,) = server.pump(now=1.0)
    client.handle_timeout(11.0)
    drain_events(client)
    server.reply_json(post, tool_result(rid), now=12.0)
    assert drain_events(client) == []


def test_unanswered_initialize_times_out() -> None:
    client = http_client(URL, config=ClientConfig(initialize_timeout=5.0))
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    server.pump(now=0.0)
    assert client.next_deadline() == 5.0
    client.handle_timeout(5.0)
    (failed,) = drain_events(client)
    assert isinstance(failed, InitializeFailed)
    assert failed.reason is FailureReason.TIMEOUT


def test_connection_lost_after_the_post_was_sent_fails_without_a_resend() -> None:
    client, server, _ = ready_http_client()
    server.hang_up_idle(now=1.0)  # so the POST goes on a new connection
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    client.connection_failed(post.connection, broken("reset by peer"), now=1.5)
    failed = one_failure(client)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.CONNECTION_LOST)
    assert "reset by peer" in failed.message
    client.handle_timeout(100.0)
    assert server.pump(now=100.0) == []


def test_connection_closed_mid_json_answer_fails_without_a_resend() -> None:
    client, server, _ = ready_http_client()
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    body = tool_result(rid)
    server.send(post, response(200, body, headers={"Content-Type": "application/json"})[:-5], now=1.0)
    server.hang_up(post, now=1.0)
    assert one_failure(client).reason is FailureReason.CONNECTION_LOST
    assert server.pump(now=100.0) == []


def test_refused_connection_is_retried_after_a_backoff() -> None:
    client, server, _ = ready_http_client()
    server.hang_up_idle(now=1.0)
    server.refuse = 1
    rid = client.call_tool("t", now=1.0)
    assert server.pump(now=1.0) == []
    deadline = client.next_deadline()
    assert deadline is not None
    assert 1.8 <= deadline < 2.2  # initial_delay 1 s, jitter 0.2
    client.handle_timeout(deadline)
    (post,) = server.pump(now=deadline)
    assert post.json()["id"] == rid
    server.reply_json(post, tool_result(rid), now=deadline)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


def test_refused_connection_fails_the_request_once_the_policy_gives_up() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(retry=RetryPolicy(max_attempts=2)))
    server.hang_up_idle(now=1.0)
    server.refuse = 3
    rid = client.call_tool("t", now=1.0)
    server.pump(now=1.0)
    for _ in range(2):
        deadline = client.next_deadline()
        assert deadline is not None
        client.handle_timeout(deadline)
        server.pump(now=deadline)
    failed = one_failure(client)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.CONNECT_FAILED)
    assert failed.message == "cannot connect to example.com:80: Connection refused"
    assert len(server.opened) == 5  # two for the handshake, then three refused


def test_refused_initialize_fails_the_handshake_at_once_with_where_and_why() -> None:
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    server.refuse = 1
    client.connect(now=0.0)
    server.pump(now=0.0)
    (failed,) = drain_events(client)
    assert isinstance(failed, InitializeFailed)
    assert failed.reason is FailureReason.CONNECT_FAILED
    assert failed.message == "cannot connect to example.com:80: Connection refused"
    error = failed.to_exception()
    assert isinstance(error, ConnectError)
    assert (error.host, error.port, error.cause) == ("example.com", 80, "Connection refused")
    assert error.errno == 111
    assert client.next_deadline() is None  # no retry, no handshake timer left


@pytest.mark.parametrize("stage", [SocketStage.RESOLVE, SocketStage.TLS])
def test_a_failed_name_lookup_or_tls_handshake_in_a_session_is_not_retried(stage: SocketStage) -> None:
    client, server, _ = ready_http_client()
    server.hang_up_idle(now=1.0)
    server.refuse, server.refusal = 1, broken("no", stage)
    rid = client.call_tool("t", now=1.0)
    server.pump(now=1.0)
    failed = one_failure(client)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.CONNECT_FAILED)
    assert client.next_deadline() is None  # no retry


def test_a_retry_that_would_come_after_the_deadline_fails_with_the_refusal_at_once() -> None:
    client, server, _ = ready_http_client()
    server.hang_up_idle(now=1.0)
    server.refuse = 1
    rid = client.call_tool("t", now=1.0, timeout=0.5)  # the backoff's first retry is ~1 s away
    server.pump(now=1.0)
    failed = one_failure(client)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.CONNECT_FAILED)
    assert isinstance(failed.to_exception(), ConnectError)  # never a timeout for what was a refusal
    client.handle_timeout(10.0)
    assert server.pump(now=10.0) == []


def test_a_deadline_that_comes_while_a_refused_request_is_retried_reports_the_refusal() -> None:
    client, server, _ = ready_http_client()
    server.hang_up_idle(now=1.0)
    server.refuse = 1
    rid = client.call_tool("t", now=1.0, timeout=3.0)
    server.pump(now=1.0)  # refused; the retry is about 1 s away
    retry_at = client.next_deadline()
    assert retry_at is not None and retry_at < 4.0
    client.handle_timeout(retry_at)  # the retry's connect goes out; the driver is slow to open it
    client.handle_timeout(4.0)  # the call's deadline comes first
    failed = one_failure(client)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.CONNECT_FAILED)
    assert "Connection refused" in failed.message and isinstance(failed.to_exception(), ConnectError)


def test_retry_of_a_request_cancelled_meanwhile_is_not_sent() -> None:
    client, server, _ = ready_http_client()
    server.hang_up_idle(now=1.0)
    server.refuse = 1
    rid = client.call_tool("t", now=1.0)
    server.pump(now=1.0)
    client.cancel(rid, now=1.2)
    assert one_failure(client).reason is FailureReason.CANCELLED
    cancel_and_nothing_else = server.pump(now=1.2)
    assert [r.rpc_method for r in cancel_and_nothing_else] == ["notifications/cancelled"]
    client.handle_timeout(10.0)
    assert server.pump(now=10.0) == []


# ---------------------------------------------------------------------- redirects


@pytest.mark.parametrize("status", [307, 308])
def test_redirect_resends_the_request_to_the_location(status: int) -> None:
    client, server, _ = ready_http_client(headers={"Authorization": "Bearer t"})
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, status, now=1.0, headers={"Location": "/v2/mcp?x=1"})
    (moved,) = server.pump(now=1.0)
    assert (moved.method, moved.target, moved.body) == ("POST", "/v2/mcp?x=1", post.body)
    assert moved.header("authorization") == "Bearer t"
    assert moved.header("mcp-session-id") == "s-1"
    server.reply_json(moved, tool_result(rid), now=1.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


def test_redirect_to_another_origin_drops_private_and_user_headers() -> None:
    client, server, _ = ready_http_client(headers={"Authorization": "Bearer t", "Cookie": "c=1",
                                                   "X-Tenant": "acme"})
    client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 307, now=1.0, headers={"Location": "https://other.example/mcp"})
    (moved,) = server.pump(now=1.0)
    assert server.opened[-1].host == "other.example"
    assert server.opened[-1].tls
    names = {name for name, _ in moved.headers}
    assert names.isdisjoint({"authorization", "cookie", "x-tenant", "mcp-session-id"})
    assert moved.header("mcp-protocol-version") == "2025-11-25"
    assert moved.header("accept") == "application/json, text/event-stream"


def test_redirect_only_moves_the_one_request() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 308, now=1.0, headers={"Location": "/v2"})
    server.pump(now=1.0)
    client.ping(now=2.0)
    (later,) = server.pump(now=2.0)
    assert later.target == "/mcp"


def test_redirects_are_bounded() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(max_redirects=2))
    rid = client.ping(now=1.0)
    (request,) = server.pump(now=1.0)
    for hop in range(2):
        server.reply(request, 307, now=1.0, headers={"Location": f"/hop{hop}"})
        (request,) = server.pump(now=1.0)
    server.reply(request, 307, now=1.0, headers={"Location": "/hop-too-far"})
    failed = one_failure(client)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.HTTP_ERROR)
    assert "more than 2 redirects" in failed.message
    assert server.pump(now=1.0) == []


def test_redirect_to_a_bad_location_fails_the_request() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 307, now=1.0, headers={"Location": "ftp://example.com/x"})
    failed = one_failure(client)
    assert failed.reason is FailureReason.PROTOCOL_ERROR
    assert failed.message.startswith("bad redirect")


def test_redirect_without_a_location_is_an_http_error() -> None:
    client, server, _ = ready_http_client()
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 307, now=1.0)
    assert one_failure(client).status == 307


def test_redirected_initialize_completes_at_the_new_location() -> None:
    client = http_client(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (init,) = server.pump(now=0.0)
    server.reply(init, 307, now=0.0, headers={"Location": "/real", "Mcp-Session-Id": "ignored"})
    (moved,) = server.pump(now=0.0)
    assert moved.rpc_method == "initialize"
    server.reply_json(moved, init_result(), now=0.0, headers={"Mcp-Session-Id": "s-r"})
    assert [type(e) for e in drain_events(client)] == [InitializeCompleted]
    assert client.session_id == "s-r"


def test_redirected_resume_keeps_its_last_event_id() -> None:
    client, server, _ = ready_http_client(version="2025-03-26", get_stream=405)
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_sse(post, [sse_event(id="e1", retry=100)], now=1.0)
    client.handle_timeout(1.1)
    (resume,) = server.pump(now=1.1)
    server.reply(resume, 307, now=1.1, headers={"Location": "/moved"})
    (moved,) = server.pump(now=1.1)
    assert moved.header("last-event-id") == "e1"
    server.send(moved, chunked_head(), now=1.2)
    server.hang_up(moved, now=1.2)  # dropped before any event: resume again from e1
    client.handle_timeout(10.0)
    (again,) = server.pump(now=10.0)
    assert (again.target, again.header("last-event-id")) == ("/mcp", "e1")
    server.reply_sse(again, [sse_event(tool_result(rid), id="e2")], now=10.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


def test_json_error_body_is_not_mistaken_for_an_answer() -> None:
    client, server, _ = ready_http_client()
    rid = client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_json(post, json_body({"jsonrpc": "2.0", "id": rid, "result": {}}), status=500, now=1.0)
    failed = one_failure(client)
    assert failed.status == 500

"""AuthorizingHttpClient: refused MCP requests are held while the OAuth planner runs over
side requests, then re-sent with the token; failures are typed; tokens are renewed early."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from auth_http_helpers import AS, CHALLENGE, OAuthMock, auth_client, form, redirect_back
from core.test_auth_support import token
from helpers import drain_events
from http_helpers import ReceivedRequest, ScriptedHttpServer, init_result, tool_result

from mcp_sansio import ClientConfig
from mcp_sansio.auth import (
    AuthFailure,
    ClientCredentials,
    ClientCredentialsGrant,
    OAuthConfig,
    Token,
)
from mcp_sansio.errors import InsufficientScope, LocalProtocolError, Unauthorized
from mcp_sansio.events import (
    Event,
    FailureReason,
    InitializeCompleted,
    InitializeFailed,
    RequestFailed,
    ResponseReceived,
    SideRequestFailed,
    SideResponseReceived,
)
from mcp_sansio.http_auth import (
    AuthorizationCompleted,
    AuthorizationFailed,
    AuthorizationRedirect,
    AuthorizingHttpClient,
)

CODE_FLOW = ["GET /.well-known/oauth-protected-resource/mcp", "GET /.well-known/oauth-authorization-server",
             "POST /register", "GET /authorize", "POST /token"]
INSUFFICIENT = {"WWW-Authenticate": 'Bearer error="insufficient_scope", scope="mcp:admin"'}


def start(client: AuthorizingHttpClient) -> tuple[ScriptedHttpServer, OAuthMock, ReceivedRequest]:
    """Connect; the server and OAuth mock, and the first POST (not yet answered)."""
    server = ScriptedHttpServer(client)
    mock = OAuthMock(server)
    client.connect(now=0.0)
    (first,) = mock.serve(now=0.0)
    return server, mock, first


def finish_handshake(server: ScriptedHttpServer, mock: OAuthMock, init: ReceivedRequest, now: float) -> None:
    """Answer ``init``, then ``notifications/initialized`` (202) and the GET stream (405)."""
    server.reply_json(init, init_result(), now=now, headers={"Mcp-Session-Id": "s-1"})
    for request in mock.serve(now=now):
        if request.method == "POST":
            server.accept(request, now=now)
        else:
            server.reply(request, 405, now=now)


def authorized_client(**kwargs: Any) -> tuple[AuthorizingHttpClient, ScriptedHttpServer, OAuthMock]:
    """A client past the handshake, whose ``initialize`` was refused once and authorized
    (token ``test-token-1``) at ``now=0.0``; its events drained."""
    client = auth_client(**kwargs)
    server, mock, init = start(client)
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    (again,) = mock.serve(now=0.0)
    finish_handshake(server, mock, again, 0.0)
    drain_events(client)
    return client, server, mock


def plain_ready_client(**kwargs: Any) -> tuple[AuthorizingHttpClient, ScriptedHttpServer, OAuthMock]:
    """A client past the handshake, which the server let in without a token."""
    client = auth_client(**kwargs)
    server, mock, init = start(client)
    finish_handshake(server, mock, init, 0.0)
    drain_events(client)
    return client, server, mock


def of_type(events: list[Event], kind: type[Event]) -> list[Event]:
    return [event for event in events if isinstance(event, kind)]


# ------------------------------------------------------------------ the held request


def test_refused_initialize_is_held_and_resent_with_the_token() -> None:
    client = auth_client()
    server, mock, init = start(client)
    assert init.header("authorization") is None
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    (again,) = mock.serve(now=0.5)
    assert mock.paths() == CODE_FLOW
    assert again.rpc_method == "initialize"
    assert again.header("authorization") == "Bearer test-token-1"
    finish_handshake(server, mock, again, 0.5)
    events = drain_events(client)
    assert not of_type(events, InitializeFailed)
    (completed,) = of_type(events, AuthorizationCompleted)
    assert isinstance(completed, AuthorizationCompleted)
    assert completed.token.access_token == "test-token-1"
    assert of_type(events, InitializeCompleted)


def test_side_requests_of_the_planner_are_not_events() -> None:
    client = auth_client()
    server, mock, init = start(client)
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    mock.serve(now=0.0)
    assert not of_type(drain_events(client), SideResponseReceived)


def test_every_later_request_carries_the_token() -> None:
    client, _, mock = authorized_client()
    client.call_tool("t", {}, now=1.0)
    (call,) = mock.serve(now=1.0)
    assert call.header("authorization") == "Bearer test-token-1"


def test_requests_made_while_authorizing_wait_and_go_with_the_token() -> None:
    client, server, mock = plain_ready_client()
    client.call_tool("t", {}, now=1.0)
    (call,) = server.pump(now=1.0)
    server.reply(call, 401, now=1.0, headers=CHALLENGE)
    client.list_tools(now=1.0)  # a flow is under way and no token is held: it waits
    requests = mock.serve(now=1.0)
    assert sorted(str(r.rpc_method) for r in requests) == ["tools/call", "tools/list"]
    assert {r.header("authorization") for r in requests} == {"Bearer test-token-1"}
    assert not of_type(drain_events(client), RequestFailed)


def test_answer_to_an_older_token_is_resent_at_once_without_a_new_flow() -> None:
    client, server, mock = authorized_client()
    client.call_tool("a", {}, now=1.0)
    client.call_tool("b", {}, now=1.0)
    first, second = mock.serve(now=1.0)
    server.reply(first, 401, now=1.0, headers=CHALLENGE)
    (first_again,) = mock.serve(now=1.0)
    assert first_again.header("authorization") == "Bearer test-token-2"
    flows = len(mock.oauth)
    server.reply(second, 401, now=1.0, headers=CHALLENGE)  # it went with test-token-1
    (second_again,) = mock.serve(now=1.0)
    assert second_again.header("authorization") == "Bearer test-token-2"
    assert len(mock.oauth) == flows


def test_refusal_during_an_authorization_waits_for_it() -> None:
    client, server, mock = plain_ready_client()
    client.call_tool("a", {}, now=1.0)
    client.call_tool("b", {}, now=1.0)
    first, second = server.pump(now=1.0)
    server.reply(first, 401, now=1.0, headers=CHALLENGE)
    server.reply(second, 401, now=1.0, headers=CHALLENGE)  # the planner says AuthorizationPending
    requests = mock.serve(now=1.0)
    assert len(requests) == 2
    assert {r.header("authorization") for r in requests} == {"Bearer test-token-1"}
    assert mock.paths() == CODE_FLOW


def test_request_that_timed_out_while_held_is_not_resent() -> None:
    client, server, mock = plain_ready_client(headless=False)
    client.call_tool("t", {}, now=1.0, timeout=5.0)
    (call,) = server.pump(now=1.0)
    server.reply(call, 401, now=1.0, headers=CHALLENGE)
    mock.serve(now=1.0)
    (redirect,) = of_type(drain_events(client), AuthorizationRedirect)
    assert isinstance(redirect, AuthorizationRedirect)
    client.handle_timeout(6.0)
    (failed,) = of_type(drain_events(client), RequestFailed)
    assert isinstance(failed, RequestFailed)
    assert failed.reason is FailureReason.TIMEOUT
    client.receive_authorization_redirect(redirect_back(redirect.authorization_url), now=7.0)
    assert [r.rpc_method for r in mock.serve(now=7.0)] == ["notifications/cancelled"]


def test_legacy_sse_stream_is_held_and_reopened_with_the_token() -> None:
    client = auth_client(transport="sse")
    server, mock, stream = start(client)
    assert stream.method == "GET"
    server.reply(stream, 401, now=0.0, headers=CHALLENGE)
    (again,) = mock.serve(now=0.0)
    assert (again.method, again.header("authorization")) == ("GET", "Bearer test-token-1")


def test_legacy_sse_stream_refused_for_good_ends_the_connection() -> None:
    client = auth_client(transport="sse")
    server, mock, stream = start(client)
    mock.token_status = 400
    server.reply(stream, 401, now=0.0, headers=CHALLENGE)
    assert mock.serve(now=0.0) == []
    (failed,) = of_type(drain_events(client), InitializeFailed)
    assert isinstance(failed, InitializeFailed)
    assert failed.reason is FailureReason.AUTHORIZATION_REQUIRED


def test_held_request_resent_after_authorization_is_answered() -> None:
    client, server, mock = plain_ready_client()
    rid = client.call_tool("t", {}, now=1.0)
    (call,) = server.pump(now=1.0)
    server.reply(call, 401, now=1.0, headers=CHALLENGE)
    (again,) = mock.serve(now=1.0)
    server.reply_json(again, tool_result(again.json()["id"]), now=1.0)
    (done,) = of_type(drain_events(client), ResponseReceived)
    assert isinstance(done, ResponseReceived)
    assert done.request_id == rid


# ------------------------------------------------------------------ the browser


def test_browser_redirect_is_an_event_and_its_url_resumes_the_flow() -> None:
    client = auth_client(headless=False)
    server, mock, init = start(client)
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    assert mock.serve(now=0.0) == []
    assert mock.paths() == CODE_FLOW[:3]
    (redirect,) = of_type(drain_events(client), AuthorizationRedirect)
    assert isinstance(redirect, AuthorizationRedirect)
    query = dict(parse_qsl(urlsplit(redirect.authorization_url).query))
    assert (query["state"], query["redirect_uri"]) == (redirect.state, redirect.redirect_uri)
    client.receive_authorization_redirect(redirect_back(redirect.authorization_url), now=20.0)
    (again,) = mock.serve(now=20.0)
    assert form(mock.oauth[-1])["code"] == "c-1"
    assert again.header("authorization") == "Bearer test-token-1"


def test_handshake_waits_for_the_user_beyond_initialize_timeout() -> None:
    client = auth_client(headless=False, redirect_timeout=300.0)
    server, mock, init = start(client)
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    mock.serve(now=0.0)
    (redirect,) = of_type(drain_events(client), AuthorizationRedirect)
    assert isinstance(redirect, AuthorizationRedirect)
    client.handle_timeout(100.0)  # well past initialize_timeout (30 s)
    assert not of_type(drain_events(client), InitializeFailed)
    client.receive_authorization_redirect(redirect_back(redirect.authorization_url), now=120.0)
    (again,) = mock.serve(now=120.0)
    assert again.rpc_method == "initialize"


def test_redirect_that_never_comes_fails_the_held_requests() -> None:
    client = auth_client(headless=False, redirect_timeout=10.0)
    server, mock, init = start(client)
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    mock.serve(now=0.0)
    drain_events(client)
    assert client.next_deadline() == 10.0
    client.handle_timeout(10.0)
    events = drain_events(client)
    (failed,) = of_type(events, AuthorizationFailed)
    assert isinstance(failed, AuthorizationFailed)
    assert failed.reason is AuthFailure.CANCELLED
    (init_failed,) = of_type(events, InitializeFailed)
    assert isinstance(init_failed, InitializeFailed)
    assert init_failed.reason is FailureReason.AUTHORIZATION_REQUIRED
    assert isinstance(init_failed.to_exception(), Unauthorized)


def test_cancelled_authorization_fails_the_held_requests() -> None:
    client = auth_client(headless=False)
    server, mock, init = start(client)
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    mock.serve(now=0.0)
    client.cancel_authorization(now=1.0)
    events = drain_events(client)
    assert of_type(events, AuthorizationFailed)
    assert of_type(events, InitializeFailed)


def test_cancel_or_redirect_with_no_authorization_under_way_is_refused() -> None:
    client, _, _ = plain_ready_client(headless=False)
    with pytest.raises(LocalProtocolError):
        client.cancel_authorization(now=1.0)
    with pytest.raises(LocalProtocolError):
        client.receive_authorization_redirect("http://127.0.0.1:5000/callback?code=x&state=y", now=1.0)


# ------------------------------------------------------------------ failures


def test_step_up_limit_fails_with_insufficient_scope() -> None:
    client, server, mock = plain_ready_client()
    client.call_tool("t", {}, now=1.0)
    pending = mock.serve(now=1.0)
    while pending:
        (call,) = pending
        server.reply(call, 403, now=1.0, headers=INSUFFICIENT)
        pending = mock.serve(now=1.0)
    authorizations = [r for r in mock.oauth if r.target.startswith("/authorize")]
    assert len(authorizations) == 3  # max_authorization_attempts
    states = {dict(parse_qsl(urlsplit(r.target).query))["state"] for r in authorizations}
    assert len(states) == 3  # fresh randomness each time
    events = drain_events(client)
    (failed,) = of_type(events, RequestFailed)
    assert isinstance(failed, RequestFailed)
    assert failed.reason is FailureReason.INSUFFICIENT_SCOPE
    assert isinstance(failed.to_exception(), InsufficientScope)
    assert of_type(events, AuthorizationFailed)


def test_403_of_another_kind_fails_at_once() -> None:
    client, server, mock = plain_ready_client()
    client.call_tool("t", {}, now=1.0)
    (call,) = server.pump(now=1.0)
    server.reply(call, 403, now=1.0, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    assert mock.serve(now=1.0) == []
    assert mock.oauth == []
    (failed,) = of_type(drain_events(client), RequestFailed)
    assert isinstance(failed, RequestFailed)
    assert failed.reason is FailureReason.AUTHORIZATION_REQUIRED
    assert failed.status == 403


def test_refused_token_request_fails_the_held_requests() -> None:
    client = auth_client()
    server, mock, init = start(client)
    mock.token_status = 400
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    assert mock.serve(now=0.0) == []
    events = drain_events(client)
    (failed,) = of_type(events, InitializeFailed)
    assert isinstance(failed, InitializeFailed)
    assert "token_request_failed" in failed.message
    assert failed.status == 401


def test_unreachable_authorization_server_fails_the_held_requests() -> None:
    client = auth_client()
    server, mock, init = start(client)
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    server.refuse = 1  # the PRM comes over the MCP connection; the AS needs a new one
    mock.serve(now=0.0)
    assert mock.paths() == CODE_FLOW[:1]
    (failed,) = of_type(drain_events(client), AuthorizationFailed)
    assert isinstance(failed, AuthorizationFailed)
    assert "cannot connect to localhost:4000: Connection refused" in failed.message
    assert failed.message.startswith("the request to http://localhost:4000/")


def test_request_after_a_failed_authorization_goes_out_and_starts_anew() -> None:
    client, server, mock = plain_ready_client()
    mock.token_status = 400
    client.call_tool("t", {}, now=1.0)
    (call,) = server.pump(now=1.0)
    server.reply(call, 401, now=1.0, headers=CHALLENGE)
    assert mock.serve(now=1.0) == []
    mock.token_status = 200
    client.call_tool("t", {}, now=2.0)
    (call,) = mock.serve(now=2.0)
    assert call.header("authorization") is None


# ------------------------------------------------------------------ tokens


def test_token_is_refreshed_before_it_expires() -> None:
    client = auth_client()
    server, mock, init = start(client)
    mock.tokens = iter([token("test-token-1", refresh_token="r-1")])
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    (again,) = mock.serve(now=0.0)
    finish_handshake(server, mock, again, 0.0)
    drain_events(client)
    assert client.flow.next_deadline() == 3540.0  # an hour, less the refresh margin
    deadline = client.next_deadline()
    assert deadline is not None and deadline <= 3540.0
    client.handle_timeout(3540.0)
    assert mock.serve(now=3540.0) == []
    assert form(mock.oauth[-1]) == {"grant_type": "refresh_token", "refresh_token": "r-1",
                                    "resource": "http://localhost:3000/mcp", "client_id": "test-client-id"}
    (completed,) = of_type(drain_events(client), AuthorizationCompleted)
    assert isinstance(completed, AuthorizationCompleted)
    assert completed.token.access_token == "test-token-2"
    client.call_tool("t", {}, now=3541.0)
    (call,) = mock.serve(now=3541.0)
    assert call.header("authorization") == "Bearer test-token-2"


def test_failed_renewal_backs_off_and_keeps_the_token() -> None:
    client = auth_client()
    server, mock, init = start(client)
    mock.tokens = iter([token("test-token-1", refresh_token="r-1")])
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    (again,) = mock.serve(now=0.0)
    finish_handshake(server, mock, again, 0.0)
    server.hang_up_idle(now=0.0)
    drain_events(client)
    server.refuse = 1  # the token endpoint cannot be reached
    client.handle_timeout(3540.0)
    assert mock.serve(now=3540.0) == []
    (failed,) = of_type(drain_events(client), AuthorizationFailed)
    assert isinstance(failed, AuthorizationFailed)
    assert client.next_deadline() == 3570.0
    client.handle_timeout(3550.0)
    assert mock.serve(now=3550.0) == []
    client.call_tool("t", {}, now=3550.0)
    (call,) = mock.serve(now=3550.0)
    assert call.header("authorization") == "Bearer test-token-1"
    client.handle_timeout(3570.0)
    mock.serve(now=3570.0)
    assert form(mock.oauth[-1])["grant_type"] == "refresh_token"
    assert of_type(drain_events(client), AuthorizationCompleted)


def stored(expires_at: float | None) -> Token:
    return Token(access_token="stored-1", token_type="Bearer", expires_at=expires_at, scopes=(),
                 refresh_token=None, issuer=AS, serial=0)


def test_stored_token_is_used_until_refused() -> None:
    client = auth_client(stored_token=stored(None))
    server, mock, init = start(client)
    assert init.header("authorization") == "Bearer stored-1"
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    (again,) = mock.serve(now=0.0)
    assert again.header("authorization") == "Bearer test-token-1"
    assert client.token is not None and client.token.access_token == "test-token-1"


def test_expired_stored_token_is_not_sent() -> None:
    client = auth_client(stored_token=stored(-1.0))
    _, _, init = start(client)
    assert init.header("authorization") is None


def test_authorize_before_any_refusal() -> None:
    client, _, mock = plain_ready_client()
    client.authorize(now=1.0)
    assert mock.serve(now=1.0) == []
    assert mock.paths() == CODE_FLOW
    assert of_type(drain_events(client), AuthorizationCompleted)


def test_client_credentials_need_no_browser() -> None:
    oauth = OAuthConfig(grant=ClientCredentialsGrant(),
                        client=ClientCredentials(client_id="c", client_secret="s"))
    client = auth_client(oauth=oauth, headless=False)
    server, mock, init = start(client)
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    (again,) = mock.serve(now=0.0)
    assert mock.paths() == [CODE_FLOW[0], CODE_FLOW[1], "POST /token"]
    assert form(mock.oauth[-1])["grant_type"] == "client_credentials"
    assert mock.oauth[-1].header("authorization") == "Basic " + base64.b64encode(b"c:s").decode()
    assert again.header("authorization") == "Bearer test-token-1"


# ------------------------------------------------------------------ the rest


def test_other_side_requests_that_fail_still_become_events() -> None:
    client, server, mock = plain_ready_client(config=ClientConfig(max_response_bytes=64))
    server.refuse = 1
    refused = client.side_request("GET", "http://localhost:4000/a", (), b"", now=1.0)
    mock.serve(now=1.0)
    large = client.side_request("GET", "http://localhost:4000/.well-known/oauth-authorization-server", (),
                                b"", now=1.0)
    mock.serve(now=1.0)
    failures = of_type(drain_events(client), SideRequestFailed)
    assert [(f.tag, f.message) for f in failures if isinstance(f, SideRequestFailed)] == [
        (refused, "cannot connect to localhost:4000: Connection refused"),
        (large, "the response is too large")]


def test_other_side_requests_still_become_events() -> None:
    client, _, mock = plain_ready_client()
    tag = client.side_request("GET", "http://localhost:4000/elsewhere", (), b"", now=1.0)
    mock.serve(now=1.0)
    (answer,) = of_type(drain_events(client), SideResponseReceived)
    assert isinstance(answer, SideResponseReceived)
    assert (answer.tag, answer.status) == (tag, 404)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"headers": {"Authorization": "Bearer x"}}, "exclude"),
    ({"entropy": b"short"}, "entropy"),
    ({"redirect_timeout": 0.0}, "redirect_timeout"),
])
def test_bad_settings_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(LocalProtocolError, match=message):
        auth_client(**kwargs)


def test_entropy_can_be_fed_later() -> None:
    client = auth_client(headless=False)
    server, mock, init = start(client)
    client.feed_entropy(b"more", clock_offset=0.0)
    client.feed_entropy(b"and more")
    server.reply(init, 401, now=0.0, headers=CHALLENGE)
    mock.serve(now=0.0)
    (redirect,) = of_type(drain_events(client), AuthorizationRedirect)
    assert isinstance(redirect, AuthorizationRedirect)
    assert len(redirect.state) >= 16

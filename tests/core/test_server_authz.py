"""Authorization for servers in the core (``server.authz`` in ``HttpServer``): RFC 9728
metadata, the bearer challenge, verdicts handed in by the driver, their cache, per-tool
scopes, sessions bound to the principal. Pure: virtual time, exact headers, no sockets."""

from __future__ import annotations

import json
from typing import Any

import pytest
from server_helpers import ENTROPY, SECRET
from server_http_helpers import MODERN_HEADERS, RawHttp, Response, modern_body

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.server import (
    AuthSettings,
    Context,
    MCPServer,
    Principal,
    RejectReason,
    TokenRejected,
    TokenVerdict,
    TokenVerificationRequired,
    VerifierUnavailable,
)
from mcp_sansio.server.http import HttpConfig, HttpServer
from mcp_sansio_base.server import ServerRunner
from mcp_sansio_base.steploop import StepLoop

RESOURCE = "https://mcp.example.com/mcp"
ISSUER = "https://as.example.com"
PRM_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
TOKEN = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2VuLXRleHQ.c2lnbmF0dXJl"
OTHER = "b3RoZXItdG9rZW4"
ALICE = Principal(subject="alice", client_id="c1", issuer=ISSUER, scopes=("mcp",), expires_at=1000.0)
BOB = Principal(subject="bob", client_id="c1", issuer=ISSUER, scopes=("mcp",), expires_at=1000.0)
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


class Table:
    """A verifier answering from a table (the core never calls it; the runner does)."""

    def __init__(self, verdicts: dict[str, TokenVerdict] | None = None) -> None:
        self.verdicts = verdicts or {}
        self.calls: list[str] = []

    def verify(self, token: str) -> TokenVerdict:
        self.calls.append(token)
        return self.verdicts.get(token, TokenRejected(reason=RejectReason.BAD_SIGNATURE))


def settings(verifier: Table | None = None, **overrides: Any) -> AuthSettings:
    fields: dict[str, Any] = {"resource": RESOURCE, "authorization_servers": (ISSUER,),
                              "verifier": verifier or Table(), "required_scopes": ("mcp",)}
    fields.update(overrides)
    return AuthSettings(**fields)


def protected(app: MCPServer | None = None, **overrides: Any) -> HttpServer:
    if app is None:
        app = MCPServer("s")
        app.add_tool(lambda: "ok", name="noop")
    if app.auth is None:
        app.auth = settings(**overrides)
    return HttpServer(app, secret=SECRET, entropy=ENTROPY, config=HttpConfig.loopback())


def bearer(token: str = TOKEN, **more: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", **more}


def listing(token: str = TOKEN) -> dict[str, str]:
    """The headers of a 2026-07-28 ``tools/list`` with ``token``."""
    return bearer(token, **MODERN_HEADERS, **{"mcp-method": "tools/list"})


def tickets(server: HttpServer) -> list[TokenVerificationRequired]:
    found = []
    while (event := server.next_event()) is not None:
        if isinstance(event, TokenVerificationRequired):
            found.append(event)
    return found


def verified(server: HttpServer, conn: RawHttp, verdict: TokenVerdict, now: float = 0.0) -> Response:
    (ticket,) = tickets(server)
    server.token_verified(ticket.ticket, verdict, now=now)
    answer = conn.read()
    assert answer is not None
    return answer


def challenge(answer: Response) -> str:
    return answer.headers["www-authenticate"]


# ---------------------------------------------------------------- metadata


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource",
                                  "/.well-known/oauth-protected-resource/mcp"])
def test_protected_resource_metadata_is_served_without_a_token_at_both_paths(path: str) -> None:
    app = MCPServer("s")

    @app.tool(scopes=["files:write"])
    def write() -> str:
        return "ok"

    server = protected(app, resource_name="Files", resource_documentation="https://docs.example.com")
    answer = RawHttp(server).request("GET", target=path, accept="application/json")
    assert answer is not None and answer.status == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["access-control-allow-origin"] == "*"
    assert answer.json() == {
        "resource": RESOURCE, "authorization_servers": [ISSUER], "bearer_methods_supported": ["header"],
        "scopes_supported": ["mcp", "files:write"], "resource_name": "Files",
        "resource_documentation": "https://docs.example.com",
    }
    assert tickets(server) == []


def test_metadata_is_only_got() -> None:
    answer = RawHttp(protected()).request("POST", {}, target="/.well-known/oauth-protected-resource")
    assert answer is not None and answer.status == 405 and answer.headers["allow"] == "GET"


def test_without_auth_there_is_no_metadata() -> None:
    server = HttpServer(MCPServer("s"), secret=SECRET, entropy=ENTROPY, config=HttpConfig.loopback())
    answer = RawHttp(server).request("GET", target="/.well-known/oauth-protected-resource")
    assert answer is not None and answer.status == 404


def test_metadata_still_checks_the_host() -> None:
    answer = RawHttp(protected()).request("GET", target="/.well-known/oauth-protected-resource",
                                          headers={"host": "evil.example"})
    assert answer is not None and answer.status == 421


def test_configured_scopes_supported_replace_the_derived_ones() -> None:
    answer = RawHttp(protected(scopes_supported=("a", "b"))).request(
        "GET", target="/.well-known/oauth-protected-resource")
    assert answer is not None and answer.json()["scopes_supported"] == ["a", "b"]


# ---------------------------------------------------------------- the challenge


def test_a_request_without_a_token_gets_401_naming_the_metadata_and_scopes() -> None:
    server = protected()
    answer = RawHttp(server).request(body=INIT)
    assert answer is not None and answer.status == 401
    assert challenge(answer) == f'Bearer resource_metadata="{PRM_URL}", scope="mcp"'
    assert answer.json()["error"] == "invalid_token"
    assert tickets(server) == []


def test_without_required_scopes_the_challenge_names_none() -> None:
    answer = RawHttp(protected(required_scopes=())).request(body=INIT)
    assert answer is not None and challenge(answer) == f'Bearer resource_metadata="{PRM_URL}"'


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_every_method_of_the_endpoint_needs_the_token(method: str) -> None:
    answer = RawHttp(protected()).request(method, headers={"mcp-session-id": "x"}, accept="text/event-stream")
    assert answer is not None and answer.status == 401


def test_another_scheme_is_no_bearer_attempt_and_gets_the_plain_challenge() -> None:
    answer = RawHttp(protected()).request(body=INIT, headers={"authorization": "Basic dTpw"})
    assert answer is not None and answer.status == 401
    assert "error=" not in challenge(answer)


@pytest.mark.parametrize("value", ["Bearer", "Bearer a b", "Bearer a,b", 'Bearer "x"'])
def test_a_malformed_bearer_header_is_400_invalid_request(value: str) -> None:
    server = protected()
    answer = RawHttp(server).request(body=INIT, headers={"authorization": value})
    assert answer is not None and answer.status == 400
    assert challenge(answer) == (f'Bearer resource_metadata="{PRM_URL}", scope="mcp", '
                                 'error="invalid_request", error_description="the bearer token is malformed"')
    assert tickets(server) == []


def test_two_authorization_headers_are_400() -> None:
    conn = RawHttp(protected())
    conn.send_raw(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:8000\r\naccept: application/json\r\n"
                  b"content-type: application/json\r\nauthorization: Bearer a\r\nauthorization: Bearer b\r\n"
                  b"content-length: 2\r\n\r\n{}")
    answer = conn.read()
    assert answer is not None and answer.status == 400 and 'error="invalid_request"' in challenge(answer)


# ---------------------------------------------------------------- verdicts


def test_a_new_token_is_held_for_the_driver_and_its_repr_hides_it() -> None:
    server = protected()
    conn = RawHttp(server)
    assert conn.request(body=INIT, headers=bearer()) is None  # held: nothing answered yet
    (ticket,) = tickets(server)
    assert ticket.token == TOKEN
    assert TOKEN not in repr(ticket) and "<redacted>" in repr(ticket)
    server.token_verified(ticket.ticket, ALICE, now=0.0)
    answer = conn.read()
    assert answer is not None and answer.status == 200
    assert answer.json()["result"]["serverInfo"]["name"] == "s"


def test_a_verified_token_is_cached_and_costs_no_second_verification() -> None:
    server = protected()
    first = RawHttp(server)
    first.request(body=modern_body(1, "tools/list"), headers=listing())
    assert verified(server, first, ALICE).status == 200
    answer = RawHttp(server).request(body=modern_body(2, "tools/list"), headers=listing(),
                                     now=10.0)
    assert answer is not None and answer.status == 200
    assert tickets(server) == []


def test_requests_with_one_token_share_one_verification() -> None:
    server = protected()
    a, b = RawHttp(server), RawHttp(server)
    a.request(body=modern_body(1, "tools/list"), headers=listing())
    b.request(body=modern_body(2, "tools/list"), headers=listing())
    (ticket,) = tickets(server)
    server.token_verified(ticket.ticket, ALICE, now=0.0)
    assert [a.read().status, b.read().status] == [200, 200]  # type: ignore[union-attr]


@pytest.mark.parametrize("reason", list(RejectReason))
def test_a_rejected_token_is_401_invalid_token_with_the_reason(reason: RejectReason) -> None:
    server = protected()
    conn = RawHttp(server)
    conn.request(body=INIT, headers=bearer())
    answer = verified(server, conn, TokenRejected(reason=reason, detail=f"about {TOKEN}"))
    assert answer.status == 401
    assert challenge(answer) == (f'Bearer resource_metadata="{PRM_URL}", scope="mcp", error="invalid_token", '
                                 f'error_description="{reason.value}"')
    assert TOKEN not in answer.body.decode() and TOKEN not in str(answer.headers)


def test_a_rejection_is_cached_too() -> None:
    server = protected()
    conn = RawHttp(server)
    conn.request(body=INIT, headers=bearer())
    verified(server, conn, TokenRejected(reason=RejectReason.WRONG_AUDIENCE))
    again = RawHttp(server).request(body=INIT, headers=bearer(), now=1.0)
    assert again is not None and again.status == 401 and tickets(server) == []


def test_a_principal_past_its_expiry_is_401_expired() -> None:
    server = protected()
    conn = RawHttp(server)
    conn.request(body=INIT, headers=bearer())
    answer = verified(server, conn, Principal(subject="a", scopes=("mcp",), expires_at=5.0), now=6.0)
    assert answer.status == 401 and 'error_description="the access token expired"' in challenge(answer)


def test_the_cache_never_outlives_the_token_and_the_wall_offset_counts() -> None:
    app = MCPServer("s", auth=settings())
    app.add_tool(lambda: "ok", name="noop")
    server = HttpServer(app, secret=SECRET, entropy=ENTROPY, config=HttpConfig.loopback(), wall_offset=1000.0)
    conn = RawHttp(server)
    conn.request(body=modern_body(1, "tools/list"), headers=listing())
    verdict = Principal(subject="a", scopes=("mcp",), expires_at=1050.0)  # POSIX; now 0 is POSIX 1000
    assert verified(server, conn, verdict).status == 200
    late = RawHttp(server).request(body=modern_body(2, "tools/list"), headers=listing(),
                                   now=50.0)
    assert late is None  # the cached verdict ended with the token: verified again
    assert len(tickets(server)) == 1


def test_cached_verdicts_are_reverified_after_cache_ttl() -> None:
    server = protected(cache_ttl=60.0)
    conn = RawHttp(server)
    conn.request(body=modern_body(1, "tools/list"), headers=listing())
    verified(server, conn, Principal(subject="a", scopes=("mcp",)))
    assert RawHttp(server).request(body=modern_body(2, "tools/list"), headers=listing(),
                                   now=59.0) is not None
    assert RawHttp(server).request(body=modern_body(3, "tools/list"), headers=listing(),
                                   now=60.0) is None


def test_the_cache_is_bounded() -> None:
    server = protected(cache_size=2)
    for n, token in enumerate(["t1", "t2", "t3"]):
        conn = RawHttp(server)
        conn.request(body=modern_body(n, "tools/list"), headers=listing(token))
        verified(server, conn, ALICE)
    assert RawHttp(server).request(body=modern_body(9, "tools/list"), headers=listing("t3"))
    assert RawHttp(server).request(body=modern_body(9, "tools/list"),
                                   headers=listing("t1")) is None  # evicted
    assert len(tickets(server)) == 1


def test_an_unavailable_verifier_is_503_and_not_cached() -> None:
    server = protected()
    conn = RawHttp(server)
    conn.request(body=INIT, headers=bearer())
    answer = verified(server, conn, VerifierUnavailable(detail="jwks down"))
    assert answer.status == 503 and answer.headers["retry-after"] == "5"
    assert answer.json()["error"] == "temporarily_unavailable"
    assert RawHttp(server).request(body=INIT, headers=bearer(), now=1.0) is None
    assert len(tickets(server)) == 1


def test_a_verdict_that_never_comes_is_503_at_the_deadline_and_a_late_one_is_ignored() -> None:
    server = protected(verify_timeout=10.0)
    conn = RawHttp(server)
    conn.request(body=INIT, headers=bearer(), now=1.0)
    (ticket,) = tickets(server)
    assert server.next_deadline() == 11.0
    server.handle_timeout(10.9)
    assert conn.read() is None
    server.handle_timeout(11.0)
    assert conn.read().status == 503  # type: ignore[union-attr]
    server.token_verified(ticket.ticket, ALICE, now=12.0)  # nobody waits for it
    assert server.gate is not None and server.gate.next_deadline() is None


def test_a_client_that_left_while_its_token_was_verified_gets_nothing() -> None:
    server = protected()
    conn = RawHttp(server)
    conn.request(body=INIT, headers=bearer())
    (ticket,) = tickets(server)
    server.connection_lost(conn.id, 1.0)
    server.token_verified(ticket.ticket, ALICE, now=2.0)
    assert server.connections_with_data() == []
    assert tickets(server) == []


def test_missing_required_scopes_are_403_insufficient_scope() -> None:
    server = protected(required_scopes=("mcp", "read"))
    conn = RawHttp(server)
    conn.request(body=INIT, headers=bearer())
    answer = verified(server, conn, ALICE)
    assert answer.status == 403
    assert challenge(answer) == (f'Bearer resource_metadata="{PRM_URL}", scope="mcp read", '
                                 'error="insufficient_scope", '
                                 'error_description="the access token lacks the scopes read"')


# ---------------------------------------------------------------- per-tool scopes, the principal


def _scoped_app() -> MCPServer:
    app = MCPServer("s")

    @app.tool(scopes=["files:write"])
    def write(ctx: Context) -> str:
        assert ctx.principal is not None
        return f"written by {ctx.principal.subject}"

    @app.tool()
    def whoami(ctx: Context) -> str:
        principal = ctx.principal
        assert principal is not None and ctx.request.principal is principal
        return f"{principal.subject} {' '.join(principal.scopes)}"

    return app


def _call(tool: str) -> dict[str, object]:
    return modern_body(1, "tools/call", {"name": tool, "arguments": {}})


class _Runner:
    """The shared runner on a hand-stepped loop: ``pump`` runs the verifier and handlers."""

    def __init__(self, server: HttpServer) -> None:
        self.loop = StepLoop(lambda: 0.0)
        self.runner = ServerRunner(server, self.loop)

    def pump(self) -> None:
        self.runner.pump()
        while self.loop.run_ready():
            self.runner.pump()


def _runner(server: HttpServer) -> _Runner:
    return _Runner(server)


def test_a_tool_needing_a_scope_the_token_lacks_is_403_naming_what_a_step_up_needs() -> None:
    verifier = Table({TOKEN: Principal(subject="alice", issuer=ISSUER, scopes=("mcp", "openid", "other"))})
    server = protected(_scoped_app(), verifier=verifier, scopes_supported=("mcp", "files:write", "other"))
    runner = _runner(server)
    conn = RawHttp(server)
    conn.request(body=_call("write"), headers=bearer(**MODERN_HEADERS, **{"mcp-method": "tools/call",
                                                                           "mcp-name": "write"}))
    runner.pump()
    answer = conn.read()
    assert answer is not None and answer.status == 403
    assert challenge(answer) == (f'Bearer resource_metadata="{PRM_URL}", scope="mcp other files:write", '
                                 'error="insufficient_scope", '
                                 'error_description="the access token lacks the scopes files:write"')


def test_the_handler_sees_the_principal_and_a_scoped_tool_runs_with_its_scope() -> None:
    verifier = Table({TOKEN: Principal(subject="alice", issuer=ISSUER, scopes=("mcp", "files:write"))})
    server = protected(_scoped_app(), verifier=verifier)
    runner = _runner(server)
    results = []
    for tool in ("whoami", "write"):
        conn = RawHttp(server)
        conn.request(body=_call(tool), headers=bearer(**MODERN_HEADERS, **{"mcp-method": "tools/call",
                                                                            "mcp-name": tool}))
        runner.pump()
        answer = conn.read()
        assert answer is not None and answer.status == 200
        results.append(answer.json()["result"]["content"][0]["text"])
    assert results == ["alice mcp files:write", "written by alice"]
    assert verifier.calls == [TOKEN]  # once: the verdict is cached


def test_scoped_tools_are_listed_to_every_token() -> None:
    verifier = Table({TOKEN: ALICE})
    server = protected(_scoped_app(), verifier=verifier)
    runner = _runner(server)
    conn = RawHttp(server)
    conn.request(body=modern_body(1, "tools/list"), headers=listing())
    runner.pump()
    assert [t["name"] for t in conn.read().json()["result"]["tools"]] == ["write", "whoami"]  # type: ignore[union-attr]


# ---------------------------------------------------------------- sessions bound to the principal


def _open_session(server: HttpServer, token: str) -> tuple[RawHttp, str]:
    conn = RawHttp(server)
    answer = conn.request(body=INIT, headers=bearer(token))
    if answer is None:  # a new token: the runner verified it
        answer = conn.read()
    assert answer is not None and answer.status == 200
    return conn, answer.headers["mcp-session-id"]


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
def test_a_session_used_with_another_principals_token_is_not_found(method: str) -> None:
    server = protected(verifier=Table({TOKEN: ALICE, OTHER: BOB}))
    runner = _runner(server)
    conn = RawHttp(server)
    conn.request(body=INIT, headers=bearer(TOKEN))
    runner.pump()
    session_id = conn.read().headers["mcp-session-id"]  # type: ignore[union-attr]
    intruder = RawHttp(server)
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"} if method == "POST" else None
    intruder.request(method, body, headers=bearer(OTHER, **{"mcp-session-id": session_id}),
                     accept="application/json, text/event-stream")
    runner.pump()
    answer = intruder.read()
    assert answer is not None and answer.status == 404
    assert answer.json()["error"]["message"] == "Session not found"
    owner = RawHttp(server).request("POST", {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                                    headers=bearer(TOKEN, **{"mcp-session-id": session_id}))
    assert owner is not None and owner.status == 200  # still there, still the owner's


def test_a_new_token_of_the_same_principal_keeps_its_session() -> None:
    refreshed = "cmVmcmVzaGVk"
    same_user = Principal(subject="alice", client_id="c2", issuer=ISSUER, scopes=("mcp", "x"))
    server = protected(verifier=Table({TOKEN: ALICE, refreshed: same_user}))
    runner = _runner(server)
    conn = RawHttp(server)
    conn.request(body=INIT, headers=bearer(TOKEN))
    runner.pump()
    session_id = conn.read().headers["mcp-session-id"]  # type: ignore[union-attr]
    later = RawHttp(server)
    later.request(body={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                  headers=bearer(refreshed, **{"mcp-session-id": session_id}))
    runner.pump()
    assert later.read().status == 200  # type: ignore[union-attr]


def test_the_identity_is_the_issuer_and_subject_or_else_the_client() -> None:
    assert ALICE.identity == f'["{ISSUER}","alice"]'
    assert Principal(subject=None, client_id="svc", issuer=ISSUER).identity == f'["{ISSUER}","client:svc"]'
    assert ALICE.identity != Principal(subject="alice", issuer="https://other.example").identity


# ---------------------------------------------------------------- settings


@pytest.mark.parametrize("overrides", [
    {"resource": "mcp.example.com/mcp"}, {"resource": "https://x/mcp#frag"}, {"authorization_servers": ()},
    {"authorization_servers": ("not a url",)}, {"required_scopes": ("a b",)}, {"required_scopes": ('a"',)},
    {"cache_size": 0}, {"verify_timeout": 0.0},
])
def test_settings_that_cannot_work_are_refused(overrides: dict[str, Any]) -> None:
    with pytest.raises(LocalProtocolError):
        settings(**overrides)


@pytest.mark.parametrize("scopes", ["files:write", ["a b"], [""]])
def test_tool_scopes_must_be_scope_tokens(scopes: Any) -> None:
    app = MCPServer("s")
    with pytest.raises(LocalProtocolError):
        app.add_tool(lambda: "x", name="t", scopes=scopes)


def test_the_metadata_url_follows_the_resource_path() -> None:
    from mcp_sansio.server.authz import protected_resource_paths, resource_metadata_url

    root = settings(resource="https://mcp.example.com")
    assert resource_metadata_url(root) == "https://mcp.example.com/.well-known/oauth-protected-resource"
    deep = settings(resource="https://mcp.example.com/tenant/mcp/")
    assert resource_metadata_url(deep) == ("https://mcp.example.com/.well-known/oauth-protected-resource"
                                           "/tenant/mcp")
    assert protected_resource_paths(deep, "/mcp") == {
        "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/tenant/mcp",
        "/.well-known/oauth-protected-resource/mcp"}


def test_stdio_ignores_verdicts() -> None:
    from mcp_sansio.server import StdioServer

    server = StdioServer(MCPServer("s", auth=settings()), secret=SECRET, entropy=ENTROPY)
    server.token_verified(1, ALICE, now=0.0)
    assert server.next_event() is None and json.loads(b"{}") == {}


def test_the_event_hides_the_token_from_rich_too() -> None:
    event = TokenVerificationRequired(ticket=3, token=TOKEN)
    assert event.__rich_repr__() == [("ticket", 3), ("token", "<redacted>")]


def test_metadata_without_any_scope_names_none() -> None:
    server = protected(required_scopes=())
    answer = RawHttp(server).request("GET", target="/.well-known/oauth-protected-resource")
    assert answer is not None and "scopes_supported" not in answer.json()


def test_a_server_without_auth_ignores_verdicts() -> None:
    server = HttpServer(MCPServer("s"), secret=SECRET, entropy=ENTROPY, config=HttpConfig.loopback())
    assert server.gate is None
    server.token_verified(1, ALICE, now=0.0)
    assert server.next_event() is None


def test_with_auth_sessions_count_against_the_principal_not_the_address() -> None:
    app = MCPServer("s", auth=settings(Table({TOKEN: ALICE, OTHER: BOB})))
    config = HttpConfig.loopback(max_sessions_per_peer=1)
    server = HttpServer(app, secret=SECRET, entropy=ENTROPY, config=config)
    runner = _runner(server)

    def initialize(token: str, peer: str) -> str:
        conn = RawHttp(server, peer=peer)
        conn.request(body=INIT, headers=bearer(token))
        runner.pump()
        answer = conn.read()
        assert answer is not None and answer.status == 200
        return answer.headers["mcp-session-id"]

    def alive(token: str, session_id: str) -> bool:
        conn = RawHttp(server, peer="10.0.0.9")
        answer = conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                              headers=bearer(token, **{"mcp-session-id": session_id}))
        assert answer is not None
        return answer.status == 200

    # Alice and Bob behind one address both get a session (the cap is per principal);
    # Alice from a second address counts against Alice: her idle first session goes.
    alice_first, bob = initialize(TOKEN, "10.0.0.1"), initialize(OTHER, "10.0.0.1")
    assert alive(TOKEN, alice_first) and alive(OTHER, bob)
    alice_second = initialize(TOKEN, "10.0.0.2")
    assert [alive(TOKEN, alice_first), alive(OTHER, bob), alive(TOKEN, alice_second)] == [False, True, True]


def test_a_refusal_for_an_unknown_key_is_not_remembered_since_a_rotation_may_publish_it() -> None:
    server = protected()
    conn = RawHttp(server)
    conn.request(body=INIT, headers=bearer())
    assert verified(server, conn, TokenRejected(reason=RejectReason.UNKNOWN_KEY)).status == 401
    again = RawHttp(server)
    assert again.request(body=INIT, headers=bearer(), now=1.0) is None  # asked again
    assert verified(server, again, ALICE, now=1.0).status == 200  # the new key was fetched meanwhile


# ---------------------------------------------------------------- requestState bound to the principal


def _confirming_app() -> MCPServer:
    app = MCPServer("s")

    @app.tool()
    async def wipe(ctx: Context) -> str:
        answer = await ctx.elicit("Wipe everything?", {"type": "object"})
        assert ctx.principal is not None
        return f"{answer.action} by {ctx.principal.subject}"

    return app


def _wipe(server: HttpServer, runner: _Runner, token: str, rid: int, **params: object) -> dict[str, Any]:
    conn = RawHttp(server)
    body = modern_body(rid, "tools/call", {"name": "wipe", "arguments": {}, **params},
                       capabilities={"elicitation": {}})
    conn.request(body=body, headers=bearer(token, **MODERN_HEADERS, **{"mcp-method": "tools/call",
                                                                        "mcp-name": "wipe"}))
    runner.pump()
    answer = conn.read()
    assert answer is not None and answer.status == 200
    message: dict[str, Any] = answer.json()
    return message


def test_a_request_state_minted_for_one_principal_is_refused_to_another() -> None:
    # MCP 2026-07-28 "Multi Round-Trip Requests": to prevent replay, servers SHOULD bind
    # the state to the authenticated principal and reject it from a different one.
    server = protected(_confirming_app(), verifier=Table({TOKEN: ALICE, OTHER: BOB}))
    runner = _runner(server)
    first = _wipe(server, runner, TOKEN, 1)["result"]
    assert first["resultType"] == "input_required"
    [key] = first["inputRequests"]
    answers = {key: {"action": "accept", "content": {}}}
    stolen = _wipe(server, runner, OTHER, 2, requestState=first["requestState"], inputResponses=answers)
    assert stolen["error"] == {"code": -32602,
                               "message": "Invalid params: requestState belongs to another request"}
    own = _wipe(server, runner, TOKEN, 3, requestState=first["requestState"], inputResponses=answers)
    assert own["result"]["content"][0]["text"] == "accept by alice"

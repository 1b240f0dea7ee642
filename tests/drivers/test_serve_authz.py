"""A protected server on every driver (``mcp-sansio serve --auth-*`` with asyncio, anyio,
trio, blocking) and as ASGI under uvicorn (``AsgiApp`` takes ``app.auth``), against a tiny
authorization server on 127.0.0.1 (its JWKS and a ``client_credentials`` token endpoint):
raw requests for the exact challenges, our client's OAuth for discovery and step-up, and
the server's whole output checked for token text at the end."""

from __future__ import annotations

import contextlib
import http.client
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest
from authz_helpers import Keys, TinyAuthServer, tiny_auth_server
from peer_servers import free_port, stop_process

from mcp_sansio import ClientConfig
from mcp_sansio.auth import ClientCredentials, ClientCredentialsGrant
from mcp_sansio_oauth import OAuth
from mcp_sansio_sync import connect_http

APP = str(Path(__file__).parent.parent / "servers" / "authz_app.py")
TARGETS = ["asyncio", "anyio", "trio", "sync", "asgi"]
MODERN = {"mcp-protocol-version": "2026-07-28"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}


class Served:
    """A protected server process: its port, canonical URI and output."""

    def __init__(self, port: int, output: IO[bytes]) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.output = output

    def text(self) -> str:
        self.output.seek(0)
        return self.output.read().decode(errors="replace")


def command(target: str, port: int, jwks: str, issuer: str) -> list[str]:
    audience = f"http://127.0.0.1:{port}/mcp"
    if target == "asgi":
        return [sys.executable, APP, "--port", str(port), "--jwks", jwks, "--issuer", issuer,
                "--audience", audience]
    return [sys.executable, "-m", "mcp_sansio_cli", "serve", APP, "--driver", target, "--http", str(port),
            "--auth-jwks", jwks, "--auth-issuer", issuer, "--auth-audience", audience, "--auth-scope", "mcp"]


@contextmanager
def serving(target: str, jwks: str, issuer: str) -> Iterator[Served]:
    port = free_port()
    with tempfile.TemporaryFile() as output:
        proc = subprocess.Popen(command(target, port, jwks, issuer), stdin=subprocess.DEVNULL, stdout=output,
                                stderr=subprocess.STDOUT)
        served = Served(port, output)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    status, _, _ = get(served, "/.well-known/oauth-protected-resource")
                    if status == 200:
                        break
                except OSError:
                    pass
                assert proc.poll() is None, served.text()
                assert time.monotonic() < deadline, served.text()
                time.sleep(0.05)
            yield served
        finally:
            stop_process(proc)


def request(served: Served, method: str, path: str, body: object = None,
            headers: Mapping[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=20)
    try:
        data = None if body is None else json.dumps(body).encode()
        fields = {"accept": "application/json, text/event-stream", **({"content-type": "application/json"}
                                                                      if data is not None else {})}
        conn.request(method, path, body=data, headers={**fields, **(headers or {})})
        answer = conn.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        conn.close()


def get(served: Served, path: str) -> tuple[int, dict[str, str], bytes]:
    return request(served, "GET", path)


def post(served: Served, body: object, token: str | None = None,
         **headers: str) -> tuple[int, dict[str, str], bytes]:
    auth = {} if token is None else {"authorization": f"Bearer {token}"}
    return request(served, "POST", "/mcp", body, {**auth, **headers})


def text(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined, no-any-return]


def metadata_url(served: Served) -> str:
    return f"http://127.0.0.1:{served.port}/.well-known/oauth-protected-resource/mcp"


@pytest.fixture(scope="module")
def tiny() -> Iterator[TinyAuthServer]:
    with tiny_auth_server(Keys()) as server:
        yield server


@pytest.fixture(scope="module", params=TARGETS)
def served(request: pytest.FixtureRequest, tiny: TinyAuthServer) -> Iterator[Served]:
    with serving(str(request.param), tiny.jwks_url, tiny.url) as server:
        yield server


def test_no_token_is_401_with_the_challenge(served: Served) -> None:
    status, headers, _ = post(served, INIT)
    assert status == 401
    assert headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url(served)}", scope="mcp"'


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource",
                                  "/.well-known/oauth-protected-resource/mcp"])
def test_the_metadata_is_public_at_both_paths(served: Served, tiny: TinyAuthServer, path: str) -> None:
    status, headers, body = get(served, path)
    assert status == 200 and headers["content-type"] == "application/json"
    assert json.loads(body) == {"resource": served.url, "authorization_servers": [tiny.url],
                                "bearer_methods_supported": ["header"],
                                "scopes_supported": ["mcp", "files:write"]}


def test_a_good_token_reaches_the_tool_with_its_principal(served: Served, tiny: TinyAuthServer) -> None:
    token = tiny.mint(served.url, scope="mcp files:read")
    with connect_http(served.url, headers={"authorization": f"Bearer {token}"}) as client:
        assert text(client.call_tool("whoami", {})) == "alice mcp files:read"
    with connect_http(served.url, headers={"authorization": f"Bearer {token}"},
                      config=ClientConfig(protocol="2025-11-25")) as client:
        assert client.session_id
        assert text(client.call_tool("whoami", {})) == "alice mcp files:read"


def _hs256_with_public_key(tiny: TinyAuthServer, audience: str) -> str:
    import base64
    import hashlib
    import hmac

    from cryptography.hazmat.primitives import serialization

    pem = tiny.keys.rsa1.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo)
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","kid":"k1"}').rstrip(b"=")
    claims = {"iss": tiny.url, "aud": audience, "sub": "eve", "scope": "mcp", "exp": int(time.time()) + 300}
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=")
    mac = hmac.new(pem, header + b"." + body, hashlib.sha256).digest()
    signature = base64.urlsafe_b64encode(mac).rstrip(b"=")
    return (header + b"." + body + b"." + signature).decode()


def _alg_none(tiny: TinyAuthServer, audience: str) -> str:
    import base64

    claims = {"iss": tiny.url, "aud": audience, "sub": "eve", "scope": "mcp", "exp": int(time.time()) + 300}
    return (base64.urlsafe_b64encode(b'{"alg":"none"}').rstrip(b"=") + b"."
            + base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=") + b".").decode()


REFUSED: dict[str, Any] = {
    "wrong audience": lambda t, aud: t.mint(aud.replace("/mcp", "/other")),
    "another resource": lambda t, aud: t.mint("https://api.example.com/"),
    "expired": lambda t, aud: t.mint(aud, lifetime=-300),
    "not yet valid": lambda t, aud: t.mint(aud, nbf=int(time.time()) + 600),
    "bad signature": lambda t, aud: t.mint(aud, key=t.keys.rsa2, kid="k1"),
    "unknown kid": lambda t, aud: t.mint(aud, key=t.keys.rsa2, kid="nobody-knows"),
    "alg none": _alg_none,
    "hs256 with the public key": _hs256_with_public_key,
    "another issuer": lambda t, aud: t.mint(aud, issuer="http://127.0.0.1:1"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_bad_token_is_401_invalid_token(served: Served, tiny: TinyAuthServer, case: str) -> None:
    token = REFUSED[case](tiny, served.url)
    status, headers, body = post(served, INIT, token)
    assert status == 401, body
    challenge = headers["www-authenticate"]
    assert challenge.startswith(f'Bearer resource_metadata="{metadata_url(served)}", scope="mcp", '
                                'error="invalid_token", error_description="')
    assert token not in challenge and token not in body.decode()


def test_a_token_without_the_servers_scope_is_403(served: Served, tiny: TinyAuthServer) -> None:
    status, headers, _ = post(served, INIT, tiny.mint(served.url, scope="files:read"))
    assert status == 403
    assert headers["www-authenticate"] == (
        f'Bearer resource_metadata="{metadata_url(served)}", scope="mcp", error="insufficient_scope", '
        'error_description="the access token lacks the scopes mcp"')


def test_a_tool_needing_a_scope_the_token_lacks_is_403_naming_it(served: Served,
                                                                 tiny: TinyAuthServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "write", "arguments": {},
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}
    status, headers, _ = post(served, body, tiny.mint(served.url, scope="mcp"), **MODERN,
                              **{"mcp-method": "tools/call", "mcp-name": "write"})
    assert status == 403
    assert headers["www-authenticate"] == (
        f'Bearer resource_metadata="{metadata_url(served)}", scope="mcp files:write", '
        'error="insufficient_scope", error_description="the access token lacks the scopes files:write"')


def test_a_session_used_with_another_users_token_is_not_found(served: Served, tiny: TinyAuthServer) -> None:
    alice, bob = tiny.mint(served.url, subject="alice"), tiny.mint(served.url, subject="bob")
    status, headers, _ = post(served, INIT, alice)
    assert status == 200
    session = {"mcp-session-id": headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    status, _, body = post(served, ping, bob, **session)
    assert status == 404 and json.loads(body)["error"]["message"] == "Session not found"
    status, _, _ = request(served, "DELETE", "/mcp", None, {"authorization": f"Bearer {bob}", **session})
    assert status == 404
    status, _, _ = post(served, ping, alice, **session)
    assert status == 200  # untouched


def test_our_client_discovers_the_authorization_server_and_steps_up(served: Served,
                                                                    tiny: TinyAuthServer) -> None:
    credentials = ClientCredentials(client_id="svc", client_secret="s")
    oauth = OAuth(grant=ClientCredentialsGrant(), client=credentials)
    with connect_http(served.url, auth=oauth, config=ClientConfig(request_timeout=20.0)) as client:
        assert text(client.call_tool("whoami", {})) == "service mcp"
        assert text(client.call_tool("write", {})) == "written"  # after a step-up to files:write


def test_no_token_text_reaches_the_servers_output(served: Served, tiny: TinyAuthServer) -> None:
    text = served.text()
    leaked = [token[:20] for token in tiny.minted if token in text or token.split(".")[-1] in text]
    assert leaked == []


@pytest.mark.parametrize("target", TARGETS)
def test_an_unreachable_key_set_is_503_at_once_never_a_hang(tiny: TinyAuthServer, target: str) -> None:
    dead = f"http://127.0.0.1:{free_port()}/jwks"
    with serving(target, dead, tiny.url) as served:
        token = tiny.mint(served.url)
        started = time.monotonic()
        for _ in range(2):
            status, headers, _ = post(served, INIT, token)
            assert status == 503 and headers["retry-after"] == "5"
        assert time.monotonic() - started < 10
        status, _, _ = post(served, INIT)
        assert status == 401  # and the server still answers


# ---------------------------------------------------------------- in-process: every log record


@contextmanager
def in_process(driver: str, app: Any) -> Iterator[Served]:
    """``serve_http`` of ``driver`` in a thread of this process (its log records reach caplog)."""
    import asyncio
    import threading

    import mcp_sansio_asyncio.serve
    import mcp_sansio_sync.serve

    ready: list[int] = []
    stop = threading.Event()
    loop = asyncio.new_event_loop()
    holder: list[asyncio.Task[None]] = []

    def run() -> None:
        if driver == "sync":
            mcp_sansio_sync.serve.serve_http(app, port=0, ready=ready.append, stop=stop)
            return

        async def main() -> None:
            holder.append(asyncio.current_task())  # type: ignore[arg-type]
            await mcp_sansio_asyncio.serve.serve_http(app, port=0, ready=ready.append)

        asyncio.set_event_loop(loop)
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not ready:
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.02)
    try:
        with tempfile.TemporaryFile() as output:
            yield Served(ready[0], output)
    finally:
        stop.set()
        if holder:
            loop.call_soon_threadsafe(holder[0].cancel)
        thread.join(20)


@pytest.mark.parametrize("driver", ["sync", "asyncio"])
def test_no_token_text_in_any_log_record_even_at_debug(tiny: TinyAuthServer, driver: str,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from mcp_sansio.server import AuthSettings, MCPServer
    from mcp_sansio_authz import JwtVerifier

    caplog.set_level(logging.DEBUG)
    app = MCPServer("logged")
    app.add_tool(lambda: "ok", name="noop")
    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    app.auth = AuthSettings(resource=audience, authorization_servers=(tiny.url,), required_scopes=("mcp",),
                            verifier=JwtVerifier(jwks_url=tiny.jwks_url, issuer=tiny.url, audience=audience))

    class Raising:
        def verify(self, token: str) -> Any:
            raise RuntimeError(f"cannot check {token}")

    tokens = [tiny.mint(audience), tiny.mint("https://elsewhere.example"), tiny.mint(audience, scope="x"),
              tiny.mint(audience, kid="unknown"), _alg_none(tiny, audience)]
    with in_process(driver, app) as served:
        for token in tokens:
            post(served, INIT, token)
    app.auth = AuthSettings(resource=audience, authorization_servers=(tiny.url,), verifier=Raising())
    secret = tiny.mint(audience)
    tokens.append(secret)
    with in_process(driver, app) as served:
        status, _, body = post(served, INIT, secret)
        assert status == 503 and secret not in body.decode()
    records = [f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records]
    assert any("the token verifier raised RuntimeError" in r for r in records)
    assert [t[:16] for t in tokens if any(t in r or t.split(".")[1] in r for r in records)] == []


# ---------------------------------------------------------------- WebSocket


@pytest.mark.parametrize("driver", ["asyncio", "anyio", "trio", "sync"])
def test_a_websocket_upgrade_needs_the_token(tiny: TinyAuthServer, driver: str) -> None:
    import socket

    from mcp_sansio_sync import connect_websocket

    port = free_port()
    audience = f"http://127.0.0.1:{port}/mcp"
    args = [sys.executable, "-m", "mcp_sansio_cli", "serve", APP, "--driver", driver,
            "--websocket", str(port), "--auth-jwks", tiny.jwks_url, "--auth-issuer", tiny.url,
            "--auth-audience", audience, "--auth-scope", "mcp"]
    with tempfile.TemporaryFile() as output:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert proc.poll() is None and time.monotonic() < deadline
                    time.sleep(0.05)
            upgrade = (f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\n"
                       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                       "Sec-WebSocket-Protocol: mcp\r\n\r\n")
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(upgrade.encode())
                head = sock.recv(65536).decode()
            assert head.startswith("HTTP/1.1 401 ")
            assert (f'www-authenticate: Bearer resource_metadata="http://127.0.0.1:{port}/.well-known/'
                    'oauth-protected-resource/mcp", scope="mcp"') in head
            bearer = {"authorization": f"Bearer {tiny.mint(audience)}"}
            with connect_websocket(f"ws://127.0.0.1:{port}/", headers=bearer) as client:
                assert text(client.call_tool("whoami", {})) == "alice mcp"
        finally:
            stop_process(proc)


@pytest.mark.parametrize("target", ["asyncio", "anyio", "trio", "asgi"])
def test_a_hanging_key_set_never_blocks_the_event_loop(tiny: TinyAuthServer, target: str) -> None:
    import socket
    import threading

    hanging = socket.create_server(("127.0.0.1", 0))  # connections are accepted, never answered
    hanging.settimeout(30)
    try:
        jwks = f"http://127.0.0.1:{hanging.getsockname()[1]}/jwks"
        with serving(target, jwks, tiny.url) as served:
            token = tiny.mint(served.url)
            verdicts: list[int] = []
            waiting = threading.Thread(target=lambda: verdicts.append(post(served, INIT, token)[0]))
            waiting.start()
            # the key set is fetched on first use: its connection arriving means the
            # verification is under way in a worker thread (a fixed sleep could end before
            # that on a loaded machine, and the next request would then prove nothing)
            fetch, _ = hanging.accept()
            with fetch:
                started = time.monotonic()
                status, _, _ = post(served, INIT)
                assert status == 401 and time.monotonic() - started < 2.0  # the loop still serves
                waiting.join(30)
            assert verdicts == [503]  # the fetch timed out (5 s): unavailable, not a hang
    finally:
        hanging.close()


@pytest.mark.parametrize(("driver", "status"), [("asyncio", 200), ("sync", 503)])
def test_an_async_verifier_is_awaited_on_the_loop(driver: str, status: int) -> None:
    import asyncio

    from mcp_sansio.server import AuthSettings, MCPServer, Principal

    class AsyncVerifier:
        async def verify(self, token: str) -> Principal:
            await asyncio.sleep(0.01)  # an async HTTP client, say
            return Principal(subject="alice", scopes=("mcp",))

    app = MCPServer("async-verified")
    app.auth = AuthSettings(resource="http://127.0.0.1:1/mcp", authorization_servers=("http://127.0.0.1:2",),
                            verifier=AsyncVerifier(), required_scopes=("mcp",))
    with in_process(driver, app) as served:
        # the blocking driver has no loop to await it on: the verifier's failure is a 503
        assert post(served, INIT, "YXN5bmM")[0] == status

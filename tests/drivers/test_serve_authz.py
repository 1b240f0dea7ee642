"""A protected server on every driver (``mcp-sansio serve --auth-*`` with asyncio, anyio,
trio, blocking) and as ASGI under uvicorn (``AsgiApp`` takes ``app.auth``), against a tiny
authorization server on 127.0.0.1 (its JWKS and a ``client_credentials`` token endpoint):
raw requests for the exact challenges, our client's OAuth for discovery and step-up, and
the server's whole output checked for token text at the end."""

from __future__ import annotations

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

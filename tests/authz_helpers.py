"""A tiny authorization server for the server-side authorization tests, on 127.0.0.1 in a
thread (stdlib ``http.server``): its JWKS (keys can be rotated, the endpoint taken down),
RFC 8414 metadata, a ``client_credentials`` token endpoint minting JWTs with PyJWT for the
``resource`` and ``scope`` asked, and an RFC 7662 introspection endpoint. Not a real
authorization server (the end-to-end tests use one); just enough to prove the resource
server's checks and our client's discovery and step-up against them."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

__all__ = ["Keys", "TinyAuthServer", "tiny_auth_server"]


class Keys:
    """Signing keys: two RSA (``rsa1`` published, ``rsa2`` for a rotation) and one EC."""

    def __init__(self) -> None:
        self.rsa1 = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.rsa2 = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())

    @staticmethod
    def jwk(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey, kid: str) -> dict[str, Any]:
        """The public JWK of ``key`` named ``kid``."""
        if isinstance(key, rsa.RSAPrivateKey):
            public: dict[str, Any] = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
        else:
            public = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
        return {**public, "kid": kid, "use": "sig"}


class TinyAuthServer:
    """The authorization server; ``url`` is its issuer."""

    def __init__(self, keys: Keys) -> None:
        self.keys = keys
        self.published: list[dict[str, Any]] = [keys.jwk(keys.rsa1, "k1"), keys.jwk(keys.ec, "e1")]
        self.down = False
        self.fetches = 0
        self.minted: list[str] = []
        self.introspection: dict[str, dict[str, Any]] = {}
        self.introspection_status = 200
        self.introspection_error = "server_error"
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self.jwks_url = self.url + "/jwks"
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), name="tiny-as",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def mint(self, audience: str | list[str] | None, *, scope: str | None = "mcp", key: Any = None,
             kid: str | None = "k1", alg: str = "RS256", issuer: str | None = None, lifetime: float = 300.0,
             subject: str = "alice", **claims: Any) -> str:
        """A JWT access token signed with ``key`` (``rsa1`` by default)."""
        now = time.time()
        payload: dict[str, Any] = {"iss": issuer or self.url, "sub": subject, "iat": int(now),
                                   "exp": int(now + lifetime), "client_id": "test-client",
                                   "jti": uuid.uuid4().hex}
        if audience is not None:
            payload["aud"] = audience
        if scope is not None:
            payload["scope"] = scope
        payload.update(claims)
        headers = {} if kid is None else {"kid": kid}
        signer = key if key is not None else self.keys.rsa1
        token = jwt.encode(payload, signer, algorithm=alg, headers=headers)
        self.minted.append(token)
        return token

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        tiny = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/jwks":
                    tiny.fetches += 1
                    if tiny.down:
                        self._send(503, {"error": "down"})
                    else:
                        self._send(200, {"keys": tiny.published})
                elif self.path == "/.well-known/oauth-authorization-server":
                    self._send(200, {
                        "issuer": tiny.url, "token_endpoint": tiny.url + "/token", "jwks_uri": tiny.jwks_url,
                        "introspection_endpoint": tiny.url + "/introspect",
                        "grant_types_supported": ["client_credentials"],
                        "token_endpoint_auth_methods_supported": ["client_secret_basic",
                                                                  "client_secret_post"],
                        "code_challenge_methods_supported": ["S256"],
                    })
                else:
                    self._send(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                form = {k: v[-1] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                if self.path == "/token" and form.get("grant_type") == "client_credentials":
                    scope = form.get("scope", "mcp")
                    token = tiny.mint(form.get("resource"), scope=scope, subject="service")
                    self._send(200, {"access_token": token, "token_type": "Bearer", "expires_in": 300,
                                     "scope": scope})
                elif self.path == "/introspect":
                    if not self.headers.get("authorization", "").startswith("Basic "):
                        self._send(401, {"error": "invalid_client"})
                    elif tiny.introspection_status != 200:
                        self._send(tiny.introspection_status, {"error": tiny.introspection_error})
                    else:
                        self._send(200, tiny.introspection.get(form.get("token", ""), {"active": False}))
                else:
                    self._send(400, {"error": "unsupported_grant_type"})

        return Handler


@contextmanager
def tiny_auth_server(keys: Keys | None = None) -> Iterator[TinyAuthServer]:
    """A started :class:`TinyAuthServer`, stopped at the end."""
    server = TinyAuthServer(keys or Keys())
    server.start()
    try:
        yield server
    finally:
        server.stop()

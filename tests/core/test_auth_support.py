"""Scripted servers for the ``test_auth_*`` modules (this module holds no tests).

The layout is the conformance suite's: an MCP server at ``http://localhost:3000/mcp`` and
an authorization server at ``http://localhost:4000``. Time starts at 0.0 and the tests
move it; every call gets fresh, distinct random bytes.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
from typing import Final
from urllib.parse import parse_qsl, urlsplit

from mcp_sansio.auth import (
    AuthFailure,
    AuthorizationCodeGrant,
    Authorized,
    AuthStep,
    ExchangeCode,
    Failed,
    FetchMetadata,
    Fresh,
    HttpRequestPlan,
    HttpResponse,
    HttpStep,
    OAuthConfig,
    OAuthFlow,
    Redirect,
    Register,
    SigningKey,
)
from mcp_sansio.urls import parse_url

MCP: Final = "http://localhost:3000/mcp"
MCP_URL: Final = parse_url(MCP)
AS: Final = "http://localhost:4000"
PRM_URL: Final = "http://localhost:3000/.well-known/oauth-protected-resource/mcp"
ROOT_PRM_URL: Final = "http://localhost:3000/.well-known/oauth-protected-resource"
AS_METADATA_URL: Final = AS + "/.well-known/oauth-authorization-server"
REDIRECT_URI: Final = "http://127.0.0.1:5000/callback"
UNIX_TIME: Final = 1_700_000_000.0
Json = dict[str, object]

_counter = itertools.count()


def fresh() -> Fresh:
    """Distinct random bytes for every call."""
    return Fresh(unix_time=UNIX_TIME, random=hashlib.sha512(str(next(_counter)).encode()).digest())


def config(**overrides: object) -> OAuthConfig:
    """An authorization code config with the loopback redirect URI."""
    fields: dict[str, object] = {"grant": AuthorizationCodeGrant(redirect_uri=REDIRECT_URI)}
    fields.update(overrides)
    return OAuthConfig(**fields)  # type: ignore[arg-type]  # the tests pass well-typed overrides


def new_flow(**overrides: object) -> OAuthFlow:
    return OAuthFlow(MCP_URL, config(**overrides))


def challenge(value: str = f'Bearer resource_metadata="{PRM_URL}"') -> tuple[tuple[str, str], ...]:
    return (("WWW-Authenticate", value),)


def prm(resource: str = MCP, servers: tuple[str, ...] = (AS,), **extra: object) -> Json:
    return {"resource": resource, "authorization_servers": list(servers), **extra}


def as_metadata(issuer: str = AS, **overrides: object) -> Json:
    """Metadata like the conformance mock's: DCR, PKCE S256, public clients only."""
    document: Json = {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/authorize",
        "token_endpoint": issuer + "/token",
        "registration_endpoint": issuer + "/register",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    }
    document.update(overrides)
    return {key: value for key, value in document.items() if value is not None}


def token(access: str = "test-token-1", **extra: object) -> Json:
    return {"access_token": access, "token_type": "Bearer", "expires_in": 3600, **extra}


def response(
    status: int = 200, document: Json | bytes | None = None, headers: tuple[tuple[str, str], ...] = ()
) -> HttpResponse:
    body = (
        document
        if isinstance(document, bytes)
        else b""
        if document is None
        else json.dumps(document).encode()
    )
    return HttpResponse(status=status, headers=headers, body=body)


def answer(
    flow: OAuthFlow,
    status: int = 200,
    document: Json | bytes | None = None,
    headers: tuple[tuple[str, str], ...] = (),
    now: float = 0.0,
) -> AuthStep:
    return flow.receive(response(status, document, headers), now=now, fresh=fresh())


def refuse(
    flow: OAuthFlow,
    status: int = 401,
    headers: tuple[tuple[str, str], ...] | None = None,
    serial: int | None = None,
    now: float = 0.0,
) -> AuthStep | None:
    """The MCP server refuses a request (by default: 401 naming the path-based PRM)."""
    return flow.receive_resource_response(
        status, challenge() if headers is None else headers, token_serial=serial, now=now, fresh=fresh()
    )


def url_of(step: AuthStep | None) -> str:
    assert isinstance(step, HttpStep), step
    return step.request.url


def failed(step: AuthStep | None, reason: AuthFailure) -> Failed:
    """``step`` is a :class:`Failed` for ``reason``."""
    assert isinstance(step, Failed), step
    assert step.reason is reason, step.message
    return step


def form(request: HttpRequestPlan) -> dict[str, str]:
    pairs = parse_qsl(request.body.decode(), keep_blank_values=True)
    assert len(pairs) == len(dict(pairs))
    return dict(pairs)


def body_json(request: HttpRequestPlan) -> Json:
    document = json.loads(request.body)
    assert isinstance(document, dict)
    return document


def header(request: HttpRequestPlan, name: str) -> str | None:
    return next((value for key, value in request.headers if key == name), None)


def basic_credentials(request: HttpRequestPlan) -> str | None:
    value = header(request, "authorization")
    if value is None:
        return None
    scheme, _, encoded = value.partition(" ")
    assert scheme == "Basic"
    return base64.b64decode(encoded).decode()


def query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def jwt_parts(compact: str) -> tuple[Json, Json, bytes]:
    """Header, claims and signature of a compact JWS."""

    def unpad(part: str) -> bytes:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))

    head, claims, signature = compact.split(".")
    return json.loads(unpad(head)), json.loads(unpad(claims)), unpad(signature)


def fake_key(alg: str = "ES256") -> SigningKey:
    """A key whose "signature" is a hash of the signing input (recognisable in tests)."""
    return SigningKey(
        alg=alg,
        sign=lambda data: hashlib.sha256(b"sig:" + data).digest(),
        public_jwk={"kty": "EC", "crv": "P-256", "x": "eA", "y": "eQ"},
        kid="k1",
    )


def to_metadata(flow: OAuthFlow, metadata: Json | None = None) -> AuthStep:
    """From a fresh flow, through the 401 and the PRM, to the answer to the AS metadata."""
    assert isinstance(refuse(flow), FetchMetadata)
    assert url_of(answer(flow, 200, prm())) == AS_METADATA_URL
    return answer(flow, 200, as_metadata() if metadata is None else metadata)


def to_redirect(flow: OAuthFlow, metadata: Json | None = None) -> Redirect:
    """Through discovery and DCR (as ``test-client-id``) to the browser redirect."""
    step = to_metadata(flow, metadata)
    if isinstance(step, Register):
        step = answer(flow, 201, {"client_id": "test-client-id", "client_secret": "test-client-secret"})
    assert isinstance(step, Redirect), step
    return step


def to_exchange(flow: OAuthFlow, metadata: Json | None = None, **params: str) -> ExchangeCode:
    redirect = to_redirect(flow, metadata)
    step = flow.receive_redirect(
        {"code": "test-auth-code", "state": redirect.state, **params}, now=0.0, fresh=fresh()
    )
    assert isinstance(step, ExchangeCode), step
    return step


def authorized(
    flow: OAuthFlow, metadata: Json | None = None, now: float = 0.0, **extra: object
) -> Authorized:
    """A whole default flow, ending with the token ``test-token-1`` (plus ``extra`` fields)."""
    to_exchange(flow, metadata)
    step = answer(flow, 200, {**token(), **extra}, now=now)
    assert isinstance(step, Authorized), step
    return step

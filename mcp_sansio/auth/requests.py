"""The HTTP requests of an OAuth flow, built as :class:`HttpRequestPlan` values.

Client authentication at the token endpoint follows RFC 6749 section 2.3.1
(``client_secret_basic``, with ``client_id`` also in the form as section 3.2.1 allows,
and ``client_secret_post``), RFC 7523 section 2.2
(``private_key_jwt``) or none at all (public clients send ``client_id``). A DPoP proof
(RFC 9449 section 5) is added when the authorization server binds tokens to our key.
"""

from __future__ import annotations

import base64
from typing import ClassVar, Final
from urllib.parse import quote, urlencode

import msgspec

from mcp_sansio.urls import Url

from .config import SigningKey
from .jose import Entropy, client_assertion, dpop_proof
from .steps import Headers, HttpRequestPlan, Redacted

__all__ = [
    "ASSERTION_TYPE",
    "ClientAuth",
    "TokenRequestSpec",
    "authorization_url",
    "json_post",
    "metadata_get",
    "render_token_request",
]

ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_ACCEPT_JSON: Final = ("accept", "application/json")
_JSON = msgspec.json.Encoder()


class ClientAuth(Redacted, frozen=True, kw_only=True):
    """Who we are at a token endpoint, and how we prove it.

    Attributes:
        client_id: the client identifier.
        method: a ``token_endpoint_auth_method``.
        secret: the client secret, for the two ``client_secret_*`` methods.
        key: the client's key, for ``private_key_jwt``.
        issuer: the authorization server the registration belongs to; ``None`` when it is
            valid at any (a metadata document URL, or credentials the host did not bind).
    """

    _secret: ClassVar[frozenset[str]] = frozenset({"secret"})

    client_id: str
    method: str
    secret: str | None = None
    key: SigningKey | None = None
    issuer: str | None = None


class TokenRequestSpec(Redacted, frozen=True, kw_only=True):
    """A token request before rendering, kept so it can be sent again with a DPoP nonce.

    Attributes:
        endpoint: the token endpoint.
        params: the grant's form parameters (hidden in ``repr``).
        client: how to authenticate, or ``None`` to send no client identity.
        audience: the issuer, the ``aud`` of a client assertion.
        dpop: the DPoP key when the server binds tokens to it.
    """

    _secret: ClassVar[frozenset[str]] = frozenset({"params"})

    endpoint: Url
    params: tuple[tuple[str, str], ...]
    client: ClientAuth | None
    audience: str
    dpop: SigningKey | None = None


def metadata_get(url: Url) -> HttpRequestPlan:
    """A GET of a JSON metadata document."""
    return HttpRequestPlan(method="GET", url=str(url), headers=(_ACCEPT_JSON,))


def json_post(url: Url, document: dict[str, object]) -> HttpRequestPlan:
    """A POST of a JSON document (dynamic client registration)."""
    return HttpRequestPlan(method="POST", url=str(url), body=_JSON.encode(document),
                           headers=(("content-type", "application/json"), _ACCEPT_JSON))


def authorization_url(endpoint: Url, params: list[tuple[str, str]]) -> str:
    """``endpoint`` with ``params`` added to its query."""
    joiner = "&" if "?" in endpoint.target else "?"
    return f"{endpoint}{joiner}{urlencode(params)}"


def render_token_request(
    spec: TokenRequestSpec, *, entropy: Entropy, unix_time: float, assertion_lifetime: float,
    nonce: str | None,
) -> HttpRequestPlan:
    """The form POST for ``spec``, with client authentication and a DPoP proof if needed.

    Args:
        spec: the request.
        entropy: for the ids of the client assertion and the proof.
        unix_time: their ``iat``.
        assertion_lifetime: seconds until the client assertion expires.
        nonce: the authorization server's latest ``DPoP-Nonce``.

    Returns:
        The request plan.
    """
    form = list(spec.params)
    headers: list[tuple[str, str]] = [("content-type", "application/x-www-form-urlencoded"), _ACCEPT_JSON]
    client = spec.client
    if client is not None:
        if client.method == "client_secret_basic" and client.secret is not None:
            pair = f"{quote(client.client_id, safe='')}:{quote(client.secret, safe='')}"
            headers.append(("authorization", "Basic " + base64.b64encode(pair.encode()).decode("ascii")))
            # RFC 6749 section 3.2.1 allows client_id in the form too, and some token
            # endpoints (the official MCP SDK's) require it; the secret stays in the header.
            form.append(("client_id", client.client_id))
        elif client.method == "private_key_jwt" and client.key is not None:
            assertion = client_assertion(client.key, client_id=client.client_id, audience=spec.audience,
                                         unix_time=unix_time, lifetime=assertion_lifetime,
                                         jti=entropy.token(16))
            form += [("client_id", client.client_id), ("client_assertion_type", ASSERTION_TYPE),
                     ("client_assertion", assertion)]
        else:
            form.append(("client_id", client.client_id))
            if client.method == "client_secret_post" and client.secret is not None:
                form.append(("client_secret", client.secret))
    if spec.dpop is not None:
        headers.append(("dpop", dpop_proof(spec.dpop, method="POST", url=spec.endpoint, unix_time=unix_time,
                                           jti=entropy.token(16), nonce=nonce)))
    plan_headers: Headers = tuple(headers)
    return HttpRequestPlan(method="POST", url=str(spec.endpoint), headers=plan_headers,
                           body=urlencode(form).encode("ascii"))

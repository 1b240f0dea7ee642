"""Reading what comes back to the client besides JSON documents: challenges, nonces, scope
strings and the authorization response (RFC 6749 section 4.1.2, RFC 9207 section 2.4).

Everything here is input from peers, so values are checked against their grammars
(RFC 6749 appendix A) and unusable ones dropped or refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final
from urllib.parse import parse_qsl

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.urls import parse_url
from mcp_sansio.www_authenticate import parse_www_authenticate

from .discovery import AuthorizationServer
from .metadata import quote_text
from .steps import AuthFailure, Failed, Headers

__all__ = ["authorization_code", "challenge_params", "dpop_nonce", "redirect_query", "scope_tokens", "union"]

# Scope tokens and DPoP nonces are NQCHARs, an authorization code VSCHARs.
_NQCHARS: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
_VSCHARS: Final = re.compile(r"[\x20-\x7e]+")


def challenge_params(headers: Headers, *, prefer_dpop: bool) -> dict[str, str]:
    """The parameters of the Bearer or DPoP challenge in ``WWW-Authenticate`` (every such
    header), the DPoP one first when ``prefer_dpop``; ``{}`` without either."""
    value = ", ".join(v for name, v in headers if name.lower() == "www-authenticate")
    challenges = [c for c in parse_www_authenticate(value) if c.scheme in {"bearer", "dpop"}]
    preferred = "dpop" if prefer_dpop else "bearer"
    challenges.sort(key=lambda c: c.scheme != preferred)
    return dict(challenges[0].params) if challenges else {}


def dpop_nonce(headers: Headers) -> str | None:
    """The ``DPoP-Nonce`` header, if it holds a valid nonce (RFC 9449 section 8.1)."""
    value = next((value for key, value in headers if key.lower() == "dpop-nonce"), "")
    return value if _NQCHARS.fullmatch(value) else None


def scope_tokens(scopes: Iterable[str]) -> tuple[str, ...]:
    """The well-formed scope tokens (RFC 6749 section 3.3); others are dropped."""
    return tuple(scope for scope in scopes if _NQCHARS.fullmatch(scope))


def union(*groups: tuple[str, ...]) -> tuple[str, ...]:
    """The scopes of all groups, in order of first appearance."""
    return tuple(dict.fromkeys(scope for group in groups for scope in group))


def redirect_query(location: str, redirect_uri: str) -> dict[str, str] | None:
    """The query of a redirect to ``redirect_uri`` (same origin and path), or ``None`` if
    ``location`` goes elsewhere or repeats a parameter (RFC 6749 section 3.1)."""
    expected = parse_url(redirect_uri)
    try:
        target = parse_url(location)
    except LocalProtocolError:
        return None
    path, _, query = target.target.partition("?")
    if target.origin != expected.origin or path != expected.target.partition("?")[0]:
        return None
    pairs = parse_qsl(query, keep_blank_values=True)
    params = dict(pairs)
    return params if len(params) == len(pairs) else None


def authorization_code(params: Mapping[str, str], *, state: str, server: AuthorizationServer) -> str | Failed:
    """The code an authorization response carries, or why it must be refused.

    ``state`` must be the one sent; ``iss``, when present, must be the server's issuer by
    simple string comparison, and it must be present when the server advertises it
    (RFC 9207); then an ``error`` is a refusal, and the code must be VSCHARs.
    """
    if params.get("state") != state:
        return Failed(reason=AuthFailure.STATE_MISMATCH, message="the redirect's state is not the one sent")
    iss = params.get("iss")
    if iss is not None and iss != server.issuer:
        return Failed(reason=AuthFailure.ISS_MISMATCH,
                      message=f"the redirect's iss {quote_text(iss)} is not {server.issuer}")
    metadata = server.metadata
    if iss is None and metadata is not None and metadata.authorization_response_iss_parameter_supported:
        return Failed(reason=AuthFailure.ISS_MISMATCH,
                      message="the redirect lacks the iss the server advertises")
    if "error" in params:
        described = params.get("error_description")
        detail = f" ({quote_text(described)})" if described else ""
        return Failed(reason=AuthFailure.ACCESS_DENIED,
                      message=f"authorization refused: {quote_text(params['error'])}{detail}")
    code = params.get("code", "")
    if not _VSCHARS.fullmatch(code):
        return Failed(reason=AuthFailure.INVALID_REDIRECT, message="the redirect carries no usable code")
    return code

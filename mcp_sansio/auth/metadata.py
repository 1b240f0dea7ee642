"""Metadata and token endpoint documents: typed decoding and discovery locations.

Protected resource metadata (RFC 9728), authorization server metadata (RFC 8414,
OpenID Connect Discovery 1.0), token responses (RFC 6749 section 5, RFC 8693 section 2.2),
registration responses (RFC 7591 section 3.2) and OAuth error bodies, decoded strictly into
Structs; plus the well-known URLs to try, in the order the MCP authorization spec gives.
"""

from __future__ import annotations

from typing import ClassVar, Final, TypeVar

import msgspec

from mcp_sansio.errors import RemoteProtocolError
from mcp_sansio.urls import Url

from .steps import Redacted

__all__ = [
    "AuthorizationServerMetadata",
    "OAuthErrorBody",
    "ProtectedResourceMetadata",
    "RegistrationResponse",
    "TokenResponse",
    "authorization_server_metadata_urls",
    "decode",
    "decode_error",
    "describe_refusal",
    "protected_resource_metadata_urls",
    "quote_text",
    "resource_covers",
]

_PRM_SUFFIX: Final = "/.well-known/oauth-protected-resource"
_OAUTH_SUFFIX: Final = "/.well-known/oauth-authorization-server"
_OIDC_SUFFIX: Final = "/.well-known/openid-configuration"
_MAX_TEXT: Final = 200


class ProtectedResourceMetadata(msgspec.Struct, frozen=True, kw_only=True):
    """RFC 9728 section 2; members the flow does not use are ignored."""

    resource: str
    authorization_servers: tuple[str, ...] = ()
    scopes_supported: tuple[str, ...] | None = None


class AuthorizationServerMetadata(msgspec.Struct, frozen=True, kw_only=True):
    """RFC 8414 section 2 (plus RFC 9207, RFC 9449 and Client ID Metadata Document members)."""

    issuer: str
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    token_endpoint_auth_methods_supported: tuple[str, ...] | None = None
    code_challenge_methods_supported: tuple[str, ...] | None = None
    authorization_response_iss_parameter_supported: bool | None = None
    client_id_metadata_document_supported: bool | None = None
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None


class TokenResponse(Redacted, frozen=True, kw_only=True):
    """A successful token response (RFC 6749 section 5.1, RFC 8693 section 2.2.1)."""

    _secret: ClassVar[frozenset[str]] = frozenset({"access_token", "refresh_token"})

    access_token: str
    token_type: str
    expires_in: float | str | None = None
    refresh_token: str | None = None
    scope: str | None = None
    issued_token_type: str | None = None


class RegistrationResponse(Redacted, frozen=True, kw_only=True):
    """A client information response (RFC 7591 section 3.2.1)."""

    _secret: ClassVar[frozenset[str]] = frozenset({"client_secret"})

    client_id: str
    client_secret: str | None = None
    token_endpoint_auth_method: str | None = None


class OAuthErrorBody(msgspec.Struct, frozen=True, kw_only=True):
    """An error response (RFC 6749 section 5.2)."""

    error: str
    error_description: str | None = None


T = TypeVar("T")

_DECODERS: Final[dict[type, msgspec.json.Decoder[object]]] = {}


def decode(kind: type[T], body: bytes, *, max_bytes: int) -> T:
    """Decode one of this module's documents from a response body.

    Args:
        kind: the Struct to decode into.
        body: the body.
        max_bytes: the largest body accepted.

    Returns:
        The document.

    Raises:
        RemoteProtocolError: the body is too large, not JSON, or not such a document.
    """
    if len(body) > max_bytes:
        raise RemoteProtocolError(f"the {kind.__name__} is larger than {max_bytes} bytes")
    decoder = _DECODERS.get(kind)
    if decoder is None:
        decoder = _DECODERS[kind] = msgspec.json.Decoder(kind)
    try:
        return decoder.decode(body)  # type: ignore[return-value]  # the decoder was built for kind
    except msgspec.DecodeError as exc:
        raise RemoteProtocolError(f"malformed {kind.__name__}: {exc}") from exc


def decode_error(body: bytes, *, max_bytes: int) -> OAuthErrorBody | None:
    """The OAuth error in a refusal's body, or ``None`` if it holds none."""
    try:
        return decode(OAuthErrorBody, body, max_bytes=max_bytes)
    except RemoteProtocolError:
        return None


def quote_text(value: str) -> str:
    """Peer-supplied text made safe to quote in a message: printable, short, in quotes."""
    clean = "".join(ch if ch.isprintable() else "?" for ch in value[:_MAX_TEXT])
    return repr(clean + ("..." if len(value) > _MAX_TEXT else ""))


def describe_refusal(status: int, body: bytes, *, max_bytes: int) -> str:
    """``HTTP <status>`` and the OAuth error the body names, for a :class:`Failed` message."""
    error = decode_error(body, max_bytes=max_bytes)
    if error is None:
        return f"HTTP {status}, no OAuth error given"
    described = f" ({quote_text(error.error_description)})" if error.error_description else ""
    return f"HTTP {status}: {quote_text(error.error)}{described}"


def _with_path(url: Url, path: str) -> Url:
    return Url(scheme=url.scheme, host=url.host, port=url.port, target=path)


def protected_resource_metadata_urls(server_url: Url) -> list[Url]:
    """The RFC 9728 well-known URLs for ``server_url``: path-based first, then the root one."""
    root = _with_path(server_url, _PRM_SUFFIX)
    path, _, query = server_url.target.partition("?")
    path = path.rstrip("/")
    if not path and not query:
        return [root]
    suffix = f"{path}?{query}" if query else path
    return [_with_path(server_url, _PRM_SUFFIX + suffix), root]


def authorization_server_metadata_urls(issuer: Url) -> list[Url]:
    """Where an issuer's metadata may live, in the MCP spec's order.

    With a path: RFC 8414 path insertion, OpenID Connect path insertion, then OpenID
    Connect path appending. Without: the two root documents.
    """
    path = issuer.target.rstrip("/")
    if not path:
        return [_with_path(issuer, _OAUTH_SUFFIX), _with_path(issuer, _OIDC_SUFFIX)]
    return [_with_path(issuer, _OAUTH_SUFFIX + path), _with_path(issuer, _OIDC_SUFFIX + path),
            _with_path(issuer, path + _OIDC_SUFFIX)]


def resource_covers(resource: Url, server_url: Url) -> bool:
    """Whether a protected resource identifier covers the MCP endpoint ``server_url``.

    Same origin, and the resource's path is the endpoint's path or a parent of it at a
    segment boundary (``/api`` covers ``/api/mcp``, not ``/api2``).
    """
    if resource.origin != server_url.origin:
        return False
    wanted = server_url.target.partition("?")[0].rstrip("/") + "/"
    return wanted.startswith(resource.target.partition("?")[0].rstrip("/") + "/")

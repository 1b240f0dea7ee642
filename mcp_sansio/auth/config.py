"""How the host wants to be authorized: the grant, the client's identity and its keys.

Private keys never enter the core: a :class:`SigningKey` carries the public JWK and a
pure signing function, and the planner asks it to sign JWS signing inputs (client
assertions, RFC 7523; DPoP proofs, RFC 9449).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, TypeAlias

import msgspec

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.urls import Url, is_loopback, parse_url

from .steps import Redacted

__all__ = [
    "AuthorizationCodeGrant",
    "ClientCredentials",
    "ClientCredentialsGrant",
    "Grant",
    "IdJagGrant",
    "JwtBearerGrant",
    "OAuthConfig",
    "Signer",
    "SigningKey",
    "TOKEN_ENDPOINT_AUTH_METHODS",
    "is_secure",
]

Signer: TypeAlias = Callable[[bytes], bytes]
"""Signs a JWS signing input and returns the JWS signature (for ES256 the 64-byte ``r || s``,
not DER). It must be pure and must not raise."""

TOKEN_ENDPOINT_AUTH_METHODS = frozenset({"none", "client_secret_basic", "client_secret_post",
                                         "private_key_jwt"})

_MIB = 1024 * 1024


def is_secure(url: Url) -> bool:
    """Whether OAuth may talk to ``url``: ``https``, or ``http`` on this machine."""
    return url.scheme == "https" or is_loopback(url)


class SigningKey(msgspec.Struct, frozen=True, kw_only=True):
    """A private key the host keeps; the core only sees its public half.

    Attributes:
        alg: the JWS algorithm, e.g. ``"ES256"``, ``"RS256"``, ``"EdDSA"``.
        sign: signs JWS signing inputs with the private key (see :data:`Signer`).
        public_jwk: the public key as a JWK (sent in DPoP proofs); no private members.
        kid: the key id, put in the JWS header when given.
    """

    alg: str
    sign: Signer
    public_jwk: dict[str, str]
    kid: str | None = None

    def __post_init__(self) -> None:
        if self.alg == "none" or self.alg.startswith("HS"):
            raise LocalProtocolError(f"a signing key needs an asymmetric algorithm, not {self.alg!r}")
        if "d" in self.public_jwk:
            raise LocalProtocolError("public_jwk holds a private key member ('d')")


class ClientCredentials(Redacted, frozen=True, kw_only=True):
    """A client registered beforehand (pre-registration, or the host's own store).

    Attributes:
        client_id: the client identifier.
        client_secret: its secret, for ``client_secret_basic`` / ``client_secret_post``.
        signing_key: its key, for ``private_key_jwt``.
        issuer: the authorization server it is registered with; ``None`` means any.
        token_endpoint_auth_method: force a method; by default ``private_key_jwt`` with a
            key, else ``client_secret_basic`` (``client_secret_post`` when that is all the
            server lists) with a secret, else ``none``.
    """

    _secret: ClassVar[frozenset[str]] = frozenset({"client_secret"})

    client_id: str
    client_secret: str | None = None
    signing_key: SigningKey | None = None
    issuer: str | None = None
    token_endpoint_auth_method: str | None = None

    def __post_init__(self) -> None:
        method = self.token_endpoint_auth_method
        if method is not None and method not in TOKEN_ENDPOINT_AUTH_METHODS:
            raise LocalProtocolError(f"unsupported token_endpoint_auth_method {method!r}")
        if method in {"client_secret_basic", "client_secret_post"} and self.client_secret is None:
            raise LocalProtocolError(f"{method} needs a client_secret")
        if method == "private_key_jwt" and self.signing_key is None:
            raise LocalProtocolError("private_key_jwt needs a signing_key")


class AuthorizationCodeGrant(msgspec.Struct, frozen=True, kw_only=True):
    """A user signs in through a browser: authorization code with PKCE.

    Attributes:
        redirect_uri: where the authorization server sends the browser back; a loopback
            ``http`` URL the host listens on, or an ``https`` URL. Registered verbatim.
        client_metadata_url: the host's Client ID Metadata Document URL (``https`` with a
            path), used as ``client_id`` where the server supports such documents.
    """

    redirect_uri: str
    client_metadata_url: str | None = None

    def __post_init__(self) -> None:
        redirect = parse_url(self.redirect_uri)
        if not is_secure(redirect):
            raise LocalProtocolError("redirect_uri must be https or a loopback http URL")
        if self.client_metadata_url is not None:
            document = parse_url(self.client_metadata_url)
            if document.scheme != "https" or document.target == "/":
                raise LocalProtocolError("client_metadata_url must be an https URL with a path")


class ClientCredentialsGrant(msgspec.Struct, frozen=True, kw_only=True):
    """The client acts on its own behalf (``client_credentials``); needs :class:`ClientCredentials`."""


class JwtBearerGrant(Redacted, frozen=True, kw_only=True):
    """An assertion the host obtained elsewhere, e.g. a workload identity token, is traded
    for an access token (RFC 7523 section 2.1), with no client secret.

    Attributes:
        assertion: the JWT (hidden in ``repr``).
    """

    _secret: ClassVar[frozenset[str]] = frozenset({"assertion"})

    assertion: str


class IdJagGrant(Redacted, frozen=True, kw_only=True):
    """Enterprise-managed authorization (SEP-990): the user's ID token is exchanged at the
    identity provider for an ID-JAG (RFC 8693), which is then a JWT bearer grant at the
    authorization server. Needs :class:`ClientCredentials` for the authorization server.

    Attributes:
        idp_token_endpoint: the identity provider's token endpoint.
        id_token: the user's ID token from that provider (hidden in ``repr``).
        idp_client_id: our client id at the identity provider.
        idp_client_secret: its secret there, sent with HTTP Basic (hidden in ``repr``).
    """

    _secret: ClassVar[frozenset[str]] = frozenset({"id_token", "idp_client_secret"})

    idp_token_endpoint: str
    id_token: str
    idp_client_id: str | None = None
    idp_client_secret: str | None = None

    def __post_init__(self) -> None:
        if not is_secure(parse_url(self.idp_token_endpoint)):
            raise LocalProtocolError("idp_token_endpoint must be https or a loopback http URL")


Grant: TypeAlias = AuthorizationCodeGrant | ClientCredentialsGrant | JwtBearerGrant | IdJagGrant


class OAuthConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Everything an :class:`OAuthFlow` needs from the host.

    Attributes:
        grant: how tokens are obtained.
        client: pre-registered credentials; tried before a metadata document or DCR.
        client_name: ``client_name`` sent in a dynamic registration.
        dpop_key: a key for DPoP (RFC 9449), used with servers that list its ``alg`` in
            ``dpop_signing_alg_values_supported``.
        request_offline_access: add ``offline_access`` to the scopes when the server lists it
            (with ``prompt=consent``, without which OpenID providers ignore it).
        refresh_margin: renew this many seconds before a token expires (at most half of its
            lifetime before).
        max_authorization_attempts: new authorizations in a row, with no request succeeding
            in between, before giving up.
        max_response_bytes: largest metadata or token response accepted.
        assertion_lifetime: seconds a client assertion stays valid.
    """

    grant: Grant
    client: ClientCredentials | None = None
    client_name: str = "mcp-sansio"
    dpop_key: SigningKey | None = None
    request_offline_access: bool = True
    refresh_margin: float = 60.0
    max_authorization_attempts: int = 3
    max_response_bytes: int = _MIB
    assertion_lifetime: float = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.grant, ClientCredentialsGrant | IdJagGrant) and self.client is None:
            raise LocalProtocolError(f"{type(self.grant).__name__} needs client credentials")
        if self.refresh_margin < 0 or self.assertion_lifetime <= 0:
            raise LocalProtocolError("refresh_margin must be >= 0 and assertion_lifetime > 0")
        if self.max_authorization_attempts < 1 or self.max_response_bytes < 1:
            raise LocalProtocolError("max_authorization_attempts and max_response_bytes must be >= 1")

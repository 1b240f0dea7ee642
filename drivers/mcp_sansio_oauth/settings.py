"""What ``connect_http(url, auth=OAuth(...))`` is told: the grant, the client, the redirect,
the browser, the token store; and :func:`es256_key` for DPoP and ``private_key_jwt``."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field

from mcp_sansio.auth import (
    AuthorizationCodeGrant,
    ClientCredentials,
    ClientCredentialsGrant,
    Grant,
    IdJagGrant,
    JwtBearerGrant,
    OAuthConfig,
    SigningKey,
)
from mcp_sansio.errors import LocalProtocolError

from .stores import MemoryTokenStore, TokenStore

__all__ = ["BrowserOpener", "OAuth", "es256_key"]

BrowserOpener = Callable[[str], object]


@dataclass(frozen=True, kw_only=True)
class OAuth:
    """How ``connect_http`` authorizes with OAuth 2.1 (the same in every driver).

    Attributes:
        grant: a grant with no browser (client credentials, JWT bearer, ID-JAG); ``None``
            means a user signs in through the browser (authorization code with PKCE).
        client: credentials registered beforehand (tried before a metadata document or
            dynamic registration); a ``signing_key`` makes them ``private_key_jwt``.
        client_name: the name given in a dynamic client registration.
        client_metadata_url: the host's Client ID Metadata Document URL, if it has one.
        redirect_uri: where the browser comes back to; by default
            ``http://127.0.0.1:<redirect_port>/callback``, served by the connection while needed.
        redirect_port: the loopback port of the default redirect URI (0: a free one,
            chosen when connecting).
        dpop_key: a key for DPoP-bound tokens (RFC 9449), e.g. :func:`es256_key`.
        store: where tokens are kept between connections.
        open_browser: opens a URL for the user (default :func:`webbrowser.open`); it is
            called on the driver's loop (the blocking driver's included), so it must return
            at once, the user signing in meanwhile.
        headless: no browser: the authorization URL is fetched and its redirect read,
            for servers that authorize at once (test servers).
        redirect_timeout: how long the user has to sign in.
        request_offline_access: ask for ``offline_access`` (with ``prompt=consent``) where
            the server offers it, for a refresh token.
        max_authorization_attempts: authorizations in a row before giving up.
    """

    grant: ClientCredentialsGrant | JwtBearerGrant | IdJagGrant | None = None
    client: ClientCredentials | None = None
    client_name: str = "mcp-sansio"
    client_metadata_url: str | None = None
    redirect_uri: str | None = None
    redirect_port: int = 0
    dpop_key: SigningKey | None = None
    store: TokenStore = field(default_factory=MemoryTokenStore)
    open_browser: BrowserOpener | None = None
    headless: bool = False
    redirect_timeout: float = 300.0
    request_offline_access: bool = True
    max_authorization_attempts: int = 3

    @property
    def uses_browser(self) -> bool:
        """Whether this is the authorization code flow (a redirect URI is needed)."""
        return self.grant is None

    def planner_config(self, redirect_uri: str | None) -> OAuthConfig:
        """The core's :class:`OAuthConfig`, with the redirect URI chosen for this connection.

        Raises:
            LocalProtocolError: the settings are inconsistent.
        """
        grant: Grant
        if self.grant is not None:
            grant = self.grant
        elif redirect_uri is None:
            raise LocalProtocolError("the browser flow needs a redirect URI")
        else:
            grant = AuthorizationCodeGrant(redirect_uri=redirect_uri,
                                           client_metadata_url=self.client_metadata_url)
        return OAuthConfig(grant=grant, client=self.client, client_name=self.client_name,
                           dpop_key=self.dpop_key, request_offline_access=self.request_offline_access,
                           max_authorization_attempts=self.max_authorization_attempts)


def es256_key(private_key_pem: str | bytes | None = None, *, kid: str | None = None) -> SigningKey:
    """An ES256 :class:`SigningKey` from a PKCS#8 PEM P-256 key, or a new key (needs ``cryptography``).

    Raises:
        LocalProtocolError: the PEM is no P-256 private key.
    """
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    if private_key_pem is None:
        private = ec.generate_private_key(ec.SECP256R1())
    else:
        pem = private_key_pem.encode() if isinstance(private_key_pem, str) else private_key_pem
        loaded = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey) or loaded.curve.name != "secp256r1":
            raise LocalProtocolError("ES256 needs a P-256 private key")
        private = loaded
    numbers = private.public_key().public_numbers()

    def coordinate(value: int) -> str:
        return base64.urlsafe_b64encode(value.to_bytes(32, "big")).rstrip(b"=").decode()

    def sign(data: bytes) -> bytes:
        r, s = decode_dss_signature(private.sign(data, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")

    jwk = {"kty": "EC", "crv": "P-256", "x": coordinate(numbers.x), "y": coordinate(numbers.y)}
    return SigningKey(alg="ES256", sign=sign, public_jwk=jwk, kid=kid)

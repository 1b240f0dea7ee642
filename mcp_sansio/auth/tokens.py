"""Token requests for each grant, and what a token response becomes.

Every token request carries the RFC 8707 ``resource``. A token response must be a
``Bearer`` token, or a ``DPoP`` one when we sent a proof; the access token must be
header-safe, and ``expires_in`` turns into ``expires_at = now + expires_in``.
"""

from __future__ import annotations

import re
from typing import Final

from mcp_sansio.errors import RemoteProtocolError
from mcp_sansio.urls import parse_url

from .config import ClientCredentialsGrant, IdJagGrant, JwtBearerGrant
from .discovery import AuthorizationServer
from .metadata import TokenResponse, quote_text
from .requests import ClientAuth, TokenRequestSpec
from .steps import Token

__all__ = ["ID_JAG", "JWT_BEARER", "TOKEN_EXCHANGE", "id_jag_exchange", "machine_grant", "make_token"]

JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG: Final = "urn:ietf:params:oauth:token-type:id-jag"
_ID_TOKEN: Final = "urn:ietf:params:oauth:token-type:id_token"
_TOKEN_CHARS: Final = re.compile(r"[\x21-\x7e]+")
_SECONDS: Final = re.compile(r"[0-9]{1,12}")
_MAX_LIFETIME: Final = 1e12

Params = tuple[tuple[str, str], ...]


def _scope(scopes: tuple[str, ...] | None) -> Params:
    return (("scope", " ".join(scopes)),) if scopes else ()


def machine_grant(grant: ClientCredentialsGrant | JwtBearerGrant, scopes: tuple[str, ...] | None) -> Params:
    """The form parameters of a grant with no user: ``client_credentials`` (OAuth 2.1
    section 4.2) or a JWT bearer assertion (RFC 7523 section 2.1)."""
    if isinstance(grant, ClientCredentialsGrant):
        return (("grant_type", "client_credentials"), *_scope(scopes))
    return (("grant_type", JWT_BEARER), ("assertion", grant.assertion), *_scope(scopes))


def id_jag_exchange(
    grant: IdJagGrant, *, server: AuthorizationServer, resource: str, scopes: tuple[str, ...] | None
) -> TokenRequestSpec:
    """The token exchange at the identity provider that yields an ID-JAG for ``server`` (SEP-990)."""
    client = None if grant.idp_client_id is None else ClientAuth(
        client_id=grant.idp_client_id, secret=grant.idp_client_secret,
        method="none" if grant.idp_client_secret is None else "client_secret_basic")
    return TokenRequestSpec(
        endpoint=parse_url(grant.idp_token_endpoint), client=client, audience=server.issuer,
        params=(("grant_type", TOKEN_EXCHANGE), ("requested_token_type", ID_JAG),
                ("subject_token", grant.id_token), ("subject_token_type", _ID_TOKEN),
                ("audience", server.issuer), ("resource", resource), *_scope(scopes)))


def make_token(
    response: TokenResponse,
    *,
    dpop: bool,
    requested: tuple[str, ...] | None,
    kept_refresh: str | None,
    issuer: str,
    serial: int,
    now: float,
) -> Token:
    """The :class:`Token` a successful token response describes.

    Args:
        response: the decoded response.
        dpop: whether the request carried a DPoP proof.
        requested: the scopes asked for, granted when the response names none.
        kept_refresh: the refresh token to keep when the response rotates none in.
        issuer: the authorization server.
        serial: the token's serial.
        now: the monotonic time of receipt.

    Returns:
        The token.

    Raises:
        RemoteProtocolError: the token type, access token or lifetime is unusable.
    """
    token_type = {"bearer": "Bearer", "dpop": "DPoP"}.get(response.token_type.lower())
    if token_type is None or (token_type == "DPoP" and not dpop):
        raise RemoteProtocolError(f"unusable token_type {quote_text(response.token_type)}")
    if not _TOKEN_CHARS.fullmatch(response.access_token):
        raise RemoteProtocolError("the access_token holds characters a header cannot carry")
    lifetime = response.expires_in
    if isinstance(lifetime, str):
        if not _SECONDS.fullmatch(lifetime):
            raise RemoteProtocolError("expires_in is not a number of seconds")
        lifetime = float(lifetime)
    if lifetime is not None and not 0 <= lifetime < _MAX_LIFETIME:
        raise RemoteProtocolError("expires_in is out of range")
    scopes = tuple(response.scope.split()) if response.scope is not None else requested or ()
    return Token(access_token=response.access_token, token_type=token_type,
                 expires_at=None if lifetime is None else now + lifetime, scopes=scopes,
                 refresh_token=response.refresh_token or kept_refresh, issuer=issuer, serial=serial)

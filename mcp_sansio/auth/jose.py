"""Compact JWS building, PKCE and the two JWTs a client signs, all pure.

The core encodes (base64url JSON, RFC 7515 section 7.1) and the host's
:class:`~mcp_sansio.auth.config.SigningKey` signs: client assertions for
``private_key_jwt`` (RFC 7523 section 3) and DPoP proofs (RFC 9449 section 4.2).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping

import msgspec

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.urls import Url

from .config import SigningKey
from .steps import ENTROPY_BYTES, Fresh

__all__ = ["Entropy", "b64url", "client_assertion", "dpop_proof", "pkce_challenge", "sign_jwt"]

_JSON = msgspec.json.Encoder()


def b64url(data: bytes) -> str:
    """Base64url without padding (RFC 7515 section 2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pkce_challenge(verifier: str) -> str:
    """The ``S256`` code challenge of a PKCE verifier (RFC 7636 section 4.2)."""
    return b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def sign_jwt(key: SigningKey, header: Mapping[str, object], claims: Mapping[str, object]) -> str:
    """A compact JWS of ``claims``, signed by ``key``; ``alg`` (and ``kid``) are set from it."""
    full = {**header, "alg": key.alg}
    if key.kid is not None:
        full["kid"] = key.kid
    signing_input = f"{b64url(_JSON.encode(full))}.{b64url(_JSON.encode(claims))}"
    return f"{signing_input}.{b64url(key.sign(signing_input.encode('ascii')))}"


class Entropy:
    """Hands out the random bytes of one :class:`Fresh`, never the same byte twice."""

    __slots__ = ("_data", "_used")

    def __init__(self, fresh: Fresh) -> None:
        if len(fresh.random) < ENTROPY_BYTES:
            raise LocalProtocolError(f"Fresh.random needs at least {ENTROPY_BYTES} bytes")
        self._data = fresh.random
        self._used = 0

    def token(self, size: int) -> str:
        """``size`` unused random bytes, base64url-encoded."""
        start, self._used = self._used, self._used + size
        if self._used > len(self._data):
            raise LocalProtocolError("Fresh.random is exhausted")
        return b64url(self._data[start:self._used])


def client_assertion(
    key: SigningKey, *, client_id: str, audience: str, unix_time: float, lifetime: float, jti: str
) -> str:
    """A ``private_key_jwt`` client assertion: ``iss`` = ``sub`` = the client, ``aud`` = the issuer."""
    issued = int(unix_time)
    claims = {"iss": client_id, "sub": client_id, "aud": audience, "iat": issued,
              "exp": issued + max(1, int(lifetime)), "jti": jti}
    return sign_jwt(key, {"typ": "JWT"}, claims)


def dpop_proof(
    key: SigningKey,
    *,
    method: str,
    url: Url,
    unix_time: float,
    jti: str,
    nonce: str | None = None,
    access_token: str | None = None,
) -> str:
    """A DPoP proof for one request (RFC 9449 section 4.2).

    Args:
        key: the DPoP key; its public JWK goes in the header.
        method: the request method (``htm``).
        url: the request URL; ``htu`` is it without query and fragment.
        unix_time: ``iat``.
        jti: a fresh identifier.
        nonce: the server's latest ``DPoP-Nonce``, if any.
        access_token: for resource requests, the token the proof binds to (``ath``).

    Returns:
        The compact JWS.
    """
    path = url.target.partition("?")[0]
    claims: dict[str, object] = {"jti": jti, "htm": method, "htu": f"{url.scheme}://{url.authority}{path}",
                                 "iat": int(unix_time)}
    if nonce is not None:
        claims["nonce"] = nonce
    if access_token is not None:
        claims["ath"] = b64url(hashlib.sha256(access_token.encode("ascii")).digest())
    return sign_jwt(key, {"typ": "dpop+jwt", "jwk": key.public_jwk}, claims)

"""Token verifiers for servers: JWT access tokens by a JWKS, and RFC 7662 introspection.

Both implement :class:`mcp_sansio.server.TokenVerifier` (blocking: the drivers run them in
a worker thread, or inline in the blocking driver) and answer a ``Principal``, a
``TokenRejected`` (401 ``invalid_token``) or ``VerifierUnavailable`` (503). Neither puts
the token in a log record, an exception or a verdict.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import jwt

from mcp_sansio.server import Principal, RejectReason, TokenRejected, TokenVerdict, VerifierUnavailable

from .fetch import FetchError, check_http_url, http_request
from .jwks import JwksCache, JwksUnavailable

__all__ = ["DEFAULT_ALGORITHMS", "IntrospectionVerifier", "JwtVerifier", "scopes_of"]

log = logging.getLogger("mcp_sansio.authz")

DEFAULT_ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
                             "EdDSA")
"""The asymmetric algorithms accepted by default (``none`` and HMAC never are: a server
holds only public keys, and an HMAC "verified" with one is the classic forgery)."""

_JWT_REJECTIONS: Final[Mapping[type[jwt.PyJWTError], RejectReason]] = {
    jwt.ExpiredSignatureError: RejectReason.EXPIRED,
    jwt.ImmatureSignatureError: RejectReason.NOT_YET_VALID,
    jwt.InvalidAudienceError: RejectReason.WRONG_AUDIENCE,
    jwt.InvalidIssuerError: RejectReason.WRONG_ISSUER,
    jwt.InvalidSignatureError: RejectReason.BAD_SIGNATURE,
    jwt.InvalidAlgorithmError: RejectReason.BAD_ALGORITHM,
}
"""PyJWT's exceptions (or their subclasses) -> why the token is rejected."""
_KEY_TYPES: Final = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


def scopes_of(claims: Mapping[str, object], names: Sequence[str] = ("scope", "scp")) -> tuple[str, ...]:
    """The scopes a token grants: the first of ``names`` present, a space-separated string
    (RFC 8693 / RFC 9068 ``scope``) or a list (``scp``)."""
    for name in names:
        value = claims.get(name)
        if isinstance(value, str):
            return tuple(value.split())
        if isinstance(value, list):
            return tuple(s for s in value if isinstance(s, str))
    return ()


def _principal(claims: dict[str, Any], scope_claims: Sequence[str], leeway: float) -> Principal:
    """The principal of verified ``claims``; it stays valid until ``exp`` plus the ``leeway``
    the verifier allowed (else the server would refuse what the verifier accepted)."""
    sub, iss, exp = claims.get("sub"), claims.get("iss"), claims.get("exp")
    client = claims.get("client_id", claims.get("azp"))
    expires = float(exp) + leeway if isinstance(exp, int | float) and not isinstance(exp, bool) else None
    return Principal(
        subject=sub if isinstance(sub, str) else None,
        client_id=client if isinstance(client, str) else None,
        issuer=iss if isinstance(iss, str) else None,
        scopes=scopes_of(claims, scope_claims),
        claims=claims,
        expires_at=expires,
    )


class JwtVerifier:
    """Verifies JWT access tokens (RFC 9068) with the keys at ``jwks_url`` (PyJWT).

    Checked: the signature with a key of the set (a token naming an unknown ``kid``
    makes the set be fetched again, at most once per ``refetch_interval``), the
    algorithm against ``algorithms`` (asymmetric only; ``none`` and HMAC are refused),
    ``iss`` equal to ``issuer``, ``aud`` containing ``audience`` (the server's canonical
    resource URI, RFC 8707: a token for another resource is refused), ``exp`` (required)
    and ``nbf``/``iat`` with ``leeway`` seconds of clock skew.

    Args:
        jwks_url: the authorization server's ``jwks_uri``.
        issuer: the ``iss`` tokens must carry.
        audience: the ``aud`` they must name (one of several, if a sequence).
        algorithms: the ``alg`` values accepted.
        leeway: clock skew allowed, in seconds.
        scope_claims: where the scopes are (``scope`` string, or ``scp`` list).
        jwks_ttl: how long the key set is kept.
        refetch_interval: the least time between two early refetches.
        timeout: seconds a key set fetch may take.
        max_jwks_bytes: the largest key set accepted.
        clock: POSIX time (tests pass their own).

    Raises:
        ValueError: an algorithm is not asymmetric, or a URL is not http(s).
    """

    def __init__(self, *, jwks_url: str, issuer: str, audience: str | Sequence[str],
                 algorithms: Sequence[str] = DEFAULT_ALGORITHMS, leeway: float = 30.0,
                 scope_claims: Sequence[str] = ("scope", "scp"), jwks_ttl: float = 300.0,
                 refetch_interval: float = 30.0, timeout: float = 5.0, max_jwks_bytes: int = 256 * 1024,
                 clock: Callable[[], float] = time.time) -> None:
        bad = [a for a in algorithms if a[:2] not in _KEY_TYPES]
        if bad or not algorithms:
            raise ValueError(f"only asymmetric JWS algorithms can be verified with public keys, not {bad}")
        self.issuer = issuer
        self.audience = (audience,) if isinstance(audience, str) else tuple(audience)
        self.algorithms = tuple(algorithms)
        self.leeway = leeway
        self.scope_claims = tuple(scope_claims)
        self.jwks = JwksCache(jwks_url, ttl=jwks_ttl, refetch_interval=refetch_interval, timeout=timeout,
                              max_bytes=max_jwks_bytes)
        self._clock = clock

    def __repr__(self) -> str:
        return f"JwtVerifier(jwks_url={self.jwks.url!r}, issuer={self.issuer!r}, audience={self.audience!r})"

    def verify(self, token: str) -> TokenVerdict:
        """The verdict on ``token``."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return TokenRejected(reason=RejectReason.MALFORMED, detail="not a JWS")
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg not in self.algorithms:
            return TokenRejected(reason=RejectReason.BAD_ALGORITHM, detail=f"alg {str(alg)[:20]!r}")
        if kid is not None and not isinstance(kid, str):
            return TokenRejected(reason=RejectReason.MALFORMED, detail="kid is not a string")
        try:
            key = self.jwks.key(kid, alg)
        except JwksUnavailable as exc:
            return VerifierUnavailable(detail=str(exc))
        if key is None:
            return TokenRejected(reason=RejectReason.UNKNOWN_KEY, detail=f"kid {str(kid)[:64]!r}")
        try:
            claims: dict[str, Any] = jwt.decode(
                token, key=key.key, algorithms=[alg], audience=list(self.audience), issuer=self.issuer,
                leeway=self.leeway, options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            reason = next((r for t in type(exc).__mro__ if (r := _JWT_REJECTIONS.get(t)) is not None), None)
            if reason is None:  # a missing claim, a malformed one, a bad encoding
                return TokenRejected(reason=RejectReason.INVALID, detail=type(exc).__name__)
            return TokenRejected(reason=reason)
        return _principal(claims, self.scope_claims, self.leeway)


class IntrospectionVerifier:
    """Asks the authorization server about each token (RFC 7662 token introspection).

    The token is POSTed to ``endpoint`` with the server's own client credentials
    (``client_secret_basic``); the answer must say ``active``, name ``audience`` in its
    ``aud`` (RFC 8707; an answer without ``aud`` is refused unless ``require_audience`` is
    false), carry ``issuer`` as ``iss`` if it names one, and not be past ``exp`` / before
    ``nbf``. Its ``scope`` gives the scopes. An unreachable endpoint, an error status or a
    malformed answer is ``VerifierUnavailable`` (503), not a refusal; a 400
    ``unsupported_token_type`` (the server does not introspect such tokens: oidc-provider's
    answer for any JWT) refuses the token.

    Args:
        endpoint: the ``introspection_endpoint``.
        client_id: this server's client id at the authorization server.
        client_secret: its secret.
        audience: the ``aud`` an active token must name (the canonical resource URI).
        issuer: the ``iss`` it must carry, if it names one.
        require_audience: refuse answers without ``aud``.
        leeway: clock skew allowed, in seconds.
        timeout: seconds a request may take.
        max_bytes: the largest answer accepted.
        clock: POSIX time.

    Raises:
        ValueError: ``endpoint`` is not an http(s) URL.
    """

    def __init__(self, *, endpoint: str, client_id: str, client_secret: str, audience: str | Sequence[str],
                 issuer: str | None = None, require_audience: bool = True, leeway: float = 30.0,
                 timeout: float = 5.0, max_bytes: int = 64 * 1024,
                 clock: Callable[[], float] = time.time) -> None:
        self.endpoint = check_http_url(endpoint, "the introspection endpoint")
        self.audience = (audience,) if isinstance(audience, str) else tuple(audience)
        self.issuer = issuer
        self.require_audience = require_audience
        self.leeway = leeway
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._clock = clock
        pair = f"{urllib.parse.quote(client_id, safe='')}:{urllib.parse.quote(client_secret, safe='')}"
        self._authorization = "Basic " + base64.b64encode(pair.encode()).decode()
        self._client_id = client_id

    def __repr__(self) -> str:
        return f"IntrospectionVerifier(endpoint={self.endpoint!r}, client_id={self._client_id!r})"

    def verify(self, token: str) -> TokenVerdict:
        """The verdict on ``token``."""
        body = urllib.parse.urlencode({"token": token, "token_type_hint": "access_token"}).encode()
        headers = {"authorization": self._authorization, "accept": "application/json",
                   "content-type": "application/x-www-form-urlencoded"}
        try:
            answer = http_request(self.endpoint, data=body, headers=headers, timeout=self.timeout,
                                  max_bytes=self.max_bytes)
        except FetchError as exc:
            return VerifierUnavailable(detail=str(exc))
        try:
            claims = json.loads(answer.body)
        except (ValueError, RecursionError):
            claims = None
        refused = isinstance(claims, dict) and claims.get("error") == "unsupported_token_type"
        if answer.status == 400 and refused:
            # The server will not introspect tokens of this kind (oidc-provider says so of every
            # JWT): no token it would vouch for, not an outage to retry.
            return TokenRejected(reason=RejectReason.INACTIVE, detail="introspection: unsupported_token_type")
        if answer.status != 200:
            log.warning("token introspection answered HTTP %d", answer.status)
            return VerifierUnavailable(detail=f"introspection: HTTP {answer.status}")
        if claims is None:
            return VerifierUnavailable(detail="introspection: not JSON")
        if not isinstance(claims, dict):
            return VerifierUnavailable(detail="introspection: not a JSON object")
        return self._judge(claims)

    def _judge(self, claims: dict[str, Any]) -> TokenVerdict:
        if claims.get("active") is not True:
            return TokenRejected(reason=RejectReason.INACTIVE)
        now = self._clock()
        exp, nbf, iss, aud = claims.get("exp"), claims.get("nbf"), claims.get("iss"), claims.get("aud")
        if isinstance(exp, int | float) and exp <= now - self.leeway:
            return TokenRejected(reason=RejectReason.EXPIRED)
        if isinstance(nbf, int | float) and nbf > now + self.leeway:
            return TokenRejected(reason=RejectReason.NOT_YET_VALID)
        if self.issuer is not None and iss is not None and iss != self.issuer:
            return TokenRejected(reason=RejectReason.WRONG_ISSUER)
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if (audiences or self.require_audience) and not set(self.audience) & set(audiences):
            return TokenRejected(reason=RejectReason.WRONG_AUDIENCE)
        return _principal(claims, ("scope",), self.leeway)

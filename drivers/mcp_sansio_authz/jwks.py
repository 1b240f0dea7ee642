"""A JSON Web Key Set, fetched and kept (RFC 7517): the keys a ``JwtVerifier`` trusts.

The set is fetched on first use and again after ``ttl``; a token naming an unknown
``kid`` triggers one early refetch (key rotation), at most once per ``refetch_interval``
so that tokens with made-up key ids cannot make the server hammer the authorization
server. A failed refetch keeps the keys already known (until they are ``max_stale``
old); with none known it is :class:`JwksUnavailable`. One fetch at a time (a lock):
threads that need the set meanwhile wait for that fetch rather than start their own.
Keys are parsed by PyJWT (``PyJWK``), never by hand.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import jwt

from .fetch import FetchError, Response, check_http_url, http_request

__all__ = ["JwksCache", "JwksUnavailable"]

log = logging.getLogger("mcp_sansio.authz")

Fetch = Callable[[str], Response]


class JwksUnavailable(Exception):
    """No key set could be had (the fetch failed and none is known)."""


class JwksCache:
    """The keys at ``url``, kept for ``ttl`` seconds.

    Args:
        url: the ``jwks_uri`` of the authorization server.
        ttl: how long a fetched set is used before it is fetched again.
        refetch_interval: the least time between two fetches caused by an unknown
            ``kid`` (or after a failed fetch).
        max_stale: how long a set stays usable when refetching it fails.
        timeout: seconds a fetch may take.
        max_bytes: the largest set accepted.
        clock: a monotonic clock (tests pass their own).
    """

    def __init__(self, url: str, *, ttl: float = 300.0, refetch_interval: float = 30.0,
                 max_stale: float = 86400.0, timeout: float = 5.0, max_bytes: int = 256 * 1024,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.url = check_http_url(url, "jwks_url")
        self.ttl = ttl
        self.refetch_interval = refetch_interval
        self.max_stale = max_stale
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: dict[str | None, list[dict[str, Any]]] | None = None  # kid -> JWKs
        self._fetched_at = -float("inf")  # when the set in hand was fetched
        self._tried_at = -float("inf")  # when a fetch was last attempted
        self._built: dict[tuple[str | None, str], jwt.PyJWK] = {}
        self.fetches = 0
        """Fetches attempted (for tests and metrics)."""

    def key(self, kid: str | None, algorithm: str) -> jwt.PyJWK | None:
        """The key ``kid`` usable with ``algorithm``, or ``None`` when the set has no such
        key even after a refetch (allowed at most once per ``refetch_interval``).

        Raises:
            JwksUnavailable: no set is known and none could be fetched.
        """
        with self._lock:
            now = self._clock()
            if self._keys is None or now >= self._fetched_at + self.ttl:
                self._refresh(now)
            jwk = self._find(kid, algorithm)
            if jwk is None and now >= self._tried_at + self.refetch_interval:
                self._refresh(now)
                jwk = self._find(kid, algorithm)
            return jwk

    def _find(self, kid: str | None, algorithm: str) -> jwt.PyJWK | None:
        keys = self._keys or {}
        candidates = keys.get(kid, []) if kid is not None else [k for ks in keys.values() for k in ks]
        usable = [k for k in candidates
                  if k.get("use", "sig") == "sig" and k.get("alg", algorithm) == algorithm]
        if len(usable) != 1:  # none, or several without a kid to choose: no guessing
            return None
        built = self._built.get((kid, algorithm))
        if built is None:
            try:
                built = jwt.PyJWK(usable[0], algorithm=algorithm)
            except jwt.PyJWTError:  # the key's type does not fit the algorithm
                return None
            self._built[(kid, algorithm)] = built
        return built

    def _refresh(self, now: float) -> None:
        if now < self._tried_at + self.refetch_interval and self._keys is None:
            raise JwksUnavailable(f"the key set at {self.url} could not be fetched lately")
        self._tried_at = now
        self.fetches += 1
        try:
            keys = self._fetch()
        except (FetchError, ValueError, RecursionError) as exc:
            if self._keys is not None and now < self._fetched_at + self.max_stale:
                log.warning("refetching the key set failed (%s); the known keys stay in use", exc)
                return
            self._keys = None
            raise JwksUnavailable(str(exc)) from None
        self._keys, self._fetched_at, self._built = keys, now, {}

    def _fetch(self) -> dict[str | None, list[dict[str, Any]]]:
        answer = http_request(self.url, timeout=self.timeout, max_bytes=self.max_bytes,
                              headers={"accept": "application/json"})
        if answer.status != 200:
            raise FetchError(f"{self.url}: HTTP {answer.status}")
        document = json.loads(answer.body)
        found = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(found, list):
            raise FetchError(f"{self.url}: no JWK Set (no 'keys' list)")
        keys: dict[str | None, list[dict[str, Any]]] = {}
        for jwk in found:
            if isinstance(jwk, dict) and isinstance(jwk.get("kty"), str):
                kid = jwk.get("kid")
                keys.setdefault(kid if isinstance(kid, str) else None, []).append(jwk)
        return keys

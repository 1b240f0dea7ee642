"""MCP over HTTP with OAuth 2.1: :class:`HttpClient` driven by the OAuth planner.

Every MCP request carries the planner's ``Authorization`` (and DPoP) headers. A 401, or a
403 ``insufficient_scope``, holds the refused requests instead of failing them; the
planner's HTTP steps go out as side requests on the same connection pool, and once it
answers :class:`~mcp_sansio.auth.Authorized` the held requests are sent again with the new
token. A browser redirect becomes an :class:`AuthorizationRedirect` event (or, headless,
a GET of the authorization URL whose ``Location`` is read back). Tokens are renewed
before they expire. No I/O, no clock: wall-clock time comes as an offset from ``now``
and randomness as a seed the driver passes in (STYLE.md section 1). See the
"Authorization" page of the MCP specification (2025-11-25).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Final, Literal, assert_never

from .auth import (
    AuthFailure,
    Authorized,
    AuthStep,
    Failed,
    Fresh,
    HttpResponse,
    HttpStep,
    OAuthConfig,
    OAuthFlow,
    Pending,
    Redirect,
    Token,
)
from .config import ClientConfig
from .errors import LocalProtocolError
from .events import (
    AuthorizationCompleted,
    AuthorizationFailed,
    AuthorizationRedirect,
    FailureReason,
)
from .http11 import Header
from .http_transport import HttpClient, TransportMode
from .proxy import ProxySettings
from .session import Params
from .types import ClientCapabilities
from .urls import Url

__all__ = [
    "AuthorizationCompleted",
    "AuthorizationFailed",
    "AuthorizationRedirect",
    "AuthorizingHttpClient",
]

_MIN_SEED: Final = 32
_RENEWAL_BACKOFF: Final = 30.0  # after a failed authorization, before renewing again
_STORED: Final = -1  # the credential of requests sent with the host's stored token


class AuthorizingHttpClient(HttpClient):
    """An :class:`HttpClient` that authorizes itself with OAuth 2.1.

    Driver contract, beyond :class:`HttpClient`'s: on :class:`AuthorizationRedirect` open
    the browser and pass the URL it is redirected to (the loopback callback) to
    :meth:`receive_authorization_redirect`; store the token of
    :class:`AuthorizationCompleted` if tokens should outlive the process. Requests held
    for an authorization keep their deadlines, except the handshake's, which a browser
    redirect extends by ``redirect_timeout``.
    """

    def __init__(
        self,
        url: str,
        oauth: OAuthConfig,
        *,
        entropy: bytes,
        clock_offset: float,
        headless: bool = False,
        redirect_timeout: float = 300.0,
        stored_token: Token | None = None,
        config: ClientConfig | None = None,
        capabilities: ClientCapabilities | None = None,
        headers: Mapping[str, str] | None = None,
        transport: TransportMode | Literal["auto", "streamable-http", "sse"] = TransportMode.AUTO,
        jitter_seed: int = 0,
        proxies: ProxySettings | None = None,
    ) -> None:
        """Create the client; nothing is sent until :meth:`connect`.

        Args:
            url: the MCP endpoint.
            oauth: the grant, client identity and keys for the planner.
            entropy: at least 32 secret random bytes (``secrets.token_bytes(32)``); every
                PKCE verifier, ``state`` and JWT id is derived from them (HMAC-SHA-512 in
                counter mode), see :meth:`feed_entropy`.
            clock_offset: Unix time minus the driver's monotonic clock
                (``time.time() - loop.time()``), for the ``iat``/``exp`` of JWTs.
            headless: do the browser's part too: GET the authorization URL and read the
                redirect from its ``Location`` (servers that redirect at once, like test
                servers; no user is asked anything).
            redirect_timeout: how long to wait for the browser's redirect before the
                authorization fails.
            stored_token: a bearer token from an earlier run, used until it expires or is
                refused (``expires_at`` on the driver's monotonic clock).
            config: see :class:`HttpClient`.
            capabilities: see :class:`HttpClient`.
            headers: see :class:`HttpClient`; an ``Authorization`` header is refused here.
            transport: see :class:`HttpClient`.
            jitter_seed: see :class:`HttpClient`.
            proxies: see :class:`HttpClient`.

        Raises:
            LocalProtocolError: what :class:`HttpClient` raises; ``entropy`` is too short;
                ``headers`` holds ``Authorization``; ``redirect_timeout`` is not positive.
        """
        if len(entropy) < _MIN_SEED:
            raise LocalProtocolError(f"entropy needs at least {_MIN_SEED} bytes")
        if any(name.lower() == "authorization" for name in headers or {}):
            raise LocalProtocolError("an Authorization header and OAuth exclude each other")
        if redirect_timeout <= 0:
            raise LocalProtocolError("redirect_timeout must be positive")
        super().__init__(url, config=config, capabilities=capabilities, headers=headers,
                         transport=transport, jitter_seed=jitter_seed, proxies=proxies)
        self._flow = OAuthFlow(self.url, oauth)
        self._seed = hashlib.sha512(entropy).digest()
        self._counter = 0
        self._clock_offset = clock_offset
        self._headless = headless
        self._redirect_timeout = redirect_timeout
        self._redirect_at: float | None = None  # waiting for the browser until then
        bearer = stored_token is not None and stored_token.token_type == "Bearer"
        self._stored = stored_token if bearer else None
        self._step_tag: int | None = None  # the side request of the planner's current step
        self._step_url = ""
        self._fetching_redirect = False  # headless: that request is the authorization GET
        self._announced = 0  # serial of the last token announced
        self._renew_after = 0.0  # no renewal before this (a failed one backs off)

    # ------------------------------------------------------------------ queries

    @property
    def flow(self) -> OAuthFlow:
        """The planner (its ``phase``, ``token``, ``resource``), for inspection."""
        return self._flow

    @property
    def token(self) -> Token | None:
        """The token requests go out with: the planner's, else the stored one."""
        return self._flow.token or self._stored

    def next_deadline(self) -> float | None:
        """:meth:`HttpClient.next_deadline`, the token's renewal and the redirect's bound."""
        renewal = self._flow.next_deadline()
        if renewal is not None:
            renewal = max(renewal, self._renew_after)
        candidates = [d for d in (super().next_deadline(), renewal, self._redirect_at) if d is not None]
        return min(candidates) if candidates else None

    # ------------------------------------------------------------- driver input

    def feed_entropy(self, data: bytes, *, clock_offset: float | None = None) -> None:
        """Mix more random bytes into the seed; optionally correct the wall-clock offset."""
        self._seed = hmac.new(self._seed, b"reseed" + data, hashlib.sha512).digest()
        if clock_offset is not None:
            self._clock_offset = clock_offset

    def handle_timeout(self, now: float) -> None:
        """:meth:`HttpClient.handle_timeout`, plus renewing a token that is due and giving up
        on a redirect that never came.

        Events: those of :meth:`HttpClient.handle_timeout`; ``AuthorizationCompleted`` or
        ``AuthorizationFailed`` later.
        """
        super().handle_timeout(now)
        if self._redirect_at is not None and self._redirect_at <= now:
            self._redirect_at = None
            self._perform(self._flow.cancel(), now, detail="no redirect came back from the browser")
        elif self._flow.needs_refresh(now) and now >= self._renew_after:
            self._perform(self._flow.refresh(now=now, fresh=self._fresh(now)), now)

    def authorize(self, *, now: float) -> None:
        """Authorize now, before any request was refused (discovery without a challenge).

        Raises:
            LocalProtocolError: a token is held or an authorization is under way.
        Events: ``AuthorizationRedirect``, then ``AuthorizationCompleted`` or
        ``AuthorizationFailed``.
        """
        self._now = now
        self._perform(self._flow.start(now=now, fresh=self._fresh(now)), now)

    def receive_authorization_redirect(self, url: str, *, now: float) -> None:
        """The URL the browser was redirected to (``redirect_uri`` with ``code`` and ``state``).

        Raises:
            LocalProtocolError: no redirect is awaited.
        Events: ``AuthorizationCompleted`` or ``AuthorizationFailed`` later.
        """
        self._now = now
        step = self._flow.receive_redirect_location(url, now=now, fresh=self._fresh(now))
        self._redirect_at = None
        self._perform(step, now)

    def cancel_authorization(self, *, now: float) -> None:
        """Give up the authorization under way (the user closed the browser).

        Raises:
            LocalProtocolError: no authorization is under way.
        Events: ``AuthorizationFailed``; ``RequestFailed`` for every held request.
        """
        self._now = now
        failed = self._flow.cancel()
        self._redirect_at = self._step_tag = None
        self._perform(failed, now)

    # -------------------------------------------------------- transport hooks

    def _request(self, method: str, params: Params, now: float, timeout: float | None,
                 all_pages: bool, *, fresh: bool = True, endless: bool = False) -> int:
        self._now = now  # the request's headers (a DPoP proof's iat) are made at this time
        return super()._request(method, params, now, timeout, all_pages, fresh=fresh, endless=endless)

    def _credential(self) -> int:
        serial = self._flow.token_serial
        if serial or self._stored_usable() is None:
            return serial
        return _STORED

    def _authorization(self, method: str, url: Url) -> list[Header]:
        headers = self._flow.authorize_request_headers(method=method, url=url, fresh=self._fresh(self._now))
        if headers:
            return list(headers)
        stored = self._stored_usable()
        return [("authorization", f"Bearer {stored.access_token}")] if stored is not None else []

    def _authorization_pending(self) -> bool:
        return self._flow.in_progress and self._flow.token is None

    def _authorization_answered(self, status: int, headers: tuple[Header, ...], credential: int,
                                now: float) -> None:
        # Resets the planner's count of attempts (and keeps its DPoP nonce); never a step.
        self._flow.receive_resource_response(status, headers, token_serial=max(credential, 0), now=now,
                                             fresh=self._fresh(now))

    def _authorization_refused(self, status: int, headers: tuple[Header, ...], credential: int,
                               now: float) -> bool:
        if credential == _STORED:
            self._stored = None
        step = self._flow.receive_resource_response(status, headers, token_serial=max(credential, 0),
                                                    now=now, fresh=self._fresh(now))
        if step is None:
            return False  # a 403 of another kind: no authorization can help
        # The server answered, so a handshake gets the full initialize_timeout (a
        # server/discover probe would otherwise fall back after discover_timeout).
        self._extend_handshake(now + self.config.initialize_timeout)
        self._perform(step, now)
        return True

    def _side_answered(self, tag: int, status: int, headers: tuple[Header, ...], body: bytes,
                       now: float) -> None:
        if tag != self._step_tag:
            super()._side_answered(tag, status, headers, body, now)
            return
        self._step_tag = None
        fresh = self._fresh(now)
        if self._fetching_redirect:
            location = next((value for name, value in headers if name.lower() == "location"), "")
            step = self._flow.receive_redirect_location(location, now=now, fresh=fresh)
        else:
            step = self._flow.receive(HttpResponse(status=status, headers=headers, body=body), now=now,
                                      fresh=fresh)
        self._perform(step, now)

    def _side_failed(self, tag: int, message: str, now: float) -> None:
        if tag != self._step_tag:
            super()._side_failed(tag, message, now)
            return
        self._step_tag = None
        self._perform(self._flow.cancel(), now, detail=f"the request to {self._step_url} failed: {message}")

    # ------------------------------------------------------------------ steps

    def _perform(self, step: AuthStep, now: float, *, detail: str | None = None) -> None:
        """Carry out one planner step."""
        if isinstance(step, HttpStep):
            request = step.request
            self._send_step(request.method, request.url, request.headers, request.body, now, redirect=False)
        elif isinstance(step, Redirect):
            if self._headless:
                self._send_step("GET", step.authorization_url, (), b"", now, redirect=True)
            else:
                self._redirect_at = at = now + self._redirect_timeout
                self._extend_handshake(at + self.config.initialize_timeout)  # a handshake waits too
                self._events.append(AuthorizationRedirect(authorization_url=step.authorization_url,
                                                          state=step.state, redirect_uri=step.redirect_uri))
        elif isinstance(step, Authorized):
            if step.token.serial > self._announced:
                self._announced = step.token.serial
                self._stored = None
                self._events.append(AuthorizationCompleted(token=step.token))
            self._release_held(now)
        elif isinstance(step, Failed):
            self._renew_after = now + _RENEWAL_BACKOFF  # a token that failed to renew is kept meanwhile
            message = detail or step.message
            self._events.append(AuthorizationFailed(reason=step.reason, message=message))
            reason = (FailureReason.INSUFFICIENT_SCOPE if step.reason is AuthFailure.INSUFFICIENT_SCOPE
                      else FailureReason.AUTHORIZATION_REQUIRED)
            self._fail_held(reason, f"authorization failed ({step.reason.value}): {message}")
        elif isinstance(step, Pending):
            pass  # the request stays held until the flow under way ends
        else:  # pragma: no cover
            assert_never(step)

    def _send_step(self, method: str, url: str, headers: tuple[tuple[str, str], ...], body: bytes,
                   now: float, *, redirect: bool) -> None:
        # The planner only plans URLs it parsed, so side_request cannot refuse them.
        tag = self.side_request(method, url, headers, body, now=now)
        self._step_tag, self._step_url, self._fetching_redirect = tag, url, redirect

    def _stored_usable(self) -> Token | None:
        stored = self._stored
        if stored is None or (stored.expires_at is not None and stored.expires_at <= self._now):
            return None
        return stored

    def _fresh(self, now: float) -> Fresh:
        """Wall-clock time and 64 bytes no other call gets (HMAC-SHA-512 of a counter)."""
        self._counter += 1
        random = hmac.new(self._seed, self._counter.to_bytes(8, "big"), hashlib.sha512).digest()
        return Fresh(unix_time=now + self._clock_offset, random=random)

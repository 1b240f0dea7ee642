"""MCP over HTTP with OAuth 2.1: an :class:`HttpClient` with the OAuth planner beside it.

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
    AuthorizationPending,
    Authorized,
    AuthStep,
    Failed,
    Fresh,
    HttpResponse,
    HttpStep,
    OAuthConfig,
    OAuthFlow,
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
from .http_exchanges import AuthPort
from .http_transport import HttpClient, TransportMode
from .proxy import ProxySettings
from .types import ClientCapabilities
from .urls import Url

__all__ = [
    "AuthorizationCompleted",
    "AuthorizationFailed",
    "AuthorizationRedirect",
    "AuthorizingHttpClient",
    "OAuthAuthorizer",
]

_MIN_SEED: Final = 32
_RENEWAL_BACKOFF: Final = 30.0  # after a failed authorization, before renewing again
_STORED: Final = -1  # the credential of requests sent with the host's stored token


class OAuthAuthorizer:
    """The OAuth 2.1 component of an :class:`HttpClient` (its
    :class:`~mcp_sansio.http_exchanges.Authorizer`): adds the planner's headers to every
    MCP request, turns refusals into planner steps and carries them out through the
    client's :class:`~mcp_sansio.http_exchanges.AuthPort`."""

    def __init__(self, oauth: OAuthConfig, *, entropy: bytes, clock_offset: float, headless: bool = False,
                 redirect_timeout: float = 300.0, stored_token: Token | None = None) -> None:
        """See :class:`AuthorizingHttpClient` for the arguments.

        Raises:
            LocalProtocolError: ``entropy`` is too short; ``redirect_timeout`` is not positive.
        """
        if len(entropy) < _MIN_SEED:
            raise LocalProtocolError(f"entropy needs at least {_MIN_SEED} bytes")
        if redirect_timeout <= 0:
            raise LocalProtocolError("redirect_timeout must be positive")
        self._oauth = oauth
        self._flow: OAuthFlow | None = None  # made by bind(), which knows the resource
        self._port: AuthPort | None = None
        self._config = ClientConfig()
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
        """The planner (its ``phase``, ``token``, ``resource``), for inspection.

        Raises:
            LocalProtocolError: not bound to a client yet.
        """
        if self._flow is None:
            raise LocalProtocolError("the authorizer is not bound to a client yet")
        return self._flow

    @property
    def token(self) -> Token | None:
        """The token requests go out with: the planner's, else the stored one."""
        return (self._flow.token if self._flow is not None else None) or self._stored

    # ------------------------------------------------------------- the client's side

    def bind(self, port: AuthPort, url: Url, config: ClientConfig) -> None:
        """Attach to the client whose MCP endpoint is ``url``.

        Raises:
            LocalProtocolError: already bound.
        """
        if self._port is not None:
            raise LocalProtocolError("the authorizer is bound to a client already")
        self._port, self._config = port, config
        self._flow = OAuthFlow(url, self._oauth)

    def headers(self, method: str, url: Url, now: float) -> list[Header]:
        headers = self.flow.authorize_request_headers(method=method, url=url, fresh=self._fresh(now))
        if headers:
            return list(headers)
        stored = self._stored_usable(now)
        return [("authorization", f"Bearer {stored.access_token}")] if stored is not None else []

    def credential(self, now: float) -> int:
        serial = self.flow.token_serial
        if serial or self._stored_usable(now) is None:
            return serial
        return _STORED

    def holding(self) -> bool:
        return self.flow.in_progress and self.flow.token is None

    def answered(self, status: int, headers: tuple[Header, ...], credential: int, now: float) -> None:
        # Resets the planner's count of attempts (and keeps its DPoP nonce); never a step.
        self.flow.receive_resource_response(status, headers, token_serial=max(credential, 0), now=now,
                                            fresh=self._fresh(now))

    def refused(self, status: int, headers: tuple[Header, ...], credential: int, now: float) -> bool:
        if credential == _STORED:
            self._stored = None
        step = self.flow.receive_resource_response(status, headers, token_serial=max(credential, 0),
                                                   now=now, fresh=self._fresh(now))
        if step is None:
            return False  # a 403 of another kind: no authorization can help
        # The server answered, so a handshake gets the full initialize_timeout (a
        # server/discover probe would otherwise fall back after discover_timeout).
        self._bound().extend_handshake(now + self._config.initialize_timeout)
        self._perform(step, now)
        return True

    def side_answered(self, tag: int, status: int, headers: tuple[Header, ...], body: bytes,
                      now: float) -> bool:
        if tag != self._step_tag:
            return False
        self._step_tag = None
        fresh = self._fresh(now)
        if self._fetching_redirect:
            location = next((value for name, value in headers if name.lower() == "location"), "")
            step = self.flow.receive_redirect_location(location, now=now, fresh=fresh)
        else:
            step = self.flow.receive(HttpResponse(status=status, headers=headers, body=body), now=now,
                                     fresh=fresh)
        self._perform(step, now)
        return True

    def side_failed(self, tag: int, message: str, now: float) -> bool:
        if tag != self._step_tag:
            return False
        self._step_tag = None
        self._perform(self.flow.cancel(), now, detail=f"the request to {self._step_url} failed: {message}")
        return True

    def next_deadline(self) -> float | None:
        """The token's renewal, and the bound on the browser's redirect."""
        renewal = self.flow.next_deadline()
        if renewal is not None:
            renewal = max(renewal, self._renew_after)
        candidates = [d for d in (renewal, self._redirect_at) if d is not None]
        return min(candidates) if candidates else None

    def handle_timeout(self, now: float) -> None:
        """Renew a token that is due; give up on a redirect that never came.

        Events: ``AuthorizationCompleted`` or ``AuthorizationFailed`` later.
        """
        if self._redirect_at is not None and self._redirect_at <= now:
            self._redirect_at = None
            self._perform(self.flow.cancel(), now, detail="no redirect came back from the browser")
        elif self.flow.needs_refresh(now) and now >= self._renew_after:
            self._perform(self.flow.refresh(now=now, fresh=self._fresh(now)), now)

    # ----------------------------------------------------------- the app's side

    def feed_entropy(self, data: bytes, *, clock_offset: float | None = None) -> None:
        """Mix more random bytes into the seed; optionally correct the wall-clock offset."""
        self._seed = hmac.new(self._seed, b"reseed" + data, hashlib.sha512).digest()
        if clock_offset is not None:
            self._clock_offset = clock_offset

    def authorize(self, *, now: float) -> None:
        """Authorize now, before any request was refused (discovery without a challenge).

        Raises:
            LocalProtocolError: a token is held or an authorization is under way.
        Events: ``AuthorizationRedirect``, then ``AuthorizationCompleted`` or
        ``AuthorizationFailed``.
        """
        self._perform(self.flow.start(now=now, fresh=self._fresh(now)), now)

    def receive_authorization_redirect(self, url: str, *, now: float) -> None:
        """The URL the browser was redirected to (``redirect_uri`` with ``code`` and ``state``).

        Raises:
            LocalProtocolError: no redirect is awaited.
        Events: ``AuthorizationCompleted`` or ``AuthorizationFailed`` later.
        """
        step = self.flow.receive_redirect_location(url, now=now, fresh=self._fresh(now))
        self._redirect_at = None
        self._perform(step, now)

    def cancel_authorization(self, *, now: float) -> None:
        """Give up the authorization under way (the user closed the browser).

        Raises:
            LocalProtocolError: no authorization is under way.
        Events: ``AuthorizationFailed``; ``RequestFailed`` for every held request.
        """
        failed = self.flow.cancel()
        self._redirect_at = self._step_tag = None
        self._perform(failed, now)

    # ------------------------------------------------------------------ steps

    def _perform(self, step: AuthStep, now: float, *, detail: str | None = None) -> None:
        """Carry out one planner step."""
        port = self._bound()
        if isinstance(step, HttpStep):
            request = step.request
            self._send_step(request.method, request.url, request.headers, request.body, now, redirect=False)
        elif isinstance(step, Redirect):
            if self._headless:
                self._send_step("GET", step.authorization_url, (), b"", now, redirect=True)
            else:
                self._redirect_at = at = now + self._redirect_timeout
                port.extend_handshake(at + self._config.initialize_timeout)  # a handshake waits too
                port.add_event(AuthorizationRedirect(authorization_url=step.authorization_url,
                                                     state=step.state, redirect_uri=step.redirect_uri))
        elif isinstance(step, Authorized):
            if step.token.serial > self._announced:
                self._announced = step.token.serial
                self._stored = None
                port.add_event(AuthorizationCompleted(token=step.token))
            port.release(now)
        elif isinstance(step, Failed):
            self._renew_after = now + _RENEWAL_BACKOFF  # a token that failed to renew is kept meanwhile
            message = detail or step.message
            port.add_event(AuthorizationFailed(reason=step.reason, message=message))
            reason = (FailureReason.INSUFFICIENT_SCOPE if step.reason is AuthFailure.INSUFFICIENT_SCOPE
                      else FailureReason.AUTHORIZATION_REQUIRED)
            port.fail(reason, f"authorization failed ({step.reason.value}): {message}", now)
        elif isinstance(step, AuthorizationPending):
            pass  # the request stays held until the flow under way ends
        else:  # pragma: no cover
            assert_never(step)

    def _send_step(self, method: str, url: str, headers: tuple[tuple[str, str], ...], body: bytes,
                   now: float, *, redirect: bool) -> None:
        # The planner only plans URLs it parsed, so the side request cannot be refused.
        tag = self._bound().side_request(method, url, headers, body, now)
        self._step_tag, self._step_url, self._fetching_redirect = tag, url, redirect

    def _bound(self) -> AuthPort:
        if self._port is None:
            raise LocalProtocolError("the authorizer is not bound to a client yet")
        return self._port

    def _stored_usable(self, now: float) -> Token | None:
        stored = self._stored
        if stored is None or (stored.expires_at is not None and stored.expires_at <= now):
            return None
        return stored

    def _fresh(self, now: float) -> Fresh:
        """Wall-clock time and 64 bytes no other call gets (HMAC-SHA-512 of a counter)."""
        self._counter += 1
        random = hmac.new(self._seed, self._counter.to_bytes(8, "big"), hashlib.sha512).digest()
        return Fresh(unix_time=now + self._clock_offset, random=random)


class AuthorizingHttpClient(HttpClient):
    """An :class:`HttpClient` built with an :class:`OAuthAuthorizer` beside it, whose
    app-side calls it offers as its own (it overrides nothing of the client's).

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
        if any(name.lower() == "authorization" for name in headers or {}):
            raise LocalProtocolError("an Authorization header and OAuth exclude each other")
        self.authorizer = OAuthAuthorizer(oauth, entropy=entropy, clock_offset=clock_offset,
                                          headless=headless, redirect_timeout=redirect_timeout,
                                          stored_token=stored_token)
        super().__init__(url, config=config, capabilities=capabilities, headers=headers, transport=transport,
                         jitter_seed=jitter_seed, proxies=proxies, authorizer=self.authorizer)

    @property
    def flow(self) -> OAuthFlow:
        """The planner (:attr:`OAuthAuthorizer.flow`)."""
        return self.authorizer.flow

    @property
    def token(self) -> Token | None:
        """The token requests go out with (:attr:`OAuthAuthorizer.token`)."""
        return self.authorizer.token

    def feed_entropy(self, data: bytes, *, clock_offset: float | None = None) -> None:
        """:meth:`OAuthAuthorizer.feed_entropy`."""
        self.authorizer.feed_entropy(data, clock_offset=clock_offset)

    def authorize(self, *, now: float) -> None:
        """:meth:`OAuthAuthorizer.authorize`."""
        self.authorizer.authorize(now=now)

    def receive_authorization_redirect(self, url: str, *, now: float) -> None:
        """:meth:`OAuthAuthorizer.receive_authorization_redirect`."""
        self.authorizer.receive_authorization_redirect(url, now=now)

    def cancel_authorization(self, *, now: float) -> None:
        """:meth:`OAuthAuthorizer.cancel_authorization`."""
        self.authorizer.cancel_authorization(now=now)

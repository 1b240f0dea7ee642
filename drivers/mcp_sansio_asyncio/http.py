"""asyncio driver for MCP over HTTP: TCP/TLS sockets, one timer, and the core's pump.

Every HTTP decision (connections, headers, statuses, retries, session expiry) is made
by :class:`mcp_sansio.http_transport.HttpClient`, and with ``auth=OAuth(...)`` every
OAuth decision by :class:`mcp_sansio.http_auth.AuthorizingHttpClient`; the shared socket
driver only opens the sockets it asks for and copies bytes both ways, and for OAuth
supplies the entropy, the wall clock, the browser and the loopback redirect listener.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Literal

from mcp_sansio import ClientConfig
from mcp_sansio.auth import AuthFailure, Token
from mcp_sansio.errors import InsufficientScope, LocalProtocolError, Unauthorized
from mcp_sansio.events import Event
from mcp_sansio.handlers import client_capabilities
from mcp_sansio.http_auth import (
    AuthorizationCompleted,
    AuthorizationFailed,
    AuthorizationRedirect,
    AuthorizingHttpClient,
)
from mcp_sansio.http_transport import HttpClient, TransportMode
from mcp_sansio.types import ClientCapabilities
from mcp_sansio.urls import parse_url

from ._loop import Connect
from ._sockets import SocketDriver
from .client import ElicitationHandler, NotificationHandler, RootsArg, SamplingHandler
from .oauth import OAuth, RedirectListener, open_in_browser, stored_from, token_from

__all__ = ["HttpConnection", "OAuth", "connect_http"]

log = logging.getLogger("mcp_sansio.oauth")

Transport = TransportMode | Literal["auto", "streamable-http", "sse"]


class HttpConnection(SocketDriver):
    """A client connected to an MCP server over HTTP; use it through :func:`connect_http`."""

    def __init__(
        self, url: str, *, headers: Mapping[str, str] | None, transport: Transport,
        config: ClientConfig, on_sampling: SamplingHandler | None,
        on_elicitation: ElicitationHandler | None, roots: RootsArg | None,
        on_notification: NotificationHandler | None, auth: OAuth | None = None,
    ) -> None:
        caps = client_capabilities(sampling=on_sampling is not None,
                                   elicitation=on_elicitation is not None, roots=roots is not None)
        self._auth = auth
        self._listener: RedirectListener | None = None
        self._authorizing: AuthorizingHttpClient | None = None
        self._store_key = str(parse_url(url))  # the canonical URL names its tokens
        self._authorized: list[asyncio.Future[Token]] = []  # callers of authorize()
        if auth is None:
            self._client = HttpClient(url, config=config, capabilities=caps, headers=headers,
                                      transport=transport, jitter_seed=random.getrandbits(64))
        else:
            self._client = self._authorizing = self._oauth_client(
                url, auth, config=config, capabilities=caps, headers=headers, transport=transport)
        super().__init__(self._client, on_sampling=on_sampling, on_elicitation=on_elicitation,
                         roots=roots, on_notification=on_notification)

    def _oauth_client(self, url: str, auth: OAuth, *, config: ClientConfig, capabilities: ClientCapabilities,
                      headers: Mapping[str, str] | None, transport: Transport) -> AuthorizingHttpClient:
        """The core with OAuth; for the browser flow, the redirect port is reserved first."""
        offset = time.time() - asyncio.get_running_loop().time()
        redirect_uri = auth.redirect_uri
        if auth.uses_browser and redirect_uri is None:
            listener = RedirectListener("127.0.0.1", auth.redirect_port, "/callback")
            redirect_uri = listener.redirect_uri
            if auth.headless:
                listener.close()  # the port only names the redirect; nothing comes back to it
            else:
                self._listener = listener
        elif auth.uses_browser and redirect_uri is not None and not auth.headless:
            self._listener = RedirectListener.for_uri(redirect_uri)
        try:
            stored = auth.store.load(self._store_key)
            token = None if stored is None else token_from(stored, clock_offset=offset)
            return AuthorizingHttpClient(
                url, auth.planner_config(redirect_uri), entropy=secrets.token_bytes(32), clock_offset=offset,
                headless=auth.headless, redirect_timeout=auth.redirect_timeout, stored_token=token,
                config=config, capabilities=capabilities, headers=headers, transport=transport,
                jitter_seed=random.getrandbits(64))
        except BaseException:
            if self._listener is not None:
                self._listener.close()
            raise

    @property
    def transport(self) -> str:
        """The HTTP transport in use: ``"streamable-http"`` or ``"sse"``."""
        return self._client.transport

    @property
    def session_id(self) -> str | None:
        """The server's ``Mcp-Session-Id``, if it gave one."""
        return self._client.session_id

    @property
    def token(self) -> Token | None:
        """The OAuth token requests go out with, if any."""
        return self._authorizing.token if self._authorizing is not None else None

    async def authorize(self) -> Token:
        """Authorize now, even if the server has not asked yet (``mcp-sansio auth login``).

        Raises:
            LocalProtocolError: no OAuth, a token is held, or an authorization is under way.
            Unauthorized: the authorization failed.
        """
        if self._authorizing is None:
            raise LocalProtocolError("this connection does not use OAuth")
        self._authorizing.authorize(now=self._loop.time())
        done: asyncio.Future[Token] = self._loop.create_future()
        self._authorized.append(done)
        self._pump()
        return await done

    def receive_authorization_redirect(self, url: str) -> None:
        """The URL the browser was redirected to, for a redirect URI served elsewhere
        (an ``https`` one); a loopback redirect URI is served by the connection itself.

        Raises:
            LocalProtocolError: no OAuth, or no redirect is awaited.
        """
        if self._authorizing is None:
            raise LocalProtocolError("this connection does not use OAuth")
        self._authorizing.receive_authorization_redirect(url, now=self._loop.time())
        self._pump()

    async def aclose(self) -> None:
        """End the session, close every socket and the redirect listener."""
        try:
            await super().aclose()
        finally:
            if self._listener is not None:
                self._listener.close()

    def _deliver_other(self, event: Event) -> None:
        if isinstance(event, AuthorizationRedirect):
            self._spawn(lambda: self._send_user(event))
        elif isinstance(event, AuthorizationCompleted):
            assert self._auth is not None  # only its core says so
            offset = time.time() - self._loop.time()
            self._auth.store.save(self._store_key, stored_from(event.token, clock_offset=offset))
            self._settle_authorize(lambda done: done.set_result(event.token))
        elif isinstance(event, AuthorizationFailed):
            log.warning("authorization failed (%s): %s", event.reason.value, event.message)
            kind = InsufficientScope if event.reason is AuthFailure.INSUFFICIENT_SCOPE else Unauthorized
            error = kind(f"authorization failed ({event.reason.value}): {event.message}", status=0, params={})
            self._settle_authorize(lambda done: done.set_exception(error))
        else:
            super()._deliver_other(event)

    def _settle_authorize(self, settle: Callable[[asyncio.Future[Token]], None]) -> None:
        waiting, self._authorized = self._authorized, []
        for done in waiting:
            if not done.done():
                settle(done)

    async def _send_user(self, event: AuthorizationRedirect) -> None:
        """Serve the redirect URI, then send the user's browser to the authorization server."""
        assert self._auth is not None and self._authorizing is not None  # only their core redirects
        core = self._authorizing
        listener = self._listener
        try:
            if listener is not None:
                await listener.serve(self._redirected)
            open_in_browser(self._auth.open_browser, event.authorization_url)
        except Exception as exc:  # no listener, or the host's opener failed: nobody can sign in
            log.warning("cannot start the authorization: %s", exc)
            core.cancel_authorization(now=self._loop.time())
            self._pump()

    def _redirected(self, url: str) -> str:
        """The browser came back to the listener with ``url``; the text is shown to the user."""
        assert self._authorizing is not None and self._listener is not None  # set together
        try:
            self._authorizing.receive_authorization_redirect(url, now=self._loop.time())
        except LocalProtocolError:
            return "No authorization is waiting for this."
        self._pump()
        self._spawn(self._listener.stop)
        return "Authorization received."


def connect_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    transport: Transport = "auto",
    config: ClientConfig | None = None,
    on_sampling: SamplingHandler | None = None,
    on_elicitation: ElicitationHandler | None = None,
    roots: RootsArg | None = None,
    on_notification: NotificationHandler | None = None,
    auth: OAuth | None = None,
) -> Connect[HttpConnection]:
    """Speak MCP to the server at ``url`` over Streamable HTTP (or legacy HTTP+SSE).

    ``headers`` (API keys, a static ``Authorization: Bearer ...``) go on every request to
    that origin. ``transport`` is ``"auto"`` (Streamable HTTP, falling back to HTTP+SSE on
    400/404/405), ``"streamable-http"`` or ``"sse"``. ``auth=OAuth(...)`` authorizes with
    OAuth 2.1 whenever the server asks (401, or 403 ``insufficient_scope``): the browser
    flow serves its redirect on ``127.0.0.1`` and opens the browser; tokens go to
    ``auth.store``.

    Raises (on entering):
        LocalProtocolError: ``url`` is not an http(s) URL, or ``auth`` conflicts with an
            ``Authorization`` header.
        OSError: the redirect port cannot be bound.
        ConnectionClosed, HttpError, Unauthorized (InsufficientScope), RequestTimeout,
        UnsupportedProtocolVersion: the handshake failed.
    """
    cfg = config or ClientConfig()
    return Connect(lambda: HttpConnection(
        url, headers=headers, transport=transport, config=cfg, on_sampling=on_sampling,
        on_elicitation=on_elicitation, roots=roots, on_notification=on_notification, auth=auth,
    ))

"""The loop-neutral half of ``connect_http(url, auth=OAuth(...))`` in a driver.

:class:`OAuthHost` builds the OAuth core for a connection, keeps its tokens in the
store, opens the browser and answers the browser's request to the loopback redirect
URI; :class:`LoopbackRedirect` reserves that URI's port; :class:`OAuthMethods` is the
part of each driver's ``HttpConnection`` that needs no loop. A driver only accepts the
browser's connections on its own loop, reads the request head (until
:func:`request_complete`) and writes back what :meth:`OAuthHost.answer_browser` returns.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import secrets
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Literal, Protocol

from mcp_sansio import ClientConfig
from mcp_sansio.auth import AuthFailure, Token
from mcp_sansio.errors import InsufficientScope, LocalProtocolError, Unauthorized
from mcp_sansio.events import (
    AuthorizationCompleted,
    AuthorizationEvent,
    AuthorizationFailed,
    AuthorizationRedirect,
)
from mcp_sansio.http_auth import AuthorizingHttpClient
from mcp_sansio.http_transport import HttpClient, TransportMode
from mcp_sansio.proxy import ProxySettings, proxy_settings
from mcp_sansio.types import ClientCapabilities
from mcp_sansio.urls import is_loopback, parse_url

from .settings import OAuth
from .stores import stored_from, token_from

__all__ = ["LoopbackRedirect", "OAuthHost", "OAuthMethods", "Settleable", "http_core", "request_complete"]

log = logging.getLogger("mcp_sansio.oauth")

Transport = TransportMode | Literal["auto", "streamable-http", "sse"]

_MAX_HEAD: Final = 16384  # a browser's request head is far smaller
_PAGE: Final = (b"<!doctype html><meta charset=utf-8><title>mcp-sansio</title>"
                b"<p>%s You can close this window.</p>")


def request_complete(head: bytes) -> bool:
    """Whether ``head`` (what a browser sent so far) holds the whole request head, or as
    much of it as will be read."""
    return b"\n\r\n" in head or b"\n\n" in head or len(head) >= _MAX_HEAD


def _bound(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (reusable at once after an earlier listener)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


class LoopbackRedirect:
    """The loopback address the browser is redirected to.

    Its port is reserved (bound, not listening) when the connection is made, so the
    redirect URI can be registered before anything is served.
    """

    def __init__(self, host: str, port: int, path: str, *, authority: str | None = None) -> None:
        """Bind ``host:port`` (0: a free port); ``authority`` is how the redirect URI names
        it (default ``host:port``).

        Raises:
            OSError: the port cannot be bound.
        """
        self._sock: socket.socket | None = _bound(host, port)
        self.host = host
        self.port: int = self._sock.getsockname()[1]
        self.path = path
        shown = f"[{host}]" if ":" in host else host
        self.origin = f"http://{authority or f'{shown}:{self.port}'}"
        self.redirect_uri = self.origin + path
        """The redirect URI this address serves."""

    @classmethod
    def for_uri(cls, redirect_uri: str) -> LoopbackRedirect | None:
        """The address of a loopback ``http`` redirect URI, else ``None`` (served elsewhere).

        Raises:
            OSError: its port cannot be bound.
        """
        url = parse_url(redirect_uri)
        if url.scheme != "http" or not is_loopback(url):
            return None
        host = "127.0.0.1" if url.host == "localhost" else url.host
        loopback = cls(host, url.port, url.target.partition("?")[0], authority=url.authority)
        loopback.redirect_uri = redirect_uri
        return loopback

    def listening_socket(self) -> socket.socket:
        """A listening, non-blocking socket on the port: the reserved one the first time,
        a new one after an earlier listener was closed. The caller owns it.

        Raises:
            OSError: the port cannot be bound again.
        """
        sock, self._sock = self._sock, None
        if sock is None:
            sock = _bound(self.host, self.port)
        try:
            sock.listen()
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        return sock

    def close(self) -> None:
        """Release the reserved port, if it was never listened on."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None


class OAuthHost:
    """What a connection with ``auth=OAuth(...)`` needs beyond moving bytes, on any loop.

    Attributes:
        core: the connection's core, to drive as any :class:`HttpClient`.
        loopback: the loopback redirect address the connection serves, if any.
    """

    def __init__(self, url: str, auth: OAuth, *, now: float, config: ClientConfig,
                 capabilities: ClientCapabilities, headers: Mapping[str, str] | None,
                 transport: Transport, proxies: ProxySettings | None = None) -> None:
        """Build the core; for the browser flow the redirect port is reserved first.

        Args:
            url: the MCP endpoint.
            auth: the OAuth settings.
            now: the driver's monotonic clock.
            config: see :class:`HttpClient`.
            capabilities: see :class:`HttpClient`.
            headers: see :class:`HttpClient`.
            transport: see :class:`HttpClient`.
            proxies: see :class:`HttpClient`.

        Raises:
            LocalProtocolError: ``url`` or the settings are invalid.
            OSError: the redirect port cannot be bound.
        """
        self.auth = auth
        self.loopback: LoopbackRedirect | None = None
        self._store_key = str(parse_url(url))  # the canonical URL names its tokens
        offset = time.time() - now
        redirect_uri = auth.redirect_uri
        if auth.uses_browser and redirect_uri is None:
            loopback = LoopbackRedirect("127.0.0.1", auth.redirect_port, "/callback")
            redirect_uri = loopback.redirect_uri
            if auth.headless:
                loopback.close()  # the port only names the redirect; nothing comes back to it
            else:
                self.loopback = loopback
        elif auth.uses_browser and redirect_uri is not None and not auth.headless:
            self.loopback = LoopbackRedirect.for_uri(redirect_uri)
        try:
            stored = auth.store.load(self._store_key)
            token = None if stored is None else token_from(stored, clock_offset=offset)
            self.core = AuthorizingHttpClient(
                url, auth.planner_config(redirect_uri), entropy=secrets.token_bytes(32), clock_offset=offset,
                headless=auth.headless, redirect_timeout=auth.redirect_timeout, stored_token=token,
                config=config, capabilities=capabilities, headers=headers, transport=transport,
                jitter_seed=random.getrandbits(64), proxies=proxies)
        except BaseException:
            self.close()
            raise

    def settle(self, event: AuthorizationCompleted | AuthorizationFailed, now: float) -> Token | Unauthorized:
        """Take the end of an authorization: keep a new token in the store, log a failure.

        Returns:
            What callers of ``authorize()`` get: the token, or the error to raise.
        """
        if isinstance(event, AuthorizationCompleted):
            self.auth.store.save(self._store_key, stored_from(event.token, clock_offset=time.time() - now))
            return event.token
        log.warning("authorization failed (%s): %s", event.reason.value, event.message)
        kind = InsufficientScope if event.reason is AuthFailure.INSUFFICIENT_SCOPE else Unauthorized
        return kind(f"authorization failed ({event.reason.value}): {event.message}", status=0, params={})

    def open_browser(self, url: str, now: float) -> None:
        """Send the user to ``url`` (the redirect listener must be up); if the host's opener
        fails, nobody can sign in, so the authorization is cancelled (pump afterwards)."""
        log.info("opening the browser for authorization: %s", url)
        try:
            opener = self.auth.open_browser
            if opener is not None:
                opener(url)
                return
            import webbrowser  # only for a user's browser

            if not webbrowser.open(url):
                log.warning("open this URL to authorize: %s", url)
        except Exception as exc:
            self.cannot_start(exc, now)

    def cannot_start(self, exc: Exception, now: float) -> None:
        """The redirect cannot be served or the browser opened: cancel the authorization
        (pump afterwards)."""
        log.warning("cannot start the authorization: %s", exc)
        with contextlib.suppress(LocalProtocolError):  # it ended meanwhile
            self.core.cancel_authorization(now=now)

    def answer_browser(self, head: bytes, now: float) -> tuple[bytes, bool]:
        """The whole HTTP response to a browser's request to the loopback redirect address.

        Args:
            head: the request head as read (see :func:`request_complete`).
            now: the driver's monotonic clock.

        Returns:
            The response (empty if the browser sent nothing), and whether it brought the
            redirect the core awaited: then pump, and stop listening.
        """
        if not head.strip():
            return b"", False
        assert self.loopback is not None  # only its listener gets requests
        request_line = head.partition(b"\n")[0].decode("latin-1").strip().split(" ")
        taken = False
        if (len(request_line) != 3 or request_line[0] != "GET"
                or request_line[1].partition("?")[0] != self.loopback.path):
            status, text = "404 Not Found", "Nothing here."
        else:
            status, text = "200 OK", "No authorization is waiting for this."
            with contextlib.suppress(LocalProtocolError):
                self.core.receive_authorization_redirect(self.loopback.origin + request_line[1], now=now)
                text, taken = "Authorization received.", True
        body = _PAGE % text.encode()
        response = (f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
        return response, taken

    def close(self) -> None:
        """Release the reserved redirect port, if it was never listened on."""
        if self.loopback is not None:
            self.loopback.close()


def http_core(url: str, auth: OAuth | None, *, now: float, config: ClientConfig,
              capabilities: ClientCapabilities, headers: Mapping[str, str] | None,
              transport: Transport, proxy: str | bool = True) -> tuple[HttpClient, OAuthHost | None]:
    """The core of an HTTP connection, and its :class:`OAuthHost` when ``auth`` is given.

    ``proxy`` is the drivers' option (see :func:`~mcp_sansio.proxy.proxy_settings`); ``True``
    reads the proxies from ``os.environ``.

    Raises:
        LocalProtocolError: ``url``, the settings or the proxy URL are invalid.
        OSError: the redirect port cannot be bound.
    """
    proxies = proxy_settings(proxy, os.environ)
    if auth is None:
        return HttpClient(url, config=config, capabilities=capabilities, headers=headers,
                          transport=transport, jitter_seed=random.getrandbits(64), proxies=proxies), None
    host = OAuthHost(url, auth, now=now, config=config, capabilities=capabilities, headers=headers,
                     transport=transport, proxies=proxies)
    return host.core, host


class Settleable(Protocol):
    """Where a caller of ``authorize()`` waits (``asyncio.Future`` and anyio's waiter are)."""

    def done(self) -> bool: ...
    def set_result(self, result: Token, /) -> None: ...
    def set_exception(self, exc: BaseException, /) -> None: ...


class OAuthMethods:
    """The OAuth part of every driver's ``HttpConnection`` that needs no event loop.

    Mixed in before the driver's base class (its :meth:`_authorization` takes the OAuth
    events the client's dispatch hands over), which supplies ``_now`` and ``_flush``; the
    driver supplies :meth:`_redirect_user` and puts the callers of ``authorize()`` in
    ``_authorized`` (or overrides :meth:`_authorization_ended`).
    """

    _oauth: OAuthHost | None
    _authorized: list[Settleable]

    @property
    def token(self) -> Token | None:
        """The OAuth token requests go out with, if any."""
        return self._oauth.core.token if self._oauth is not None else None

    def receive_authorization_redirect(self, url: str) -> None:
        """The URL the browser was redirected to, for a redirect URI served elsewhere
        (an ``https`` one); a loopback redirect URI is served by the connection itself.

        Raises:
            LocalProtocolError: no OAuth, or no redirect is awaited.
        """
        self._oauth_host().core.receive_authorization_redirect(url, now=self._now())
        self._flush()

    def _oauth_host(self) -> OAuthHost:
        """The connection's OAuth host.

        Raises:
            LocalProtocolError: the connection does not use OAuth.
        """
        if self._oauth is None:
            raise LocalProtocolError("this connection does not use OAuth")
        return self._oauth

    def _authorization(self, event: AuthorizationEvent) -> None:
        """Take an OAuth event (see :class:`AuthorizingHttpClient`)."""
        oauth = self._oauth
        if oauth is None:
            return
        if isinstance(event, AuthorizationRedirect):
            self._redirect_user(event)
            return
        self._authorization_ended(oauth.settle(event, self._now()))

    def _redirect_user(self, event: AuthorizationRedirect) -> None:
        """Serve the redirect URI, then :meth:`OAuthHost.open_browser`."""
        raise NotImplementedError

    def _authorization_ended(self, outcome: Token | Unauthorized) -> None:
        """Give the callers of ``authorize()`` the token, or the error to raise."""
        waiting, self._authorized = self._authorized, []
        for done in waiting:
            if done.done():
                continue
            if isinstance(outcome, Unauthorized):
                done.set_exception(outcome)
            else:
                done.set_result(outcome)

    if TYPE_CHECKING:  # the driver's base class has them; declared here for the type checker only
        def _now(self) -> float: ...
        def _flush(self) -> None: ...

"""Blocking driver for MCP over HTTP: non-blocking sockets, ``selectors``, the core's pump.

Every HTTP decision (connections, headers, statuses, retries, session expiry) is made
by :class:`mcp_sansio.http_transport.HttpClient`, and with ``auth=OAuth(...)`` every
OAuth decision by :class:`mcp_sansio.http_auth.AuthorizingHttpClient`; the shared socket
driver only opens the sockets it asks for and copies bytes both ways. For OAuth's
browser flow the loopback redirect listener is one more socket in the same selector,
served while a call (or the handshake) waits: no threads.
"""

from __future__ import annotations

import selectors
import socket
import time
from typing import Final, Unpack

from mcp_sansio.auth import Token
from mcp_sansio.errors import Unauthorized
from mcp_sansio.events import AuthorizationRedirect
from mcp_sansio_base._sync.connect import Connect
from mcp_sansio_base._sync.handlers import HttpOptions, resolve
from mcp_sansio_base.http import CONNECT_DOC, HttpParts, bind_redirect, http_parts
from mcp_sansio_oauth import OAuth
from mcp_sansio_oauth.host import OAuthMethods, request_complete

from ._sockets import SocketConnection

__all__ = ["HttpConnection", "OAuth", "connect_http"]

_CHUNK: Final = 4096


class HttpConnection(HttpParts, OAuthMethods, SocketConnection):
    """A client connected to an MCP server over HTTP; use it through :func:`connect_http`.

    Handlers are plain callables run inline while a call waits. For OAuth's browser flow
    the loopback redirect listener is one more socket of the selector, served while the
    refused call waits, so ``auth.open_browser`` must return at once.
    """

    def __init__(self, url: str, options: HttpOptions) -> None:
        self._redirects: _Listener | None = None  # the loopback redirect listener
        self._browsers: set[_Browser] = set()  # its open connections
        self._outcome: Token | Unauthorized | None = None  # how the last authorization ended
        settings = resolve(options)
        caps = settings.handlers.capabilities()
        self._client, self._oauth = http_parts(url, time.monotonic(), settings.config, caps, options)
        super().__init__(self._client, settings.handlers, options.get("ssl_context"))

    def authorize(self) -> Token:
        """Authorize now, even if the server has not asked yet; blocks until it ends (the
        loopback redirect is served meanwhile).

        Raises:
            LocalProtocolError: no OAuth, a token is held, or an authorization is under way.
            Unauthorized: the authorization failed.
        """
        self._oauth_host().core.authorize(now=time.monotonic())
        self._outcome = None
        self._flush()
        while self._outcome is None:
            self._step()
        outcome, self._outcome = self._outcome, None
        if isinstance(outcome, Unauthorized):
            raise outcome
        return outcome

    def close(self) -> None:
        """End the session, close every socket and the redirect listener."""
        try:
            self._stop_redirects()
            for browser in list(self._browsers):
                browser.close()
        finally:
            try:
                super().close()
            finally:
                if self._oauth is not None:
                    self._oauth.close()

    def _redirect_user(self, event: AuthorizationRedirect) -> None:
        self._send_user(event)

    def _authorization_ended(self, outcome: Token | Unauthorized) -> None:
        self._outcome = outcome

    def _send_user(self, event: AuthorizationRedirect) -> None:
        """Listen on the redirect URI (one more socket in the selector), then send the
        user's browser to the authorization server; the loop serves the redirect."""
        oauth = self._oauth
        assert oauth is not None  # only its core redirects
        if oauth.loopback is not None and self._redirects is None:
            sock = bind_redirect(oauth, time.monotonic)
            if sock is None:
                return
            self._redirects = _Listener(self, sock)
        oauth.open_browser(event.authorization_url, time.monotonic())

    def _answer_browser(self, head: bytes) -> bytes:
        """The response to a browser's request; the awaited redirect stops the listener."""
        assert self._oauth is not None  # its listener
        response, taken = self._oauth.answer_browser(head, time.monotonic())
        if taken:
            self._stop_redirects()
        return response

    def _stop_redirects(self) -> None:
        listener, self._redirects = self._redirects, None
        if listener is not None:
            listener.close()


class _Listener:
    """The loopback redirect listener, watched by the connection's selector."""

    def __init__(self, owner: HttpConnection, sock: socket.socket) -> None:
        self._owner = owner
        self._sock: socket.socket | None = sock
        owner._selector.register(sock, selectors.EVENT_READ, self)

    def ready(self, mask: int) -> None:
        while self._sock is not None:
            try:
                sock, _ = self._sock.accept()
            except OSError:  # none waiting (or out of descriptors: the browser retries)
                return
            _Browser(self._owner, sock)

    def close(self) -> None:
        if self._sock is not None:
            self._owner._selector.unregister(self._sock)
            self._sock.close()
            self._sock = None


class _Browser:
    """One connection to the listener: read the request head, write the answer, close."""

    def __init__(self, owner: HttpConnection, sock: socket.socket) -> None:
        self._owner = owner
        self._sock: socket.socket | None = sock
        self._head = b""
        self._unsent: bytes | None = None  # the answer, once the head is read
        sock.setblocking(False)
        owner._selector.register(sock, selectors.EVENT_READ, self)
        owner._browsers.add(self)

    def ready(self, mask: int) -> None:
        sock = self._sock
        if sock is None:
            return
        if self._unsent is None:
            try:
                chunk = sock.recv(_CHUNK)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            self._head += chunk
            if chunk and not request_complete(self._head):
                return
            self._unsent = self._owner._answer_browser(self._head)
            self._owner._selector.modify(sock, selectors.EVENT_WRITE, self)
        try:
            self._unsent = self._unsent[sock.send(self._unsent):] if self._unsent else b""
        except BlockingIOError:
            return
        except OSError:
            self._unsent = b""
        if not self._unsent:
            self.close()

    def close(self) -> None:
        if self._sock is not None:
            self._owner._selector.unregister(self._sock)
            self._sock.close()
            self._sock = None
            self._owner._browsers.discard(self)


def connect_http(url: str, **options: Unpack[HttpOptions]) -> Connect[HttpConnection]:
    return Connect(lambda: HttpConnection(url, options))


connect_http.__doc__ = CONNECT_DOC

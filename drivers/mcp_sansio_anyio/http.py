"""anyio driver for MCP over HTTP (asyncio or trio): TCP/TLS sockets, one timer, the pump.

Every HTTP decision (connections, headers, statuses, retries, session expiry) is made
by :class:`mcp_sansio.http_transport.HttpClient`, and with ``auth=OAuth(...)`` every
OAuth decision by :class:`mcp_sansio.http_auth.AuthorizingHttpClient`; the shared socket
driver only opens the sockets it asks for and copies bytes both ways, and for OAuth
serves the loopback redirect in a task of its task group and opens the browser.
"""

from __future__ import annotations

import contextlib
from functools import partial
from typing import Final, Unpack

import anyio
from anyio.abc import SocketListener, SocketStream

from mcp_sansio.auth import Token
from mcp_sansio.events import AuthorizationRedirect
from mcp_sansio_base._async.connect import Connect
from mcp_sansio_base._async.handlers import HttpOptions, resolve
from mcp_sansio_base.http import CONNECT_DOC, HttpParts, bind_redirect, http_parts
from mcp_sansio_oauth import OAuth
from mcp_sansio_oauth.host import OAuthMethods, Settleable, request_complete

from ._loop import Waiter
from ._sockets import SocketDriver

__all__ = ["HttpConnection", "OAuth", "connect_http"]

_CHUNK: Final = 4096
_GONE: Final = (anyio.EndOfStream, anyio.BrokenResourceError, OSError)  # the browser went away


class HttpConnection(HttpParts, OAuthMethods, SocketDriver):
    """A client connected to an MCP server over HTTP; use it through :func:`connect_http`."""

    def __init__(self, url: str, options: HttpOptions) -> None:
        # The loopback redirect listener's scope, and the event set once it has closed.
        self._redirects: tuple[anyio.CancelScope, anyio.Event] | None = None
        self._authorized: list[Settleable] = []  # callers of authorize()
        settings = resolve(options)
        caps = settings.handlers.capabilities()
        self._client, self._oauth = http_parts(url, anyio.current_time(), settings.config, caps, options)
        super().__init__(self._client, settings.handlers, options.get("ssl_context"))

    async def authorize(self) -> Token:
        """Authorize now, even if the server has not asked yet (``mcp-sansio auth login``).

        Raises:
            LocalProtocolError: no OAuth, a token is held, or an authorization is under way.
            Unauthorized: the authorization failed.
        """
        self._oauth_host().core.authorize(now=anyio.current_time())
        done = Waiter()
        self._authorized.append(done)
        self._pump()
        token = await done.wait()
        assert isinstance(token, Token)  # what _authorization_ended gives
        return token

    async def aclose(self) -> None:
        """End the session, close every socket and the redirect listener."""
        try:
            await super().aclose()  # stops the listener's task with the others
        finally:
            if self._oauth is not None:
                self._oauth.close()

    def _redirect_user(self, event: AuthorizationRedirect) -> None:
        self._spawn(partial(self._send_user, event))

    async def _send_user(self, event: AuthorizationRedirect) -> None:
        """Serve the redirect URI, then send the user's browser to the authorization server."""
        oauth = self._oauth
        assert oauth is not None  # only its core redirects
        if self._redirects is not None and self._redirects[0].cancel_called:
            await self._redirects[1].wait()  # the listener of the last redirect is closing
        if oauth.loopback is not None and self._redirects is None:
            sock = bind_redirect(oauth, anyio.current_time)
            if sock is None:
                self._pump()
                return
            listener = await SocketListener.from_socket(sock)
            self._redirects = scope, closed = anyio.CancelScope(), anyio.Event()
            self._start_task(partial(self._serve_redirects, listener, scope, closed))
        oauth.open_browser(event.authorization_url, anyio.current_time())
        self._pump()

    async def _serve_redirects(self, listener: SocketListener, scope: anyio.CancelScope,
                               closed: anyio.Event) -> None:
        """Accept the browser's connections until the redirect came (``scope`` is cancelled)."""
        try:
            with scope:
                async with listener, anyio.create_task_group() as tg:
                    while True:
                        stream = await listener.accept()
                        tg.start_soon(self._browser_request, stream, scope)
        finally:
            self._redirects = None
            closed.set()

    async def _browser_request(self, stream: SocketStream, scope: anyio.CancelScope) -> None:
        """Answer one connection to the loopback redirect listener."""
        assert self._oauth is not None  # its listener
        taken = False
        async with stream:
            head = b""
            with contextlib.suppress(*_GONE):
                while not request_complete(head):
                    head += await stream.receive(_CHUNK)
            response, taken = self._oauth.answer_browser(head, anyio.current_time())
            if taken:
                self._pump()
            if response:
                with contextlib.suppress(*_GONE):
                    await stream.send(response)
        if taken:
            scope.cancel()  # the awaited redirect came: stop listening


def connect_http(url: str, **options: Unpack[HttpOptions]) -> Connect[HttpConnection]:
    return Connect(lambda: HttpConnection(url, options))


connect_http.__doc__ = CONNECT_DOC

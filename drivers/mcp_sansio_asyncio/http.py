"""asyncio driver for MCP over HTTP: TCP/TLS sockets, one timer, and the core's pump.

Every HTTP decision (connections, headers, statuses, retries, session expiry) is made
by :class:`mcp_sansio.http_transport.HttpClient`, and with ``auth=OAuth(...)`` every
OAuth decision by :class:`mcp_sansio.http_auth.AuthorizingHttpClient`; the shared socket
driver only opens the sockets it asks for and copies bytes both ways, and for OAuth
supplies the entropy, the wall clock, the browser and the loopback redirect listener.
"""

from __future__ import annotations

import asyncio
from typing import Unpack

from mcp_sansio.auth import Token
from mcp_sansio.events import AuthorizationRedirect
from mcp_sansio_base._async.handlers import HttpOptions, resolve
from mcp_sansio_base.http import CONNECT_DOC, HttpParts, bind_redirect, http_parts
from mcp_sansio_oauth import OAuth
from mcp_sansio_oauth.host import OAuthMethods, Settleable, request_complete

from ._loop import Connect
from ._sockets import SocketDriver

__all__ = ["HttpConnection", "OAuth", "connect_http"]


class HttpConnection(HttpParts, OAuthMethods, SocketDriver):
    """A client connected to an MCP server over HTTP; use it through :func:`connect_http`."""

    def __init__(self, url: str, options: HttpOptions) -> None:
        self._redirects: asyncio.Server | None = None  # the loopback redirect listener
        self._browsers: set[asyncio.StreamWriter] = set()  # its open connections
        self._authorized: list[Settleable] = []  # callers of authorize()
        settings = resolve(options)
        caps = settings.handlers.capabilities()
        now = asyncio.get_running_loop().time()
        self._client, self._oauth = http_parts(url, now, settings.config, caps, options)
        super().__init__(self._client, settings.handlers, options.get("ssl_context"))

    async def authorize(self) -> Token:
        """Authorize now, even if the server has not asked yet (``mcp-sansio auth login``).

        Raises:
            LocalProtocolError: no OAuth, a token is held, or an authorization is under way.
            Unauthorized: the authorization failed.
        """
        self._oauth_host().core.authorize(now=self._loop.time())
        done: asyncio.Future[Token] = self._loop.create_future()
        self._authorized.append(done)
        self._pump()
        return await done

    async def aclose(self) -> None:
        """End the session, close every socket and the redirect listener."""
        try:
            await super().aclose()
        finally:
            self._stop_redirects()
            for browser in self._browsers:
                browser.close()
            if self._oauth is not None:
                self._oauth.close()

    def _redirect_user(self, event: AuthorizationRedirect) -> None:
        self._spawn(lambda: self._send_user(event))

    async def _send_user(self, event: AuthorizationRedirect) -> None:
        """Serve the redirect URI, then send the user's browser to the authorization server."""
        oauth = self._oauth
        assert oauth is not None  # only its core redirects
        if oauth.loopback is not None and self._redirects is None:
            sock = bind_redirect(oauth, self._loop.time)
            if sock is None:
                self._pump()
                return
            self._redirects = await asyncio.start_server(self._browser_request, sock=sock)
        oauth.open_browser(event.authorization_url, self._loop.time())
        self._pump()

    async def _browser_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer one connection to the loopback redirect listener."""
        assert self._oauth is not None  # its listener
        self._browsers.add(writer)
        head = b""
        try:
            while not request_complete(head) and (chunk := await reader.read(4096)):
                head += chunk
            response, taken = self._oauth.answer_browser(head, self._loop.time())
            if taken:
                self._pump()
                self._stop_redirects()
            writer.write(response)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            self._browsers.discard(writer)
            writer.close()

    def _stop_redirects(self) -> None:
        server, self._redirects = self._redirects, None
        if server is not None:
            server.close()


def connect_http(url: str, **options: Unpack[HttpOptions]) -> Connect[HttpConnection]:
    return Connect(lambda: HttpConnection(url, options))


connect_http.__doc__ = CONNECT_DOC

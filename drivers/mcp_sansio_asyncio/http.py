"""asyncio driver for MCP over HTTP: TCP/TLS sockets, one timer, and the core's pump.

Every HTTP decision (connections, headers, statuses, retries, session expiry) is made
by :class:`mcp_sansio.http_transport.HttpClient`, and with ``auth=OAuth(...)`` every
OAuth decision by :class:`mcp_sansio.http_auth.AuthorizingHttpClient`; the shared socket
driver only opens the sockets it asks for and copies bytes both ways, and for OAuth
supplies the entropy, the wall clock, the browser and the loopback redirect listener.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from typing import Literal

from mcp_sansio import ClientConfig
from mcp_sansio.auth import Token
from mcp_sansio.events import Event
from mcp_sansio.handlers import client_capabilities
from mcp_sansio.http_auth import AuthorizationRedirect
from mcp_sansio.http_transport import TransportMode
from mcp_sansio_oauth import OAuth
from mcp_sansio_oauth.host import OAuthMethods, Settleable, http_core, request_complete

from ._loop import Connect
from ._sockets import SocketDriver
from .client import ElicitationHandler, NotificationHandler, RootsArg, SamplingHandler

__all__ = ["HttpConnection", "OAuth", "connect_http"]

Transport = TransportMode | Literal["auto", "streamable-http", "sse"]


class HttpConnection(SocketDriver, OAuthMethods):
    """A client connected to an MCP server over HTTP; use it through :func:`connect_http`."""

    def __init__(
        self, url: str, *, headers: Mapping[str, str] | None, transport: Transport,
        config: ClientConfig, on_sampling: SamplingHandler | None,
        on_elicitation: ElicitationHandler | None, roots: RootsArg | None,
        on_notification: NotificationHandler | None, auth: OAuth | None = None,
        proxy: str | bool = True, ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        caps = client_capabilities(sampling=on_sampling is not None,
                                   elicitation=on_elicitation is not None, roots=roots is not None)
        self._redirects: asyncio.Server | None = None  # the loopback redirect listener
        self._browsers: set[asyncio.StreamWriter] = set()  # its open connections
        self._authorized: list[Settleable] = []  # callers of authorize()
        self._client, self._oauth = http_core(url, auth, now=asyncio.get_running_loop().time(), config=config,
                                              capabilities=caps, headers=headers, transport=transport,
                                              proxy=proxy)
        super().__init__(self._client, on_sampling=on_sampling, on_elicitation=on_elicitation,
                         roots=roots, on_notification=on_notification, ssl_context=ssl_context)

    @property
    def transport(self) -> str:
        """The HTTP transport in use: ``"streamable-http"`` or ``"sse"``."""
        return self._client.transport

    @property
    def session_id(self) -> str | None:
        """The server's ``Mcp-Session-Id``, if it gave one."""
        return self._client.session_id

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

    def _deliver_other(self, event: Event) -> None:
        if not self._deliver_oauth(event):
            super()._deliver_other(event)

    def _redirect_user(self, event: AuthorizationRedirect) -> None:
        self._spawn(lambda: self._send_user(event))

    async def _send_user(self, event: AuthorizationRedirect) -> None:
        """Serve the redirect URI, then send the user's browser to the authorization server."""
        oauth = self._oauth
        assert oauth is not None  # only its core redirects
        if oauth.loopback is not None and self._redirects is None:
            try:
                sock = oauth.loopback.listening_socket()
            except OSError as exc:
                oauth.cannot_start(exc, self._loop.time())
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
    proxy: str | bool = True,
    ssl_context: ssl.SSLContext | None = None,
) -> Connect[HttpConnection]:
    """Speak MCP to the server at ``url`` over Streamable HTTP (or legacy HTTP+SSE).

    ``headers`` (API keys, a static ``Authorization: Bearer ...``) go on every request to
    that origin. ``transport`` is ``"auto"`` (Streamable HTTP, falling back to HTTP+SSE on
    400/404/405), ``"streamable-http"`` or ``"sse"``. ``auth=OAuth(...)`` authorizes with
    OAuth 2.1 whenever the server asks (401, or 403 ``insufficient_scope``): the browser
    flow serves its redirect on ``127.0.0.1`` and opens the browser; tokens go to
    ``auth.store``.

    ``proxy`` is ``True`` (the default: ``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY`` and
    ``NO_PROXY`` from the environment, as curl reads them, never for loopback targets),
    ``False`` (no proxy) or one ``http://[user:password@]host:port`` proxy URL for every
    target; the connections go through it in CONNECT tunnels. ``ssl_context`` verifies
    servers with it instead of the system trust store.

    Raises (on entering):
        LocalProtocolError: ``url`` is not an http(s) URL, ``auth`` conflicts with an
            ``Authorization`` header, or the proxy URL is unusable.
        OSError: the redirect port cannot be bound.
        ConnectionClosed, HttpError, Unauthorized (InsufficientScope), ProxyError,
        RequestTimeout, UnsupportedProtocolVersion: the handshake failed.
    """
    cfg = config or ClientConfig()
    return Connect(lambda: HttpConnection(
        url, headers=headers, transport=transport, config=cfg, on_sampling=on_sampling,
        on_elicitation=on_elicitation, roots=roots, on_notification=on_notification, auth=auth,
        proxy=proxy, ssl_context=ssl_context,
    ))

"""anyio driver for MCP over HTTP (asyncio or trio): TCP/TLS sockets, one timer, the pump.

Every HTTP decision (connections, headers, statuses, retries, session expiry) is made
by :class:`mcp_sansio.http_transport.HttpClient`, and with ``auth=OAuth(...)`` every
OAuth decision by :class:`mcp_sansio.http_auth.AuthorizingHttpClient`; the shared socket
driver only opens the sockets it asks for and copies bytes both ways, and for OAuth
serves the loopback redirect in a task of its task group and opens the browser.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Mapping
from functools import partial
from typing import Final, Literal

import anyio
from anyio.abc import SocketListener, SocketStream

from mcp_sansio import ClientConfig
from mcp_sansio.auth import Token
from mcp_sansio.events import Event
from mcp_sansio.handlers import client_capabilities
from mcp_sansio.http_auth import AuthorizationRedirect
from mcp_sansio.http_transport import TransportMode
from mcp_sansio_asyncio.client import ElicitationHandler, NotificationHandler, RootsArg, SamplingHandler
from mcp_sansio_oauth import OAuth
from mcp_sansio_oauth.host import OAuthMethods, Settleable, http_core, request_complete

from ._loop import Waiter
from ._sockets import SocketDriver

__all__ = ["HttpConnection", "OAuth", "connect_http"]

Transport = TransportMode | Literal["auto", "streamable-http", "sse"]

_CHUNK: Final = 4096
_GONE: Final = (anyio.EndOfStream, anyio.BrokenResourceError, OSError)  # the browser went away


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
        # The loopback redirect listener's scope, and the event set once it has closed.
        self._redirects: tuple[anyio.CancelScope, anyio.Event] | None = None
        self._authorized: list[Settleable] = []  # callers of authorize()
        self._client, self._oauth = http_core(url, auth, now=anyio.current_time(), config=config,
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

    def _deliver_other(self, event: Event) -> None:
        if not self._deliver_oauth(event):
            super()._deliver_other(event)

    def _redirect_user(self, event: AuthorizationRedirect) -> None:
        self._spawn(partial(self._send_user, event))

    async def _send_user(self, event: AuthorizationRedirect) -> None:
        """Serve the redirect URI, then send the user's browser to the authorization server."""
        oauth = self._oauth
        assert oauth is not None  # only its core redirects
        if self._redirects is not None and self._redirects[0].cancel_called:
            await self._redirects[1].wait()  # the listener of the last redirect is closing
        if oauth.loopback is not None and self._redirects is None:
            try:
                listener = await SocketListener.from_socket(oauth.loopback.listening_socket())
            except OSError as exc:
                oauth.cannot_start(exc, anyio.current_time())
                self._pump()
                return
            self._redirects = scope, closed = anyio.CancelScope(), anyio.Event()
            self._start(partial(self._serve_redirects, listener, scope, closed))
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


@contextlib.asynccontextmanager
async def connect_http(
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
) -> AsyncIterator[HttpConnection]:
    """Speak MCP to the server at ``url`` over Streamable HTTP (or legacy HTTP+SSE).

    ``headers`` (API keys, ...) go on every request to that origin. ``transport`` is
    ``"auto"`` (Streamable HTTP, falling back to HTTP+SSE on 400/404/405),
    ``"streamable-http"`` or ``"sse"``. ``auth=OAuth(...)`` authorizes with OAuth 2.1
    whenever the server asks (401, or 403 ``insufficient_scope``): the browser flow
    serves its redirect on ``127.0.0.1`` and opens the browser; tokens go to
    ``auth.store``. Leaving the block ends the session (its ``DELETE``, bounded by
    ``close_timeout``, shielded from cancellation) and closes every socket.

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
    conn = HttpConnection(
        url, headers=headers, transport=transport, config=config or ClientConfig(),
        on_sampling=on_sampling, on_elicitation=on_elicitation, roots=roots,
        on_notification=on_notification, auth=auth, proxy=proxy, ssl_context=ssl_context,
    )
    await conn._open()
    try:
        yield conn
    finally:
        await conn.aclose()

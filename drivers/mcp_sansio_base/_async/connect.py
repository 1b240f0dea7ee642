"""``async with connect_*(...) as client``: start on entry, close on exit, for every driver;
and ``connect_websocket``, written once for every driver's socket connection class."""

from __future__ import annotations

from collections.abc import Callable
from ssl import SSLContext
from types import TracebackType
from typing import Generic, Protocol, TypeVar, Unpack

from mcp_sansio.websocket import WebSocketClient

from ..websocket import CONNECT_DOC, websocket_core
from .handlers import Handlers, WebSocketOptions, resolve

__all__ = ["Connect", "ConnectWebSocket", "websocket_connector"]


class _Startable(Protocol):
    async def _start(self) -> None: ...
    async def aclose(self) -> None: ...


C = TypeVar("C", bound=_Startable)


class Connect(Generic[C]):
    """What ``connect_*`` returns: the connection is made on entry (through its handshake)
    and closed on exit, whatever ended the block."""

    def __init__(self, factory: Callable[[], C]) -> None:
        self._factory = factory
        self._conn: C | None = None

    async def __aenter__(self) -> C:
        conn = self._factory()
        await conn._start()
        self._conn = conn
        return conn

    async def __aexit__(self, et: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._conn is not None:
            await self._conn.aclose()


class ConnectWebSocket(Protocol[C]):
    """The signature of a driver's ``connect_websocket``, ``C`` its connection class."""

    def __call__(self, url: str, **options: Unpack[WebSocketOptions]) -> Connect[C]: ...


def websocket_connector(connection: Callable[[WebSocketClient, Handlers, SSLContext | None], C]
                        ) -> ConnectWebSocket[C]:
    """The ``connect_websocket`` of a driver whose socket connection class is ``connection``:
    the WebSocket core is built from the options here, the class only moves its bytes."""

    def connect_websocket(url: str, **options: Unpack[WebSocketOptions]) -> Connect[C]:
        def make() -> C:
            settings = resolve(options)
            core = websocket_core(url, settings.config, settings.handlers.capabilities(), options)
            return connection(core, settings.handlers, options.get("ssl_context"))

        return Connect(make)

    connect_websocket.__doc__ = CONNECT_DOC
    connect_websocket.__module__ = connection.__module__
    return connect_websocket

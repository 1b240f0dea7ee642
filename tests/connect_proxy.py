"""An HTTP CONNECT proxy for the proxy tests, on asyncio in a thread of its own.

It answers ``CONNECT host:port`` by connecting to ``host:port`` (names in ``hosts``
mapped first, so a name that does not resolve, such as ``mcp.test``, reaches
``127.0.0.1``) and relaying bytes both ways. It counts the tunnels it opened, records
every CONNECT's target and ``Proxy-Authorization``, and can require credentials (407
without them) or refuse every tunnel with a status (``refuse=502``). A thread, not a
process: the blocking driver holds the test's own thread while it waits.

Usage: ``with ConnectProxy(hosts={"mcp.test": "127.0.0.1"}) as proxy: proxy.url``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import threading
from collections.abc import Mapping
from types import TracebackType

__all__ = ["ConnectProxy"]

_HEAD_END = b"\r\n\r\n"


class ConnectProxy:
    """A CONNECT proxy on ``127.0.0.1`` for the duration of a ``with`` block.

    Attributes:
        url: ``http://127.0.0.1:PORT``, once entered.
        tunnels: how many tunnels it opened.
        targets: the target of every CONNECT, in order.
        authorizations: the ``Proxy-Authorization`` of every CONNECT (``None`` if absent).
    """

    def __init__(self, *, hosts: Mapping[str, str] | None = None, credentials: str | None = None,
                 refuse: int | None = None) -> None:
        """Args:
            hosts: names to connect to instead of the CONNECT's host.
            credentials: ``user:password`` required in ``Proxy-Authorization: Basic``.
            refuse: answer every CONNECT with this status instead of a tunnel.
        """
        self._hosts = dict(hosts or {})
        self._authorization = None if credentials is None else "Basic " + base64.b64encode(
            credentials.encode()).decode()
        self._refuse = refuse
        self.url = ""
        self.tunnels = 0
        self.targets: list[str] = []
        self.authorizations: list[str | None] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="connect-proxy", daemon=True)
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._failure: BaseException | None = None

    def __enter__(self) -> ConnectProxy:
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            self._thread.join()
            raise self._failure
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        stop = self._stop
        assert stop is not None
        self._loop.call_soon_threadsafe(stop.set)
        self._thread.join()

    # -------------------------------------------------------------- the thread

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        try:
            server = await asyncio.start_server(self._accepted, "127.0.0.1", 0)
        except OSError as exc:
            self._failure = exc
            self._ready.set()
            return
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._tunnel(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream = await self._answer(reader, writer)
            if upstream is not None:
                up_reader, up_writer = upstream
                try:
                    await asyncio.gather(_relay(reader, up_writer), _relay(up_reader, writer))
                finally:
                    await _close(up_writer)
        finally:
            await _close(writer)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                      ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """Read the CONNECT and answer it; the upstream connection if the tunnel is open."""
        try:
            head = await reader.readuntil(_HEAD_END)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            return None
        request, *lines = head[: -len(_HEAD_END)].decode("latin-1").split("\r\n")
        method, target, _ = request.split(" ", 2)
        fields = dict(line.split(":", 1) for line in lines)
        headers = {name.strip().lower(): value.strip() for name, value in fields.items()}
        self.targets.append(target)
        self.authorizations.append(headers.get("proxy-authorization"))
        refusal = self._refusal(method, headers.get("proxy-authorization"))
        if refusal is None:
            host, _, port = target.rpartition(":")
            host = host.strip("[]")
            try:
                upstream = await asyncio.open_connection(self._hosts.get(host, host), int(port))
            except OSError:
                refusal = "502 Bad Gateway"
        if refusal is not None:
            challenge = 'Proxy-Authenticate: Basic realm="test"\r\n' if refusal.startswith("407") else ""
            writer.write(f"HTTP/1.1 {refusal}\r\n{challenge}Content-Length: 0\r\nConnection: close\r\n\r\n"
                         .encode())
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            return None
        self.tunnels += 1
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        return upstream

    def _refusal(self, method: str, authorization: str | None) -> str | None:
        """The status line to refuse a request with, or ``None`` to open the tunnel."""
        if method != "CONNECT":
            return "405 Method Not Allowed"
        if self._refuse is not None:
            return f"{self._refuse} Refused"
        if self._authorization is not None and authorization != self._authorization:
            return "407 Proxy Authentication Required"
        return None


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


async def _relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until EOF (passed on as a half close) or a broken connection."""
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

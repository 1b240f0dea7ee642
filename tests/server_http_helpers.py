"""Raw HTTP clients for the server transport tests: requests written by hand, responses read
with h11 in the client role and SSE bodies with the core's parser. No socket is opened."""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Final

import h11
from server_helpers import ENTROPY, SECRET

from mcp_sansio.server import MCPServer
from mcp_sansio.server.http import HttpConfig, HttpServer
from mcp_sansio.sse import SseParser

__all__ = ["HOST", "MODERN_HEADERS", "RawHttp", "Response", "http_server", "modern_body"]

HOST: Final = "127.0.0.1:8000"
_CLOSED: weakref.WeakKeyDictionary[HttpServer, set[int]] = weakref.WeakKeyDictionary()  # whoever read it
MODERN_HEADERS: Final = {"mcp-protocol-version": "2026-07-28"}


def http_server(app: MCPServer | None = None, **config: Any) -> HttpServer:
    """An HTTP server for ``app`` with DNS-rebinding protection (``config`` overrides)."""
    return HttpServer(app or MCPServer("s"), secret=SECRET, entropy=ENTROPY,
                      config=HttpConfig.loopback(**config))


def modern_body(rid: int | str, method: str, params: Mapping[str, object] | None = None,
                capabilities: Mapping[str, object] | None = None) -> dict[str, object]:
    """A 2026-07-28 request body."""
    body = dict(params or {})
    extra = body.get("_meta")
    body["_meta"] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                     "io.modelcontextprotocol/clientCapabilities": dict(capabilities or {}),
                     **(extra if isinstance(extra, dict) else {})}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": body}


class Response:
    """What one response carried so far (``complete`` once it ended)."""

    def __init__(self, status: int, headers: dict[str, str]) -> None:
        self.status = status
        self.headers = headers
        self.body = b""
        self.complete = False
        self.events: list[Any] = []  # parsed SSE ``data`` (JSON); a priming event (no data) is ``None``
        self.ids: list[str] = []
        self.last_id = ""  # the last event id seen (a priming event sets it, dispatching nothing)
        self._sse = SseParser()

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.body)

    def feed(self, data: bytes) -> None:
        self.body += data
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            for event in self._sse.feed(data):
                self.ids.append(event.id)
                self.events.append(json.loads(event.data) if event.data else None)
            self.last_id = self._sse.last_event_id


class RawHttp:
    """One connection to an :class:`HttpServer`, written and read by hand."""

    def __init__(self, server: HttpServer, now: float = 0.0, peer: str | None = None, *,
                 sending: bool = False) -> None:
        self.server = server
        self.id = server.connection_made(now, peer, sending=sending)
        self.h11 = h11.Connection(h11.CLIENT)
        self.responses: list[Response] = []
        self.closed = False

    def send_raw(self, data: bytes, now: float = 0.0) -> None:
        """Bytes as they are."""
        self.server.receive_data(self.id, data, now)

    def request(self, method: str = "POST", body: object = None, *, headers: Mapping[str, str] | None = None,
                target: str = "/mcp", now: float = 0.0, accept: str = "application/json, text/event-stream",
                raw_body: bytes | None = None, repeated: Sequence[tuple[str, str]] = ()) -> Response | None:
        """Send one request (``repeated``: more header lines, after ``headers``); its response
        so far (``None`` when none began yet)."""
        before = len(self.responses)
        if self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE:
            self.h11.start_next_cycle()
        data = raw_body if raw_body is not None else b"" if body is None else json.dumps(body).encode()
        fields = {"host": HOST, "accept": accept}
        if data or method == "POST":
            fields["content-type"] = "application/json"
            fields["content-length"] = str(len(data))
        fields.update(headers or {})
        wire = self.h11.send(h11.Request(method=method, target=target,
                                         headers=[*((k, v) for k, v in fields.items() if v is not None),
                                                  *repeated]))
        wire += self.h11.send(h11.Data(data=data)) if data else b""
        wire += self.h11.send(h11.EndOfMessage())
        self.send_raw(wire, now)
        self.read()
        return self.responses[-1] if len(self.responses) > before else None

    def read(self) -> Response | None:
        """Read what the server wrote; the latest response (``None``: none started)."""
        data = self.server.data_to_send(self.id)
        closed = _CLOSED.setdefault(self.server, set())
        while (action := self.server.next_action()) is not None:
            closed.add(action.connection)
        if self.id in closed and not self.closed:
            data += self.server.data_to_send(self.id)
            self.closed = True
        if data:
            self.h11.receive_data(data)
        if self.closed:
            self.h11.receive_data(b"")
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError:
                break
            if isinstance(event, h11.Response):
                headers = {k.decode().lower(): v.decode() for k, v in event.headers}
                self.responses.append(Response(event.status_code, headers))
            elif isinstance(event, h11.Data):
                self.responses[-1].feed(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                self.responses[-1].complete = True
            elif event is h11.NEED_DATA or event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
                break
        return self.responses[-1] if self.responses else None

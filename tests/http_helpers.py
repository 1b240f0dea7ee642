"""A scripted HTTP server for the core tests of :class:`~mcp_sansio.http_transport.HttpClient`.

:class:`ScriptedHttpServer` plays the server side over the client's byte interface: it
performs the client's ``OpenConnection`` / ``CloseConnection`` actions, parses what the
client writes with h11 in the server role, and writes whatever bytes a test scripts back
(JSON, SSE chunked or not, any status, garbage), split by a pluggable ``splitter``. No
socket is opened; time is a float the test passes in (STYLE.md section 10).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import h11
import msgspec
from helpers import REFUSED, SERVER_CAPABILITIES, Json, drain_events

from mcp_sansio import LATEST_VERSION, ClientConfig
from mcp_sansio.connections import CloseConnection, OpenConnection
from mcp_sansio.events import Event, InitializeCompleted
from mcp_sansio.http_transport import HttpClient

__all__ = [
    "LAST_CHUNK",
    "URL",
    "ReceivedRequest",
    "ScriptedHttpServer",
    "Splitter",
    "chunk",
    "chunked_head",
    "init_result",
    "json_body",
    "ready_http_client",
    "response",
    "sse_event",
    "tool_result",
]

URL: Final = "http://example.com/mcp"
"""Where the clients of these tests connect."""

LAST_CHUNK: Final = b"0\r\n\r\n"
"""The end of a chunked body."""

Splitter = Callable[[bytes], Iterable[bytes]]
"""Cuts one scripted write into the reads the client sees."""


def response(status: int, body: bytes = b"", *, headers: Mapping[str, str] | None = None,
             reason: str = "Scripted") -> bytes:
    """A complete response with a ``Content-Length`` body."""
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in (headers or {}).items()),
             f"Content-Length: {len(body)}", "", ""]
    return "\r\n".join(lines).encode("latin-1") + body


def chunked_head(status: int = 200, *, content_type: str = "text/event-stream",
                 headers: Mapping[str, str] | None = None) -> bytes:
    """The head of a chunked response; follow with :func:`chunk` pieces and :data:`LAST_CHUNK`."""
    lines = [f"HTTP/1.1 {status} Scripted", f"Content-Type: {content_type}",
             *(f"{k}: {v}" for k, v in (headers or {}).items()), "Transfer-Encoding: chunked", "", ""]
    return "\r\n".join(lines).encode("latin-1")


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def sse_event(data: bytes | str | None = None, *, event: str | None = None, id: str | None = None,
              retry: int | None = None) -> bytes:
    """One SSE event block; ``data`` ``None`` writes no ``data:`` line (a priming event)."""
    lines: list[bytes] = []
    if id is not None:
        lines.append(b"id: " + id.encode())
    if retry is not None:
        lines.append(b"retry: %d" % retry)
    if event is not None:
        lines.append(b"event: " + event.encode())
    if data is not None:
        text = data.encode() if isinstance(data, str) else data
        lines += [b"data: " + line for line in text.split(b"\n")]
    return b"\n".join(lines) + b"\n\n"


def json_body(message: Mapping[str, object]) -> bytes:
    """A JSON-RPC message as compact JSON, no newline (an HTTP body or SSE data)."""
    return json.dumps(message, separators=(",", ":")).encode()


def init_result(request_id: int = 1, *, version: str = LATEST_VERSION,
                capabilities: Json | None = None) -> bytes:
    """The server's answer to ``initialize``."""
    return json_body({"jsonrpc": "2.0", "id": request_id, "result": {
        "protocolVersion": version,
        "capabilities": SERVER_CAPABILITIES if capabilities is None else capabilities,
        "serverInfo": {"name": "scripted-http", "version": "1.0"},
    }})


def tool_result(request_id: int, text: str = "ok") -> bytes:
    """A ``tools/call`` answer with one text block."""
    return json_body({"jsonrpc": "2.0", "id": request_id,
                      "result": {"content": [{"type": "text", "text": text}]}})


class ReceivedRequest:
    """One request the client wrote, as the server parsed it."""

    def __init__(self, connection: int, method: str, target: str, headers: list[tuple[str, str]],
                 body: bytes) -> None:
        self.connection = connection
        self.method = method
        self.target = target
        self.headers = headers  # lower-case names, in the order sent
        self.body = body

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (case-insensitive), or ``None``; it must occur at most once."""
        values = [v for k, v in self.headers if k == name.lower()]
        if len(values) > 1:
            raise AssertionError(f"{name} sent {len(values)} times: {values}")
        return values[0] if values else None

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.body)

    @property
    def rpc_method(self) -> str | None:
        """The JSON-RPC ``method`` of a POSTed message, if any."""
        if self.method != "POST":
            return None
        method = self.json().get("method")
        return method if isinstance(method, str) else None

    def __repr__(self) -> str:
        return f"<{self.method} {self.target} on {self.connection}: {self.body[:80]!r}>"


class _ServerConnection:
    """The server's side of one connection: an h11 parser and the request being read."""

    def __init__(self) -> None:
        self.parser = h11.Connection(h11.SERVER)
        self.closed = False
        self.idle = False  # the last request got a complete scripted response
        self.target = ""
        self.method = ""
        self.headers: list[tuple[str, str]] = []
        self.body = bytearray()


class ScriptedHttpServer:
    """Plays every server the client connects to; the test scripts each answer.

    Attributes:
        refuse: how many of the next connection attempts fail, with ``refusal``.
        refusal: what the driver reports for them (by default: connection refused).
        splitter: cuts each scripted write into the reads the client sees.
        requests: every request parsed so far, in order.
        opened: every ``OpenConnection`` the client asked for.
        closed: the connections the client closed.
    """

    def __init__(self, client: HttpClient, *, splitter: Splitter | None = None) -> None:
        self.client = client
        self.refuse = 0
        self.refusal = REFUSED
        self.splitter: Splitter = splitter or (lambda data: [data])
        self.requests: list[ReceivedRequest] = []
        self.opened: list[OpenConnection] = []
        self.closed: list[int] = []
        self._conns: dict[int, _ServerConnection] = {}
        self._seen = 0  # requests[:_seen] were returned by pump()

    # ------------------------------------------------------------- the client side

    def pump(self, *, now: float) -> list[ReceivedRequest]:
        """Perform the client's actions and read what it wrote.

        Returns:
            The requests no earlier ``pump`` returned, including those that arrived
            while a scripted answer was being fed.
        """
        self._pump(now)
        fresh, self._seen = self.requests[self._seen :], len(self.requests)
        return fresh

    def _pump(self, now: float) -> None:
        client = self.client
        while True:
            action = client.next_action()
            if action is not None:
                self._perform(action, now)
                continue
            ready = client.connections_with_data()
            if not ready:
                break
            for connection in ready:
                self._read(connection, client.data_to_send(connection))

    def _perform(self, action: object, now: float) -> None:
        if isinstance(action, OpenConnection):
            self.opened.append(action)
            if self.refuse:
                self.refuse -= 1
                self.client.connection_failed(action.connection, self.refusal, now)
                return
            self._conns[action.connection] = _ServerConnection()
            self.client.connection_made(action.connection, now)
        elif isinstance(action, CloseConnection):
            self.closed.append(action.connection)
            conn = self._conns.get(action.connection)
            if conn is not None:
                conn.closed = True
        else:
            raise TypeError(f"unexpected action {action!r}")

    def _read(self, connection: int, data: bytes) -> None:
        conn = self._conns[connection]
        parser = conn.parser
        parser.receive_data(data)
        while True:
            event = parser.next_event()
            if isinstance(event, h11.Request):
                conn.method = event.method.decode()
                conn.target = event.target.decode()
                conn.headers = [(k.decode(), v.decode()) for k, v in event.headers.raw_items()]
                conn.body = bytearray()
                conn.idle = False
            elif isinstance(event, h11.Data):
                conn.body += event.data
            elif isinstance(event, h11.EndOfMessage):
                self.requests.append(ReceivedRequest(connection, conn.method, conn.target, conn.headers,
                                                     bytes(conn.body)))
                # One exchange per connection at a time: the next request starts afresh.
                rest = parser.trailing_data[0]
                parser = conn.parser = h11.Connection(h11.SERVER)
                if rest:  # b"" would mean EOF to h11
                    parser.receive_data(rest)
            else:
                return

    # ------------------------------------------------------------- the server side

    def send(self, request: ReceivedRequest, data: bytes, *, now: float) -> None:
        """Write ``data`` on ``request``'s connection, as the splitter cuts it, then pump."""
        conn = self._conns[request.connection]
        for piece in self.splitter(data):
            if conn.closed:
                break  # the client hung up: the rest is never read
            self.client.receive_data(request.connection, piece, now)
            self._pump(now)
        self._pump(now)

    def hang_up_idle(self, *, now: float) -> None:
        """Close every connection whose last request got a complete response (keep-alive ones)."""
        for connection, conn in list(self._conns.items()):
            if conn.idle and not conn.closed:
                self.client.receive_data(connection, b"", now)
        self._pump(now)

    def hang_up(self, request: ReceivedRequest, *, now: float) -> None:
        """Close ``request``'s connection from the server's side (EOF)."""
        if not self._conns[request.connection].closed:
            self.client.receive_data(request.connection, b"", now)
        self._pump(now)

    def reply(self, request: ReceivedRequest, status: int = 200, body: bytes = b"", *, now: float,
              headers: Mapping[str, str] | None = None) -> None:
        """A complete response with a ``Content-Length`` body."""
        self._conns[request.connection].idle = True
        self.send(request, response(status, body, headers=headers), now=now)

    def reply_json(self, request: ReceivedRequest, body: bytes, *, now: float, status: int = 200,
                   headers: Mapping[str, str] | None = None) -> None:
        """An ``application/json`` response."""
        self.reply(request, status, body, now=now,
                   headers={"Content-Type": "application/json", **(headers or {})})

    def reply_sse(self, request: ReceivedRequest, events: Iterable[bytes], *, now: float,
                  end: bool = True, headers: Mapping[str, str] | None = None) -> None:
        """A chunked ``text/event-stream`` response, one chunk per event; ``end`` finishes it."""
        data = chunked_head(headers=headers) + b"".join(chunk(e) for e in events)
        self._conns[request.connection].idle = end
        self.send(request, data + (LAST_CHUNK if end else b""), now=now)

    def accept(self, request: ReceivedRequest, *, now: float) -> None:
        """``202 Accepted`` with no body."""
        self.reply(request, 202, now=now)

    # ---------------------------------------------------------------- queries

    def is_closed(self, request: ReceivedRequest) -> bool:
        """Whether the client closed ``request``'s connection."""
        return self._conns[request.connection].closed


def http_client(url: str, **kwargs: Any) -> HttpClient:
    """An :class:`HttpClient` of the handshake era (most tests here are about it): a
    ``config`` whose ``protocol`` is ``"auto"`` is pinned to the latest handshake version,
    so the first POST is ``initialize``, not the stateless era's ``server/discover`` probe."""
    config = kwargs.pop("config", None) or ClientConfig()
    if config.protocol == "auto":
        config = msgspec.structs.replace(config, protocol=LATEST_VERSION)
    return HttpClient(url, config=config, **kwargs)


def ready_http_client(
    *, version: str = LATEST_VERSION, session_id: str | None = "s-1", get_stream: int = 405,
    splitter: Splitter | None = None, **kwargs: Any,
) -> tuple[HttpClient, ScriptedHttpServer, list[Event]]:
    """An :class:`HttpClient` past the handshake at ``now=0.0``, with its server.

    The server answers ``initialize`` with JSON (``Mcp-Session-Id: session_id`` unless
    ``None``), ``notifications/initialized`` with 202, and the GET stream with
    ``get_stream``: 405, none; 200, an open event stream (its head only, the body to
    come: ``server.send(server.requests[2], chunk(...), now=...)``); 0, no answer at all
    (the app's messages then wait for one, up to ``get_stream_wait``); any other status,
    that status. ``kwargs`` go to :class:`HttpClient`. Returns the client, the server and
    the handshake's events. The next request id is 2.
    """
    client = http_client(URL, **kwargs)
    server = ScriptedHttpServer(client, splitter=splitter)
    client.connect(now=0.0)
    (init,) = server.pump(now=0.0)
    sid = {"Mcp-Session-Id": session_id} if session_id is not None else {}
    server.reply_json(init, init_result(version=version), now=0.0, headers=sid)
    for request in server.requests[1:]:
        if request.method == "POST":
            server.accept(request, now=0.0)
        elif get_stream == 200:
            server.send(request, chunked_head(), now=0.0)
        elif get_stream:
            server.reply(request, get_stream, now=0.0)
    server.pump(now=0.0)
    events = drain_events(client)
    if not any(isinstance(e, InitializeCompleted) for e in events):
        raise AssertionError(f"the handshake did not complete: {events}")
    return client, server, events

"""A client core and a server core joined in memory: the pair harness (STYLE.md section 10).

:class:`Pair` (stdio) and :class:`HttpPair` (Streamable HTTP) move the client's
``data_to_send()`` into the server's ``receive_data()`` and back, on a virtual clock, with
optional faults (split into random chunks, delay, drop, reorder lines). The server's
handlers run on :class:`StepLoop` (the blocking driver's cooperative scheduler), so the shared
``ServerRunner`` is exercised without asyncio: a handler awaits only what the runner
gives it (answers from the client). Nothing here
does I/O.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Final

import msgspec
from helpers import broken

from mcp_sansio import ClientConfig, Event, ServerRequestReceived, StdioClient
from mcp_sansio.connections import CloseConnection, OpenConnection
from mcp_sansio.http_transport import HttpClient
from mcp_sansio.server import MCPServer, StdioServer
from mcp_sansio.server.http import HttpConfig, HttpServer
from mcp_sansio.types import ClientCapabilities
from mcp_sansio_base.server import ServerRunner
from mcp_sansio_base.steploop import StepLoop

__all__ = ["SECRET", "Faults", "HttpPair", "Pair", "StepLoop"]

SECRET: Final = b"pair-harness-secret-0123456789ab"
ENTROPY: Final = b"pair-harness-entropy-0123456789abcdef"
"""The server key every pair uses (state sealed in one test is readable in another)."""


class Faults(msgspec.Struct, kw_only=True):
    """What the wire does to bytes in transit (seeded, so a failure reproduces).

    Attributes:
        seed: the random seed.
        split: deliver each direction's bytes in random chunks.
        drop: probability that a whole line is lost.
        reorder: probability that a line swaps places with the next one.
        delay: virtual seconds every delivery takes.
    """

    seed: int = 0
    split: bool = False
    drop: float = 0.0
    reorder: float = 0.0
    delay: float = 0.0


def _answer_with(client: StdioClient | HttpClient, answers: Mapping[str, object], event: Event) -> bool:
    """Answer ``event`` if it is a server request ``answers`` knows; whether it did."""
    if not isinstance(event, ServerRequestReceived):
        return False
    answer = answers.get(event.method)
    result = answer(event.params) if callable(answer) else answer
    if result is None:
        return False  # unanswered: the event goes to the test
    assert isinstance(result, msgspec.Struct | Mapping), f"bad answer for {event.method}"
    client.respond(event.request_id, result, now=0.0)
    return True


class _Pair:
    """What both pairs share: the clock, the manual loop and runner, the client's events
    and answers, settling. A subclass makes ``client`` and ``server`` and moves bytes."""

    client: StdioClient | HttpClient
    server: StdioServer | HttpServer

    def __init__(self, server: StdioServer | HttpServer, answers: Mapping[str, object] | None,
                 faults: Faults | None) -> None:
        self.now = 0.0
        self.server = server
        self.loop = StepLoop(lambda: self.now)
        self.server_events: list[Event] = []
        self.runner = ServerRunner(server, self.loop, self.server_events.append)
        self.client_events: list[Event] = []
        self.answers = dict(answers or {})
        self.faults = faults or Faults()
        self._random = random.Random(self.faults.seed)

    def settle(self, max_rounds: int = 500) -> None:
        """Move bytes and run handlers until nothing changes (or ``max_rounds``)."""
        for _ in range(max_rounds):
            if not self._round():
                return
        raise AssertionError(f"the {type(self).__name__} did not settle")

    def advance(self, seconds: float) -> None:
        """Move the clock, fire what is due on both sides, and settle."""
        self.now += seconds
        self.client.handle_timeout(self.now)
        self.server.handle_timeout(self.now)
        self.runner.pump()
        self.loop.fire_due()
        self.settle()

    def take_client_events(self) -> list[Event]:
        """The client events so far (drained)."""
        events, self.client_events = self.client_events, []
        return events

    def _round(self) -> bool:
        raise NotImplementedError

    def _client_events(self) -> bool:
        """Answer the server's questions ``answers`` knows, keep the other events."""
        moved = False
        while (event := self.client.next_event()) is not None:
            moved = True
            if not _answer_with(self.client, self.answers, event):
                self.client_events.append(event)
        return moved


class Pair(_Pair):
    """A ``StdioClient`` and a ``StdioServer`` wired together with no I/O.

    Args:
        app: the server.
        config: the client's config (``protocol`` picks the era).
        answers: what the client answers the server's questions with, by method (a
            callable gets the request's params; its ``None`` leaves that one unanswered);
            unanswered methods stay pending.
        faults: what the wire does to the bytes.
    """

    def __init__(self, app: MCPServer, *, config: ClientConfig | None = None,
                 answers: Mapping[str, object] | None = None, faults: Faults | None = None,
                 capabilities: ClientCapabilities | None = None) -> None:
        self.server: StdioServer = StdioServer(app, secret=SECRET, entropy=ENTROPY)
        super().__init__(self.server, answers, faults)
        self.client: StdioClient = StdioClient(config or ClientConfig(), capabilities=capabilities)
        self._in_flight: list[tuple[float, bool, bytes]] = []  # (arrives at, to server, bytes)

    def start(self) -> None:
        """Open the conversation (``server/discover`` or ``initialize``) and settle."""
        self.client.start(now=self.now)
        self.settle()

    def _round(self) -> bool:
        moved = self.loop.run_ready()
        moved |= self._ship(self.client.data_to_send(), to_server=True)
        moved |= self._ship(self.server.data_to_send(), to_server=False)
        moved |= self._deliver()
        return self._client_events() or moved

    def _ship(self, data: bytes, *, to_server: bool) -> bool:
        if not data:
            return False
        faults = self.faults
        lines = data.splitlines(keepends=True)
        lines = [line for line in lines if self._random.random() >= faults.drop]
        for i in range(len(lines) - 1):
            if self._random.random() < faults.reorder:
                lines[i], lines[i + 1] = lines[i + 1], lines[i]
        chunks = [b"".join(lines)]
        if faults.split and chunks[0]:
            blob, chunks = chunks[0], []
            while blob:
                size = self._random.randint(1, max(1, len(blob)))
                chunks.append(blob[:size])
                blob = blob[size:]
        for chunk in chunks:
            if chunk:
                self._in_flight.append((self.now + faults.delay, to_server, chunk))
        return True

    def _deliver(self) -> bool:
        due = [item for item in self._in_flight if item[0] <= self.now]
        self._in_flight = [item for item in self._in_flight if item[0] > self.now]
        for _, to_server, chunk in due:
            if to_server:
                self.server.receive_data(chunk, self.now)
                self.runner.pump()
            else:
                self.client.receive_data(chunk, self.now)
        return bool(due)


class HttpPair(_Pair):
    """An ``HttpClient`` and an ``HttpServer`` wired together with no I/O: every connection
    the client opens is a connection made on the server, bytes move both ways (split into
    random chunks when ``faults.split``), and the server's handlers run on a manual loop.

    Args:
        app: the server.
        config: the client's config.
        answers: what the client answers the server's questions with (as :class:`Pair`).
        http: the server's HTTP settings.
        faults: only ``seed`` and ``split`` apply.
    """

    URL: Final = "http://127.0.0.1:8000/mcp"

    def __init__(self, app: MCPServer, *, config: ClientConfig | None = None,
                 answers: Mapping[str, object] | None = None, http: HttpConfig | None = None,
                 faults: Faults | None = None, capabilities: ClientCapabilities | None = None) -> None:
        self.server: HttpServer = HttpServer(app, secret=SECRET, entropy=ENTROPY,
                                             config=http or HttpConfig.loopback())
        super().__init__(self.server, answers, faults)
        self.client: HttpClient = HttpClient(self.URL, config=config or ClientConfig(),
                                             capabilities=capabilities)
        self._links: dict[int, int] = {}  # client connection -> server connection
        self._back: dict[int, int] = {}

    def start(self) -> None:
        """Connect the client (discovery or initialize) and settle."""
        self.client.connect(now=self.now)
        self.settle()

    def drop_connections(self) -> None:
        """Every connection breaks (as a network failure would)."""
        for client_conn, server_conn in list(self._links.items()):
            del self._links[client_conn]
            del self._back[server_conn]
            self.server.connection_lost(server_conn, self.now)
            self.client.connection_failed(client_conn, broken("the network broke"), self.now)
        self.runner.pump()

    def _round(self) -> bool:
        moved = self.loop.run_ready()
        while (action := self.client.next_action()) is not None:
            moved = True
            if isinstance(action, OpenConnection):
                server_conn = self.server.connection_made(self.now)
                self._links[action.connection] = server_conn
                self._back[server_conn] = action.connection
                self.client.connection_made(action.connection, self.now)
            elif isinstance(action, CloseConnection):
                gone = self._links.pop(action.connection, 0)
                if gone:
                    del self._back[gone]
                    self.server.receive_data(gone, b"", self.now)
                    self.runner.pump()
        for client_conn in self.client.connections_with_data():
            data = self.client.data_to_send(client_conn)
            target = self._links.get(client_conn)
            if target is not None:
                moved = True
                for piece in self._pieces(data):
                    self.server.receive_data(target, piece, self.now)
                    self.runner.pump()
        for server_conn in self.server.connections_with_data():
            data = self.server.data_to_send(server_conn)
            reader = self._back.get(server_conn)
            if reader is not None:
                moved = True
                for piece in self._pieces(data):
                    self.client.receive_data(reader, piece, self.now)
        while (closing := self.server.next_action()) is not None:
            moved = True
            closed = self._back.pop(closing.connection, 0)
            if closed:
                del self._links[closed]
                self.client.receive_data(closed, self.server.data_to_send(closing.connection), self.now)
                self.client.receive_data(closed, b"", self.now)
        return self._client_events() or moved

    def _pieces(self, data: bytes) -> list[bytes]:
        if not self.faults.split or len(data) < 2:
            return [data]
        pieces = []
        while data:
            size = self._random.randint(1, len(data))
            pieces.append(data[:size])
            data = data[size:]
        return pieces

"""Fuzz target: arbitrary bytes as the server's answer to HttpClient's ``initialize`` POST.

The first input byte picks the scenario (bit 0: ``transport="streamable-http"`` instead of
``"auto"``; bit 1: the default ``max_response_bytes`` instead of 512); the rest is what
the server sends, then EOF. Every request the client makes after that stays unanswered;
time then runs out and the client is closed. The input is fed whole and then byte by
byte: both must give the same events (failure texts compared up to their first colon,
as h11's detail depends on where it noticed a problem) unless a later request reused the
connection, only documented events, exactly one ``InitializeCompleted`` or
``InitializeFailed``, every connection closed in the end, and no exception may escape.

Run with ``python fuzz/fuzz_http_transport.py fuzz/corpus/http_transport`` (needs
atheris); the seeds replay under plain pytest through :func:`test_one_input`.
"""

from __future__ import annotations

import sys

import msgspec

from mcp_sansio import ClientConfig
from mcp_sansio.connections import CloseConnection, OpenConnection
from mcp_sansio.events import (
    AuthorizationRequired,
    ConnectionTerminated,
    Event,
    InitializeCompleted,
    InitializeFailed,
    MessageDiscarded,
    NotificationReceived,
    PeerErrorReceived,
    ServerRequestReceived,
)
from mcp_sansio.http_transport import HttpClient
from mcp_sansio.types import ClientCapabilities, RootsCapability

_URL = "http://fuzz.example/mcp"
# Below the pool's 64 KiB head bound, so no chunk header or trailer can reach it: the one
# bound h11 checks only on incomplete lines, where whole and split reads could differ.
_MAX_INPUT = 16 * 1024
# What the answer to initialize alone may cause: no request is made, so no RequestFailed,
# ProgressReceived or ResponseReceived; no session exists yet, so no SessionForgotten.
_DOCUMENTED = (AuthorizationRequired, ConnectionTerminated, InitializeCompleted, InitializeFailed,
               MessageDiscarded, NotificationReceived, PeerErrorReceived, ServerRequestReceived)


class _Driver:
    """Opens every connection the client asks for and swallows what it writes."""

    def __init__(self, client: HttpClient) -> None:
        self.client = client
        self.open: set[int] = set()
        self.writes: dict[int, int] = {}  # connection -> how many times bytes were taken

    def pump(self, now: float) -> None:
        client = self.client
        while True:
            action = client.next_action()
            if isinstance(action, OpenConnection):
                self.open.add(action.connection)
                client.connection_made(action.connection, now)
            elif isinstance(action, CloseConnection):
                self.open.discard(action.connection)
            elif not client.connections_with_data():
                return
            for connection in client.connections_with_data():
                client.data_to_send(connection)
                self.writes[connection] = self.writes.get(connection, 0) + 1


def _normalised(event: Event) -> Event:
    message = getattr(event, "message", None)
    if isinstance(message, str):
        return msgspec.structs.replace(event, message=message.partition(":")[0])
    return event


def _run(scenario: int, chunks: list[bytes]) -> tuple[list[Event], bool]:
    """The normalised events, and whether a later request reused the first connection."""
    config = ClientConfig(max_response_bytes=32 * 1024 * 1024 if scenario & 2 else 512)
    client = HttpClient(_URL, config=config, capabilities=ClientCapabilities(roots=RootsCapability()),
                        transport="streamable-http" if scenario & 1 else "auto", jitter_seed=1)
    driver = _Driver(client)
    client.connect(now=0.0)
    driver.pump(0.0)
    (connection,) = driver.open
    assert driver.writes == {connection: 1}
    for chunk in chunks:
        client.receive_data(connection, chunk, 1.0)
        driver.pump(1.0)
    client.receive_data(connection, b"", 2.0)
    driver.pump(2.0)
    client.handle_timeout(1000.0)
    driver.pump(1000.0)
    client.close(now=1001.0)
    driver.pump(1001.0)
    client.handle_timeout(2000.0)
    driver.pump(2000.0)
    assert client.finished
    assert not driver.open, driver.open
    assert client.next_deadline() is None
    events = []
    while (event := client.next_event()) is not None:
        assert isinstance(event, _DOCUMENTED), event
        events.append(_normalised(event))
    outcomes = [e for e in events if isinstance(e, InitializeCompleted | InitializeFailed)]
    assert len(outcomes) == 1, events
    return events, driver.writes[connection] > 1


def test_one_input(data: bytes) -> None:
    """Feed ``data`` (scenario byte, then server bytes) whole, then byte by byte."""
    if not data:
        return
    scenario, stream = data[0], data[1:_MAX_INPUT]
    whole, reused = _run(scenario, [stream])
    split, reused_split = _run(scenario, [stream[i : i + 1] for i in range(len(stream))])
    # Bytes after a complete response stop the pool from reusing the connection only when
    # they arrive in the same read; once reused, the rest answers another request.
    if not (reused or reused_split):
        assert split == whole


if __name__ == "__main__":
    import atheris

    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()

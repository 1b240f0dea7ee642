"""Fuzz target: arbitrary server bytes on an open WebSocket of a ``WebSocketClient``.

The first input byte picks the scenario (bit 0: the MCP handshake completes first and a
``tools/call`` is in flight, so the bytes meet a ready session; bit 1: a small
``max_message_bytes``); the rest is what the server sends after its 101 answer, then EOF.
It is fed whole and then byte by byte: both must give the same events, actions and
frames sent, the connection must end with exactly one ``CloseConnection``, and no
exception may escape.

Run with ``python fuzz/fuzz_websocket.py fuzz/corpus/websocket`` (needs atheris); the
seeds replay under plain pytest through :func:`test_one_input`.
"""

from __future__ import annotations

import sys
from typing import Final

from wsproto import ConnectionType, WSConnection
from wsproto import events as wsevents

from mcp_sansio.connections import CloseConnection
from mcp_sansio.events import Action, Event
from mcp_sansio.websocket import WebSocketClient

_CONN: Final = 1
_MAX_INPUT: Final = 16 * 1024
_INIT_RESULT: Final = ('{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25",'
                       '"capabilities":{"tools":{}},"serverInfo":{"name":"fuzz","version":"1"}}}')

Outcome = tuple[list[Event], list[Action], list[wsevents.Event]]


def _run(scenario: int, chunks: list[bytes]) -> Outcome:
    """Events, actions and the frames the client sent, for the server bytes in ``chunks``."""
    client = WebSocketClient("ws://fuzz.example/mcp", max_message_bytes=160 if scenario & 2 else 1 << 20)
    client.connect(now=0.0)
    client.next_action()
    client.connection_made(_CONN, 0.0)
    server = WSConnection(ConnectionType.SERVER)
    server.receive_data(client.data_to_send(_CONN))
    assert [type(e) for e in server.events()] == [wsevents.Request]
    primer = server.send(wsevents.AcceptConnection(subprotocol="mcp"))
    if scenario & 1:
        primer += server.send(wsevents.TextMessage(data=_INIT_RESULT))
    client.receive_data(_CONN, primer, 0.0)
    if scenario & 1:
        client.call_tool("echo", {"text": "hi"}, now=0.5)
    for chunk in chunks:
        client.receive_data(_CONN, chunk, 1.0)
    client.receive_data(_CONN, b"", 2.0)
    events: list[Event] = []
    while (event := client.next_event()) is not None:
        events.append(event)
    actions: list[Action] = []
    while (action := client.next_action()) is not None:
        actions.append(action)
    assert client.finished
    assert actions.count(CloseConnection(connection=_CONN)) == 1, actions
    server.receive_data(client.data_to_send(_CONN))
    return events, actions, list(server.events())


def test_one_input(data: bytes) -> None:
    """Feed ``data`` (scenario byte, then server bytes) whole, then byte by byte."""
    if not data:
        return
    scenario, stream = data[0], data[1:_MAX_INPUT]
    whole = _run(scenario, [stream])
    assert _run(scenario, [stream[i : i + 1] for i in range(len(stream))]) == whole


if __name__ == "__main__":
    import atheris

    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()

"""A hand-written MCP server over WebSocket that floods Ping frames, one way per mode.

It accepts one connection at a time on ``127.0.0.1:PORT`` (plain sockets and wsproto),
completes the upgrade with subprotocol ``mcp`` and answers ``initialize`` (protocol
``2025-11-25``, tools), then writes Ping frames (125-byte payloads) without reading:

- ``flood``: as fast as the client takes them, up to ``FLOOD_BYTES`` or until the client
  goes away. The requests it sends are never read, so they can only time out.
- ``flood-then-read``: ``BURST_BYTES`` of them, then it appends ``flooded PINGS`` to the
  file named by ``HOSTILE_LOG`` and reads again: it answers ``tools/call`` with ``"ok"``
  and counts the Pong frames until the client closes, then appends ``pongs N``. A client
  that answers each Ping sends about as many Pongs; one that answers only the latest
  Ping per write sends a few.

Usage: ``python hostile_ws.py MODE PORT``.
"""

from __future__ import annotations

import json
import os
import socket
import sys

from wsproto import ConnectionType, WSConnection
from wsproto import events as ws

FLOOD_BYTES = 512 * 2**20
BURST_BYTES = 8 * 2**20
PING = b"p" * 125


def log(line: str) -> None:
    """Append ``line`` to ``$HOSTILE_LOG``."""
    with open(os.environ["HOSTILE_LOG"], "a") as out:
        out.write(line + "\n")


def answer(peer: WSConnection, message: dict[str, object]) -> bytes:
    """The frame answering ``initialize`` or ``tools/call``; empty for anything else."""
    method = message.get("method")
    if method == "initialize":
        result: dict[str, object] = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                     "serverInfo": {"name": "hostile-ws", "version": "1.0"}}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    else:
        return b""
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    return peer.send(ws.TextMessage(data=json.dumps(reply)))


def serve(conn: socket.socket, peer: WSConnection, *, until_initialized: bool) -> int | None:
    """Read and answer until ``initialize`` is answered (``until_initialized``) or the
    client leaves; the number of Pong frames read (``None``: it left before ``initialize``)."""
    pongs = 0
    while True:
        try:
            data = conn.recv(65536)
        except OSError:  # reset by the client: it is gone as surely as with an EOF
            data = b""
        if not data:
            return None if until_initialized else pongs
        peer.receive_data(data)
        for event in peer.events():
            if isinstance(event, ws.Request):
                conn.sendall(peer.send(ws.AcceptConnection(subprotocol="mcp")))
            elif isinstance(event, ws.Pong):
                pongs += 1
            elif isinstance(event, ws.CloseConnection):
                conn.sendall(peer.send(event.response()))
            elif isinstance(event, ws.TextMessage):
                message = json.loads(event.data)
                conn.sendall(answer(peer, message))
                if until_initialized and message.get("method") == "initialize":
                    return pongs


def flood(conn: socket.socket, peer: WSConnection, budget: int) -> int:
    """Write Ping frames, never reading, until the client leaves or ``budget`` bytes went;
    the number of Pings written."""
    burst = b"".join(peer.send(ws.Ping(payload=PING)) for _ in range(512))
    sent = 0
    while sent < budget:
        conn.sendall(burst)
        sent += len(burst)
    return 512 * sent // len(burst)


def main() -> None:
    """Serve one connection after another until killed."""
    mode, port = sys.argv[1], int(sys.argv[2])
    listener = socket.create_server(("127.0.0.1", port))
    while True:
        conn, _ = listener.accept()
        with conn:
            peer = WSConnection(ConnectionType.SERVER)
            try:
                if serve(conn, peer, until_initialized=True) is None:
                    continue  # a probe of the port, or a client that gave up
                if mode == "flood":
                    flood(conn, peer, FLOOD_BYTES)
                    continue
                log(f"flooded {flood(conn, peer, BURST_BYTES)}")
                log(f"pongs {serve(conn, peer, until_initialized=False)}")
            except OSError:
                pass


if __name__ == "__main__":
    main()

"""What a flooding peer can make the HTTP client hold: an SSE stream of comments, pings or
empty events keeps nothing, and a server that reads nothing gets one request per
connection (the rest wait as requests, not as bytes)."""

from __future__ import annotations

import tracemalloc

from helpers import drain_events
from http_helpers import ready_http_client

from mcp_sansio import ClientConfig
from mcp_sansio.connections import OpenConnection

MIB = 1024 * 1024


def test_a_get_stream_flooding_comments_and_empty_events_keeps_nothing() -> None:
    client, server, _ = ready_http_client(get_stream=0)
    get = server.requests[2]
    server.send(get, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n", now=1.0)
    piece = (b": ping\n" * 2000 + b"event: ping\n\n" * 1000 + b"id: 7\ndata:\n\n" * 500)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for n in range(MIB // len(piece)):
            client.receive_data(get.connection, piece, now=1.0 + n / 1000)
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert drain_events(client) == []
    assert held < 64 * 1024, held  # against a megabyte fed


def test_a_server_that_reads_nothing_gets_one_request_per_connection() -> None:
    client, server, _ = ready_http_client(config=ClientConfig(max_connections=3))
    server.hang_up_idle(now=1.0)
    for _ in range(10):
        client.call_tool("t", {"text": "x" * 1000}, now=1.0)
    opened = [a for a in iter(client.next_action, None) if isinstance(a, OpenConnection)]
    assert len(opened) == 2  # the other eight wait as requests (one connection is kept for answers)
    for action in opened:
        client.connection_made(action.connection, now=1.0)
    assert [len(client.data_to_send(a.connection)) < 2000 for a in opened] == [True, True]
    assert client.connections_with_data() == []

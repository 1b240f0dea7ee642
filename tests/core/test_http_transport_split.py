"""Split invariance of HttpClient: however the server's bytes are cut into reads, the
client queues the same events and makes the same requests (STYLE.md section 10).
"""

from __future__ import annotations

from collections.abc import Iterator

from http_helpers import (
    LAST_CHUNK,
    ScriptedHttpServer,
    Splitter,
    chunk,
    chunked_head,
    http_client,
    init_result,
    json_body,
    response,
    sse_event,
    tool_result,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio import ClientConfig
from mcp_sansio.events import ClientEvent
from mcp_sansio.types import ClientCapabilities, RootsCapability

PROGRESS = json_body({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": 2, "progress": 0.5, "total": 1, "message": "half"}})
ROOTS = json_body({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"})
MULTILINE = b'{"jsonrpc":"2.0",\n"method":"notifications/message",\n"params":{"level":"info","data":"x"}}'


def script(splitter: Splitter) -> tuple[list[ClientEvent], list[tuple[str, str, bytes]]]:
    """A whole session against one server script; returns the events and requests seen."""
    client = http_client("http://example.com/mcp", capabilities=ClientCapabilities(roots=RootsCapability()),
                        config=ClientConfig(max_response_bytes=600), jitter_seed=3)
    server = ScriptedHttpServer(client, splitter=splitter)
    client.connect(now=0.0)
    (init,) = server.pump(now=0.0)
    # The handshake over chunked SSE with CRLF line ends and a BOM.
    body = b"\xef\xbb\xbf" + sse_event(init_result(), id="i1").replace(b"\n", b"\r\n")
    server.send(init, chunked_head(headers={"Mcp-Session-Id": "s-1"}) + chunk(body) + LAST_CHUNK, now=0.0)
    for request in server.pump(now=0.0):
        server.reply(request, 202 if request.method == "POST" else 405, now=0.0)
    # A call answered on a stream with no framing (ended by the close), comments and all.
    client.call_tool("t", now=1.0)
    (call,) = server.pump(now=1.0)
    stream = (b": ping\n\n" + sse_event(PROGRESS, id="c1", retry=100) + sse_event(ROOTS)
              + sse_event(MULTILINE) + sse_event(tool_result(2, "done")))
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    server.send(call, head + stream, now=1.0)
    server.hang_up(call, now=1.0)
    client.respond("r1", {"roots": []}, now=1.0)
    for request in server.pump(now=1.0):
        server.accept(request, now=1.0)
    # A JSON answer, then a dropped SSE answer resumed from its last id.
    client.ping(now=2.0)
    (ping,) = server.pump(now=2.0)
    server.send(ping, response(200, json_body({"jsonrpc": "2.0", "id": 3, "result": {}}),
                               headers={"Content-Type": "application/json"}), now=2.0)
    client.call_tool("t", now=3.0)
    (call,) = server.pump(now=3.0)
    server.send(call, chunked_head() + chunk(sse_event(b"", id="d1", retry=250)), now=3.0)
    server.hang_up(call, now=3.0)
    client.handle_timeout(3.25)
    (resume,) = server.pump(now=3.25)
    server.send(resume, chunked_head() + chunk(sse_event(tool_result(4), id="d2")) + LAST_CHUNK, now=3.3)
    # An oversized event fails its request; an HTML error fails the next.
    client.call_tool("big", now=4.0)
    (big,) = server.pump(now=4.0)
    server.send(big, chunked_head() + chunk(sse_event("y" * 700)) + LAST_CHUNK, now=4.0)
    client.ping(now=5.0)
    (ping,) = server.pump(now=5.0)
    server.send(ping, response(500, b"<html>\n<b>oops</b>\n</html>", headers={"Content-Type": "text/html"}),
                now=5.0)
    events = []
    while (event := client.next_event()) is not None:
        events.append(event)
    return events, [(r.method, r.target, r.body) for r in server.requests]


def cutter(sizes: list[int]) -> Splitter:
    """Cut every write into pieces of the given sizes, used in turn."""
    def split(data: bytes) -> Iterator[bytes]:
        pos, turn = 0, 0
        while pos < len(data):
            size = sizes[turn % len(sizes)]
            yield data[pos : pos + size]
            pos += size
            turn += 1
    return split


WHOLE = script(lambda data: [data])


def test_the_script_covers_what_it_claims() -> None:
    names = [type(e).__name__ for e in WHOLE[0]]
    assert names == [
        "InitializeCompleted", "ProgressReceived", "ServerRequestReceived", "NotificationReceived",
        "ResponseReceived", "ResponseReceived", "ResponseReceived", "RequestFailed", "RequestFailed",
    ]


def test_byte_by_byte_reads_give_the_same_session() -> None:
    assert script(cutter([1])) == WHOLE


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=200), min_size=1, max_size=12))
def test_any_chunking_of_the_server_bytes_gives_the_same_session(sizes: list[int]) -> None:
    assert script(cutter(sizes)) == WHOLE

"""Backpressure (``flow.py``): every server transport bounds what a client that does not read
costs, slows the handlers producing into a congested stream, and drops a stalled one; plus
the answers to invalid UTF-8 and to a request body that never ends (ASGI)."""

from __future__ import annotations

import json

from pair import StepLoop
from server_helpers import ENTROPY, SECRET
from server_http_helpers import MODERN_HEADERS, RawHttp, http_server, modern_body
from wsproto import ConnectionType, WSConnection
from wsproto import events as ws

from mcp_sansio.events import ConnectionTerminated
from mcp_sansio.server import Context, MCPServer, ToolCallReceived
from mcp_sansio.server.exchanges import HttpExchanges, ResponseAborted, ResponseBody, ResponseStart
from mcp_sansio.server.flow import AT_ONCE, Backlog, FlowLimits
from mcp_sansio.server.http import HttpServer
from mcp_sansio.server.http11 import ExchangeClosed, HttpConnections, HttpLimits, RequestReceived
from mcp_sansio.server.stdio import StdioServer
from mcp_sansio.server.websocket import WebSocketConfig, WebSocketServer
from mcp_sansio_base.server import ServerRunner

GET = b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n"
LIMITS = HttpLimits(high_water_bytes=2000, max_buffer_bytes=20_000, stall_timeout=5.0)
PIECE = "x" * 1000


def _flood_app(count: int, done: list[str]) -> MCPServer:
    app = MCPServer("s")

    @app.tool()
    async def flood(ctx: Context) -> str:
        try:
            for i in range(count):
                await ctx.report_progress(i, message=PIECE)
        except BaseException:
            done.append("cancelled")
            raise
        done.append("finished")
        return "ok"

    return app


def _flood_request(conn: RawHttp) -> None:
    conn.request(body=modern_body(1, "tools/call", {"name": "flood", "_meta": {"progressToken": 1}}),
                 headers=MODERN_HEADERS | {"mcp-method": "tools/call", "mcp-name": "flood"})


# ---------------------------------------------------------------- HTTP/1.1 connections


def _streaming(limits: HttpLimits) -> tuple[HttpConnections, int, int]:
    http = HttpConnections(limits)
    conn = http.connection_made(0.0)
    http.receive_data(conn, GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.start_stream(event.exchange, 200, [])
    http.data_to_send(conn)
    return http, conn, event.exchange


def test_a_connection_is_congested_over_high_water_until_the_driver_takes_its_bytes() -> None:
    http, conn, exchange = _streaming(LIMITS)
    assert http.send(exchange, b"x" * 1500) and not http.congested(exchange)
    assert http.send(exchange, b"x" * 1500) and http.congested(exchange)
    assert len(http.data_to_send(conn)) > 3000
    assert not http.congested(exchange) and http.next_deadline() is None


def test_a_connection_congested_for_the_stall_timeout_is_dropped() -> None:
    http, conn, exchange = _streaming(LIMITS)
    http.send(exchange, b"x" * 3000)
    assert http.next_deadline() == 0.0  # at once: to start the stall clock with the driver's time
    http.handle_timeout(2.0)
    assert http.next_deadline() == 7.0 and http.next_event() is None
    http.handle_timeout(7.0)
    reason = "the client does not read its stream"
    assert http.next_event() == ExchangeClosed(exchange=exchange, reason=reason)
    assert http.next_action() is not None and not http.congested(exchange)
    assert http.data_to_send(conn) == b""  # what it did not read is forgotten


def test_taking_the_bytes_stops_the_stall_clock() -> None:
    http, conn, exchange = _streaming(LIMITS)
    http.send(exchange, b"x" * 3000)
    http.handle_timeout(1.0)
    http.data_to_send(conn)
    http.send(exchange, b"x" * 3000)
    http.handle_timeout(6.5)  # congested again, but only since now
    assert http.next_event() is None and http.next_deadline() == 11.5


def test_responses_a_client_never_reads_are_bounded_too() -> None:
    http = HttpConnections(HttpLimits(max_buffer_bytes=100))
    conn = http.connection_made(0.0)
    http.receive_data(conn, GET + GET, 0.0)
    first = http.next_event()
    assert isinstance(first, RequestReceived)
    http.respond(first.exchange, 200, [], b"x" * 60, now=0.0)
    second = http.next_event()
    assert isinstance(second, RequestReceived)
    http.respond(second.exchange, 200, [], b"x" * 60, now=0.0)
    assert http.next_action() is not None  # dropped: the first answer is still unread


def test_a_client_sending_more_than_a_head_ahead_of_its_response_is_dropped() -> None:
    http = HttpConnections(HttpLimits(max_header_bytes=1000))
    conn = http.connection_made(0.0)
    http.receive_data(conn, GET, 0.0)
    first = http.next_event()
    assert isinstance(first, RequestReceived)
    http.receive_data(conn, GET * (1000 // len(GET)), 0.0)  # a head's worth waits (h11 keeps it)
    assert http.next_action() is None
    http.receive_data(conn, GET, 0.0)
    reason = "the client sent too much ahead of its response"
    assert http.next_event() == ExchangeClosed(exchange=first.exchange, reason=reason)
    assert http.next_action() is not None


def test_a_client_pipelining_a_request_at_a_time_is_served() -> None:
    http = HttpConnections(HttpLimits(max_header_bytes=1000))
    conn = http.connection_made(0.0)
    http.receive_data(conn, GET, 0.0)
    for _ in range(100):
        event = http.next_event()
        assert isinstance(event, RequestReceived)
        http.receive_data(conn, GET, 0.0)
        http.respond(event.exchange, 200, [], now=0.0)
        http.data_to_send(conn)
    assert http.next_action() is None


def test_requests_still_kept_from_the_last_response_count_as_sent_ahead() -> None:
    # Each response takes one request of those kept: sending a head's worth per response
    # would pile them up without end.
    http = HttpConnections(HttpLimits(max_header_bytes=1000))
    conn = http.connection_made(0.0)
    http.receive_data(conn, GET, 0.0)
    for _ in range(10):
        event = http.next_event()
        if not isinstance(event, RequestReceived):
            break
        http.receive_data(conn, GET * (600 // len(GET)), 0.0)
        http.respond(event.exchange, 200, [], now=0.0)
        http.data_to_send(conn)
    assert http.next_action() is not None


# ---------------------------------------------------------------- the runner and the HTTP server


def test_a_handler_awaiting_its_progress_waits_while_the_client_does_not_read() -> None:
    done: list[str] = []
    server = http_server(_flood_app(40, done), response_mode="sse", limits=LIMITS)
    loop = StepLoop(lambda: 0.0)
    runner = ServerRunner(server, loop)
    conn = RawHttp(server)
    _flood_request(conn)
    runner.pump()
    loop.run_ready()
    assert done == [] and runner.running == 1
    assert server.congested(next(iter(server._calls)))
    biggest = 0
    for _ in range(200):
        if done:
            break
        taken = server.data_to_send(conn.id)  # the socket took it
        biggest = max(biggest, len(taken))
        runner.wake()
        loop.run_ready()
    assert done == ["finished"]
    assert biggest <= LIMITS.high_water_bytes + 2 * len(PIECE) + 200  # one message past the mark, framed


def test_a_handler_waiting_on_a_stalled_stateless_stream_is_cancelled() -> None:
    done: list[str] = []
    server = http_server(_flood_app(40, done), response_mode="sse", limits=LIMITS)
    loop = StepLoop(lambda: 0.0)
    runner = ServerRunner(server, loop)
    _flood_request(RawHttp(server))
    runner.pump()
    loop.run_ready()
    assert server.next_deadline() == 0.0
    server.handle_timeout(1.0)
    runner.pump()
    assert server.next_deadline() == 6.0 and done == []
    server.handle_timeout(6.0)
    runner.pump()
    loop.run_ready()
    assert done == ["cancelled"] and runner.running == 0


def test_a_cancelled_handler_stops_at_its_next_awaited_progress_even_if_woken_first() -> None:
    done: list[str] = []
    server = http_server(_flood_app(40, done), response_mode="sse", limits=LIMITS)
    loop = StepLoop(lambda: 0.0)
    runner = ServerRunner(server, loop)
    _flood_request(RawHttp(server))
    runner.pump()
    loop.run_ready()
    server.handle_timeout(1.0)
    server.handle_timeout(6.0)  # dropped: the call is cancelled, its CallCancelled not yet acted on
    runner.wake()  # its stream is gone, so no longer congested: the handler goes on, to its next await
    loop.run_ready()
    assert done == []
    runner.pump()
    loop.run_ready()
    assert done == ["cancelled"] and runner.running == 0


def test_a_stalled_handshake_era_stream_is_dropped_and_its_events_kept_for_resumption() -> None:
    done: list[str] = []
    server = http_server(_flood_app(5, done), response_mode="sse", limits=LIMITS)
    loop = StepLoop(lambda: 0.0)
    runner = ServerRunner(server, loop)
    conn = RawHttp(server)
    init = conn.request(body={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}})
    assert init is not None
    session_id = init.headers["mcp-session-id"]
    runner.pump()
    stream = RawHttp(server)
    stream.request(body={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "flood", "_meta": {"progressToken": 1}}},
                   headers={"mcp-session-id": session_id})
    runner.pump()
    loop.run_ready()
    assert done == []
    server.handle_timeout(1.0)
    server.handle_timeout(6.0)
    runner.pump()
    loop.run_ready()
    assert done == ["finished"]  # the stream is gone, not the request: it can be resumed
    first_stream = int(init.ids[0].partition("-")[0])  # initialize's (SSE) stream; the call's is next
    replay = server.event_store.replay(session_id, f"{first_stream + 1}-3")  # after its priming event
    assert replay is not None and len(replay.events) == 6  # five progress notifications, the result
    assert json.loads(replay.events[-1][1])["result"]["content"][0]["text"] == "ok"


# ---------------------------------------------------------------- ASGI exchanges


def test_an_asgi_body_that_does_not_arrive_in_time_gets_408_and_close() -> None:
    exchanges = HttpExchanges(HttpLimits(body_timeout=3.0))
    ex = exchanges.begin("POST", "/mcp", [(b"host", b"a")], now=1.0)
    assert exchanges.receive_body(ex, b"{", more=True) and exchanges.reading(ex)
    assert exchanges.next_deadline() == 4.0
    exchanges.handle_timeout(3.9)
    assert exchanges.exchanges_with_output() == []
    exchanges.handle_timeout(4.0)
    start = exchanges.next_part(ex)
    assert isinstance(start, ResponseStart) and start.status == 408
    assert (b"connection", b"close") in start.headers
    assert not exchanges.reading(ex) and not exchanges.receive_body(ex, b"}", more=False)
    assert exchanges.next_event() is None and exchanges.next_deadline() is None


def test_an_asgi_request_framed_by_both_transfer_encoding_and_content_length_gets_400_and_close() -> None:
    # As over plain sockets (RFC 9112 section 6.1): uvicorn on h11 took the chunked body
    # and read what followed it as the next request.
    exchanges = HttpExchanges()
    head = [(b"host", b"a"), (b"Transfer-Encoding", b"chunked"), (b"content-length", b"5")]
    ex = exchanges.begin("POST", "/mcp", head, now=0.0)
    start = exchanges.next_part(ex)
    assert isinstance(start, ResponseStart) and start.status == 400
    assert (b"connection", b"close") in start.headers
    assert not exchanges.receive_body(ex, b"{}", more=False) and exchanges.next_event() is None


def test_an_asgi_stream_congested_for_the_stall_timeout_is_dropped() -> None:
    exchanges = HttpExchanges(LIMITS)
    ex = exchanges.begin("GET", "/mcp", [], now=0.0)
    exchanges.receive_body(ex, b"", more=False)
    exchanges.next_event()
    exchanges.start_stream(ex, 200, [])
    exchanges.send(ex, b"x" * 3000)
    assert exchanges.congested(ex) and exchanges.next_deadline() == 0.0
    exchanges.handle_timeout(1.0)
    assert exchanges.next_deadline() == 6.0
    exchanges.handle_timeout(6.0)
    assert exchanges.next_event() == ExchangeClosed(exchange=ex, reason="the client does not read its stream")
    assert exchanges.dropped(ex) and not exchanges.congested(ex)


def test_an_asgi_response_that_ended_unread_is_dropped_after_the_stall_timeout() -> None:
    exchanges = HttpExchanges(LIMITS)
    ex = exchanges.begin("GET", "/mcp", [], now=0.0)
    exchanges.receive_body(ex, b"", more=False)
    exchanges.next_event()
    exchanges.start_stream(ex, 200, [])
    exchanges.send(ex, b"x" * 3000)
    exchanges.end(ex, now=0.0)
    exchanges.handle_timeout(1.0)  # stamped, not a timer due again and again
    assert exchanges.next_deadline() == 6.0
    exchanges.handle_timeout(6.0)
    assert exchanges.next_event() is None  # its request was answered: nothing to cancel
    assert exchanges.next_part(ex) == ResponseAborted() and exchanges.next_deadline() is None


def test_an_asgi_part_counts_until_the_driver_takes_it() -> None:
    exchanges = HttpExchanges(LIMITS)
    ex = exchanges.begin("GET", "/mcp", [], now=0.0)
    exchanges.receive_body(ex, b"", more=False)
    exchanges.next_event()
    exchanges.start_stream(ex, 200, [])
    exchanges.send(ex, b"x" * 3000)
    exchanges.send(ex, b"x" * 3000)
    assert isinstance(exchanges.next_part(ex), ResponseStart) and exchanges.congested(ex)
    assert isinstance(exchanges.next_part(ex), ResponseBody) and exchanges.congested(ex)
    assert isinstance(exchanges.next_part(ex), ResponseBody) and not exchanges.congested(ex)
    exchanges.abort(ex)
    assert exchanges.next_part(ex) == ResponseAborted()


# ---------------------------------------------------------------- stdio


def _stdio(flow: FlowLimits, count: int, done: list[str]) -> tuple[StdioServer, ServerRunner, StepLoop]:
    server = StdioServer(_flood_app(count, done), secret=SECRET, entropy=ENTROPY, flow=flow)
    loop = StepLoop(lambda: 0.0)
    runner = ServerRunner(server, loop)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "flood", "_meta": {"progressToken": 1}}}
    server.receive_data(json.dumps(init).encode() + b"\n", 0.0)
    server.receive_data(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n', 0.0)
    runner.pump()
    server.data_to_send()
    server.receive_data(json.dumps(call).encode() + b"\n", 0.0)
    runner.pump()
    loop.run_ready()
    return server, runner, loop


def test_a_stdio_handler_waits_while_stdout_is_not_read() -> None:
    done: list[str] = []
    server, runner, loop = _stdio(FlowLimits(high_water_bytes=2000, max_buffer_bytes=20_000), 20, done)
    assert done == [] and server.congested(1)
    for _ in range(100):
        if done:
            break
        server.data_to_send()
        runner.wake()
        loop.run_ready()
    assert done == ["finished"]
    server.data_to_send()
    server.handle_timeout(100.0)  # it read everything: no stall, the session goes on
    runner.pump()
    assert not runner.terminated and server.next_deadline() is None


def test_a_stdio_client_that_stops_reading_ends_its_session() -> None:
    done: list[str] = []
    server, runner, loop = _stdio(FlowLimits(high_water_bytes=2000, stall_timeout=5.0), 20, done)
    terminated: list[object] = []
    runner._on_event = terminated.append  # what the runner passes on
    server.handle_timeout(1.0)
    server.handle_timeout(6.0)
    runner.pump()
    loop.run_ready()
    assert done == ["cancelled"] and server.data_to_send() == b""
    assert [type(e) for e in terminated] == [ConnectionTerminated]
    server.receive_data(b'{"jsonrpc":"2.0","id":3,"method":"ping"}\n', 7.0)  # read and dropped
    assert server.data_to_send() == b"" and server.next_deadline() is None


def test_stdio_output_past_the_buffer_bound_ends_the_session() -> None:
    app = MCPServer("s")

    @app.tool()
    def spew(ctx: Context) -> str:  # a plain handler cannot wait: the bound drops it
        for i in range(100):
            ctx.report_progress(i, message=PIECE)
        return "ok"

    flow = FlowLimits(high_water_bytes=2000, max_buffer_bytes=20_000)
    server = StdioServer(app, secret=SECRET, entropy=ENTROPY, flow=flow)
    server.receive_data(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
                        b'"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}\n', 0.0)
    loop = StepLoop(lambda: 0.0)
    runner = ServerRunner(server, loop)
    runner.pump()
    server.data_to_send()
    server.receive_data(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"spew",'
                        b'"_meta":{"progressToken":1}}}\n', 0.0)
    runner.pump()
    assert server.next_deadline() == AT_ONCE  # the session ends at the driver's time, at once
    loop.fire_due()
    assert runner.terminated and server.data_to_send() == b""


# ---------------------------------------------------------------- WebSocket


def _ws_connected(server: WebSocketServer) -> tuple[int, WSConnection]:
    client = WSConnection(ConnectionType.CLIENT)
    conn = server.connection_made(0.0)
    upgrade = client.send(ws.Request(host="localhost", target="/", subprotocols=["mcp"]))
    server.receive_data(conn, upgrade, 0.0)
    client.receive_data(server.data_to_send(conn))
    assert any(isinstance(e, ws.AcceptConnection) for e in client.events())
    return conn, client


def test_a_websocket_close_lingers_only_while_the_client_may_still_send() -> None:
    server = WebSocketServer(MCPServer("s"), secret=SECRET, entropy=ENTROPY,
                             config=WebSocketConfig(max_connections=1))
    conn, client = _ws_connected(server)
    refused = server.connection_made(0.0)  # past max_connections: closed, nothing sent
    server.receive_data(conn, client.send(ws.Message(data=b"\x00")), 0.0)  # a binary frame: Close 1003
    closes = [(a.connection, a.linger) for a in iter(server.next_action, None)]
    assert closes == [(refused, False), (conn, True)]
    second, client = _ws_connected(server)
    server.receive_data(second, client.send(ws.CloseConnection(code=1000)), 0.0)  # it sends no more
    assert [(a.connection, a.linger) for a in iter(server.next_action, None)] == [(second, False)]


def _ws_initialized(server: WebSocketServer, conn: int, client: WSConnection) -> None:
    """The client on ``conn`` makes the 2025-11-25 handshake; its answer is drained unread."""
    for message in [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]:
        server.receive_data(conn, client.send(ws.Message(data=json.dumps(message))), 0.0)
    server.data_to_send(conn)


def _ws_call(server: WebSocketServer, conn: int, client: WSConnection, runner: ServerRunner,
             loop: StepLoop) -> None:
    _ws_initialized(server, conn, client)
    runner.pump()
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "flood",
                                                                      "_meta": {"progressToken": 1}}}
    server.receive_data(conn, client.send(ws.Message(data=json.dumps(call))), 0.0)
    runner.pump()
    loop.run_ready()


def test_a_websocket_handler_waits_and_a_stalled_connection_is_dropped() -> None:
    done: list[str] = []
    flow = FlowLimits(high_water_bytes=2000, stall_timeout=5.0)
    config = WebSocketConfig(flow=flow)
    server = WebSocketServer(_flood_app(20, done), secret=SECRET, entropy=ENTROPY, config=config)
    loop = StepLoop(lambda: 0.0)
    runner = ServerRunner(server, loop)
    conn, client = _ws_connected(server)
    _ws_call(server, conn, client, runner, loop)
    assert done == [] and server.congested(1)
    server.data_to_send(conn)
    runner.wake()
    loop.run_ready()
    assert done == [] and server.next_deadline() == 0.0
    server.handle_timeout(1.0)
    assert server.next_deadline() == 6.0
    server.handle_timeout(6.0)
    runner.pump()
    loop.run_ready()
    assert done == ["cancelled"] and server.next_action() is not None
    assert server.data_to_send(conn) == b""  # what it did not read is forgotten


def test_websocket_output_past_the_buffer_bound_drops_the_connection() -> None:
    app = MCPServer("s")

    @app.tool()
    def flood(ctx: Context) -> str:
        for i in range(100):
            ctx.report_progress(i, message=PIECE)
        return "ok"

    flow = FlowLimits(high_water_bytes=2000, max_buffer_bytes=20_000)
    server = WebSocketServer(app, secret=SECRET, entropy=ENTROPY, config=WebSocketConfig(flow=flow))
    loop = StepLoop(lambda: 0.0)
    runner = ServerRunner(server, loop)
    conn, client = _ws_connected(server)
    _ws_call(server, conn, client, runner, loop)
    assert server.next_deadline() == AT_ONCE  # dropped at the driver's time, at once
    loop.fire_due()
    assert server.next_action() is not None and server.data_to_send(conn) == b""


# ---------------------------------------------------------------- invalid UTF-8


BAD_UTF8 = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"\xc3("}}'


def test_invalid_utf8_on_stdio_is_a_parse_error() -> None:
    server = StdioServer(MCPServer("s"), secret=SECRET, entropy=ENTROPY)
    server.receive_data(BAD_UTF8 + b"\n", 0.0)
    answer = json.loads(server.data_to_send())
    assert answer["id"] is None and answer["error"]["code"] == -32700


def test_invalid_utf8_in_an_http_post_is_a_parse_error() -> None:
    server = http_server()
    answer = RawHttp(server).request(raw_body=BAD_UTF8, headers=MODERN_HEADERS)
    assert answer is not None and answer.status == 400 and answer.json()["error"]["code"] == -32700


# ---------------------------------------------------------------- the event store


def test_the_memory_event_store_keeps_a_bounded_number_of_bytes_per_session() -> None:
    from mcp_sansio.server.stores import MemoryEventStore

    store = MemoryEventStore(max_events=100, max_bytes=2500)
    first = store.append("s", 1, b"")
    ids = [store.append("s", 1, b"x" * 1000) for _ in range(5)]
    assert store.replay("s", first) is None  # it went, with the oldest events
    assert store.replay("s", ids[-3]) is None  # two events of 1000 bytes are what fits
    replay = store.replay("s", ids[-2])
    assert replay is not None and (replay.stream, replay.events) == (1, [(ids[-1], b"x" * 1000)])
    store.append("s", 1, b"y" * 10_000)  # one event larger than the bound is still kept
    assert store.replay("s", ids[-1]) is None and store.replay("t", "1-1") is None
    for _ in range(200):
        store.append("t", 1, b"")
    assert store.replay("t", "1-100") is None and store.replay("t", "1-101") is not None


def test_the_memory_event_store_of_a_long_session_stays_bounded_as_its_streams_come_and_go() -> None:
    # Every SSE answer of a handshake-era session opens a stream whose first event carries
    # its request id; a session making calls for days must not keep one per call forever.
    import tracemalloc

    from mcp_sansio.server.stores import MemoryEventStore

    store = MemoryEventStore(max_events=50)

    def calls(first: int, count: int) -> None:
        for stream in range(first, first + count):
            store.append("s", stream, b"", request_id=stream)
            store.append("s", stream, b"{}", final=True)

    calls(1, 1000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        calls(1001, 20_000)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 100_000  # about nothing (one entry per call was some 2 MB here)
    latest = store.replay("s", "21000-41999")  # a kept stream still knows its request
    assert latest is not None and latest.request_id == 21000 and latest.finished
    store.forget("s")
    assert store.replay("s", "21000-41999") is None


def test_a_message_of_any_size_fits_a_backlog_under_the_high_water_mark() -> None:
    limits = FlowLimits(high_water_bytes=100, max_buffer_bytes=1000)
    backlog = Backlog()
    backlog.add(90)  # a reader keeps it under the mark: the next answer, however large, goes
    assert backlog.fits(5000, limits)
    backlog.add(20)  # over the mark: only up to the bound
    assert backlog.fits(890, limits) and not backlog.fits(891, limits)


# ---------------------------------------------------------------- held answers


def _big_calls(flow: FlowLimits, count: int, size: int) -> tuple[StdioServer, list[int]]:
    """A stdio server whose client initialized and asked ``count`` calls of a tool answering
    ``size`` bytes, reading nothing since; the calls' handles."""
    app = MCPServer("s")
    app.add_tool(lambda: "x" * size, name="big")
    server = StdioServer(app, secret=SECRET, entropy=ENTROPY, flow=flow)
    server.receive_data(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":'
                        b'"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}\n', 0.0)
    server.data_to_send()
    lines = [json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "big"}})
             for n in range(1, count + 1)]
    server.receive_data("\n".join(lines).encode() + b"\n", 0.0)
    calls = []
    while (event := server.next_event()) is not None:
        if isinstance(event, ToolCallReceived):
            calls.append(event.call)
    assert len(calls) == count
    return server, calls


def test_answers_for_a_congested_stream_are_held_and_sent_in_order_as_it_drains() -> None:
    server, calls = _big_calls(FlowLimits(high_water_bytes=2000, max_buffer_bytes=20_000), 4, 3000)
    for call in calls:
        server.hold(call, "x" * 3000, now=0.0)
    assert server.holding  # the first went out and congested stdout: the others wait, encoded
    ids = []
    for _ in range(10):
        ids += [json.loads(line)["id"] for line in server.data_to_send().splitlines()]
        while server.release(0.0):
            pass
    assert ids == [1, 2, 3, 4] and not server.holding


def test_held_answers_past_their_byte_bound_end_the_session_as_an_unread_stdout_does() -> None:
    # 20 answers of 10 kB for a client that never reads: never more than max_held_bytes
    # (beyond one answer) wait, and the session ends at once instead of at the stall timeout.
    flow = FlowLimits(high_water_bytes=2000, max_buffer_bytes=20_000, max_held_bytes=30_000,
                      stall_timeout=60.0)
    server, calls = _big_calls(flow, 20, 10_000)
    for call in calls:
        server.hold(call, "x" * 10_000, now=0.0)
        assert server._held_bytes <= flow.max_held_bytes + 10_100
    assert server.next_deadline() == AT_ONCE
    server.handle_timeout(0.5)
    assert server.abandoned and not server.holding
    events = []
    while (event := server.next_event()) is not None:
        events.append(event)
    assert any(isinstance(e, ConnectionTerminated) for e in events)


def _big_and_add() -> MCPServer:
    app = MCPServer("s")
    app.add_tool(lambda: "x" * 3000, name="big")
    app.add_tool(lambda: "added", name="add")
    return app


def _calls(server: HttpServer | WebSocketServer) -> list[int]:
    return [event.call for event in iter(server.next_event, None) if isinstance(event, ToolCallReceived)]


def test_an_answer_held_for_one_http_client_holds_up_no_other() -> None:
    server = http_server(_big_and_add(), limits=LIMITS)
    deaf, other = RawHttp(server), RawHttp(server)
    body = json.dumps(modern_body(1, "tools/call", {"name": "big"})).encode()
    big = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept: application/json, text/event-stream\r\n"
           b"Content-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
           b"Mcp-Name: big\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    deaf.send_raw(big + big)  # pipelined: the second is read once the first is answered
    [first] = _calls(server)
    server.hold(first, "x" * 3000, now=0.0)  # answered: it congests the connection (never read)
    [second] = _calls(server)
    server.hold(second, "x" * 3000, now=0.0)
    assert server.holding
    answer = other.request(body=modern_body(2, "tools/call", {"name": "add"}),
                           headers=MODERN_HEADERS | {"mcp-method": "tools/call", "mcp-name": "add"})
    assert answer is None
    [add] = _calls(server)
    server.hold(add, "added", now=0.0)
    answer = other.read()
    assert answer is not None and answer.status == 200 and answer.json()["id"] == 2
    assert server.holding  # the deaf client's answer still waits for it to read
    server.data_to_send(deaf.id)
    assert server.release(0.0) and not server.holding


def test_an_answer_held_for_one_websocket_client_holds_up_no_other() -> None:
    flow = FlowLimits(high_water_bytes=2000, max_buffer_bytes=20_000)
    config = WebSocketConfig(flow=flow)
    server = WebSocketServer(_big_and_add(), secret=SECRET, entropy=ENTROPY, config=config)
    links = [_ws_connected(server) for _ in range(2)]
    for conn, client in links:
        _ws_initialized(server, conn, client)
    (deaf, deaf_client), (other, other_client) = links
    for rid in (2, 3):
        call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "big"}}
        server.receive_data(deaf, deaf_client.send(ws.Message(data=json.dumps(call))), 0.0)
    first, second = _calls(server)
    server.hold(first, "x" * 3000, now=0.0)
    server.hold(second, "x" * 3000, now=0.0)
    assert server.holding
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "add"}}
    server.receive_data(other, other_client.send(ws.Message(data=json.dumps(call))), 0.0)
    [add] = _calls(server)
    server.hold(add, "added", now=0.0)
    other_client.receive_data(server.data_to_send(other))
    texts = [json.loads(e.data) for e in other_client.events() if isinstance(e, ws.TextMessage)]
    assert [t["id"] for t in texts] == [9] and server.holding

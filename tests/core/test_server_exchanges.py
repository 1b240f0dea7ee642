"""HttpExchanges: HTTP as messages for a host server (ASGI), and HttpServer over them."""

from __future__ import annotations

import json

import pytest
from server_helpers import ENTROPY, SECRET

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.server import MCPServer
from mcp_sansio.server.exchanges import HttpExchanges, ResponseAborted, ResponseBody, ResponseStart
from mcp_sansio.server.http import HttpConfig, HttpServer
from mcp_sansio.server.http11 import ExchangeClosed, HttpLimits, RequestReceived

HEAD = [(b"Host", b"127.0.0.1:8000"), (b"Accept", b"application/json, text/event-stream"),
        (b"Content-Type", b"application/json")]


def parts(exchanges: HttpExchanges, exchange: int) -> list[object]:
    out: list[object] = []
    while (part := exchanges.next_part(exchange)) is not None:
        out.append(part)
    return out


def test_a_whole_body_becomes_one_request_with_lower_case_headers() -> None:
    exchanges = HttpExchanges()
    ex = exchanges.begin("POST", "/mcp?x=1", HEAD, now=0.0)
    assert exchanges.receive_body(ex, b'{"a"', more=True)
    assert exchanges.next_event() is None
    assert not exchanges.receive_body(ex, b": 1}", more=False)
    event = exchanges.next_event()
    assert isinstance(event, RequestReceived)
    assert (event.exchange, event.method, event.target, event.body) == (ex, "POST", "/mcp?x=1", b'{"a": 1}')
    assert event.header("host") == "127.0.0.1:8000"


@pytest.mark.parametrize("extra", [[], [(b"X-Odd", b"a\nb")], [(b"X-\nOdd", b"c")]])
def test_every_header_keeps_its_name_and_value_and_the_head_its_size(
        extra: list[tuple[bytes, bytes]]) -> None:
    # A host other than an HTTP/1.1 one may hand over a line feed, which the decoding joins on.
    head = [*HEAD, (b"X-Empty", b""), (b"X-Latin", b"caf\xe9"), *extra]
    size = len("POST") + len("/mcp") + 12 + sum(len(n) + len(v) + 4 for n, v in head)
    exchanges = HttpExchanges(HttpLimits(max_header_bytes=size))
    ex = exchanges.begin("POST", "/mcp", iter(head), now=0.0)
    assert not exchanges.receive_body(ex, b"{}", more=False)
    event = exchanges.next_event()
    assert isinstance(event, RequestReceived)
    assert event.headers == tuple((n.decode("latin-1").lower(), v.decode("latin-1")) for n, v in head)
    one_less = HttpExchanges(HttpLimits(max_header_bytes=size - 1))
    refused = one_less.begin("POST", "/mcp", head, now=0.0)
    assert not one_less.receive_body(refused, b"{}", more=False)
    start = parts(one_less, refused)[0]
    assert isinstance(start, ResponseStart) and start.status == 431


def test_a_request_with_no_headers_is_taken() -> None:
    exchanges = HttpExchanges()
    ex = exchanges.begin("POST", "/mcp", [], now=0.0)
    assert not exchanges.receive_body(ex, b"{}", more=False)
    event = exchanges.next_event()
    assert isinstance(event, RequestReceived) and event.headers == ()


def test_a_body_over_the_limit_is_answered_413_and_read_no_further() -> None:
    exchanges = HttpExchanges(HttpLimits(max_body_bytes=4))
    ex = exchanges.begin("POST", "/mcp", HEAD, now=0.0)
    assert not exchanges.receive_body(ex, b"12345", more=True)
    assert exchanges.next_event() is None
    start, body = parts(exchanges, ex)
    assert isinstance(start, ResponseStart) and start.status == 413
    assert isinstance(body, ResponseBody) and not body.more
    assert (b"content-length", str(len(body.data)).encode()) in start.headers
    assert not exchanges.receive_body(ex, b"more", more=False)  # forgotten
    assert exchanges.exchanges_with_output() == []


def test_a_head_over_the_limit_is_answered_431_and_its_body_not_read() -> None:
    # As over plain sockets (http11): a host such as uvicorn on httptools lets a 40 KB
    # Authorization header through, which would reach the token verifier.
    exchanges = HttpExchanges(HttpLimits(max_header_bytes=200))
    ex = exchanges.begin("POST", "/mcp", [*HEAD, (b"Authorization", b"Bearer " + b"a" * 200)], now=0.0)
    assert not exchanges.receive_body(ex, b"{}", more=False)
    assert exchanges.next_event() is None
    start, body = parts(exchanges, ex)
    assert isinstance(start, ResponseStart) and start.status == 431
    assert isinstance(body, ResponseBody) and not body.more and b"a" * 20 not in body.data


def test_a_head_within_the_limit_is_served() -> None:
    exchanges = HttpExchanges(HttpLimits(max_header_bytes=400))
    ex = exchanges.begin("POST", "/mcp", [*HEAD, (b"Authorization", b"Bearer " + b"a" * 200)], now=0.0)
    assert not exchanges.receive_body(ex, b"{}", more=False)
    assert isinstance(exchanges.next_event(), RequestReceived)


def test_a_whole_response_is_a_head_with_its_length_and_one_final_body() -> None:
    exchanges = HttpExchanges()
    ex = exchanges.begin("POST", "/mcp", HEAD, now=0.0)
    exchanges.receive_body(ex, b"{}", more=False)
    exchanges.respond(ex, 200, [("Content-Type", "application/json")], b"{}", now=0.0)
    assert exchanges.exchanges_with_output() == [ex]
    assert parts(exchanges, ex) == [
        ResponseStart(status=200, headers=[(b"content-type", b"application/json"),
                                           (b"content-length", b"2")]),
        ResponseBody(data=b"{}", more=False),
    ]
    assert isinstance(exchanges.next_event(), RequestReceived)
    exchanges.disconnect(ex)  # after the end: nothing to tell
    assert exchanges.next_event() is None


def test_a_second_response_to_one_exchange_is_the_callers_error() -> None:
    exchanges = HttpExchanges()
    ex = exchanges.begin("GET", "/mcp", HEAD, now=0.0)
    exchanges.receive_body(ex, b"", more=False)
    exchanges.start_stream(ex, 200, [])
    with pytest.raises(LocalProtocolError, match="already has a response"):
        exchanges.respond(ex, 200, [], now=0.0)
    with pytest.raises(LocalProtocolError, match="invalid response header"):
        other = exchanges.begin("GET", "/mcp", HEAD, now=0.0)
        exchanges.receive_body(other, b"", more=False)
        exchanges.respond(other, 200, [("x", "\u2603")], now=0.0)


def test_a_stream_is_sent_in_pieces_and_ended() -> None:
    exchanges = HttpExchanges()
    ex = exchanges.begin("GET", "/mcp", HEAD, now=0.0)
    exchanges.receive_body(ex, b"", more=False)
    assert not exchanges.has_output(ex)
    exchanges.start_stream(ex, 200, [("content-type", "text/event-stream")])
    assert exchanges.has_output(ex)
    assert exchanges.send(ex, b"data: 1\n\n")
    exchanges.end(ex, now=0.0)
    assert not exchanges.send(ex, b"late")
    assert [type(p) for p in parts(exchanges, ex)] == [ResponseStart, ResponseBody, ResponseBody]
    assert exchanges.next_part(ex) is None
    assert not exchanges.has_output(ex)


def test_a_client_that_does_not_read_has_its_stream_dropped_at_the_buffer_bound() -> None:
    exchanges = HttpExchanges(HttpLimits(max_buffer_bytes=10))
    ex = exchanges.begin("GET", "/mcp", HEAD, now=0.0)
    exchanges.receive_body(ex, b"", more=False)
    exchanges.next_event()
    exchanges.start_stream(ex, 200, [])
    assert exchanges.send(ex, b"123456")
    assert not exchanges.send(ex, b"123456")
    assert exchanges.next_event() == ExchangeClosed(exchange=ex, reason="the client does not read its stream")
    assert exchanges.dropped(ex)
    assert parts(exchanges, ex) == [ResponseAborted()]
    assert not exchanges.dropped(ex)


def test_a_client_leaving_mid_request_closes_its_exchange_once() -> None:
    exchanges = HttpExchanges()
    reading = exchanges.begin("POST", "/mcp", HEAD, now=0.0)
    exchanges.disconnect(reading)  # its request was never handed over: nothing to tell
    handling = exchanges.begin("POST", "/mcp", HEAD, now=0.0)
    exchanges.receive_body(handling, b"{}", more=False)
    exchanges.next_event()
    exchanges.disconnect(handling)
    exchanges.disconnect(handling)
    closed = ExchangeClosed(exchange=handling, reason="the client closed the connection")
    assert exchanges.next_event() == closed
    assert exchanges.next_event() is None
    exchanges.respond(handling, 200, [], now=0.0)  # the client left: nothing to answer
    exchanges.abort(handling)
    exchanges.end(handling, now=0.0)
    assert exchanges.exchanges_with_output() == []


def test_no_timer_is_kept_the_host_server_times_out_slow_clients() -> None:
    exchanges = HttpExchanges()
    exchanges.handle_timeout(5.0)
    assert exchanges.next_deadline() is None


def _serve(server: HttpServer, exchanges: HttpExchanges, body: dict[str, object],
           headers: list[tuple[bytes, bytes]] | None = None) -> tuple[ResponseStart, bytes]:
    ex = exchanges.begin("POST", "/mcp", headers or HEAD, now=0.0)
    exchanges.receive_body(ex, json.dumps(body).encode(), more=False)
    server.exchanges_changed(1.0)
    while server.next_event() is not None:
        pass  # a trivial tool answers inline (see below)
    got = parts(exchanges, ex)
    start = got[0]
    assert isinstance(start, ResponseStart)
    return start, b"".join(p.data for p in got[1:] if isinstance(p, ResponseBody))


def test_an_http_server_over_exchanges_serves_the_handshake_era() -> None:
    exchanges = HttpExchanges()
    server = HttpServer(MCPServer("asgi"), secret=SECRET, entropy=ENTROPY, config=HttpConfig.loopback(),
                        exchanges=exchanges)
    start, body = _serve(server, exchanges, {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "c", "version": "1"}}})
    assert start.status == 200
    assert json.loads(body)["result"]["serverInfo"]["name"] == "asgi"
    assert any(name == b"mcp-session-id" for name, _ in start.headers)
    assert server.next_action() is None


def test_an_http_server_over_exchanges_refuses_bytes() -> None:
    server = HttpServer(MCPServer("asgi"), secret=SECRET, entropy=ENTROPY, exchanges=HttpExchanges())
    for call in (lambda: server.connection_made(0.0), lambda: server.receive_data(1, b"x", 0.0),
                 lambda: server.connection_lost(1, 0.0), lambda: server.data_to_send(1),
                 server.connections_with_data):
        with pytest.raises(LocalProtocolError, match="takes HTTP messages"):
            call()


def test_an_http_server_over_exchanges_checks_the_host_header() -> None:
    exchanges = HttpExchanges()
    server = HttpServer(MCPServer("asgi"), secret=SECRET, entropy=ENTROPY, config=HttpConfig.loopback(),
                        exchanges=exchanges)
    start, _ = _serve(server, exchanges, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                      [(b"host", b"evil.example"), *HEAD[1:]])
    assert start.status == 421


@pytest.mark.parametrize(("name", "status"), [(b"host", 400), (b"origin", 403), (b"mcp-session-id", 400)])
def test_an_http_server_over_exchanges_refuses_a_repeated_header(name: bytes, status: int) -> None:
    # A host server (uvicorn with httptools) may pass two Host fields; RFC 9112 3.2 says 400.
    exchanges = HttpExchanges()
    server = HttpServer(MCPServer("asgi"), secret=SECRET, entropy=ENTROPY, config=HttpConfig.loopback(),
                        exchanges=exchanges)
    values = [b"http://evil.example", b"http://127.0.0.1:8000"] if name == b"origin" else [b"127.0.0.1"] * 2
    start, body = _serve(server, exchanges, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                         [*HEAD, *((name, value) for value in values)])
    assert start.status == status
    assert "header is repeated" in json.loads(body)["error"]["message"]


def test_the_earliest_deadline_is_of_the_bodies_still_read_and_late_ones_get_408_in_order() -> None:
    exchanges = HttpExchanges(HttpLimits(body_timeout=10.0))
    first = exchanges.begin("POST", "/mcp", HEAD, now=0.0)
    done = exchanges.begin("POST", "/mcp", HEAD, now=1.0)
    gone = exchanges.begin("POST", "/mcp", HEAD, now=2.0)
    fourth = exchanges.begin("POST", "/mcp", HEAD, now=3.0)
    fifth = exchanges.begin("POST", "/mcp", HEAD, now=2.5)
    exchanges.receive_body(done, b"{}", more=False)
    exchanges.disconnect(gone)
    assert exchanges.next_deadline() == 10.0
    exchanges.handle_timeout(9.0)
    assert exchanges.exchanges_with_output() == []
    exchanges.handle_timeout(20.0)
    assert exchanges.next_deadline() is None
    assert exchanges.exchanges_with_output() == [first, fourth, fifth]  # in the order they began
    for exchange in (first, fourth, fifth):
        start = parts(exchanges, exchange)[0]
        assert isinstance(start, ResponseStart) and start.status == 408
    assert exchanges.exchanges_with_output() == []


def test_the_earliest_deadline_is_a_stalled_stream_s_or_a_body_s() -> None:
    exchanges = HttpExchanges(HttpLimits(body_timeout=10.0, high_water_bytes=4, stall_timeout=2.0))
    stream = exchanges.begin("GET", "/mcp", HEAD, now=0.0)
    exchanges.receive_body(stream, b"", more=False)
    exchanges.next_event()
    exchanges.start_stream(stream, 200, [])
    exchanges.send(stream, b"123456")
    reading = exchanges.begin("POST", "/mcp", HEAD, now=1.0)
    exchanges.handle_timeout(3.0)  # the stall clock starts
    assert exchanges.next_deadline() == 5.0
    exchanges.handle_timeout(6.0)
    assert exchanges.next_deadline() == 11.0
    assert exchanges.reading(reading)

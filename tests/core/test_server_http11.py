"""The HTTP/1.1 server binding: bounded heads and bodies, slow clients, keep-alive, streams."""

from __future__ import annotations

import tracemalloc

import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcp_sansio.server.http11 as http11_module
from mcp_sansio import LocalProtocolError
from mcp_sansio.server.http11 import (
    CloseConnection,
    ExchangeClosed,
    HttpConnections,
    HttpLimits,
    RequestReceived,
)

GET = b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n"


def _post(body: bytes, extra: bytes = b"") -> bytes:
    length = str(len(body)).encode()
    return b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: " + length + b"\r\n" + extra + b"\r\n" + body


def _connections(**limits: float) -> tuple[HttpConnections, int]:
    http = HttpConnections(HttpLimits(**limits))  # type: ignore[arg-type]
    return http, http.connection_made(0.0)


def _closed(http: HttpConnections) -> list[int]:
    closed = []
    while (action := http.next_action()) is not None:
        assert isinstance(action, CloseConnection)
        closed.append(action.connection)
    return closed


def test_a_request_arrives_whole_with_lower_case_headers() -> None:
    http, conn = _connections()
    http.receive_data(conn, _post(b'{"a":1}', b"X-Thing: Yes\r\n"), 1.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    assert (event.method, event.target, event.body) == ("POST", "/mcp", b'{"a":1}')
    assert event.header("x-thing") == "Yes" and event.header("missing") is None
    assert http.exchange_connection(event.exchange) == conn


def test_a_body_split_over_reads_is_joined() -> None:
    http, conn = _connections()
    data = _post(b"0123456789")
    for i in range(len(data)):
        http.receive_data(conn, data[i:i + 1], 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived) and event.body == b"0123456789"


def test_a_response_keeps_the_connection_for_the_next_request() -> None:
    http, conn = _connections(idle_timeout=5.0)
    http.receive_data(conn, GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.respond(event.exchange, 200, [("x", "y")], b"ok", now=1.0)
    out = http.data_to_send(conn)
    assert out.startswith(b"HTTP/1.1 200 ") and out.endswith(b"\r\n\r\nok") and b"content-length: 2" in out
    assert http.next_deadline() == 6.0
    http.receive_data(conn, GET, 2.0)
    assert isinstance(http.next_event(), RequestReceived)


def test_a_request_sent_early_is_read_after_the_response() -> None:
    http, conn = _connections()
    http.receive_data(conn, GET + GET, 0.0)
    first = http.next_event()
    assert isinstance(first, RequestReceived) and http.next_event() is None
    http.respond(first.exchange, 204, [], now=1.0)
    second = http.next_event()
    assert isinstance(second, RequestReceived) and second.exchange != first.exchange


@pytest.mark.parametrize(("data", "status"), [
    (b"garbage\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"x" * 200 + b"\r\n\r\n", 431),
    (_post(b"x" * 50), 413),
    (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + b"x" * 64 + b"\r\n", 413),
])
def test_a_request_that_cannot_be_served_gets_an_error_and_a_close(data: bytes, status: int) -> None:
    http, conn = _connections(max_header_bytes=100, max_body_bytes=32)
    http.receive_data(conn, data, 0.0)
    assert http.data_to_send(conn).startswith(f"HTTP/1.1 {status} ".encode())
    assert _closed(http) == [conn] and http.next_event() is None


def test_a_request_framed_by_both_transfer_encoding_and_content_length_gets_400_and_a_close() -> None:
    # RFC 9112 section 6.1: such a message may be smuggling; the server MUST close the
    # connection after responding (it MAY reject it): the request after it is never read.
    http, conn = _connections()
    smuggled = (b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"2\r\n{}\r\n0\r\n\r\n" + GET)
    http.receive_data(conn, smuggled, 0.0)
    assert http.data_to_send(conn).startswith(b"HTTP/1.1 400 ")
    assert _closed(http) == [conn] and http.next_event() is None


def test_a_slow_head_gets_408() -> None:
    http, conn = _connections(header_timeout=5.0)
    http.receive_data(conn, b"GET / HTTP/1.1\r\nHo", 1.0)
    assert http.next_deadline() == 6.0
    http.handle_timeout(5.9)
    assert _closed(http) == []
    http.handle_timeout(6.0)
    assert http.data_to_send(conn).startswith(b"HTTP/1.1 408 ")
    assert _closed(http) == [conn]


def test_a_slow_body_gets_408() -> None:
    http, conn = _connections(body_timeout=3.0)
    http.receive_data(conn, _post(b"0123456789")[:-5], 1.0)
    assert http.next_deadline() == 4.0
    http.handle_timeout(4.0)
    assert http.data_to_send(conn).startswith(b"HTTP/1.1 408 ")


def test_a_connection_that_sends_nothing_is_closed_quietly() -> None:
    http, conn = _connections(header_timeout=2.0)
    http.handle_timeout(2.0)
    assert http.data_to_send(conn) == b"" and _closed(http) == [conn]


def test_an_idle_keep_alive_connection_is_closed() -> None:
    http, conn = _connections(idle_timeout=1.0)
    http.receive_data(conn, GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.respond(event.exchange, 200, [], now=0.0)
    http.handle_timeout(1.0)
    assert _closed(http) == [conn]


def test_expect_100_continue_is_answered() -> None:
    http, conn = _connections()
    head = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"
    http.receive_data(conn, head, 0.0)
    assert http.data_to_send(conn).startswith(b"HTTP/1.1 100 ")


def test_a_streamed_response_is_chunked_and_ends() -> None:
    http, conn = _connections()
    http.receive_data(conn, GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.start_stream(event.exchange, 200, [("content-type", "text/event-stream")])
    assert http.send(event.exchange, b"data: 1\n\n")
    http.end(event.exchange, now=1.0)
    out = http.data_to_send(conn)
    assert b"transfer-encoding: chunked" in out.lower() and out.endswith(b"0\r\n\r\n")
    assert not http.send(event.exchange, b"late")
    http.end(event.exchange, now=1.0)  # already ended: nothing happens


def test_a_stream_whose_client_does_not_read_is_dropped() -> None:
    http, conn = _connections(max_buffer_bytes=100)
    http.receive_data(conn, GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.start_stream(event.exchange, 200, [])
    assert http.send(event.exchange, b"x" * 50)
    assert not http.send(event.exchange, b"x" * 60)
    reason = "the client does not read its stream"
    assert http.next_event() == ExchangeClosed(exchange=event.exchange, reason=reason)
    assert _closed(http) == [conn]


def test_the_buffer_bound_counts_only_what_is_unread() -> None:
    http, conn = _connections(max_buffer_bytes=100)
    http.receive_data(conn, GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.start_stream(event.exchange, 200, [])
    for _ in range(5):
        assert http.send(event.exchange, b"x" * 50)
        http.data_to_send(conn)
    assert http.connections_with_data() == []


def test_a_client_leaving_mid_request_closes_its_exchange() -> None:
    http, conn = _connections()
    http.receive_data(conn, GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.receive_data(conn, b"", 1.0)
    reason = "the client closed the connection"
    assert http.next_event() == ExchangeClosed(exchange=event.exchange, reason=reason)
    http.respond(event.exchange, 200, [], now=1.0)  # the client left: nothing to answer
    assert http.data_to_send(conn) == b""


def test_a_lost_connection_closes_its_exchange() -> None:
    http, conn = _connections()
    http.receive_data(conn, GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.connection_lost(conn, 1.0)
    assert http.next_event() == ExchangeClosed(exchange=event.exchange, reason="the connection was lost")
    http.connection_lost(conn, 1.0)
    http.receive_data(conn, b"more", 1.0)  # a late read of a closed connection is ignored


def test_abort_drops_a_stream() -> None:
    http, conn = _connections()
    http.receive_data(conn, GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.start_stream(event.exchange, 200, [])
    http.abort(event.exchange)
    assert _closed(http) == [conn]
    http.abort(event.exchange)


def test_http_1_0_closes_after_the_response() -> None:
    http, conn = _connections()
    http.receive_data(conn, b"GET / HTTP/1.0\r\n\r\n", 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.respond(event.exchange, 200, [], b"bye", now=0.0)
    assert _closed(http) == [conn]


def test_answering_twice_or_badly_is_a_local_error() -> None:
    http, conn = _connections()
    http.receive_data(conn, GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    with pytest.raises(LocalProtocolError, match="invalid response"):
        http.respond(event.exchange, 200, [("bad header", "x")], now=0.0)
    http.start_stream(event.exchange, 200, [])
    with pytest.raises(LocalProtocolError, match="already has a response"):
        http.respond(event.exchange, 200, [], now=0.0)


def test_a_connection_that_was_never_made_is_a_local_error() -> None:
    http, _ = _connections()
    with pytest.raises(LocalProtocolError, match="never made"):
        http.receive_data(99, b"x", 0.0)


def test_eof_with_nothing_under_way_just_closes() -> None:
    http, conn = _connections()
    http.receive_data(conn, b"", 0.0)
    assert _closed(http) == [conn] and http.next_event() is None


def test_a_request_arriving_while_the_previous_is_handled_waits_its_turn() -> None:
    http, conn = _connections()
    http.receive_data(conn, GET, 0.0)
    first = http.next_event()
    assert isinstance(first, RequestReceived)
    http.receive_data(conn, GET, 0.1)
    assert http.next_event() is None and http.next_deadline() is None
    http.respond(first.exchange, 204, [], now=1.0)
    assert isinstance(http.next_event(), RequestReceived)


def test_a_gone_exchange_is_not_answered() -> None:
    http, conn = _connections()
    http.receive_data(conn, GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.connection_lost(conn, 0.1)
    http.start_stream(event.exchange, 200, [])
    http.respond(event.exchange, 200, [], now=0.2)
    assert not http.send(event.exchange, b"x")
    http.end(event.exchange, now=0.3)
    http.abort(event.exchange)
    assert http.exchange_connection(event.exchange) is None
    assert http.data_to_send(conn) == b"" and http.connections_with_data() == []


def test_a_stream_beyond_its_declared_length_is_a_local_error() -> None:
    http, conn = _connections()
    http.receive_data(conn, GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.start_stream(event.exchange, 200, [("content-length", "1")])
    with pytest.raises(LocalProtocolError, match="invalid response"):
        http.send(event.exchange, b"abc")


@pytest.mark.parametrize("parsed", [True, False])
def test_a_response_head_is_the_same_with_or_without_h11s_private_fast_path(
        parsed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http11_module, "_PARSED", parsed)
    http, conn = _connections()
    for _ in range(2):  # the second response reuses the checked head
        http.receive_data(conn, GET, 0.0)
        event = http.next_event()
        assert isinstance(event, RequestReceived)
        http.respond(event.exchange, 200, [("x", "y")], b"ok", now=1.0)
        out = http.data_to_send(conn)
        assert out.startswith(b"HTTP/1.1 200 ") and b"x: y\r\n" in out and b"content-length: 2" in out
        assert out.endswith(b"\r\n\r\nok")


def test_many_connections_time_out_each_at_its_own_deadline_in_order() -> None:
    http = HttpConnections(HttpLimits(header_timeout=10.0, idle_timeout=20.0))
    conns = [http.connection_made(float(t)) for t in range(100)]  # each silent: closed at t + 10
    http.receive_data(conns[0], GET, 5.0)  # the first answers at 5, then idles until 25
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.respond(event.exchange, 200, [], now=5.0)
    assert http.next_deadline() == 11.0  # conns[1]'s: conns[0]'s old 10.0 is not reported
    http.handle_timeout(10.5)
    assert _closed(http) == []
    for t in range(11, 110):
        http.handle_timeout(float(t))
        expected = [conns[t - 10]] if t - 10 < 100 else []
        if t == 25:
            expected.append(conns[0])
        assert sorted(_closed(http)) == sorted(expected), t
    assert http.next_deadline() is None


def test_a_deadline_moved_later_by_each_request_is_kept_exactly() -> None:
    http, conn = _connections(header_timeout=1.0, body_timeout=2.0, idle_timeout=3.0)
    for n in range(50):  # every request moves the deadline later: the newest one counts
        now = float(n)
        http.receive_data(conn, _post(b"{}"), now)
        event = http.next_event()
        assert isinstance(event, RequestReceived)
        http.respond(event.exchange, 200, [], now=now + 0.5)
        assert http.next_deadline() == now + 3.5
    http.handle_timeout(52.0)
    assert _closed(http) == []
    http.handle_timeout(52.5)
    assert _closed(http) == [conn]


def test_a_churn_of_short_connections_leaves_no_timers_behind() -> None:
    tracemalloc.start()
    try:
        http = HttpConnections(HttpLimits(header_timeout=10.0))
        http.connection_made(0.0)  # one long-lived connection, first to time out
        before = tracemalloc.get_traced_memory()[0]
        for n in range(20_000):
            http.close(http.connection_made(1.0 + n * 1e-4))
            http.next_action()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 100_000  # an entry kept per closed connection would be about 2 MB


def _lingering(http: HttpConnections) -> list[bool]:
    """Of each close queued, whether the driver is to linger."""
    return [action.linger for action in iter(http.next_action, None)]


def test_an_error_answer_to_a_client_that_may_still_send_is_a_lingering_close() -> None:
    http, conn = _connections(max_body_bytes=4)
    http.receive_data(conn, b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 999\r\n\r\nabc", 0.0)
    assert http.data_to_send(conn).startswith(b"HTTP/1.1 413 ")
    assert _lingering(http) == [True]


def test_a_close_with_nothing_left_to_send_does_not_linger() -> None:
    http, _ = _connections(header_timeout=2.0)
    http.handle_timeout(2.0)
    assert _lingering(http) == [False]


def test_a_close_after_the_clients_end_does_not_linger() -> None:
    http, conn = _connections()
    http.receive_data(conn, b"GET / HTTP/1.1\r\nHo", 0.0)
    http.receive_data(conn, b"", 1.0)
    assert _lingering(http) == [False]


@pytest.mark.parametrize("request_head", [b"GET / HTTP/1.0\r\n\r\n",
                                          b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"])
def test_a_close_after_the_last_request_the_client_announced_does_not_linger(request_head: bytes) -> None:
    http, conn = _connections()
    http.receive_data(conn, request_head, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.respond(event.exchange, 200, [], b"bye", now=0.0)
    assert _lingering(http) == [False]


def test_a_close_with_bytes_sent_past_the_last_request_lingers() -> None:
    http, conn = _connections()
    http.receive_data(conn, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n" + GET, 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    http.respond(event.exchange, 200, [], b"bye", now=0.0)
    assert _lingering(http) == [True]


def _h11_writes(request: bytes, status: int, headers: list[tuple[str, str]], body: bytes) -> bytes:
    """What a plain h11 server writes for ``status`` ``headers`` ``body`` after ``request``."""
    server = h11.Connection(h11.SERVER)
    server.receive_data(request)
    while type(server.next_event()) is not h11.EndOfMessage:
        pass
    length = ("content-length", str(len(body)))
    data = server.send(h11.Response(status_code=status, headers=[*headers, length], reason=b"")) or b""
    if body:
        data += server.send(h11.Data(data=body)) or b""
    return data + (server.send(h11.EndOfMessage()) or b"")


_REQUESTS = [
    _post(b"{}"),  # keep-alive: the kept head is written as is
    _post(b"{}", b"Connection: close\r\n"),
    b"POST /mcp HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}",
    b"HEAD /mcp HTTP/1.1\r\nHost: a\r\n\r\n",
    GET,
]


_NAMES = st.sampled_from(["content-type", "mcp-session-id", "Allow", "X-Y", "connection"])
_VALUES = st.sampled_from(["a", "application/json", "close", "GET, POST"])


@given(request=st.sampled_from(_REQUESTS),
       status=st.sampled_from([200, 201, 202, 204, 304, 400, 404, 405, 503]),
       headers=st.lists(st.tuples(_NAMES, _VALUES), max_size=3),
       body=st.sampled_from([b"", b"ok", b'{"jsonrpc":"2.0"}']))
def test_a_whole_response_is_written_byte_for_byte_as_h11_writes_it(
        request: bytes, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
    if request.startswith(b"HEAD") or status in (204, 304):
        body = b""  # (h11 refuses a body there: a local error either way)
    http, conn = _connections()
    for _ in range(2):  # the second response reuses the kept head
        http.receive_data(conn, request, 0.0)
        event = http.next_event()
        assert isinstance(event, RequestReceived)
        http.respond(event.exchange, status, headers, body, now=0.0)
        assert http.data_to_send(conn) == _h11_writes(request, status, headers, body)
        if _closed(http):
            http, conn = _connections()


def test_a_request_sent_early_is_read_after_a_kept_head_response() -> None:
    http, conn = _connections()
    http.receive_data(conn, _post(b"1") + _post(b"2")[:20], 0.0)
    first = http.next_event()
    assert isinstance(first, RequestReceived) and first.body == b"1"
    http.respond(first.exchange, 200, [("content-type", "application/json")], b"one", now=1.0)
    assert http.next_event() is None
    http.receive_data(conn, _post(b"2")[20:], 1.5)
    second = http.next_event()
    assert isinstance(second, RequestReceived) and second.body == b"2"
    http.respond(second.exchange, 200, [("content-type", "application/json")], b"two", now=2.0)
    assert http.data_to_send(conn).count(b"HTTP/1.1 200 ") == 2 and not _closed(http)


def test_a_body_answering_a_head_request_is_a_local_error() -> None:
    http, conn = _connections()
    http.receive_data(conn, b"HEAD /mcp HTTP/1.1\r\nHost: a\r\n\r\n", 0.0)
    event = http.next_event()
    assert isinstance(event, RequestReceived)
    with pytest.raises(LocalProtocolError, match="invalid response"):
        http.respond(event.exchange, 200, [], b"a body HEAD must not carry", now=0.0)

"""HttpPool against scripted server bytes: one rule per test, no sockets.

Time is a float the tests move by hand. The Hypothesis tests check that the events do
not depend on how the server's bytes are split into reads.
"""

from __future__ import annotations

import itertools

import pytest
from helpers import REFUSED, broken
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.connections import CloseConnection, ConnectFailure, OpenConnection, StartTls
from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.http11 import (
    ExchangeFailed,
    Header,
    HttpPool,
    HttpRequest,
    PoolEvent,
    Progress,
    ResponseData,
    ResponseEnded,
    ResponseStarted,
)
from mcp_sansio.urls import parse_url

URL = parse_url("http://example.com/mcp")
OTHER = parse_url("http://other.example:8080/mcp")


def request(
    exchange: int = 1,
    *,
    method: str = "POST",
    url: str | None = None,
    headers: tuple[Header, ...] = (),
    body: bytes = b"{}",
    short: bool = False,
) -> HttpRequest:
    """A request to ``url`` (``URL`` by default)."""
    return HttpRequest(
        exchange=exchange,
        short=short,
        method=method,
        url=URL if url is None else parse_url(url),
        headers=headers,
        body=body,
    )


def response(body: bytes = b"hello", *, headers: bytes = b"") -> bytes:
    """A 200 response with a Content-Length body."""
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), headers, body)


def events(pool: HttpPool) -> list[PoolEvent]:
    """Drain the pool's events."""
    out = []
    while (event := pool.next_event()) is not None:
        out.append(event)
    return out


def actions(pool: HttpPool) -> list[OpenConnection | StartTls | CloseConnection]:
    """Drain the pool's actions."""
    out = []
    while (action := pool.next_action()) is not None:
        out.append(action)
    return out


def connect(pool: HttpPool) -> int:
    """Perform the one pending OpenConnection and drain its request bytes."""
    (action,) = actions(pool)
    assert isinstance(action, OpenConnection)
    pool.connection_made(action.connection, 0.0)
    assert pool.data_to_send(action.connection)
    return action.connection


def started(pool: HttpPool | None = None, req: HttpRequest | None = None) -> tuple[HttpPool, int]:
    """A pool with ``req`` (``request()`` by default) sent on a fresh connection."""
    pool = pool or HttpPool()
    pool.submit(req or request(), 0.0)
    return pool, connect(pool)


def ok(exchange: int = 1, body: bytes = b"hello") -> list[PoolEvent]:
    """The events of ``response(body)``."""
    head = ResponseStarted(
        exchange=exchange, status=200, reason="OK", headers=(("content-length", str(len(body))),)
    )
    return [head, ResponseData(exchange=exchange, data=body), ResponseEnded(exchange=exchange)]


def connect_after_close(pool: HttpPool) -> int:
    """Perform the ``CloseConnection`` then ``OpenConnection`` of a request sent again,
    and drain its request; the new connection's id."""
    close, fresh = actions(pool)
    assert isinstance(close, CloseConnection) and isinstance(fresh, OpenConnection)
    pool.connection_made(fresh.connection, 3.1)
    pool.data_to_send(fresh.connection)
    return fresh.connection


def reused(pool: HttpPool, conn: int, exchange: int = 2) -> None:
    """Complete exchange 1 on ``conn`` and send ``exchange`` on it, now idle."""
    pool.receive_data(conn, response(), 1.0)
    events(pool)
    pool.submit(request(exchange), 2.0)
    assert actions(pool) == []
    assert pool.data_to_send(conn)


def merged(evs: list[PoolEvent]) -> list[PoolEvent]:
    """``evs`` with runs of ResponseData joined: the reads' split does not matter."""
    out: list[PoolEvent] = []
    for event in evs:
        last = out[-1] if out else None
        if isinstance(event, ResponseData) and isinstance(last, ResponseData):
            out[-1] = ResponseData(exchange=event.exchange, data=last.data + event.data)
        else:
            out.append(event)
    return out


def feed(chunks: list[bytes], *, max_header_bytes: int = 64 * 1024) -> list[PoolEvent]:
    """The merged events of one exchange whose response arrives as ``chunks``, then EOF."""
    pool, conn = started(HttpPool(max_header_bytes=max_header_bytes))
    for chunk in chunks:
        pool.receive_data(conn, chunk, 1.0)
    pool.receive_data(conn, b"", 1.0)
    return merged(events(pool))


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at the given offsets."""
    bounds = [0, *sorted({min(cut, len(data)) for cut in cuts}), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


# Request bytes


def test_request_carries_host_from_authority_content_length_and_only_caller_headers() -> None:
    pool = HttpPool()
    pool.submit(request(headers=(("user-agent", "t/1"), ("accept", "*/*")), body=b'{"a":1}'), 0.0)
    (action,) = actions(pool)
    pool.connection_made(action.connection, 0.0)
    assert pool.data_to_send(action.connection) == (
        b"POST /mcp HTTP/1.1\r\nhost: example.com\r\nuser-agent: t/1\r\naccept: */*\r\n"
        b'content-length: 7\r\n\r\n{"a":1}'
    )


def test_host_header_has_non_default_port_and_brackets_ipv6() -> None:
    pool = HttpPool()
    pool.submit(request(url="http://[::1]:8080/x?y=1", method="GET", body=b""), 0.0)
    (action,) = actions(pool)
    pool.connection_made(action.connection, 0.0)
    assert pool.data_to_send(action.connection) == b"GET /x?y=1 HTTP/1.1\r\nhost: [::1]:8080\r\n\r\n"


def test_post_without_body_sends_content_length_zero() -> None:
    pool, _ = started()
    pool.submit(request(2, url="http://other/", body=b""), 0.0)
    (action,) = actions(pool)
    pool.connection_made(action.connection, 0.0)
    assert pool.data_to_send(action.connection).endswith(b"content-length: 0\r\n\r\n")


def test_open_connection_names_host_port_and_tls() -> None:
    pool = HttpPool()
    pool.submit(request(url="https://Example.com:8443/"), 0.0)
    assert actions(pool) == [
        OpenConnection(connection=1, host="example.com", port=8443, tls=True, server_hostname="example.com")
    ]


def test_request_bytes_wait_for_connection_made() -> None:
    pool = HttpPool()
    pool.submit(request(), 0.0)
    (action,) = actions(pool)
    assert pool.connections_with_data() == []
    assert pool.data_to_send(action.connection) == b""
    pool.connection_made(action.connection, 0.0)
    assert pool.connections_with_data() == [action.connection]


def test_data_to_send_drains_and_connections_with_data_is_pure() -> None:
    pool = HttpPool()
    pool.submit(request(), 0.0)
    (action,) = actions(pool)
    pool.connection_made(action.connection, 0.0)
    assert pool.connections_with_data() == pool.connections_with_data() == [action.connection]
    assert pool.data_to_send(action.connection)
    assert pool.data_to_send(action.connection) == b""
    assert pool.connections_with_data() == []


@pytest.mark.parametrize("name", ["host", "Content-Length", "transfer-encoding"])
def test_headers_the_pool_sets_are_refused_from_the_caller(name: str) -> None:
    pool = HttpPool()
    with pytest.raises(LocalProtocolError, match="sets the"):
        pool.submit(request(headers=((name, "1"),)), 0.0)
    assert actions(pool) == []


@pytest.mark.parametrize(
    ("req", "reason"),
    [(request(method="CONNECT"), "CONNECT"), (request(headers=(("upgrade", "websocket"),)), "upgrades")],
)
def test_requests_that_would_switch_protocols_are_refused(req: HttpRequest, reason: str) -> None:
    with pytest.raises(LocalProtocolError, match=reason):
        HttpPool().submit(req, 0.0)


@pytest.mark.parametrize(
    "req",
    [
        request(headers=(("x-a", "b\r\nx-evil: 1"),)),
        request(headers=(("x-a", "é"),)),
        request(headers=(("bad name", "1"),)),
        request(method="PO ST"),
    ],
)
def test_invalid_requests_are_refused_and_change_nothing(req: HttpRequest) -> None:
    pool = HttpPool()
    with pytest.raises(LocalProtocolError, match="invalid request"):
        pool.submit(req, 0.0)
    assert actions(pool) == []
    pool.submit(request(), 0.0)  # the exchange id is still free


def test_exchange_id_in_progress_is_refused() -> None:
    pool, _ = started()
    with pytest.raises(LocalProtocolError, match="already in progress"):
        pool.submit(request(), 0.0)


@pytest.mark.parametrize(
    "limits",
    [{"max_connections": 0}, {"max_header_bytes": 0}, {"idle_timeout": -1.0}],
)
def test_non_positive_limits_are_refused(limits: dict[str, float]) -> None:
    with pytest.raises(LocalProtocolError):
        HttpPool(**limits)  # type: ignore[arg-type]  # the values are ints where ints are due


# Response framing


def test_content_length_response_is_streamed_then_ended() -> None:
    pool, conn = started()
    pool.receive_data(conn, response(b"hello")[:-2], 1.0)
    pool.receive_data(conn, b"lo", 1.0)
    assert merged(events(pool)) == ok()


def test_body_bytes_are_delivered_as_they_arrive() -> None:
    pool, conn = started()
    pool.receive_data(conn, response(b"hello")[:-2], 1.0)
    assert events(pool)[-1] == ResponseData(exchange=1, data=b"hel")


def test_chunked_response_is_decoded() -> None:
    pool, conn = started()
    pool.receive_data(conn, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", 1.0)
    pool.receive_data(conn, b"2\r\nde\r\n0\r\n\r\n", 1.0)
    evs = events(pool)
    assert evs[1:] == [
        ResponseData(exchange=1, data=b"abc"),
        ResponseData(exchange=1, data=b"de"),
        ResponseEnded(exchange=1),
    ]
    assert actions(pool) == []  # kept alive


def test_read_until_close_response_ends_at_eof_and_closes_the_connection() -> None:
    pool, conn = started()
    pool.receive_data(conn, b"HTTP/1.1 200 OK\r\n\r\nstream", 1.0)
    assert merged(events(pool))[1:] == [ResponseData(exchange=1, data=b"stream")]
    pool.receive_data(conn, b"", 2.0)
    assert events(pool) == [ResponseEnded(exchange=1)]
    assert actions(pool) == [CloseConnection(connection=conn)]


def test_response_head_carries_status_reason_and_lower_case_latin1_headers() -> None:
    pool, conn = started()
    pool.receive_data(conn, b"HTTP/1.1 404 Not Found\r\nX-Name: caf\xe9\r\nContent-Length: 0\r\n\r\n", 1.0)
    assert events(pool) == [
        ResponseStarted(
            exchange=1, status=404, reason="Not Found", headers=(("x-name", "café"), ("content-length", "0"))
        ),
        ResponseEnded(exchange=1),
    ]


def test_informational_responses_are_skipped() -> None:
    pool, conn = started()
    pool.receive_data(conn, b"HTTP/1.1 100 Continue\r\n\r\n" + response(), 1.0)
    assert events(pool) == ok()


def test_response_to_head_has_no_body_despite_content_length() -> None:
    pool, conn = started(req=request(method="HEAD", body=b""))
    pool.receive_data(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", 1.0)
    assert [type(e) for e in events(pool)] == [ResponseStarted, ResponseEnded]


def test_response_beginning_before_the_request_was_sent_is_delivered() -> None:
    pool = HttpPool()
    pool.submit(request(), 0.0)
    (action,) = actions(pool)
    pool.connection_made(action.connection, 0.0)
    pool.receive_data(action.connection, response(), 1.0)  # the request is still unsent
    assert events(pool) == ok()
    # The server and we disagree on where the request ends: the connection is not reused.
    assert actions(pool) == [CloseConnection(connection=action.connection)]
    assert pool.data_to_send(action.connection) == b""


# Keep-alive and connection limits


def test_keep_alive_connection_is_reused_for_the_same_origin() -> None:
    pool, conn = started()
    pool.receive_data(conn, response(), 1.0)
    assert events(pool) == ok()
    pool.submit(request(2), 2.0)
    assert actions(pool) == []
    assert pool.data_to_send(conn).startswith(b"POST /mcp HTTP/1.1\r\n")
    pool.receive_data(conn, response(b"again"), 3.0)
    assert events(pool) == ok(2, b"again")


def test_concurrent_exchanges_to_one_origin_are_not_pipelined() -> None:
    pool, conn = started()
    pool.submit(request(2), 0.5)
    (action,) = actions(pool)
    assert isinstance(action, OpenConnection)
    assert action.connection != conn
    assert pool.connections_with_data() == []


def test_queued_exchange_for_the_same_origin_takes_over_the_connection() -> None:
    pool, conn = started(HttpPool(max_connections=1))
    pool.submit(request(2), 0.5)
    assert actions(pool) == []
    pool.receive_data(conn, response(), 1.0)
    assert pool.connections_with_data() == [conn]
    assert actions(pool) == []


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
    ],
    ids=["connection-close", "http-1.0"],
)
def test_response_that_forbids_keep_alive_closes_the_connection(head: bytes) -> None:
    pool, conn = started()
    pool.receive_data(conn, head, 1.0)
    assert events(pool)[-1] == ResponseEnded(exchange=1)
    assert actions(pool) == [CloseConnection(connection=conn)]


def test_request_with_connection_close_is_not_reused() -> None:
    pool, conn = started(req=request(headers=(("connection", "close"),)))
    pool.receive_data(conn, response(), 1.0)
    assert actions(pool) == [CloseConnection(connection=conn)]


def test_bytes_after_the_response_in_the_same_read_prevent_reuse() -> None:
    pool, conn = started()
    pool.receive_data(conn, response() + b"HTTP/1.1 408", 1.0)
    assert events(pool) == ok()
    assert actions(pool) == [CloseConnection(connection=conn)]


def test_bytes_on_an_idle_connection_close_it_silently() -> None:
    pool, conn = started()
    pool.receive_data(conn, response(), 1.0)
    events(pool)
    pool.receive_data(conn, b"HTTP/1.1 408 Request Timeout\r\n\r\n", 2.0)
    assert events(pool) == []
    assert actions(pool) == [CloseConnection(connection=conn)]


def test_eof_on_an_idle_connection_closes_it_silently() -> None:
    pool, conn = started()
    pool.receive_data(conn, response(), 1.0)
    events(pool)
    pool.receive_data(conn, b"", 2.0)
    assert events(pool) == []
    assert actions(pool) == [CloseConnection(connection=conn)]
    assert pool.next_deadline() is None


def test_eof_already_seen_after_the_response_prevents_reuse() -> None:
    pool, conn = started()
    pool.receive_data(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", 1.0)
    pool.receive_data(conn, b"lo", 1.0)
    assert actions(pool) == []
    pool.receive_data(conn, b"", 2.0)
    assert actions(pool) == [CloseConnection(connection=conn)]


def test_another_origin_gets_its_own_connection() -> None:
    pool, conn = started()
    pool.receive_data(conn, response(), 1.0)
    pool.submit(request(2, url=str(OTHER)), 2.0)
    (action,) = actions(pool)
    assert isinstance(action, OpenConnection)
    assert (action.connection, action.host, action.port) == (2, "other.example", 8080)


def test_max_connections_is_respected_and_waiting_exchanges_go_in_order() -> None:
    pool = HttpPool(max_connections=2)
    for exchange in (1, 2, 3, 4):
        pool.submit(request(exchange, url=f"http://h{exchange}/", short=True), 0.0)
    opened = actions(pool)
    assert [a.connection for a in opened if isinstance(a, OpenConnection)] == [1, 2]
    pool.connection_failed(1, REFUSED, 0.5)
    assert actions(pool) == [
        CloseConnection(connection=1),
        OpenConnection(connection=3, host="h3", port=80, tls=False, server_hostname="h3"),
    ]
    pool.connection_made(2, 0.6)
    pool.data_to_send(2)
    pool.receive_data(2, response(), 1.0)  # h2's connection goes idle, h4 takes its place
    assert actions(pool) == [
        CloseConnection(connection=2),
        OpenConnection(connection=4, host="h4", port=80, tls=False, server_hostname="h4"),
    ]


def test_least_recently_used_idle_connection_makes_room_for_another_origin() -> None:
    pool = HttpPool(max_connections=2)
    for exchange in (1, 2):
        pool.submit(request(exchange, url=f"http://h{exchange}/", short=True), 0.0)
        conn = connect(pool)
    for conn in (2, 1):
        pool.receive_data(conn, response(), 1.0)
    pool.submit(request(3, url="http://h3/", short=True), 2.0)
    assert actions(pool) == [
        CloseConnection(connection=2),
        OpenConnection(connection=3, host="h3", port=80, tls=False, server_hostname="h3"),
    ]


def test_one_connection_is_kept_for_short_requests_which_go_first() -> None:
    pool = HttpPool(max_connections=3)
    for exchange in (1, 2, 3):  # three long-lived streams: only two get a connection
        pool.submit(request(exchange, url=f"http://h{exchange}/"), 0.0)
    assert [a.connection for a in actions(pool) if isinstance(a, OpenConnection)] == [1, 2]
    pool.submit(request(4, url="http://h4/", short=True), 0.0)  # an answer: it overtakes exchange 3
    assert [a.host for a in actions(pool) if isinstance(a, OpenConnection)] == ["h4"]
    pool.submit(request(5, url="http://h5/", short=True), 0.0)  # every connection is taken: it waits
    assert actions(pool) == []
    pool.connection_failed(1, REFUSED, 0.5)  # a stream's connection frees: the short one goes first
    assert [a.host for a in actions(pool) if isinstance(a, OpenConnection)] == ["h5"]


def test_a_pool_of_one_connection_keeps_none_back() -> None:
    pool = HttpPool(max_connections=1)
    pool.submit(request(1), 0.0)
    assert len(actions(pool)) == 1


def test_the_most_recently_idle_connection_is_reused_first() -> None:
    pool = HttpPool()
    pool.submit(request(1), 0.0)
    pool.submit(request(2), 0.0)
    first, second = (a.connection for a in actions(pool))
    for conn in (first, second):
        pool.connection_made(conn, 0.0)
        pool.data_to_send(conn)
    pool.receive_data(first, response(), 1.0)
    pool.receive_data(second, response(), 1.0)
    pool.submit(request(3), 2.0)
    assert pool.connections_with_data() == [second]


# Failures


def test_garbage_fails_the_exchange_and_closes_the_connection() -> None:
    pool, conn = started()
    pool.receive_data(conn, b"SSH-2.0-OpenSSH\r\n\r\n", 1.0)
    (failed,) = events(pool)
    assert isinstance(failed, ExchangeFailed)
    assert failed.message.startswith("invalid HTTP response: ")
    assert failed.sent
    assert actions(pool) == [CloseConnection(connection=conn)]
    pool.receive_data(conn, b"more", 2.0)  # a closed connection's late bytes are ignored
    assert events(pool) == []


def test_garbage_in_the_chunked_body_fails_after_the_good_part() -> None:
    pool, conn = started()
    pool.receive_data(conn, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\nzz\r\n", 1.0)
    evs = events(pool)
    assert evs[1] == ResponseData(exchange=1, data=b"a")
    assert isinstance(evs[2], ExchangeFailed)
    assert evs[2].message.startswith("invalid HTTP response")


def test_oversized_response_head_fails_the_exchange() -> None:
    head = b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 100 + b"\r\n\r\n"
    pool, conn = started(HttpPool(max_header_bytes=len(head) - 1))
    pool.receive_data(conn, head, 1.0)
    assert events(pool) == [
        ExchangeFailed(exchange=1, message=f"response head exceeds {len(head) - 1} bytes", sent=True)
    ]
    assert actions(pool) == [CloseConnection(connection=conn)]


def test_head_of_exactly_the_limit_is_accepted_with_its_body_in_the_same_read() -> None:
    data = response(b"x" * 50)
    pool, conn = started(HttpPool(max_header_bytes=len(data) - 50))
    pool.receive_data(conn, data, 1.0)
    assert events(pool) == ok(body=b"x" * 50)
    assert actions(pool) == []


def test_byte_after_a_head_that_used_up_the_limit_fails_the_exchange() -> None:
    partial = b"HTTP/1.1 200 OK\r\nX-A:"
    pool, conn = started(HttpPool(max_header_bytes=len(partial)))
    pool.receive_data(conn, partial, 1.0)
    assert events(pool) == []
    pool.receive_data(conn, b" ", 1.0)
    assert events(pool) == [
        ExchangeFailed(exchange=1, message=f"response head exceeds {len(partial)} bytes", sent=True)
    ]


def test_informational_heads_count_toward_the_head_limit() -> None:
    continue_ = b"HTTP/1.1 100 Continue\r\n\r\n"
    data = continue_ + response(b"")
    assert merged(feed([data], max_header_bytes=len(data))) == ok(body=b"")[::2]
    (failed,) = feed([data], max_header_bytes=len(data) - 1)
    assert isinstance(failed, ExchangeFailed)


def test_response_within_the_head_budget_followed_by_more_bytes_is_not_reused() -> None:
    data = response(b"")
    pool, conn = started(HttpPool(max_header_bytes=len(data) + 3))
    pool.receive_data(conn, data + b"extra", 1.0)
    assert events(pool) == ok(body=b"")[::2]
    assert actions(pool) == [CloseConnection(connection=conn)]


def test_garbage_within_the_head_budget_of_a_large_read_fails_the_exchange() -> None:
    pool, conn = started(HttpPool(max_header_bytes=10))
    pool.receive_data(conn, b"\x16\x03\x01 TLS record" * 4, 1.0)
    (failed,) = events(pool)
    assert isinstance(failed, ExchangeFailed)
    assert failed.message.startswith("invalid HTTP response")


@given(st.integers(-3, 3), st.lists(st.integers(0, 200), max_size=6))
def test_head_limit_does_not_depend_on_how_the_bytes_are_split(slack: int, cuts: list[int]) -> None:
    data = b"HTTP/1.1 100 Continue\r\n\r\n" + response(b"body" * 10, headers=b"X-A: " + b"v" * 60 + b"\r\n")
    head_size = data.index(b"body")
    evs = feed(split(data, cuts), max_header_bytes=head_size + slack)
    if slack < 0:
        assert evs == [
            ExchangeFailed(exchange=1, message=f"response head exceeds {head_size + slack} bytes", sent=True)
        ]
    else:
        assert [type(e) for e in evs] == [ResponseStarted, ResponseData, ResponseEnded]


def test_oversized_chunk_header_fails_the_exchange() -> None:
    pool, conn = started(HttpPool(max_header_bytes=100))
    pool.receive_data(conn, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 1.0)
    pool.receive_data(conn, b"5;ext=" + b"e" * 200, 1.0)
    assert events(pool)[1:] == [
        ExchangeFailed(exchange=1, message="a chunk header or the trailer exceeds 100 bytes", sent=True)
    ]


def test_eof_mid_body_fails_the_exchange_after_its_data() -> None:
    pool, conn = started()
    pool.receive_data(conn, response(b"hello")[:-2], 1.0)
    pool.receive_data(conn, b"", 2.0)
    assert events(pool)[1:] == [
        ResponseData(exchange=1, data=b"hel"),
        ExchangeFailed(
            exchange=1, message="the server closed the connection before the response was complete", sent=True
        ),
    ]
    assert actions(pool) == [CloseConnection(connection=conn)]


def test_eof_mid_head_fails_the_exchange() -> None:
    pool, conn = started()
    pool.receive_data(conn, b"HTTP/1.1 200 OK\r\nContent-", 1.0)
    pool.receive_data(conn, b"", 2.0)
    (failed,) = events(pool)
    assert isinstance(failed, ExchangeFailed)
    assert failed.message == "the server closed the connection before the response was complete"


def test_eof_before_any_response_byte_on_a_fresh_connection_is_not_stale() -> None:
    pool, conn = started()
    pool.receive_data(conn, b"", 1.0)
    assert events(pool) == [
        ExchangeFailed(exchange=1, message="the server closed the connection without responding", sent=True)
    ]


def test_eof_right_after_reuse_sends_the_request_again_on_a_new_connection() -> None:
    pool, conn = started()
    reused(pool, conn)
    pool.receive_data(conn, b"", 3.0)
    assert events(pool) == []
    close, fresh = actions(pool)
    assert close == CloseConnection(connection=conn)
    assert isinstance(fresh, OpenConnection) and fresh.connection != conn
    pool.connection_made(fresh.connection, 3.1)
    assert pool.data_to_send(fresh.connection).startswith(b"POST /mcp HTTP/1.1\r\n")
    pool.receive_data(fresh.connection, response(), 3.2)
    assert events(pool) == ok(2)


def test_reset_right_after_reuse_sends_the_request_again_on_a_new_connection() -> None:
    pool, conn = started()
    reused(pool, conn)
    pool.connection_failed(conn, broken("connection reset by peer"), 3.0)
    assert events(pool) == []
    assert [type(a) for a in actions(pool)] == [CloseConnection, OpenConnection]


def test_a_request_sent_again_fails_when_the_new_connection_fails_too() -> None:
    pool, conn = started()
    reused(pool, conn)
    pool.receive_data(conn, b"", 3.0)
    fresh = connect_after_close(pool)
    pool.receive_data(fresh, b"", 3.2)
    assert events(pool) == [
        ExchangeFailed(exchange=2, message="the server closed the connection without responding", sent=True)
    ]


def test_a_request_sent_again_never_takes_another_kept_alive_connection() -> None:
    pool = HttpPool()
    first, second = (started(pool, request(n))[1] for n in (1, 2))
    for conn in (first, second):
        pool.receive_data(conn, response(), 1.0)
    events(pool)
    pool.submit(request(3), 2.0)  # on the most recently idle one
    assert pool.data_to_send(second)
    pool.receive_data(second, b"", 3.0)
    close, fresh = actions(pool)
    assert close == CloseConnection(connection=second)
    assert isinstance(fresh, OpenConnection) and fresh.connection not in (first, second)


def test_a_request_sent_again_and_cancelled_before_its_connection_is_dropped() -> None:
    pool, conn = started()
    reused(pool, conn)
    pool.receive_data(conn, b"", 3.0)
    pool.cancel(2, 3.05)
    close, fresh, dropped = actions(pool)
    assert isinstance(fresh, OpenConnection)
    assert close == CloseConnection(connection=conn)
    assert dropped == CloseConnection(connection=fresh.connection)
    pool.connection_made(fresh.connection, 3.1)  # the driver learned late: ignored
    assert events(pool) == []


def test_eof_after_some_response_bytes_on_a_reused_connection_fails_the_exchange() -> None:
    pool, conn = started()
    reused(pool, conn)
    pool.receive_data(conn, b"HTTP/1.1 2", 3.0)
    pool.receive_data(conn, b"", 3.0)
    (failed,) = events(pool)
    assert isinstance(failed, ExchangeFailed)
    assert failed.message == "the server closed the connection before the response was complete"


def test_connect_failure_fails_the_exchange_as_unsent() -> None:
    pool = HttpPool()
    pool.submit(request(), 0.0)
    (action,) = actions(pool)
    pool.connection_failed(action.connection, REFUSED, 1.0)
    unreachable = ConnectFailure(host="example.com", port=80, failure=REFUSED)
    message = "cannot connect to example.com:80: Connection refused"
    assert events(pool) == [ExchangeFailed(exchange=1, message=message, sent=False,
                                           connect_failure=unreachable)]
    assert actions(pool) == [CloseConnection(connection=action.connection)]


def test_io_error_before_the_request_was_drained_is_unsent() -> None:
    pool = HttpPool()
    pool.submit(request(), 0.0)
    (action,) = actions(pool)
    pool.connection_made(action.connection, 0.0)
    pool.connection_failed(action.connection, broken("broken pipe"), 1.0)
    (failed,) = events(pool)
    assert isinstance(failed, ExchangeFailed)
    assert not failed.sent


def test_io_error_after_the_request_was_drained_is_sent() -> None:
    pool, conn = started()
    pool.connection_failed(conn, broken("timed out"), 1.0)
    assert events(pool) == [ExchangeFailed(exchange=1, message="timed out", sent=True)]


def test_failure_of_an_idle_connection_drops_it_silently() -> None:
    pool, conn = started()
    pool.receive_data(conn, response(), 1.0)
    events(pool)
    pool.connection_failed(conn, broken("reset"), 2.0)
    assert events(pool) == []
    assert actions(pool) == [CloseConnection(connection=conn)]
    pool.submit(request(2), 3.0)
    assert isinstance(pool.next_action(), OpenConnection)


# Driver misuse and late calls


def test_connection_ids_the_pool_never_allocated_are_refused() -> None:
    pool = HttpPool()
    for call in (
        lambda: pool.connection_made(1, 0.0),
        lambda: pool.connection_failed(0, broken("x"), 0.0),
        lambda: pool.receive_data(-1, b"x", 0.0),
        lambda: pool.data_to_send(1),
    ):
        with pytest.raises(LocalProtocolError, match="never opened"):
            call()


def test_calls_on_a_closed_connection_are_ignored() -> None:
    pool = HttpPool()
    pool.submit(request(), 0.0)
    (action,) = actions(pool)
    pool.cancel(1, 0.5)
    assert actions(pool) == [CloseConnection(connection=action.connection)]
    pool.connection_made(action.connection, 1.0)
    pool.receive_data(action.connection, b"late", 1.0)
    pool.connection_failed(action.connection, broken("late"), 1.0)
    assert pool.data_to_send(action.connection) == b""
    assert events(pool) == []
    assert actions(pool) == []


def test_receive_before_connection_made_is_refused() -> None:
    pool = HttpPool()
    pool.submit(request(), 0.0)
    (action,) = actions(pool)
    with pytest.raises(LocalProtocolError, match="not connected yet"):
        pool.receive_data(action.connection, b"HTTP/1.1", 0.0)


def test_connection_made_twice_is_refused() -> None:
    pool, conn = started()
    with pytest.raises(LocalProtocolError, match="already connected"):
        pool.connection_made(conn, 0.0)


# Cancel


def test_cancel_mid_stream_closes_the_connection_and_drops_queued_events() -> None:
    pool, conn = started()
    pool.receive_data(conn, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: 1\n\n", 1.0)
    pool.cancel(1, 2.0)
    assert events(pool) == []
    assert actions(pool) == [CloseConnection(connection=conn)]
    pool.receive_data(conn, b"data: 2\n\n", 3.0)
    assert events(pool) == []


def test_cancel_after_the_end_drops_events_not_yet_taken() -> None:
    pool, conn = started()
    pool.receive_data(conn, response(), 1.0)
    pool.submit(request(2), 1.0)
    pool.cancel(1, 2.0)
    assert events(pool) == []
    assert pool.connections_with_data() == [conn]  # exchange 2 is untouched


def test_cancel_of_a_waiting_exchange_drops_it_without_closing_anything() -> None:
    pool, conn = started(HttpPool(max_connections=1))
    pool.submit(request(2, url=str(OTHER)), 0.5)
    pool.cancel(2, 0.6)
    assert actions(pool) == []
    pool.receive_data(conn, response(), 1.0)
    assert events(pool) == ok()
    assert actions(pool) == []  # nothing was waiting any more


def test_cancel_frees_a_slot_for_a_waiting_exchange() -> None:
    pool, conn = started(HttpPool(max_connections=1))
    pool.submit(request(2, url=str(OTHER)), 0.5)
    pool.cancel(1, 0.6)
    assert actions(pool) == [
        CloseConnection(connection=conn),
        OpenConnection(
            connection=2, host="other.example", port=8080, tls=False, server_hostname="other.example"
        ),
    ]


def test_cancel_of_an_unknown_exchange_is_ignored() -> None:
    pool = HttpPool()
    pool.cancel(7, 0.0)
    assert events(pool) == []
    assert actions(pool) == []


# Idle timeout and close


def test_idle_connection_expires_after_idle_timeout() -> None:
    pool, conn = started(HttpPool(idle_timeout=5.0))
    assert pool.next_deadline() is None  # only idle connections have a deadline
    pool.receive_data(conn, response(), 1.0)
    assert pool.next_deadline() == pool.next_deadline() == 6.0
    pool.handle_timeout(5.9)
    assert actions(pool) == []
    pool.handle_timeout(6.0)
    assert actions(pool) == [CloseConnection(connection=conn)]
    assert pool.next_deadline() is None


def test_reuse_disarms_the_idle_deadline() -> None:
    pool, conn = started(HttpPool(idle_timeout=5.0))
    reused(pool, conn)
    assert pool.next_deadline() is None
    pool.handle_timeout(100.0)
    assert actions(pool) == []


def test_close_fails_every_exchange_and_closes_every_connection() -> None:
    pool = HttpPool(max_connections=2)
    for exchange, url in ((1, "http://a/"), (2, "http://b/"), (3, "http://c/")):
        pool.submit(request(exchange, url=url, short=True), 0.0)
    actions(pool)
    pool.connection_made(1, 0.0)
    pool.data_to_send(1)
    pool.close()
    assert events(pool) == [
        ExchangeFailed(exchange=1, message="the connection pool was closed", sent=True),
        ExchangeFailed(exchange=2, message="the connection pool was closed", sent=False),
        ExchangeFailed(exchange=3, message="the connection pool was closed", sent=False),
    ]
    assert actions(pool) == [CloseConnection(connection=1), CloseConnection(connection=2)]
    pool.close()
    assert events(pool) == []
    assert actions(pool) == []


def test_submit_after_close_is_refused() -> None:
    pool = HttpPool()
    pool.close()
    with pytest.raises(LocalProtocolError, match="closed"):
        pool.submit(request(), 0.0)


# Split invariance


@st.composite
def server_streams(draw: st.DrawFn) -> bytes:
    """A response in any framing, perhaps after a 100, perhaps cut short."""
    body = draw(st.binary(max_size=120))
    framing = draw(st.sampled_from(["content-length", "chunked", "until-close"]))
    data = b"HTTP/1.1 100 Continue\r\n\r\n" if draw(st.booleans()) else b""
    if framing == "content-length":
        data += response(body, headers=b"X-A: 1\r\n")
    elif framing == "chunked":
        cuts = draw(st.lists(st.integers(0, len(body)), max_size=4))
        pieces = split(body, cuts)
        data += b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        data += b"".join(b"%x;e=1\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\nX-T: 1\r\n\r\n"
    else:
        data += b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + body
    return data[: draw(st.integers(0, len(data)))] if draw(st.booleans()) else data


@given(server_streams(), st.lists(st.integers(0, 400), max_size=12))
def test_any_split_of_the_server_bytes_gives_the_same_events(data: bytes, cuts: list[int]) -> None:
    assert feed(split(data, cuts)) == feed([data])


@given(server_streams())
def test_byte_by_byte_gives_the_same_events_as_whole(data: bytes) -> None:
    assert feed([data[i : i + 1] for i in range(len(data))]) == feed([data])


# How far an exchange has got


def test_progress_follows_an_exchange_from_its_queue_to_its_response() -> None:
    pool = HttpPool(max_connections=1)
    pool.submit(request(1), 0.0)
    pool.submit(request(2, url="http://other.example/"), 0.0)
    (action,) = actions(pool)
    assert (pool.progress(1), pool.progress(2)) == (Progress.CONNECTING, Progress.QUEUED)
    pool.connection_made(action.connection, 0.1)
    assert pool.progress(1) is Progress.SENDING
    pool.data_to_send(action.connection)
    assert pool.progress(1) is Progress.WAITING
    pool.receive_data(action.connection, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe", 0.2)
    assert pool.progress(1) is Progress.RECEIVING
    pool.receive_data(action.connection, b"llo", 0.3)
    assert pool.progress(1) is None  # done
    assert pool.progress(99) is None  # never submitted

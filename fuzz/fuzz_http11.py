"""Fuzz target: arbitrary bytes as the server's answer to one HttpPool exchange.

The first input byte picks the scenario (bit 0: the exchange reuses a kept-alive
connection; bit 1: the method is HEAD); the rest is what the server sends, then EOF (a
request sent again after a kept-alive connection closed unanswered is then refused).
It is fed whole and then byte by byte: both must give the same events, ending in exactly
one ``ResponseEnded`` or ``ExchangeFailed``, and no exception may escape.

Run with ``python fuzz/fuzz_http11.py fuzz/corpus/http11`` (needs atheris); the seeds
replay under plain pytest through :func:`test_one_input`.
"""

from __future__ import annotations

import sys

from mcp_sansio.connections import OpenConnection, SocketFailure, SocketStage
from mcp_sansio.http11 import (
    ExchangeFailed,
    HttpPool,
    HttpRequest,
    PoolEvent,
    ResponseData,
    ResponseEnded,
    ResponseStarted,
)
from mcp_sansio.urls import parse_url

_URL = parse_url("http://fuzz.example/mcp")
_MAX_HEADER_BYTES = 64 * 1024
# An input no longer than the head limit cannot hold a chunk header or trailer over it,
# the one bound h11 checks only on incomplete lines (so whole and split reads could differ).
_MAX_INPUT = _MAX_HEADER_BYTES
_PRIMER = b"HTTP/1.1 204 No Content\r\n\r\n"
_REFUSED = SocketFailure(stage=SocketStage.CONNECT, cause="Connection refused")


def _run(scenario: int, chunks: list[bytes]) -> list[PoolEvent]:
    """The events of the exchange under test, data runs joined, failure detail cut."""
    pool = HttpPool(max_header_bytes=_MAX_HEADER_BYTES)
    method = "HEAD" if scenario & 2 else "POST"
    pool.submit(HttpRequest(exchange=1, method=method, url=_URL, headers=(), body=b"{}"), 0.0)
    action = pool.next_action()
    assert isinstance(action, OpenConnection)
    conn = action.connection
    pool.connection_made(conn, 0.0)
    pool.data_to_send(conn)
    exchange = 1
    if scenario & 1:
        pool.receive_data(conn, _PRIMER, 0.5)
        exchange = 2
        pool.submit(HttpRequest(exchange=2, method=method, url=_URL, headers=(), body=b"{}"), 1.0)
        pool.data_to_send(conn)
        while pool.next_event() is not None:
            pass
    for chunk in chunks:
        pool.receive_data(conn, chunk, 2.0)
    pool.receive_data(conn, b"", 3.0)
    _refuse_a_resend(pool)
    events: list[PoolEvent] = []
    while (event := pool.next_event()) is not None:
        assert event.exchange == exchange
        last = events[-1] if events else None
        if isinstance(event, ResponseData) and isinstance(last, ResponseData):
            events[-1] = ResponseData(exchange=exchange, data=last.data + event.data)
        elif isinstance(event, ExchangeFailed):
            # h11's detail depends on where in the bytes it noticed the problem.
            events.append(
                ExchangeFailed(
                    exchange=exchange,
                    message=event.message.partition(":")[0],
                    sent=event.sent,
                )
            )
        else:
            events.append(event)
    _check_grammar(events)
    assert pool.connections_with_data() == []
    return events


def _refuse_a_resend(pool: HttpPool) -> None:
    """A request that met a closed keep-alive connection is sent again on a new one: that
    one is refused, so the exchange still ends in one event."""
    while (action := pool.next_action()) is not None:
        if isinstance(action, OpenConnection):
            pool.connection_failed(action.connection, _REFUSED, 4.0)


def _check_grammar(events: list[PoolEvent]) -> None:
    """[ResponseStarted [ResponseData]] then ResponseEnded, or a failure anywhere after."""
    kinds = [type(event) for event in events]
    assert kinds.count(ResponseEnded) + kinds.count(ExchangeFailed) == 1, kinds
    assert kinds[-1] in (ResponseEnded, ExchangeFailed), kinds
    if ResponseEnded in kinds or ResponseData in kinds:
        assert kinds[0] is ResponseStarted, kinds
    assert kinds.count(ResponseStarted) <= 1, kinds


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

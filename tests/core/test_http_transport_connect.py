"""HttpClient's connect as one deadline: ``initialize_timeout`` bounds the probe, the
fallback to ``initialize`` and any retry together, and a connect that times out says how
long it really took and where it stalled.
"""

from __future__ import annotations

from helpers import REFUSED, broken, drain_events
from http_helpers import URL, ScriptedHttpServer, http_client, ready_http_client, sse_event

from mcp_sansio import ClientConfig
from mcp_sansio.connections import OpenConnection
from mcp_sansio.events import FailureReason, InitializeFailed, RequestFailed
from mcp_sansio.http_transport import HttpClient, TransportMode

STALLED = "the server did not complete the handshake within"


def timed_out(client: HttpClient) -> str:
    """The message of the one ``InitializeFailed(reason=TIMEOUT)`` queued."""
    (failed,) = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.reason is FailureReason.TIMEOUT, failed
    return failed.message


def test_probe_and_fallback_share_initialize_timeout() -> None:
    client = HttpClient(URL, config=ClientConfig(initialize_timeout=3.0))  # auto: server/discover first
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (probe,) = server.pump(now=0.0)
    assert probe.rpc_method == "server/discover"
    assert client.next_deadline() == 1.5  # half the connect, at most discover_timeout
    client.handle_timeout(1.5)
    (initialize,) = server.pump(now=1.5)
    assert initialize.rpc_method == "initialize"
    assert client.next_deadline() == 3.0  # what is left, not a fresh initialize_timeout
    client.handle_timeout(3.0)
    assert timed_out(client) == (
        f"{STALLED} 3.0 s (initialize_timeout 3 s): initialize went unanswered for 1.5 s,"
        " after server/discover (1.5 s); POST http://example.com/mcp: no response came")


def test_a_connection_that_never_opens_says_so() -> None:
    client = http_client(URL, config=ClientConfig(initialize_timeout=5.0))
    client.connect(now=0.0)
    assert client.next_action() is not None  # OpenConnection, never answered by the driver
    client.handle_timeout(5.2)
    assert timed_out(client).endswith(
        "initialize went unanswered for 5.2 s; POST http://example.com/mcp: the connection did not open")


def test_a_response_that_starts_but_never_answers_says_so() -> None:
    client = http_client(URL, config=ClientConfig(initialize_timeout=5.0))
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (initialize,) = server.pump(now=0.0)
    server.send(initialize, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n: hi\n\n", now=1.0)
    client.handle_timeout(5.0)
    assert timed_out(client).endswith(": the response started but did not finish")


def test_a_legacy_stream_without_an_endpoint_event_says_so() -> None:
    client = http_client(URL, transport=TransportMode.SSE, config=ClientConfig(initialize_timeout=5.0))
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (stream,) = server.pump(now=0.0)
    server.send(stream, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n", now=0.5)
    client.handle_timeout(5.0)
    message = timed_out(client)
    assert message.endswith("; GET http://example.com/mcp: the SSE stream sent no endpoint event")


def test_a_handshake_request_waiting_to_be_sent_again_says_so() -> None:
    client = http_client(URL, config=ClientConfig(initialize_timeout=5.0))
    client.connect(now=0.0)
    opened = client.next_action()
    assert isinstance(opened, OpenConnection)
    client.connection_made(opened.connection, now=0.0)
    client.connection_failed(opened.connection, broken("reset"), now=0.1)  # before a byte was written
    assert drain_events(client) == []
    client.handle_timeout(5.0)
    assert timed_out(client).endswith("; its request was waiting to be sent again")


def test_a_legacy_initialize_accepted_but_never_answered_on_the_stream_names_the_request() -> None:
    client = http_client(URL, transport=TransportMode.SSE, config=ClientConfig(initialize_timeout=5.0))
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (stream,) = server.pump(now=0.0)
    server.reply_sse(stream, [sse_event("/messages", event="endpoint")], now=0.0, end=False)
    (initialize,) = server.pump(now=0.0)
    server.accept(initialize, now=0.0)  # the answer is due on the stream, which stays silent
    client.handle_timeout(5.0)
    assert timed_out(client).endswith(": initialize went unanswered for 5.0 s")


def _refused_ping(*, timeout: float) -> tuple[HttpClient, int]:
    """A ready client whose connections the server closed; a ping whose connect is refused."""
    client, server, _ = ready_http_client()
    for connection in {request.connection for request in server.requests}:
        client.receive_data(connection, b"", now=0.5)
    while client.next_action() is not None:
        pass
    rid = client.ping(now=1.0, timeout=timeout)
    opened = client.next_action()
    assert isinstance(opened, OpenConnection)
    client.connection_failed(opened.connection, REFUSED, now=1.0)
    assert drain_events(client) == []  # a server that restarts may be back: retried
    return client, rid


def _refusal(client: HttpClient, rid: int) -> RequestFailed:
    (event,) = drain_events(client)
    assert isinstance(event, RequestFailed) and event.request_id == rid
    assert event.reason is FailureReason.CONNECT_FAILED and "Connection refused" in event.message
    return event


def test_a_deadline_that_comes_while_a_refused_request_waits_to_retry_fails_it_with_the_refusal() -> None:
    client, rid = _refused_ping(timeout=30.0)
    retry_at = client.next_deadline()
    assert retry_at is not None and retry_at < 31.0
    client.handle_timeout(31.0)  # the retry and the deadline are both due: the deadline wins
    _refusal(client, rid)
    assert not any(isinstance(a, OpenConnection) for a in iter(client.next_action, None))  # not sent


def test_a_deadline_that_comes_while_a_refused_request_connects_again_fails_it_with_the_refusal() -> None:
    client, rid = _refused_ping(timeout=30.0)
    actions: list[object] = []
    while not any(isinstance(a, OpenConnection) for a in actions):  # until the retry connects
        at = client.next_deadline()
        assert at is not None and at < 31.0
        client.handle_timeout(at)
        actions += iter(client.next_action, None)
    client.handle_timeout(31.0)
    _refusal(client, rid)

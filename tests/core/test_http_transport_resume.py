"""HttpClient resuming a dropped SSE answer: a GET with ``Last-Event-ID`` after the
server's ``retry:`` (the conformance ``sse-retry`` scenario) or a jittered backoff,
bounded by the retry policy and by the request's own deadline.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from helpers import broken, drain_events
from http_helpers import (
    LAST_CHUNK,
    ScriptedHttpServer,
    chunk,
    chunked_head,
    init_result,
    ready_http_client,
    sse_event,
    tool_result,
)
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio import ClientConfig
from mcp_sansio.connections import OpenConnection
from mcp_sansio.events import (
    Event,
    FailureReason,
    GetStreamAbandoned,
    InitializeCompleted,
    NotificationReceived,
    RequestFailed,
    ResponseReceived,
)
from mcp_sansio.http_transport import HttpClient
from mcp_sansio.retry import RetryAt, RetryPolicy, decide

LOG = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}'


def dropped_call(*, retry: int | None = 500, version: str = "2025-03-26", **kwargs: Any
                 ) -> tuple[HttpClient, ScriptedHttpServer, int]:
    """A tool call whose SSE answer sent only a priming event (``id: event-1``), then ended at 1.0."""
    client, server, _ = ready_http_client(version=version, **kwargs)
    rid = client.call_tool("test_reconnection", now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_sse(post, [sse_event(b"", id="event-1", retry=retry)], now=1.0)
    return client, server, rid


def test_dropped_answer_is_resumed_with_a_get_after_the_server_retry() -> None:
    client, server, _ = dropped_call()
    assert drain_events(client) == []
    assert client.next_deadline() == 1.5
    client.handle_timeout(1.49)
    assert server.pump(now=1.49) == []
    client.handle_timeout(1.5)
    (get,) = server.pump(now=1.5)
    assert (get.method, get.target, get.body) == ("GET", "/mcp", b"")
    assert get.header("last-event-id") == "event-1"
    assert get.header("accept") == "text/event-stream"
    assert get.header("mcp-session-id") == "s-1"


def test_resumed_get_delivers_the_result() -> None:
    client, server, rid = dropped_call()
    client.handle_timeout(1.5)
    (get,) = server.pump(now=1.5)
    server.reply_sse(get, [sse_event(tool_result(rid), id="event-2")], now=1.6)
    (event,) = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert event.request_id == rid
    client.handle_timeout(100.0)
    assert server.pump(now=100.0) == []  # nothing further is resumed


def test_stream_closed_by_the_server_mid_body_is_resumed() -> None:
    client, server, _ = ready_http_client(version="2025-06-18")
    client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.send(post, chunked_head() + chunk(sse_event(b"", id="p-1", retry=250)), now=1.0)
    server.hang_up(post, now=1.2)  # EOF before the last chunk
    assert client.next_deadline() == 1.45
    client.handle_timeout(1.45)
    (get,) = server.pump(now=1.45)
    assert get.header("last-event-id") == "p-1"


def test_resume_sends_the_latest_event_id() -> None:
    client, server, _ = ready_http_client(version="2025-06-18")
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    progress = ('{"jsonrpc":"2.0","method":"notifications/progress",'
                f'"params":{{"progressToken":{rid},"progress":1}}}}')
    server.reply_sse(post, [sse_event(id="a", retry=100), sse_event(progress, id="b")], now=1.0)
    client.handle_timeout(1.1)
    (get,) = server.pump(now=1.1)
    assert get.header("last-event-id") == "b"


def test_without_a_server_retry_the_resume_waits_a_jittered_backoff() -> None:
    policy = RetryPolicy()
    client, _, _ = dropped_call(retry=None, jitter_seed=7)
    deadline = client.next_deadline()
    assert deadline is not None
    assert 1.0 + 0.8 <= deadline < 1.0 + 1.2
    assert deadline != 1.0 + policy.initial_delay  # jittered, and the seed decides by how much
    assert dropped_call(retry=None, jitter_seed=7)[0].next_deadline() == deadline
    assert dropped_call(retry=None, jitter_seed=8)[0].next_deadline() != deadline


def test_backoff_delay_follows_the_retry_policy() -> None:
    policy = RetryPolicy(initial_delay=4.0, max_delay=4.0, jitter=0.0)
    client, _, _ = dropped_call(retry=None, config=ClientConfig(retry=policy))
    assert decide(policy, 1, 1.0, None, 0.5) == RetryAt(at=5.0, attempt=1)
    assert client.next_deadline() == 5.0


def test_refused_resumes_give_up_after_the_policy_attempts() -> None:
    client, server, rid = dropped_call(config=ClientConfig(retry=RetryPolicy(max_attempts=3)))
    server.hang_up_idle(now=1.0)
    attempts = 0
    now = 1.0
    while (deadline := client.next_deadline()) is not None and attempts < 20:
        now = deadline
        server.refuse = 1
        client.handle_timeout(now)
        server.pump(now=now)
        attempts += 1
    assert attempts == 3  # one resume per retry the policy allows
    failed = [e for e in drain_events(client) if isinstance(e, RequestFailed)]
    assert [(f.request_id, f.reason) for f in failed] == [(rid, FailureReason.CONNECT_FAILED)]


def test_resume_that_is_dropped_after_the_request_went_out_is_resumed_again() -> None:
    client, server, rid = dropped_call(config=ClientConfig(retry=RetryPolicy(max_attempts=2)))
    now = 1.5
    for _ in range(3):
        client.handle_timeout(now)
        (get,) = server.pump(now=now)
        assert get.header("last-event-id") == "event-1"
        server.hang_up(get, now=now)  # no response at all
        deadline = client.next_deadline()
        if deadline is None:
            break
        now = deadline
    failed = [e for e in drain_events(client) if isinstance(e, RequestFailed)]
    assert [(f.request_id, f.reason) for f in failed] == [(rid, FailureReason.CONNECTION_LOST)]


def test_resumed_stream_that_worked_and_ends_again_is_resumed_from_its_new_id() -> None:
    client, server, rid = dropped_call()
    client.handle_timeout(1.5)
    (get,) = server.pump(now=1.5)
    server.reply_sse(get, [sse_event(LOG, id="event-2", retry=200)], now=1.6)  # it carried a message
    client.handle_timeout(1.8)
    (again,) = server.pump(now=1.8)
    assert again.header("last-event-id") == "event-2"
    server.reply_sse(again, [sse_event(tool_result(rid))], now=1.9)
    assert [type(e) for e in drain_events(client)] == [NotificationReceived, ResponseReceived]


def test_resumed_stream_that_ends_at_once_again_backs_off_beyond_the_server_retry() -> None:
    client, server, _ = dropped_call(jitter_seed=3)
    client.handle_timeout(1.5)
    (get,) = server.pump(now=1.5)
    server.reply_sse(get, [sse_event(id="event-2", retry=200)], now=1.6)  # primed, then closed
    deadline = client.next_deadline()
    assert deadline is not None and 1.6 + 0.8 <= deadline <= 1.6 + 1.2  # the policy's first backoff


def test_stream_without_an_event_id_is_not_resumed() -> None:
    client, server, _ = ready_http_client(version="2025-03-26")
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_sse(post, [b": just a comment\n\n"], now=1.0)
    (failed,) = drain_events(client)
    assert isinstance(failed, RequestFailed)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.CONNECTION_LOST)
    assert server.pump(now=100.0) == []


def test_request_answered_on_the_get_stream_is_not_resumed() -> None:
    client, server, rid = dropped_call(get_stream=200)
    get_stream = server.requests[2]
    server.send(get_stream, chunk(sse_event(tool_result(rid), id="g-1")), now=1.2)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]
    client.handle_timeout(1.5)
    assert server.pump(now=1.5) == []


def test_request_that_times_out_before_the_resume_is_not_resumed() -> None:
    client, server, rid = dropped_call(retry=5000)
    client.handle_timeout(61.0)  # the default 60 s request timeout passes first
    failed = [e for e in drain_events(client) if isinstance(e, RequestFailed)]
    assert [(f.request_id, f.reason) for f in failed] == [(rid, FailureReason.TIMEOUT)]
    assert [r.rpc_method for r in server.pump(now=61.0)] == ["notifications/cancelled"]


def test_resumed_stream_is_abandoned_when_its_request_times_out() -> None:
    client, server, _ = dropped_call()
    client.handle_timeout(1.5)
    (get,) = server.pump(now=1.5)
    server.reply_sse(get, [sse_event(id="event-2")], now=1.5, end=False)
    client.handle_timeout(61.0)
    server.pump(now=61.0)
    assert server.is_closed(get)


def test_resume_answered_without_an_event_stream_fails_the_request() -> None:
    client, server, rid = dropped_call()
    client.handle_timeout(1.5)
    (get,) = server.pump(now=1.5)
    server.reply_json(get, tool_result(rid), now=1.5)
    (failed,) = drain_events(client)
    assert isinstance(failed, RequestFailed)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.PROTOCOL_ERROR)


@pytest.mark.parametrize("status", [404, 405, 503])
def test_resume_refused_by_status_fails_the_request(status: int) -> None:
    client, server, rid = dropped_call(session_id=None)
    client.handle_timeout(1.5)
    (get,) = server.pump(now=1.5)
    server.reply(get, status, now=1.5)
    (failed,) = drain_events(client)
    assert isinstance(failed, RequestFailed)
    assert (failed.request_id, failed.reason, failed.status) == (rid, FailureReason.HTTP_ERROR, status)


def test_sse_answer_is_complete_when_the_stream_ends_normally() -> None:
    client, server, _ = ready_http_client()
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.send(post, chunked_head() + chunk(sse_event(tool_result(rid), id="x")) + LAST_CHUNK, now=1.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]
    assert server.pump(now=5.0) == []


def test_get_stream_that_delivered_a_message_reconnects_after_the_server_retry_again_and_again() -> None:
    policy = RetryPolicy(max_attempts=1)
    client, server, _ = ready_http_client(get_stream=0, config=ClientConfig(retry=policy))
    get = server.requests[2]
    now = 1.0
    for round_ in range(4):  # each stream worked (a message), so the count starts over
        server.reply_sse(get, [sse_event(LOG, id=f"g{round_}", retry=100)], now=now)
        now += 0.1
        client.handle_timeout(now)
        (get,) = server.pump(now=now)
        assert get.header("last-event-id") == f"g{round_}"


def test_get_stream_that_stayed_open_max_delay_reconnects_after_the_server_retry_again_and_again() -> None:
    policy = RetryPolicy(max_attempts=1, max_delay=5.0)
    client, server, _ = ready_http_client(get_stream=0, config=ClientConfig(retry=policy))
    get = server.requests[2]
    now = 0.0
    for _ in range(3):
        server.reply_sse(get, [sse_event(id="g", retry=100)], now=now, end=False)
        now += 5.0  # quiet, but open as long as the longest backoff
        server.hang_up(get, now=now)
        client.handle_timeout(now + 0.1)
        (get,) = server.pump(now=now + 0.1)
        now += 0.1


def test_get_stream_that_keeps_ending_at_once_backs_off_then_is_given_up() -> None:
    client, server, _ = ready_http_client(get_stream=0, jitter_seed=5)
    get = server.requests[2]
    opened = [0.0]
    now = 0.0
    events: list[Event] = []
    while not events:
        server.reply_sse(get, [sse_event(id="g", retry=0)], now=now)  # 200, primed, closed at once
        events = drain_events(client)
        if not events:
            now = client.next_deadline() or 0.0
            client.handle_timeout(now)
            (get,) = server.pump(now=now)
            opened.append(now)
    gaps = [b - a for a, b in itertools.pairwise(opened)]
    assert len(gaps) == RetryPolicy().max_attempts == 5
    assert gaps[0] == 0.0  # the server's retry: 0, once
    assert [round(g) for g in gaps[1:]] == [1, 2, 4, 8]  # then the backoff (jitter +-20 %)
    assert events == [GetStreamAbandoned(
        attempts=5, message="gave up the event stream for server-initiated messages from"
                            " http://example.com/mcp after 5 reconnections in a row:"
                            " the server ended the SSE stream")]


def test_get_stream_dropped_mid_stream_reconnects() -> None:
    client, server, _ = ready_http_client(get_stream=0)
    get = server.requests[2]
    server.reply_sse(get, [sse_event(id="g1", retry=300)], now=1.0, end=False)
    client.connection_failed(get.connection, broken("reset"), now=1.1)
    deadline = client.next_deadline()
    assert deadline is not None
    assert deadline == pytest.approx(1.4)
    client.handle_timeout(deadline)
    (again,) = server.pump(now=deadline)
    assert again.header("last-event-id") == "g1"


def test_closing_stops_a_scheduled_resume() -> None:
    client, server, _ = dropped_call()
    client.close(now=1.2)
    (delete,) = server.pump(now=1.2)
    server.reply(delete, 200, now=1.2)
    client.handle_timeout(1.5)
    assert server.pump(now=1.5) == []
    assert client.next_deadline() is None


def test_resumed_initialize_stream_carries_the_new_session_id() -> None:
    client, server, _ = ready_http_client(version="2025-06-18")
    client.ping(now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply(post, 404, now=1.0)  # expired: a new handshake, on a resumable revision
    (init,) = server.pump(now=1.0)
    assert init.header("mcp-session-id") is None
    server.reply_sse(init, [sse_event(id="i-1", retry=100)], now=1.0, headers={"Mcp-Session-Id": "s-2"})
    client.handle_timeout(1.1)
    (get,) = server.pump(now=1.1)
    assert (get.header("mcp-session-id"), get.header("last-event-id")) == ("s-2", "i-1")
    server.reply_sse(get, [sse_event(init_result(init.json()["id"], version="2025-06-18"))], now=1.2)
    assert InitializeCompleted in [type(e) for e in drain_events(client)]


@pytest.mark.parametrize("event_id", ["caf\u00e9", "a\u0001b", "tab\tinside", " padded"])
def test_an_event_id_no_header_can_carry_is_dropped_and_the_answer_is_not_resumed(event_id: str) -> None:
    client, server, _ = ready_http_client(version="2025-03-26")
    rid = client.call_tool("t", now=1.0)
    (post,) = server.pump(now=1.0)
    server.reply_sse(post, [sse_event(b"", id=event_id, retry=0)], now=1.0)
    (failed,) = drain_events(client)  # as if the stream had no id: nothing to resume from
    assert isinstance(failed, RequestFailed)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.CONNECTION_LOST)
    client.handle_timeout(2.0)  # no resume with an unsendable header, no exception
    assert server.pump(now=2.0) == []


def test_a_get_stream_reopens_without_an_id_no_header_can_carry() -> None:
    client, server, _ = ready_http_client(get_stream=0)
    get = server.requests[2]
    server.reply_sse(get, [sse_event(id="good-1"), sse_event(id="caf\u00e9", retry=0)], now=1.0)
    client.handle_timeout(1.0)
    (again,) = server.pump(now=1.0)
    assert again.header("last-event-id") is None  # not the bad one, nor the good one before it


@given(st.text(max_size=40).filter(lambda text: not {"\r", "\n", "\0"} & set(text)))
def test_whatever_id_the_server_sends_the_reconnect_goes_out_without_an_exception(event_id: str) -> None:
    client, server, _ = ready_http_client(get_stream=0)
    get = server.requests[2]
    server.reply_sse(get, [b"id: " + event_id.encode() + b"\nretry: 0\n\n"], now=1.0)
    client.handle_timeout(1.0)
    (again,) = server.pump(now=1.0)
    sent = again.header("last-event-id")
    assert sent is None or (sent == event_id and sent.isascii() and sent.isprintable())


def test_a_resume_that_fails_before_its_request_left_is_sent_again() -> None:
    client, server, rid = dropped_call()
    server.hang_up_idle(now=1.0)
    client.handle_timeout(1.5)
    opened = client.next_action()
    assert isinstance(opened, OpenConnection)
    client.connection_made(opened.connection, now=1.5)
    client.connection_failed(opened.connection, broken("reset"), now=1.5)  # nothing was written
    deadline = client.next_deadline()
    assert deadline is not None and deadline < 31.0
    client.handle_timeout(deadline)
    (again,) = server.pump(now=deadline)
    assert again.header("last-event-id") == "event-1"
    server.reply_sse(again, [sse_event(tool_result(rid))], now=deadline)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]

"""The stdio client: bytes in and out, EOF, the line bound, and the shutdown ladder as actions."""

from __future__ import annotations

from helpers import ScriptedServer, drain_actions, drain_events, ready_client

from mcp_sansio import (
    ClientConfig,
    CloseInput,
    ConnectionTerminated,
    DiscardReason,
    FailureReason,
    InitializeFailed,
    InterruptProcess,
    MessageDiscarded,
    MessageTooLarge,
    NotificationReceived,
    RemoteProtocolError,
    RequestFailed,
    ResponseReceived,
    StdioClient,
)

SERVER = ScriptedServer()
LIMIT = 400  # max_line_bytes that still fits the handshake answer


def _walk_ladder(client: StdioClient) -> list[tuple[float, str]]:
    """Fire every ladder deadline in turn; each action with the time it was given."""
    steps = []
    while (at := client.next_deadline()) is not None:
        client.handle_timeout(at)
        steps += [(at, type(action).__name__) for action in drain_actions(client)]
    return steps


def test_data_to_send_is_empty_when_nothing_is_queued() -> None:
    client = ready_client()
    assert client.data_to_send() == b""


def test_messages_are_written_one_per_line() -> None:
    client = ready_client()
    client.ping(now=0.0)
    client.ping(now=0.0)
    data = client.data_to_send()
    assert data.count(b"\n") == 2
    assert data.endswith(b"\n")
    assert client.data_to_send() == b""


def test_answer_split_across_reads_is_reassembled() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    line = SERVER.result(rid, {})
    client.receive_data(line[:10], 0.0)
    assert drain_events(client) == []
    client.receive_data(line[10:], 0.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


def test_crlf_lines_are_accepted() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    client.receive_data(SERVER.result(rid, {}).replace(b"\n", b"\r\n"), 0.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


def test_close_runs_the_shutdown_ladder_at_the_default_delays() -> None:
    client = ready_client()
    client.close(now=10.0)
    assert drain_actions(client) == [CloseInput()]
    assert _walk_ladder(client) == [
        (11.0, "InterruptProcess"), (11.5, "TerminateProcess"), (12.0, "KillProcess")
    ]
    assert client.next_deadline() is None


def test_default_ladder_reaches_sigkill_within_two_seconds() -> None:
    cfg = ClientConfig()
    assert cfg.shutdown_close_delay + cfg.shutdown_interrupt_delay + cfg.shutdown_terminate_delay <= 2.0


def test_ladder_follows_the_configured_delays() -> None:
    client = ready_client(
        shutdown_close_delay=0.25, shutdown_interrupt_delay=0.0, shutdown_terminate_delay=3.0
    )
    client.close(now=0.0)
    drain_actions(client)
    assert _walk_ladder(client) == [
        (0.25, "InterruptProcess"), (0.25, "TerminateProcess"), (3.25, "KillProcess")
    ]


def test_ladder_step_is_not_taken_early() -> None:
    client = ready_client()
    client.close(now=0.0)
    drain_actions(client)
    client.handle_timeout(0.999)
    assert drain_actions(client) == []
    assert client.next_deadline() == 1.0


def test_close_fails_pending_requests_first() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    client.close(now=1.0)
    assert drain_events(client) == [
        RequestFailed(request_id=rid, method="ping", reason=FailureReason.CONNECTION_LOST,
                      message="the client closed the connection"),
        ConnectionTerminated(reason=FailureReason.CONNECTION_LOST,
                             message="the client closed the connection"),
    ]


def test_close_during_the_handshake_fails_it() -> None:
    client = StdioClient()
    client.initialize(now=0.0)
    client.close(now=0.0, message="shutting down")
    assert drain_events(client)[0] == InitializeFailed(
        reason=FailureReason.CONNECTION_LOST, message="shutting down"
    )
    assert drain_actions(client) == [CloseInput()]


def test_close_twice_starts_the_ladder_once() -> None:
    client = ready_client()
    client.close(now=0.0)
    client.close(now=0.5)
    assert drain_actions(client) == [CloseInput()]
    assert client.next_deadline() == 1.0


def test_process_exit_stops_the_ladder() -> None:
    client = ready_client()
    client.close(now=0.0)
    client.handle_timeout(1.0)
    assert drain_actions(client) == [CloseInput(), InterruptProcess()]
    client.process_exited(-2, 1.2)
    assert client.next_deadline() is None
    client.handle_timeout(5.0)
    assert drain_actions(client) == []


def test_eof_starts_the_ladder_and_keeps_requests_pending() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    client.receive_data(b"", 1.0)
    assert drain_actions(client) == [CloseInput()]
    assert drain_events(client) == []
    assert client.pending_requests() == [rid]


def test_exit_after_eof_fails_pending_requests_with_the_returncode() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    client.receive_data(b"", 1.0)
    client.process_exited(3, 1.1)
    assert drain_events(client) == [
        RequestFailed(request_id=rid, method="ping", reason=FailureReason.CONNECTION_LOST,
                      message="the server process exited"),
        ConnectionTerminated(reason=FailureReason.CONNECTION_LOST,
                             message="the server process exited", returncode=3),
    ]
    assert client.next_deadline() is None


def test_exit_without_eof_fails_pending_requests_and_takes_no_action() -> None:
    client = ready_client()
    client.ping(now=0.0)
    client.process_exited(0, 1.0)
    assert [type(e) for e in drain_events(client)] == [RequestFailed, ConnectionTerminated]
    assert drain_actions(client) == []
    client.close(now=2.0)
    assert drain_actions(client) == []


def test_eof_delivers_the_final_unterminated_line_first() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    client.receive_data(SERVER.result(rid, {}).rstrip(b"\n"), 0.0)
    assert drain_events(client) == []
    client.receive_data(b"", 0.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


def test_server_that_never_exits_is_given_up_after_sigkill() -> None:
    client = ready_client()
    rid = client.ping(now=0.0, timeout=100.0)
    client.receive_data(b"", 0.0)
    drain_actions(client)
    assert _walk_ladder(client) == [
        (1.0, "InterruptProcess"), (1.5, "TerminateProcess"), (2.0, "KillProcess")
    ]
    assert drain_events(client) == [
        RequestFailed(request_id=rid, method="ping", reason=FailureReason.CONNECTION_LOST,
                      message="the server closed its stdout and did not exit after SIGKILL"),
        ConnectionTerminated(reason=FailureReason.CONNECTION_LOST,
                             message="the server closed its stdout and did not exit after SIGKILL"),
    ]


def test_request_deadline_and_ladder_share_next_deadline() -> None:
    client = ready_client()
    client.ping(now=0.0, timeout=0.5)
    client.receive_data(b"", 0.0)
    assert client.next_deadline() == 0.5
    client.handle_timeout(0.5)
    assert [type(e) for e in drain_events(client)] == [RequestFailed]
    assert client.next_deadline() == 1.0


def test_data_after_eof_is_ignored() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    client.receive_data(b"", 0.0)
    client.receive_data(SERVER.result(rid, {}), 0.1)
    client.receive_data(b"", 0.2)
    assert drain_events(client) == []
    assert drain_actions(client) == [CloseInput()]


def test_oversized_line_fails_everything_with_message_too_large() -> None:
    client = ready_client(max_line_bytes=LIMIT)
    rid = client.ping(now=0.0)
    client.receive_data(b"x" * (LIMIT + 1) + b"\n", 1.0)
    message = f"the server sent a line longer than max_line_bytes ({LIMIT})"
    assert drain_events(client) == [
        RequestFailed(request_id=rid, method="ping", reason=FailureReason.MESSAGE_TOO_LARGE, message=message),
        ConnectionTerminated(reason=FailureReason.MESSAGE_TOO_LARGE, message=message),
    ]
    assert drain_actions(client) == [CloseInput()]
    assert client.next_deadline() == 2.0


def test_oversized_failure_converts_to_message_too_large() -> None:
    client = ready_client(max_line_bytes=LIMIT)
    client.ping(now=0.0)
    client.receive_data(b"y" * (LIMIT + 1), 0.0)  # no newline needed: the bound is already passed
    event = drain_events(client)[0]
    assert isinstance(event, RequestFailed)
    exc = event.to_exception()
    assert isinstance(exc, MessageTooLarge)
    assert isinstance(exc, RemoteProtocolError)


def test_lines_before_an_oversized_line_are_still_delivered() -> None:
    client = ready_client(max_line_bytes=LIMIT)
    rid = client.ping(now=0.0)
    oversized = b"z" * (2 * LIMIT) + b"\n"
    client.receive_data(SERVER.result(rid, {}) + oversized + SERVER.notification("vendor/n"), 0.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived, ConnectionTerminated]


def test_strict_mode_fails_the_connection_on_a_banner() -> None:
    client = ready_client(skip_non_json_lines=False)
    rid = client.ping(now=0.0)
    client.receive_data(b"Starting server...\n" + SERVER.result(rid, {}), 1.0)
    events = drain_events(client)
    assert [type(e) for e in events] == [RequestFailed, ConnectionTerminated]
    assert isinstance(events[0], RequestFailed)
    assert events[0].reason is FailureReason.PROTOCOL_ERROR
    assert events[0].message.startswith("the server wrote a line that is not JSON-RPC: not JSON: ")
    assert isinstance(events[0].to_exception(), RemoteProtocolError)
    assert drain_actions(client) == [CloseInput()]
    assert client.next_deadline() == 2.0


def test_strict_mode_fails_the_connection_on_invalid_utf8() -> None:
    client = ready_client(skip_non_json_lines=False)
    client.receive_data(b"\xc3\x28\n", 0.0)
    [event] = drain_events(client)
    assert isinstance(event, ConnectionTerminated)
    assert event.reason is FailureReason.PROTOCOL_ERROR


def test_strict_mode_still_only_discards_json_that_is_not_json_rpc() -> None:
    client = ready_client(skip_non_json_lines=False)
    client.receive_data(b'{"hello":"world"}\n' + SERVER.notification("vendor/n"), 0.0)
    assert [type(e) for e in drain_events(client)] == [MessageDiscarded, NotificationReceived]
    assert drain_actions(client) == []


def test_strict_mode_ignores_garbage_in_a_closed_session() -> None:
    client = ready_client(skip_non_json_lines=False)
    client.session.connection_lost("gone", now=0.0)
    drain_events(client)
    client.session.receive_message(b"garbage", 0.0)
    [event] = drain_events(client)
    assert isinstance(event, MessageDiscarded)
    assert event.reason is DiscardReason.NOT_JSON

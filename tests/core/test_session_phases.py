"""The lifecycle table (every phase against every trigger) and the end of a connection."""

from __future__ import annotations

import pytest
from helpers import ScriptedServer, drain_events, ready_client, take_messages

from mcp_sansio import (
    ClientConfig,
    ConnectionClosed,
    ConnectionTerminated,
    FailureReason,
    LocalProtocolError,
    Phase,
    RequestFailed,
    StdioClient,
)
from mcp_sansio.session import TRANSITIONS, ClientSession, Trigger
from mcp_sansio.types import ClientCapabilities


def _session_in(phase: Phase) -> ClientSession:
    session = ClientSession(ClientConfig(), ClientCapabilities())
    session._phase = phase
    return session


@pytest.mark.parametrize(
    ("phase", "trigger", "to"),
    [
        (Phase.NEW, Trigger.SEND_INITIALIZE, Phase.INITIALIZING),
        (Phase.INITIALIZING, Trigger.RETRY_INITIALIZE, Phase.INITIALIZING),
        (Phase.INITIALIZING, Trigger.RECV_INITIALIZE_RESULT, Phase.READY),
        (Phase.INITIALIZING, Trigger.RECV_INITIALIZE_FAILURE, Phase.FAILED),
        *((p, Trigger.CONNECTION_LOST, Phase.CLOSED) for p in Phase),
    ],
)
def test_lifecycle_rows(phase: Phase, trigger: Trigger, to: Phase) -> None:
    assert TRANSITIONS[phase, trigger] is to


@pytest.mark.parametrize(
    ("phase", "trigger"),
    [
        (Phase.INITIALIZING, Trigger.SEND_INITIALIZE),  # initialize() twice
        (Phase.READY, Trigger.SEND_INITIALIZE),
        (Phase.NEW, Trigger.RETRY_INITIALIZE),
        (Phase.READY, Trigger.RECV_INITIALIZE_RESULT),
        (Phase.FAILED, Trigger.SEND_INITIALIZE),
        (Phase.CLOSED, Trigger.SEND_INITIALIZE),
    ],
)
def test_forbidden_lifecycle_steps(phase: Phase, trigger: Trigger) -> None:
    assert (phase, trigger) not in TRANSITIONS


def test_connection_lost_fails_every_pending_request() -> None:
    client = ready_client()
    a, b = client.ping(now=0.0), client.list_tools(now=0.0)
    client.session.connection_lost("the pipe broke", now=0.0, returncode=-9)
    assert drain_events(client) == [
        RequestFailed(request_id=a, method="ping", reason=FailureReason.CONNECTION_LOST,
                      message="the pipe broke"),
        RequestFailed(request_id=b, method="tools/list", reason=FailureReason.CONNECTION_LOST,
                      message="the pipe broke"),
        ConnectionTerminated(reason=FailureReason.CONNECTION_LOST, message="the pipe broke", returncode=-9),
    ]
    assert client.phase is Phase.CLOSED
    assert client.pending_requests() == []
    assert client.next_deadline() is None


def test_connection_lost_failure_converts_to_connection_closed() -> None:
    client = ready_client()
    client.ping(now=0.0)
    client.session.connection_lost("gone", now=0.0)
    event = drain_events(client)[0]
    assert isinstance(event, RequestFailed)
    exc = event.to_exception(returncode=3, stderr_tail="line one\nfatal: boom\n")
    assert isinstance(exc, ConnectionClosed)
    assert (exc.returncode, exc.stderr_tail, exc.reason) == (3, "line one\nfatal: boom\n", "gone")
    assert str(exc) == "gone (exit status 3); stderr: fatal: boom"


def test_connection_lost_twice_reports_once() -> None:
    client = ready_client()
    client.session.connection_lost("first", now=0.0)
    drain_events(client)
    client.session.connection_lost("second", now=0.0)
    assert drain_events(client) == []


def test_connection_lost_before_initialize_only_terminates() -> None:
    session = ClientSession(ClientConfig(), ClientCapabilities())
    session.connection_lost("never started", now=0.0)
    assert drain_events(session) == [
        ConnectionTerminated(reason=FailureReason.CONNECTION_LOST, message="never started")
    ]


def test_connection_lost_after_a_failed_handshake_closes() -> None:
    client = StdioClient()
    client.initialize(now=0.0)
    client.receive_data(ScriptedServer().error(1, -1, "no"), 0.0)
    drain_events(client)
    client.session.connection_lost("bye", now=0.0)
    assert [type(e) for e in drain_events(client)] == [ConnectionTerminated]
    assert client.phase is Phase.CLOSED


def test_nothing_can_be_sent_after_the_connection_ended() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    client.session.connection_lost("gone", now=0.0)
    take_messages(client)
    with pytest.raises(LocalProtocolError):
        client.ping(now=1.0)
    with pytest.raises(LocalProtocolError):
        client.notify("notifications/roots/list_changed", now=1.0)
    with pytest.raises(LocalProtocolError):
        client.cancel(rid, now=1.0)
    assert take_messages(client) == []


def test_failed_handshake_rejects_requests() -> None:
    client = StdioClient()
    client.initialize(now=0.0)
    client.handle_timeout(100.0)
    with pytest.raises(LocalProtocolError, match="failed"):
        client.ping(now=100.0)

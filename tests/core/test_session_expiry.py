"""The session side of an expiry (HTTP 404 on a live session): a new handshake, requests kept.

Transports call the ``_restart`` hook; these tests drive it on a bare session, so the
lifecycle rows for EXPIRED hold whatever transport triggers them.
"""

from __future__ import annotations

import json

import pytest
from helpers import ScriptedServer, drain_events

from mcp_sansio import (
    ClientConfig,
    FailureReason,
    InitializeCompleted,
    InitializeFailed,
    LocalProtocolError,
    Phase,
    RemoteProtocolError,
    RequestFailed,
    ResponseReceived,
)
from mcp_sansio.session import ClientSession
from mcp_sansio.types import ClientCapabilities

SERVER = ScriptedServer()


def _ready() -> ClientSession:
    session = ClientSession(ClientConfig(request_timeout=10.0), ClientCapabilities())
    session.initialize(now=0.0)
    session.receive_message(SERVER.initialize_result().rstrip(), 0.0)
    drain_events(session)
    session.messages_to_send()
    return session


def _methods(session: ClientSession) -> list[tuple[object, object]]:
    return [(m.get("id"), m["method"]) for m in map(json.loads, session.messages_to_send())]


def test_restart_sends_a_new_initialize_and_keeps_pending_requests() -> None:
    session = _ready()
    rid = session.ping(now=1.0)
    session.messages_to_send()
    session.session_expired(2.0)
    assert session.phase is Phase.INITIALIZING
    assert _methods(session) == [(rid + 1, "initialize")]
    assert session.pending_requests() == [rid]
    assert drain_events(session) == []


def test_requests_are_accepted_while_the_new_session_opens() -> None:
    session = _ready()
    session.session_expired(1.0)
    session.messages_to_send()
    rid = session.ping(now=1.0)
    assert _methods(session) == [(rid, "ping")]


def test_new_handshake_completes_and_old_requests_still_get_answers() -> None:
    session = _ready()
    rid = session.ping(now=1.0)
    session.session_expired(2.0)
    session.messages_to_send()
    session.receive_message(SERVER.initialize_result(rid + 1).rstrip(), 2.0)
    assert [type(e) for e in drain_events(session)] == [InitializeCompleted]
    assert _methods(session) == [(None, "notifications/initialized")]
    session.receive_message(SERVER.result(rid, {}).rstrip(), 3.0)
    assert [type(e) for e in drain_events(session)] == [ResponseReceived]


def test_failed_new_handshake_fails_the_waiting_requests_as_expired() -> None:
    session = _ready()
    rid = session.ping(now=1.0)
    session.session_expired(2.0)
    session.receive_message(SERVER.error(rid + 1, -32603, "no sessions left").rstrip(), 2.0)
    failed, init_failed = drain_events(session)
    assert isinstance(failed, RequestFailed)
    assert (failed.request_id, failed.reason) == (rid, FailureReason.SESSION_EXPIRED)
    assert isinstance(init_failed, InitializeFailed)
    assert session.phase is Phase.FAILED


def test_timeout_while_the_new_session_opens_sends_no_cancellation() -> None:
    session = _ready()
    rid = session.ping(now=0.0)
    session.session_expired(1.0)
    session.messages_to_send()
    session.handle_timeout(10.0)
    [event] = drain_events(session)
    assert isinstance(event, RequestFailed)
    assert (event.request_id, event.reason) == (rid, FailureReason.TIMEOUT)
    assert session.messages_to_send() == []  # no session to cancel it in


def test_restart_is_refused_before_the_first_handshake_blaming_the_peer() -> None:
    session = ClientSession(ClientConfig(), ClientCapabilities())
    session.initialize(now=0.0)
    with pytest.raises(RemoteProtocolError, match="recv-session-expired is not allowed while initializing"):
        session.session_expired(1.0)  # the server claimed a session expired that never began
    assert session.phase is Phase.INITIALIZING
    with pytest.raises(LocalProtocolError, match="send-initialize is not allowed while initializing"):
        session.initialize(now=2.0)  # the caller started twice

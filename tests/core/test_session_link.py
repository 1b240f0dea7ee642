"""The session's side of its transport: everything goes out through the Link the
transport gave it, with the request id it carries and the clock; the transport hears
each request end, vets results, reports a stall and may take garbage as fatal."""

from __future__ import annotations

import json

import msgspec
from helpers import ScriptedServer, drain_events

from mcp_sansio import ClientConfig, FailureReason
from mcp_sansio.events import (
    DiscardReason,
    InitializeFailed,
    MessageDiscarded,
    RequestFailed,
    ResponseReceived,
)
from mcp_sansio.session import ClientSession, Link
from mcp_sansio.types import ClientCapabilities, ListToolsResult

SERVER = ScriptedServer()


class Transport:
    """Records what the session asks of it."""

    def __init__(self, *, fatal_garbage: bool = False) -> None:
        self.sent: list[tuple[str | None, int | None, float]] = []
        self.ended: list[tuple[int, FailureReason | None, float]] = []
        self.ready: list[float] = []
        self.garbage: list[DiscardReason] = []
        self._fatal = fatal_garbage

    def link(self) -> Link:
        return Link(send=self._send, ready=self.ready.append, ended=self._ended, stall=lambda: "; stuck here",
                    vet=self._vet, garbage=self._garbage)

    def _send(self, message: bytes, request_id: int | None, now: float) -> None:
        self.sent.append((json.loads(message).get("method"), request_id, now))

    def _ended(self, request_id: int, reason: FailureReason | None, now: float) -> None:
        self.ended.append((request_id, reason, now))

    def _vet(self, method: str, result: msgspec.Struct, now: float) -> msgspec.Struct:
        if isinstance(result, ListToolsResult):
            return msgspec.structs.replace(result, tools=[t for t in result.tools if t.name != "hidden"])
        return result

    def _garbage(self, reason: DiscardReason, detail: str, now: float) -> bool:
        self.garbage.append(reason)
        return self._fatal


def _ready(transport: Transport) -> ClientSession:
    session = ClientSession(ClientConfig(request_timeout=10.0), ClientCapabilities(), transport.link())
    session.initialize(now=0.0)
    session.receive_message(SERVER.initialize_result().rstrip(), 0.5)
    drain_events(session)
    return session


def test_every_message_goes_through_the_link_with_its_request_id_and_the_clock() -> None:
    transport = Transport()
    session = _ready(transport)
    rid = session.call_tool("t", {}, now=1.0)
    session.notify("notifications/roots/list_changed", now=2.0)
    assert transport.sent == [("initialize", 1, 0.0), ("notifications/initialized", None, 0.5),
                              ("tools/call", rid, 1.0), ("notifications/roots/list_changed", None, 2.0)]
    assert transport.ready == [0.5]
    assert session.messages_to_send() == []  # nothing is queued when there is a link


def test_the_link_hears_each_request_end_answered_or_failed_with_its_cause() -> None:
    transport = Transport()
    session = _ready(transport)
    answered, timed_out, cancelled = (session.ping(now=1.0), session.ping(now=1.0), session.ping(now=1.0))
    session.receive_message(SERVER.result(answered, {}).rstrip(), 2.0)
    session.cancel(cancelled, now=3.0)
    session.handle_timeout(11.0)
    assert transport.ended == [(answered, None, 2.0), (cancelled, FailureReason.CANCELLED, 3.0),
                               (timed_out, FailureReason.TIMEOUT, 11.0)]


def test_a_failure_the_transport_reports_carries_its_status_and_detail() -> None:
    transport = Transport()
    session = _ready(transport)
    rid = session.ping(now=1.0)
    drain_events(session)
    session.fail_request(rid, FailureReason.HTTP_ERROR, "HTTP 502", now=2.0, status=502, detail={"body": "x"})
    session.fail_request(rid, FailureReason.HTTP_ERROR, "again", now=3.0)  # no longer pending: nothing
    (event,) = drain_events(session)
    assert isinstance(event, RequestFailed)
    assert (event.request_id, event.status, event.detail) == (rid, 502, {"body": "x"})
    assert transport.ended == [(rid, FailureReason.HTTP_ERROR, 2.0)]


def test_the_transport_vets_a_result_before_it_is_delivered() -> None:
    transport = Transport()
    session = _ready(transport)
    rid = session.list_tools(now=1.0)
    tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("shown", "hidden")]
    session.receive_message(SERVER.result(rid, {"tools": tools}).rstrip(), 2.0)
    (event,) = drain_events(session)
    assert isinstance(event, ResponseReceived) and isinstance(event.result, ListToolsResult)
    assert [t.name for t in event.result.tools] == ["shown"]


def test_a_handshake_timeout_says_where_the_transport_stalled() -> None:
    transport = Transport()
    session = ClientSession(ClientConfig(initialize_timeout=5.0), ClientCapabilities(), transport.link())
    session.initialize(now=0.0)
    session.handle_timeout(5.0)
    (event,) = drain_events(session)
    assert isinstance(event, InitializeFailed) and event.message.endswith("; stuck here")


def test_garbage_the_transport_takes_as_fatal_is_not_reported_as_a_discard() -> None:
    transport = Transport(fatal_garbage=True)
    session = _ready(transport)
    session.receive_message(b"not json", 1.0)
    session.receive_message(b'{"jsonrpc": "2.0"}', 1.0)  # JSON, but no JSON-RPC: never the transport's call
    events = drain_events(session)
    assert transport.garbage == [DiscardReason.NOT_JSON]
    assert [e.reason for e in events if isinstance(e, MessageDiscarded)] == [DiscardReason.NOT_JSON_RPC]


def test_garbage_the_transport_lets_pass_is_reported_as_a_discard() -> None:
    transport = Transport()
    session = _ready(transport)
    session.receive_message(b"\xff\xfe", 1.0)
    (event,) = drain_events(session)
    assert isinstance(event, MessageDiscarded) and event.reason is DiscardReason.INVALID_UTF8
    assert transport.garbage == [DiscardReason.INVALID_UTF8]


def test_a_session_without_a_link_queues_its_messages_for_the_caller() -> None:
    session = ClientSession(ClientConfig(), ClientCapabilities())
    session.initialize(now=0.0)
    session.receive_message(SERVER.initialize_result().rstrip(), 0.5)
    rid = session.read_resource("file:///a", now=1.0)
    methods = [(m.get("id"), m.get("method")) for m in map(json.loads, session.messages_to_send())]
    assert methods == [(1, "initialize"), (None, "notifications/initialized"), (rid, "resources/read")]

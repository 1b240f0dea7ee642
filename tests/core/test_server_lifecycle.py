"""The handshake era's lifecycle: initialize, version negotiation, initialized, ping, close."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from server_helpers import handshake, request, send, server_for, take, take_events

from mcp_sansio import (
    ConnectionTerminated,
    FailureReason,
    LocalProtocolError,
    NotificationReceived,
    RemoteProtocolError,
)
from mcp_sansio.server import ClientInitialized, MCPServer, Phase, ServerSession
from mcp_sansio.server.handshake import Handshake
from mcp_sansio.server.phases import TRANSITIONS, Trigger
from mcp_sansio.types import ClientCapabilities, Implementation, RootsCapability
from mcp_sansio.versions import VERSIONS

INIT = {"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
        "clientInfo": {"name": "c", "version": "1"}}


def test_initialize_answers_the_offered_version_with_server_info_and_capabilities() -> None:
    app = MCPServer("weather", version="2.0", instructions="Ask about the weather.")
    app.add_tool(lambda: "", name="t")
    server = server_for(app)
    send(server, request(1, "initialize", INIT))
    assert take(server) == [{"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"logging": {}, "tools": {"listChanged": True}},
        "serverInfo": {"name": "weather", "version": "2.0"},
        "instructions": "Ask about the weather.",
    }}]
    assert server.session.handshake.phase is Phase.INITIALIZING


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_a_supported_offer_is_accepted(version: str) -> None:
    server = server_for()
    assert handshake(server, version)["protocolVersion"] == version


@pytest.mark.parametrize("offer", ["2023-01-01", "2026-07-28", "nonsense"])
def test_an_unknown_offer_gets_the_preferred_version(offer: str) -> None:
    server = server_for()
    assert handshake(server, offer)["protocolVersion"] == "2025-11-25"


def test_the_configured_versions_bound_the_negotiation() -> None:
    server = server_for(protocol_versions=("2025-06-18",))
    assert handshake(server, "2025-11-25")["protocolVersion"] == "2025-06-18"


def test_initialized_completes_the_handshake() -> None:
    server = server_for()
    send(server, request(1, "initialize", INIT), {"jsonrpc": "2.0", "method": "notifications/initialized"})
    take(server)
    assert take_events(server) == [ClientInitialized(
        protocol_version="2025-11-25", client_info=Implementation(name="c", version="1"),
        capabilities=ClientCapabilities(roots=RootsCapability()),
    )]
    assert server.session.handshake.phase is Phase.READY
    assert server.session.handshake.client_info == Implementation(name="c", version="1")


def test_a_second_initialized_is_ignored() -> None:
    server = server_for()
    handshake(server)
    send(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert take_events(server) == [] and take(server) == []


def test_initialized_before_initialize_is_ignored() -> None:
    server = server_for()
    send(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert server.session.handshake.phase is Phase.NEW and take_events(server) == []


def test_a_request_before_initialize_is_refused() -> None:
    server = server_for()
    send(server, request(1, "tools/list"))
    [answer] = take(server)
    assert answer["error"]["code"] == -32600
    assert "not initialized" in answer["error"]["message"]


def test_ping_is_answered_before_initialize_too() -> None:
    server = server_for()
    send(server, request("p", "ping"))
    assert take(server) == [{"jsonrpc": "2.0", "id": "p", "result": {}}]


def test_a_second_initialize_is_refused() -> None:
    server = server_for()
    handshake(server)
    send(server, request(5, "initialize", INIT))
    [answer] = take(server)
    assert answer["error"]["code"] == -32600 and "already initialized" in answer["error"]["message"]


def test_requests_are_served_between_initialize_and_initialized() -> None:
    server = server_for()
    send(server, request(1, "initialize", INIT), request(2, "ping"))
    assert take(server)[1] == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_invalid_initialize_params_are_refused() -> None:
    server = server_for()
    send(server, request(1, "initialize", {"protocolVersion": 5}))
    [answer] = take(server)
    assert answer["error"]["code"] == -32602 and server.session.handshake.phase is Phase.NEW


def test_unknown_methods_are_not_found() -> None:
    server = server_for()
    handshake(server)
    send(server, request(1, "tools/explode"))
    assert take(server)[0]["error"] == {"code": -32601, "message": "Method not found: tools/explode"}


def test_a_stateless_era_method_without_its_meta_is_invalid() -> None:
    server = server_for()
    send(server, request(1, "server/discover"))
    [answer] = take(server)
    assert answer["error"]["code"] == -32602 and "_meta" in answer["error"]["message"]


def test_other_notifications_become_events() -> None:
    server = server_for()
    handshake(server)
    send(server, {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
         {"jsonrpc": "2.0", "method": "x/custom", "params": {"a": 1}})
    events = take_events(server)
    assert isinstance(events[0], NotificationReceived)
    assert events[0].method == "notifications/roots/list_changed"
    assert isinstance(events[1], NotificationReceived) and isinstance(events[1].params, msgspec.Raw)
    assert bytes(events[1].params) == b'{"a":1}'


def test_a_known_notification_with_bad_params_is_discarded() -> None:
    server = server_for()
    send(server, {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": "x"}})
    [event] = take_events(server)
    assert type(event).__name__ == "MessageDiscarded"


def test_close_ends_the_session_once() -> None:
    server = server_for()
    handshake(server)
    server.receive_data(b"", 1.0)
    assert take_events(server) == [ConnectionTerminated(
        reason=FailureReason.CONNECTION_LOST, message="the client closed its end of the stream")]
    assert server.session.handshake.phase is Phase.CLOSED
    server.session.close(2.0)
    assert take_events(server) == []


def test_a_closed_session_takes_no_more_input() -> None:
    server = server_for()
    server.receive_data(b"", 0.0)
    with pytest.raises(LocalProtocolError, match="closed"):
        server.session.receive_message(b"{}", 1.0)


def test_an_unterminated_last_line_is_served_at_eof() -> None:
    server = server_for()
    server.receive_data(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', 0.0)
    assert take(server) == []
    server.receive_data(b"", 0.1)
    assert take(server) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


_REACH = {Phase.NEW: [], Phase.INITIALIZING: [Trigger.RECV_INITIALIZE],
          Phase.READY: [Trigger.RECV_INITIALIZE, Trigger.RECV_INITIALIZED], Phase.CLOSED: [Trigger.CLOSE]}


@given(st.sampled_from(Phase), st.sampled_from(Trigger))
def test_the_phase_table_decides_every_transition(phase: Phase, trigger: Trigger) -> None:
    agreed = ServerSession(MCPServer("s"), server_for()).handshake
    for move in _REACH[phase]:
        assert agreed.advance(move)
    expected = TRANSITIONS.get((phase, trigger))
    assert agreed.advance(trigger) is (expected is not None)
    assert agreed.phase is (phase if expected is None else expected)


def test_a_stored_session_resumes_ready_with_what_was_agreed() -> None:
    agreed = Handshake("sid")
    client = Implementation(name="c", version="1")
    agreed.resume(protocol_version="2025-06-18", client_info=client, client_capabilities=ClientCapabilities(),
                  log_level="info", subscriptions={"file:///a"})
    assert (agreed.phase, agreed.protocol_version, agreed.client_info) == (Phase.READY, "2025-06-18", client)
    assert agreed.rules is VERSIONS["2025-06-18"] and set(agreed.subscriptions) == {"file:///a"}
    with pytest.raises(LocalProtocolError, match="resume from the session store is not allowed"):
        agreed.resume(protocol_version="2025-06-18", client_info=client,
                      client_capabilities=ClientCapabilities(), log_level=None, subscriptions=set())


def test_a_second_initialize_is_the_clients_mistake_and_changes_nothing() -> None:
    agreed = Handshake()
    client = Implementation(name="c", version="1")
    agreed.initialize("2025-06-18", VERSIONS["2025-06-18"], client, ClientCapabilities())
    with pytest.raises(RemoteProtocolError, match="receive initialize is not allowed while the session is"):
        agreed.initialize("2025-11-25", VERSIONS["2025-11-25"], client, ClientCapabilities())
    assert (agreed.phase, agreed.protocol_version) == (Phase.INITIALIZING, "2025-06-18")

"""The ``server/discover`` probe: the stateless era adopted, or the ``initialize`` fallback.

stdio "Backward Compatibility" (2026-07-28): a ``DiscoverResult`` or an
``UnsupportedProtocolVersionError`` (``-32022``) means a modern server; any other error,
or silence until ``discover_timeout``, means a legacy one. A pinned revision speaks only
itself.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from helpers import SERVER_CAPABILITIES, drain_events, take_messages
from modern_helpers import (
    CAPABILITIES,
    CAPABILITIES_JSON,
    CLIENT_INFO,
    MODERN,
    MODERN_SERVER,
    Json,
    add_later_modern_version,
    discover_result,
    modern_meta,
)

from mcp_sansio import (
    ClientConfig,
    ConnectionTerminated,
    ErrorData,
    FailureReason,
    InitializeCompleted,
    InitializeFailed,
    LocalProtocolError,
    Phase,
    StdioClient,
)
from mcp_sansio.types import Implementation, InitializeResult, ServerCapabilities

SERVER = MODERN_SERVER


def _capabilities(capabilities: Json = SERVER_CAPABILITIES) -> ServerCapabilities:
    return msgspec.convert(capabilities, ServerCapabilities)


def _probing(**config: Any) -> StdioClient:
    """A client whose probe (id 1) is out, its line already taken."""
    client = StdioClient(ClientConfig(**config), CAPABILITIES)
    client.start(now=0.0)
    client.data_to_send()
    return client


def _discover(request_id: int, version: str = MODERN) -> Json:
    return {"jsonrpc": "2.0", "id": request_id, "method": "server/discover",
            "params": {"_meta": modern_meta(version=version)}}


def _initialize(request_id: int, version: str = "2025-11-25") -> Json:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": CAPABILITIES_JSON,
                       "clientInfo": CLIENT_INFO}}


def _unsupported(supported: object, request_id: int = 1) -> bytes:
    return SERVER.error(request_id, -32022, "Unsupported protocol version",
                        {"supported": supported, "requested": MODERN})


# -- the probe ------------------------------------------------------------------------------


def test_auto_start_probes_with_server_discover_and_its_meta() -> None:
    client = StdioClient(ClientConfig(), CAPABILITIES)
    client.start(now=0.0)
    assert take_messages(client) == [_discover(1)]
    assert client.phase is Phase.INITIALIZING
    assert client.era is None


def test_probe_waits_discover_timeout() -> None:
    client = _probing(discover_timeout=1.5)
    assert client.next_deadline() == 1.5


def test_discover_result_completes_the_modern_era() -> None:
    client = _probing()
    client.receive_data(discover_result(instructions="use the tools"), 0.5)
    capabilities = _capabilities()
    info = Implementation(name="scripted", version="1.0")
    assert drain_events(client) == [InitializeCompleted(
        protocol_version=MODERN, server_info=info, capabilities=capabilities, instructions="use the tools",
        result=InitializeResult(protocol_version=MODERN, capabilities=capabilities, server_info=info,
                                instructions="use the tools"),
    )]
    assert (client.era, client.phase, client.protocol_version) == ("modern", Phase.READY, MODERN)
    assert client.rules is not None and client.rules.version == MODERN
    assert (client.server_info, client.server_capabilities, client.instructions) == (
        info, capabilities, "use the tools")


def test_modern_era_sends_no_initialized_notification() -> None:
    client = _probing()
    client.receive_data(discover_result(), 0.0)
    assert take_messages(client) == []
    assert client.next_deadline() is None


def test_discover_result_without_server_info_leaves_it_blank() -> None:
    client = _probing()
    client.receive_data(discover_result(server_info=None), 0.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeCompleted)
    assert event.server_info == Implementation(name="", version="")


def test_malformed_server_info_is_ignored() -> None:
    client = _probing()
    client.receive_data(discover_result(server_info={"name": 5}), 0.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeCompleted)
    assert event.server_info == Implementation(name="", version="")


def test_lenient_discover_result_with_only_supported_versions_is_enough() -> None:
    client = _probing()
    client.receive_data(SERVER.result(1, {"supportedVersions": [MODERN]}), 0.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeCompleted)
    assert event.capabilities == ServerCapabilities()
    assert client.era == "modern"


# -- falling back to initialize ----------------------------------------------------------------


@pytest.mark.parametrize("code", [-32601, -32602, -32600, -32603, -32000, -32021, 1])
def test_any_other_error_falls_back_to_initialize(code: int) -> None:
    client = _probing()
    client.receive_data(SERVER.error(1, code, "no such method before initialize"), 0.5)
    assert drain_events(client) == []
    assert take_messages(client) == [_initialize(2)]
    assert client.next_deadline() == 30.0  # the connect's one deadline, from the probe's start
    assert client.era is None


def test_old_draft_code_32001_is_not_evidence_of_a_modern_server() -> None:
    client = _probing()
    client.receive_data(SERVER.error(1, -32001, "Unsupported protocol version",
                                     {"supported": [MODERN], "requested": MODERN}), 0.0)
    assert take_messages(client) == [_initialize(2)]


def test_fallback_completes_the_legacy_era() -> None:
    client = _probing()
    client.receive_data(SERVER.error(1, -32601, "Method not found"), 0.0)
    client.data_to_send()
    client.receive_data(SERVER.initialize_result(2, version="2025-11-25"), 0.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeCompleted)
    assert (client.era, event.protocol_version) == ("legacy", "2025-11-25")
    assert take_messages(client) == [{"jsonrpc": "2.0", "method": "notifications/initialized"}]


@pytest.mark.parametrize("supported", [["2025-11-25"], [], ["1999-01-01"]],
                         ids=["legacy-only", "empty", "unknown"])
def test_discover_result_naming_no_modern_version_falls_back(supported: list[str]) -> None:
    client = _probing()
    client.receive_data(discover_result(versions=tuple(supported)), 0.0)
    assert drain_events(client) == []
    assert take_messages(client) == [_initialize(2)]


@pytest.mark.parametrize("result", [{}, "yes", {"supportedVersions": MODERN}, {"supportedVersions": [1]}],
                         ids=["empty-object", "string", "versions-not-a-list", "versions-not-strings"])
def test_undecodable_discover_result_falls_back(result: object) -> None:
    client = _probing()
    client.receive_data(SERVER.result(1, result), 0.0)
    assert drain_events(client) == []
    assert take_messages(client) == [_initialize(2)]


def test_unanswered_probe_falls_back_at_discover_timeout() -> None:
    client = _probing()
    client.handle_timeout(2.9)
    assert take_messages(client) == []
    client.handle_timeout(3.0)
    assert drain_events(client) == []
    assert take_messages(client) == [_initialize(2)]
    assert client.next_deadline() == 30.0  # what is left of initialize_timeout, not a fresh one


def test_the_blind_probe_takes_at_most_half_of_a_short_initialize_timeout() -> None:
    client = _probing(initialize_timeout=4.0)
    assert client.next_deadline() == 2.0  # not discover_timeout's 3 s
    client.handle_timeout(2.0)
    assert take_messages(client) == [_initialize(2)]
    assert client.next_deadline() == 4.0


def test_a_server_that_answers_nothing_fails_within_initialize_timeout_saying_what_waited() -> None:
    client = _probing(initialize_timeout=3.0)
    client.handle_timeout(1.5)  # the probe's half
    client.data_to_send()
    client.handle_timeout(3.25)  # the timer fired a little late
    assert drain_events(client) == [InitializeFailed(
        reason=FailureReason.TIMEOUT,
        message="the server did not complete the handshake within 3.2 s (initialize_timeout 3 s):"
                " initialize went unanswered for 1.8 s, after server/discover (1.5 s)")]


def test_late_discover_answer_after_the_fallback_is_ignored() -> None:
    client = _probing()
    client.handle_timeout(3.0)
    client.data_to_send()
    client.receive_data(discover_result(), 4.0)
    assert drain_events(client) == []
    assert take_messages(client) == []
    client.receive_data(SERVER.initialize_result(2, version="2025-11-25"), 4.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeCompleted)
    assert client.era == "legacy"


def test_late_discover_error_after_the_fallback_is_ignored() -> None:
    client = _probing()
    client.handle_timeout(3.0)
    client.data_to_send()
    client.receive_data(_unsupported([MODERN]), 4.0)
    assert drain_events(client) == []
    assert take_messages(client) == []
    assert client.phase is Phase.INITIALIZING


def test_auto_without_modern_versions_initializes_at_once() -> None:
    client = StdioClient(ClientConfig(modern_versions=()), CAPABILITIES)
    client.start(now=0.0)
    assert take_messages(client) == [_initialize(1)]


# -- UnsupportedProtocolVersionError ----------------------------------------------------------------


def test_unsupported_version_naming_a_mutual_modern_version_asks_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    later = add_later_modern_version(monkeypatch)
    client = _probing(modern_versions=(later, MODERN))
    client.receive_data(_unsupported([MODERN, "2025-11-25"]), 0.5)
    assert drain_events(client) == []
    assert take_messages(client) == [_discover(2, MODERN)]
    assert client.next_deadline() == 30.0  # a modern server: the connect's deadline
    client.receive_data(discover_result(2), 1.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeCompleted)
    assert event.protocol_version == MODERN


def test_first_probe_goes_at_the_preferred_modern_version(monkeypatch: pytest.MonkeyPatch) -> None:
    later = add_later_modern_version(monkeypatch)
    client = StdioClient(ClientConfig(modern_versions=(later, MODERN)), CAPABILITIES)
    client.start(now=0.0)
    assert take_messages(client) == [_discover(1, later)]


def test_unsupported_version_listing_only_legacy_versions_falls_back() -> None:
    client = _probing()
    client.receive_data(_unsupported(["2025-11-25", "2025-06-18"]), 0.0)
    assert drain_events(client) == []
    assert take_messages(client) == [_initialize(2)]


def test_unsupported_version_listing_only_unknown_modern_versions_fails() -> None:
    client = _probing()
    client.receive_data(_unsupported(["2030-01-01", "2031-01-01"]), 0.0)
    assert drain_events(client) == [InitializeFailed(
        reason=FailureReason.UNSUPPORTED_VERSION, message="the server supports only 2030-01-01, 2031-01-01",
        offered=MODERN, received=("2030-01-01", "2031-01-01"),
    )]
    assert take_messages(client) == []
    assert client.phase is Phase.FAILED
    assert client.next_deadline() is None


def test_unsupported_version_listing_the_tried_version_is_retried_once() -> None:
    client = _probing()
    client.receive_data(_unsupported([MODERN]), 0.0)
    assert drain_events(client) == []
    assert take_messages(client) == [_discover(2)]


@pytest.mark.parametrize("protocol", ["auto", MODERN])
def test_silence_after_a_modern_answer_is_a_handshake_timeout(protocol: str) -> None:
    client = _probing(protocol=protocol)
    client.receive_data(_unsupported([MODERN]), 0.0)
    client.data_to_send()
    client.handle_timeout(29.0)
    assert drain_events(client) == []
    client.handle_timeout(30.0)
    assert drain_events(client) == [InitializeFailed(
        reason=FailureReason.TIMEOUT,
        message="the server did not complete the handshake within 30.0 s (initialize_timeout 30 s):"
                " server/discover went unanswered for 30.0 s, after server/discover (0.0 s)")]
    assert take_messages(client) == []


def test_unsupported_version_listing_the_tried_version_twice_fails() -> None:
    client = _probing()
    client.receive_data(_unsupported([MODERN]), 0.0)
    client.data_to_send()
    client.receive_data(_unsupported([MODERN], 2), 0.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert (event.reason, event.received) == (FailureReason.UNSUPPORTED_VERSION, (MODERN,))
    assert take_messages(client) == []


@pytest.mark.parametrize("data", [None, {"requested": MODERN}, {"supported": []}, {"supported": MODERN}, [1]],
                         ids=["no-data", "no-list", "empty-list", "not-a-list", "data-not-an-object"])
def test_unsupported_version_without_a_list_falls_back(data: object) -> None:
    client = _probing()
    client.receive_data(SERVER.error(1, -32022, "Unsupported protocol version", data), 0.0)
    assert take_messages(client) == [_initialize(2)]


def test_discover_result_naming_another_mutual_version_asks_again(monkeypatch: pytest.MonkeyPatch) -> None:
    later = add_later_modern_version(monkeypatch)
    client = _probing(modern_versions=(later, MODERN))
    client.receive_data(discover_result(versions=(MODERN,)), 0.0)
    assert drain_events(client) == []
    assert take_messages(client) == [_discover(2, MODERN)]


def test_discover_results_contradicting_each_other_fail_instead_of_looping(
        monkeypatch: pytest.MonkeyPatch) -> None:
    later = add_later_modern_version(monkeypatch)
    client = _probing(modern_versions=(later, MODERN))
    client.receive_data(discover_result(versions=(MODERN,)), 0.0)
    client.data_to_send()
    client.receive_data(discover_result(2, versions=(later,)), 0.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert (event.reason, event.offered, event.received) == (
        FailureReason.UNSUPPORTED_VERSION, MODERN, (later,))
    assert take_messages(client) == []


def test_discover_result_listing_the_asked_version_is_adopted(monkeypatch: pytest.MonkeyPatch) -> None:
    later = add_later_modern_version(monkeypatch)
    client = _probing(modern_versions=(later, MODERN))
    client.receive_data(_unsupported([MODERN]), 0.0)
    client.data_to_send()
    # It refused the later revision, then lists it: what it answered at wins.
    client.receive_data(discover_result(2, versions=(later, MODERN)), 0.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeCompleted)
    assert event.protocol_version == MODERN


# -- pinned revisions -------------------------------------------------------------------------


def test_pinned_modern_probes_with_the_handshake_deadline() -> None:
    client = StdioClient(ClientConfig(protocol=MODERN, initialize_timeout=10.0), CAPABILITIES)
    client.start(now=0.0)
    assert take_messages(client) == [_discover(1)]
    assert client.next_deadline() == 10.0


def test_pinned_modern_completes_on_a_discover_result() -> None:
    client = _probing(protocol=MODERN)
    client.receive_data(discover_result(), 0.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeCompleted)
    assert client.era == "modern"


def test_pinned_modern_fails_on_an_error_response() -> None:
    client = _probing(protocol=MODERN)
    client.receive_data(SERVER.error(1, -32601, "Method not found", {"method": "server/discover"}), 0.0)
    assert drain_events(client) == [InitializeFailed(
        reason=FailureReason.ERROR_RESPONSE,
        message="server/discover failed: Method not found (JSON-RPC error -32601)",
        error=ErrorData(code=-32601, message="Method not found", data={"method": "server/discover"}),
    )]
    assert take_messages(client) == []
    assert client.phase is Phase.FAILED


def test_pinned_modern_fails_on_timeout() -> None:
    client = _probing(protocol=MODERN)
    client.handle_timeout(29.0)
    assert drain_events(client) == []
    client.handle_timeout(30.0)
    assert drain_events(client) == [InitializeFailed(
        reason=FailureReason.TIMEOUT,
        message="the server did not complete the handshake within 30.0 s (initialize_timeout 30 s):"
                " server/discover went unanswered for 30.0 s")]
    assert take_messages(client) == []
    assert client.next_deadline() is None


@pytest.mark.parametrize("supported", [["2025-11-25"], []], ids=["legacy-only", "empty"])
def test_pinned_modern_fails_when_the_result_names_no_mutual_version(supported: list[str]) -> None:
    client = _probing(protocol=MODERN)
    client.receive_data(discover_result(versions=tuple(supported)), 0.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert (event.reason, event.offered, event.received) == (
        FailureReason.UNSUPPORTED_VERSION, MODERN, tuple(supported))
    assert take_messages(client) == []


def test_pinned_modern_fails_on_an_invalid_discover_result() -> None:
    client = _probing(protocol=MODERN)
    client.receive_data(SERVER.result(1, {}), 0.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert event.reason is FailureReason.INVALID_RESULT
    assert event.message.startswith("invalid server/discover result: ")


def test_pinned_modern_does_not_fall_back_to_listed_legacy_versions() -> None:
    client = _probing(protocol=MODERN)
    client.receive_data(_unsupported(["2025-11-25"]), 0.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert event.reason is FailureReason.UNSUPPORTED_VERSION
    assert take_messages(client) == []


def test_pinned_modern_asks_at_no_other_modern_version(monkeypatch: pytest.MonkeyPatch) -> None:
    later = add_later_modern_version(monkeypatch)
    client = _probing(protocol=MODERN, modern_versions=(later, MODERN))
    client.receive_data(_unsupported([later]), 0.0)
    (event,) = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert take_messages(client) == []


def test_pinned_legacy_initializes_at_once_without_a_probe() -> None:
    client = StdioClient(ClientConfig(protocol="2025-11-25"), CAPABILITIES)
    client.start(now=0.0)
    assert take_messages(client) == [_initialize(1)]
    assert client.next_deadline() == 30.0


def test_pinned_legacy_outside_protocol_versions_still_initializes_at_it() -> None:
    client = StdioClient(ClientConfig(protocol="2025-06-18", protocol_versions=("2025-11-25",)), CAPABILITIES)
    client.start(now=0.0)
    assert take_messages(client) == [_initialize(1, "2025-06-18")]


# -- misuse and endings ----------------------------------------------------------------------------


def test_start_twice_is_refused_and_sends_nothing() -> None:
    client = _probing()
    with pytest.raises(LocalProtocolError):
        client.start(now=0.0)
    assert take_messages(client) == []
    assert client.next_deadline() == 3.0


def test_initialize_during_the_probe_is_refused() -> None:
    client = _probing()
    with pytest.raises(LocalProtocolError):
        client.initialize(now=0.0)
    assert take_messages(client) == []


def test_probe_cannot_be_cancelled() -> None:
    client = _probing()
    with pytest.raises(LocalProtocolError, match="cannot be cancelled"):
        client.cancel(1, now=0.0)


def test_requests_during_the_probe_are_refused() -> None:
    client = _probing()
    with pytest.raises(LocalProtocolError, match="initializing"):
        client.call_tool("t", now=0.0)


def test_connection_lost_during_the_probe_fails_it() -> None:
    client = _probing()
    client.session.connection_lost("gone", now=0.0)
    assert drain_events(client) == [
        InitializeFailed(reason=FailureReason.CONNECTION_LOST, message="gone"),
        ConnectionTerminated(reason=FailureReason.CONNECTION_LOST, message="gone"),
    ]
    client.handle_timeout(100.0)
    assert drain_events(client) == []
    assert take_messages(client) == []


# -- the transport's hook: the probe failed without a JSON-RPC answer (e.g. HTTP 404) -----------


def test_probe_failing_in_the_transport_falls_back_when_auto() -> None:
    client = _probing()
    client.session.probe_failed("HTTP 404 to server/discover", 1.0)
    assert take_messages(client) == [_initialize(2)]


def test_probe_failing_in_the_transport_fails_a_pinned_client() -> None:
    client = _probing(protocol=MODERN)
    client.session.probe_failed("HTTP 404 to server/discover", 1.0)
    assert drain_events(client) == [InitializeFailed(
        reason=FailureReason.UNSUPPORTED_VERSION, message="HTTP 404 to server/discover", offered=MODERN)]
    assert client.phase is Phase.FAILED


@pytest.mark.parametrize("ending", ["adopted", "fell-back", "connection-lost"])
def test_probe_failing_after_it_ended_changes_nothing(ending: str) -> None:
    client = _probing()
    if ending == "adopted":
        client.receive_data(discover_result(), 0.0)
    elif ending == "fell-back":
        client.handle_timeout(3.0)
    else:
        client.session.connection_lost("gone", now=0.0)
    drain_events(client)
    client.data_to_send()
    phase = client.phase
    client.session.probe_failed("HTTP 404", 5.0)
    assert (drain_events(client), take_messages(client), client.phase) == ([], [], phase)


def test_server_info_of_the_spec_example_is_read_from_meta() -> None:
    client = _probing()
    client.receive_data(discover_result(server_info={"name": "ExampleServer", "version": "1.0.0",
                                                     "title": "Example"}), 0.0)
    assert client.server_info == Implementation(name="ExampleServer", version="1.0.0", title="Example")


def test_a_late_discover_answer_stands_when_a_modern_only_server_refuses_initialize() -> None:
    # A modern server slower than discover_timeout (a loaded machine) answers the probe
    # after initialize went out, then refuses initialize: the probe's answer decides.
    client = _probing()
    client.handle_timeout(3.0)
    assert take_messages(client) == [_initialize(2)]
    client.receive_data(discover_result(1), now=4.0)
    assert drain_events(client) == []
    client.receive_data(SERVER.error(2, -32022, "connection is serving the 2026-07-28 protocol"), now=4.1)
    [done] = drain_events(client)
    assert isinstance(done, InitializeCompleted) and done.protocol_version == MODERN
    assert client.phase is Phase.READY and client.era == "modern"


@pytest.mark.parametrize("late", [
    {"error": {"code": -32601, "message": "Method not found"}},
    {"result": {"unrelated": True}},
])
def test_a_late_probe_answer_that_proves_nothing_leaves_an_initialize_refusal_a_failure(late: Json) -> None:
    client = _probing()
    client.handle_timeout(3.0)
    take_messages(client)
    client.receive_data(msgspec.json.encode({"jsonrpc": "2.0", "id": 1, **late}) + b"\n", now=4.0)
    client.receive_data(SERVER.error(2, -32603, "nope"), now=4.1)
    [failed] = drain_events(client)
    assert isinstance(failed, InitializeFailed) and failed.reason is FailureReason.ERROR_RESPONSE

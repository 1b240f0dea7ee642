"""The ``initialize`` handshake: the offer, version negotiation, failures and the timeout."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import ScriptedServer, drain_events, ready_client, take_messages

from mcp_sansio import (
    LATEST_VERSION,
    SUPPORTED_VERSIONS,
    ClientConfig,
    ConnectionTerminated,
    ErrorData,
    FailureReason,
    InitializeCompleted,
    InitializeFailed,
    LocalProtocolError,
    Phase,
    RequestTimeout,
    StdioClient,
    UnsupportedProtocolVersion,
)
from mcp_sansio.session import ClientSession
from mcp_sansio.types import (
    ClientCapabilities,
    Implementation,
    InitializeResult,
    PromptsCapability,
    ResourcesCapability,
    RootsCapability,
    ServerCapabilities,
    ToolsCapability,
)
from mcp_sansio.versions import rules_for

SERVER = ScriptedServer()
# helpers.SERVER_CAPABILITIES as the client decodes them.
DECLARED = ServerCapabilities(
    tools=ToolsCapability(), resources=ResourcesCapability(subscribe=True),
    prompts=PromptsCapability(), completions={}, logging={},
)


def _initializing(**config: Any) -> StdioClient:
    client = StdioClient(ClientConfig(**config))
    client.initialize(now=0.0)
    client.data_to_send()
    return client


def test_initialize_offers_the_latest_version() -> None:
    client = StdioClient()
    client.initialize(now=0.0)
    assert take_messages(client) == [{
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "mcp-sansio", "version": "0.1.0"},
        },
    }]
    assert client.phase is Phase.INITIALIZING


def test_initialize_sends_the_configured_identity_and_capabilities() -> None:
    caps = ClientCapabilities(roots=RootsCapability(list_changed=True), sampling={})
    client = StdioClient(ClientConfig(client_name="app", client_version="9", client_title="App"), caps)
    client.initialize(now=0.0)
    params = take_messages(client)[0]["params"]
    assert params["clientInfo"] == {"name": "app", "version": "9", "title": "App"}
    assert params["capabilities"] == {"roots": {"listChanged": True}, "sampling": {}}


def test_initialize_offers_the_first_configured_version() -> None:
    client = StdioClient(ClientConfig(protocol_versions=("2025-06-18", "2025-03-26")))
    client.initialize(now=0.0)
    assert take_messages(client)[0]["params"]["protocolVersion"] == "2025-06-18"


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_each_supported_answer_version_is_accepted(version: str) -> None:
    client = _initializing()
    client.receive_data(SERVER.initialize_result(version=version, instructions="be nice"), 0.5)
    result = InitializeResult(
        protocol_version=version,
        capabilities=DECLARED,
        server_info=Implementation(name="scripted", version="1.0"),
        instructions="be nice",
    )
    assert drain_events(client) == [InitializeCompleted(
        protocol_version=version, server_info=result.server_info, capabilities=result.capabilities,
        instructions="be nice", result=result,
    )]
    assert client.phase is Phase.READY
    assert client.protocol_version == version
    assert client.rules == rules_for(version)
    assert client.server_info == result.server_info
    assert client.server_capabilities == result.capabilities
    assert client.instructions == "be nice"


def test_initialized_notification_follows_the_result() -> None:
    client = _initializing()
    client.receive_data(SERVER.initialize_result(), 0.0)
    assert take_messages(client) == [{"jsonrpc": "2.0", "method": "notifications/initialized"}]


def test_queries_are_empty_before_the_handshake() -> None:
    client = StdioClient()
    assert (client.protocol_version, client.server_info, client.server_capabilities,
            client.instructions, client.rules) == (None, None, None, None, None)


def test_unknown_answer_version_fails_as_unsupported() -> None:
    client = _initializing()
    client.receive_data(SERVER.initialize_result(version="1999-01-01"), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert (event.reason, event.offered, event.received) == (
        FailureReason.UNSUPPORTED_VERSION, LATEST_VERSION, ("1999-01-01",)
    )
    assert take_messages(client) == []  # no notifications/initialized
    assert client.phase is Phase.FAILED
    exc = event.to_exception()
    assert isinstance(exc, UnsupportedProtocolVersion)
    assert (exc.offered, exc.received) == (LATEST_VERSION, ("1999-01-01",))


def test_supported_version_outside_the_configured_ones_is_refused() -> None:
    client = _initializing(protocol_versions=("2025-11-25",))
    client.receive_data(SERVER.initialize_result(version="2025-06-18"), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert event.reason is FailureReason.UNSUPPORTED_VERSION


def test_invalid_params_listing_supported_versions_is_retried_with_one_of_ours() -> None:
    client = _initializing()
    client.receive_data(SERVER.error(1, -32602, "Unsupported protocol version",
                                     {"supported": ["2024-11-05", "2025-03-26"], "requested": "x"}), 1.0)
    assert drain_events(client) == []
    [retry] = take_messages(client)
    assert (retry["id"], retry["method"], retry["params"]["protocolVersion"]) == (
        2, "initialize", "2025-03-26"  # our preference order, not the server's
    )
    assert client.next_deadline() == 30.0  # the connect's one deadline, not a fresh one
    client.receive_data(SERVER.initialize_result(2, version="2025-03-26"), 1.5)
    [event] = drain_events(client)
    assert isinstance(event, InitializeCompleted)
    assert event.protocol_version == "2025-03-26"


def test_version_retry_happens_only_once() -> None:
    client = _initializing()
    client.receive_data(SERVER.error(1, -32602, "no", {"supported": ["2025-06-18", "2025-03-26"]}), 0.0)
    assert len(take_messages(client)) == 1
    client.receive_data(SERVER.error(2, -32602, "no", {"supported": ["2025-03-26"]}), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert (event.reason, event.offered, event.received) == (
        FailureReason.UNSUPPORTED_VERSION, "2025-06-18", ("2025-03-26",)
    )
    assert take_messages(client) == []
    assert client.phase is Phase.FAILED


def test_no_common_version_fails_without_retrying() -> None:
    client = _initializing()
    client.receive_data(SERVER.error(1, -32602, "no", {"supported": ["1.0", 2]}), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert (event.reason, event.received) == (FailureReason.UNSUPPORTED_VERSION, ("1.0", "2"))
    assert take_messages(client) == []


@pytest.mark.parametrize("data", [None, {"supported": "2025-03-26"}, ["2025-03-26"]])
def test_invalid_params_without_a_version_list_is_an_error_response(data: object) -> None:
    client = _initializing()
    client.receive_data(SERVER.error(1, -32602, "bad params", data), 0.0)
    [event] = drain_events(client)
    assert event == InitializeFailed(
        reason=FailureReason.ERROR_RESPONSE,
        message="initialize failed: bad params (JSON-RPC error -32602)",
        error=ErrorData(code=-32602, message="bad params", data=data),
    )


def test_other_error_fails_the_handshake() -> None:
    client = _initializing()
    client.receive_data(SERVER.error(1, -32603, "boom"), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert event.reason is FailureReason.ERROR_RESPONSE
    assert client.phase is Phase.FAILED
    assert take_messages(client) == []


def test_result_missing_required_fields_is_an_invalid_result() -> None:
    client = _initializing()
    client.receive_data(SERVER.result(1, {"protocolVersion": LATEST_VERSION}), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert event.reason is FailureReason.INVALID_RESULT
    assert client.phase is Phase.FAILED


def test_initialize_deadline_is_the_next_deadline() -> None:
    client = _initializing(initialize_timeout=5.0)
    assert client.next_deadline() == 5.0


def test_initialize_timeout_fails_the_handshake_without_cancelling() -> None:
    client = _initializing()
    client.handle_timeout(30.0)
    [event] = drain_events(client)
    assert isinstance(event, InitializeFailed)
    assert event.reason is FailureReason.TIMEOUT
    assert isinstance(event.to_exception(), RequestTimeout)
    assert take_messages(client) == []  # initialize is never cancelled
    assert client.next_deadline() is None
    assert client.phase is Phase.FAILED


def test_handle_timeout_before_the_initialize_deadline_is_a_no_op() -> None:
    client = _initializing()
    client.handle_timeout(29.9)
    assert drain_events(client) == []
    assert client.phase is Phase.INITIALIZING
    assert client.next_deadline() == 30.0


def test_initialize_answer_after_the_timeout_is_ignored() -> None:
    client = _initializing()
    client.handle_timeout(30.0)
    drain_events(client)
    client.receive_data(SERVER.initialize_result(), 31.0)
    assert drain_events(client) == []
    assert client.phase is Phase.FAILED


def test_initialize_cannot_be_cancelled() -> None:
    client = _initializing()
    with pytest.raises(LocalProtocolError, match="initialize cannot be cancelled"):
        client.cancel(1, now=0.0)
    assert take_messages(client) == []
    assert client.phase is Phase.INITIALIZING


def test_initialize_twice_is_a_local_error() -> None:
    client = _initializing()
    with pytest.raises(LocalProtocolError):
        client.initialize(now=0.0)
    assert take_messages(client) == []
    assert client.next_deadline() == 30.0


def test_initialize_after_the_handshake_is_a_local_error() -> None:
    client = ready_client()
    with pytest.raises(LocalProtocolError):
        client.initialize(now=1.0)
    assert take_messages(client) == []


def test_requests_before_the_handshake_completes_are_local_errors() -> None:
    client = _initializing()
    with pytest.raises(LocalProtocolError, match="initializing"):
        client.ping(now=0.0)
    with pytest.raises(LocalProtocolError):
        client.notify("notifications/roots/list_changed", now=0.0)
    assert take_messages(client) == []


def test_connection_lost_during_the_handshake_fails_it() -> None:
    client = _initializing()
    client.session.connection_lost("gone", now=0.0, returncode=2)
    assert drain_events(client) == [
        InitializeFailed(reason=FailureReason.CONNECTION_LOST, message="gone"),
        ConnectionTerminated(reason=FailureReason.CONNECTION_LOST, message="gone", returncode=2),
    ]
    assert client.next_deadline() is None
    assert client.phase is Phase.CLOSED


def test_bare_session_queues_messages_without_framing() -> None:
    session = ClientSession(ClientConfig(), ClientCapabilities())
    session.initialize(now=0.0)
    [message] = session.messages_to_send()
    assert message.startswith(b'{"jsonrpc":"2.0","id":1,"method":"initialize"')
    session.receive_message(SERVER.initialize_result().rstrip(b"\n"), 0.0)
    assert [type(e) for e in drain_events(session)] == [InitializeCompleted]
    assert session.messages_to_send() == [b'{"jsonrpc":"2.0","method":"notifications/initialized"}']
    assert session.messages_to_send() == []

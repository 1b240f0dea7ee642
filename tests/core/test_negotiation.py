"""The handshake planner alone: each answer becomes the step the spec's rules ask for."""

from __future__ import annotations

import msgspec
import pytest

from mcp_sansio import ClientConfig, FailureReason
from mcp_sansio.jsonrpc import Envelope, ErrorObject
from mcp_sansio.negotiation import Adopt, Fail, Negotiation, SendDiscover, SendInitialize

MODERN = "2026-07-28"
CAPS: dict[str, object] = {"tools": {}}


def result(value: object) -> Envelope:
    return Envelope(id=1, result=msgspec.Raw(msgspec.json.encode(value)))


def error(code: int, data: object = None) -> Envelope:
    return Envelope(id=1, error=ErrorObject(code=code, message="no", data=data))


def discover(*versions: str) -> Envelope:
    return result({"supportedVersions": list(versions), "capabilities": CAPS,
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}})


def opened(protocol: str = "auto", now: float = 0.0) -> Negotiation:
    negotiation = Negotiation(ClientConfig(protocol=protocol))
    step = negotiation.opening()
    negotiation.sent(step, now)
    return negotiation


@pytest.mark.parametrize(("protocol", "first"), [
    ("auto", SendDiscover(version=MODERN)),
    ("2025-11-25", SendInitialize(version="2025-11-25")),
    (MODERN, SendDiscover(version=MODERN)),
])
def test_the_opening_follows_the_configured_protocol(protocol: str, first: object) -> None:
    assert Negotiation(ClientConfig(protocol=protocol)).opening() == first


def test_a_mutual_modern_revision_is_adopted_with_the_servers_identity() -> None:
    step = opened().answered(discover(MODERN))
    assert isinstance(step, Adopt) and step.modern
    assert (step.result.protocol_version, step.result.server_info.name) == (MODERN, "s")


def test_a_blind_probe_gets_half_the_connect_and_falls_back_when_it_runs_out() -> None:
    negotiation = opened(now=10.0)
    config = negotiation.config
    assert negotiation.probing_blind
    assert negotiation.deadline == 10.0 + min(config.discover_timeout, config.initialize_timeout / 2)
    fallback = negotiation.timed_out()
    assert fallback == SendInitialize(version=config.protocol_versions[0], retry=True)
    negotiation.sent(fallback, 12.0)
    assert negotiation.probing is None and negotiation.deadline == 10.0 + config.initialize_timeout
    assert negotiation.timed_out() is None  # initialize's silence is the connect's timeout


def test_anything_but_evidence_of_a_modern_server_sends_auto_to_initialize() -> None:
    for answer in (result({}), error(-32601)):
        assert opened().answered(answer) == SendInitialize(version="2025-11-25", retry=True)


def test_a_pinned_modern_revision_fails_where_auto_falls_back() -> None:
    step = opened(MODERN).answered(error(-32601))
    assert isinstance(step, Fail) and step.reason is FailureReason.ERROR_RESPONSE
    failed = opened(MODERN).probe_failed("HTTP 404 to server/discover")
    assert failed == Fail(reason=FailureReason.UNSUPPORTED_VERSION, message="HTTP 404 to server/discover",
                          offered=MODERN)
    assert opened().probe_failed("HTTP 404") == SendInitialize(version="2025-11-25", retry=True)


def test_an_unsupported_version_error_naming_only_handshake_revisions_falls_back() -> None:
    step = opened().answered(error(-32022, {"supported": ["2025-11-25"]}))
    assert step == SendInitialize(version="2025-11-25", retry=True)


def test_a_server_turning_down_the_version_it_lists_is_asked_again_once() -> None:
    negotiation = opened()
    again = negotiation.answered(error(-32022, {"supported": [MODERN]}))
    assert again == SendDiscover(version=MODERN, retry=True)
    negotiation.sent(again, 1.0)
    assert not negotiation.probing_blind  # the server is modern: its silence is now a timeout
    last = negotiation.answered(error(-32022, {"supported": [MODERN]}))
    assert isinstance(last, Fail) and last.received == (MODERN,)


def test_initialize_is_retried_once_at_a_version_the_server_lists() -> None:
    negotiation = opened("2025-11-25")
    retry = negotiation.answered(error(-32602, {"supported": ["2025-06-18"]}))
    assert retry == SendInitialize(version="2025-06-18", retry=True)
    negotiation.sent(retry, 0.5)
    again = negotiation.answered(error(-32602, {"supported": ["2025-03-26"]}))
    assert isinstance(again, Fail) and again.offered == "2025-06-18"


def test_an_initialize_result_at_an_unknown_revision_fails() -> None:
    answer = result({"protocolVersion": "1999-01-01", "capabilities": {},
                     "serverInfo": {"name": "s", "version": "1"}})
    step = opened("2025-11-25").answered(answer)
    assert isinstance(step, Fail) and step.received == ("1999-01-01",)


def test_the_timeout_message_names_every_step_and_the_stall() -> None:
    negotiation = opened(now=0.0)
    negotiation.sent(negotiation.timed_out() or SendInitialize(version="x"), 5.0)
    message = negotiation.timeout_message(30.0, "; POST http://h/mcp: waiting")
    assert message == ("the server did not complete the handshake within 30.0 s (initialize_timeout 30 s): "
                       "initialize went unanswered for 25.0 s, after server/discover (5.0 s);"
                       " POST http://h/mcp: waiting")


def test_authorizing_extends_the_connect() -> None:
    negotiation = opened("2025-11-25")
    negotiation.extend(100.0)
    assert negotiation.connect_by == negotiation.deadline == 100.0
    negotiation.settled()
    assert negotiation.deadline is None and negotiation.probe_failed("x") is None

"""What the host hears of skipped messages: the first of each reason quoted, then counts."""

from __future__ import annotations

from helpers import drain_events, ready_client

from mcp_sansio import ConnectionTerminated, MessageDiscarded
from mcp_sansio.discards import DiscardLog
from mcp_sansio.events import DiscardReason

NOT_JSON = DiscardReason.NOT_JSON


def test_the_first_skipped_message_is_quoted() -> None:
    assert DiscardLog().note(NOT_JSON, "not JSON: bad", b"Starting server v1.2") == (
        "discarded a message from the server (not-json): not JSON: bad; it read 'Starting server v1.2' "
        "(more such messages are only counted)")


def test_a_long_message_is_quoted_cut() -> None:
    warning = DiscardLog().note(NOT_JSON, "not JSON", b"x" * 200)
    assert warning is not None and f"'{'x' * 120}'..." in warning


def test_later_ones_are_counted_and_the_count_said_at_powers_of_ten() -> None:
    log = DiscardLog()
    said = [log.note(NOT_JSON, "not JSON", b"banner") for _ in range(100)]
    assert [index + 1 for index, warning in enumerate(said) if warning] == [1, 10, 100]
    assert said[9] == "discarded 10 messages from the server so far (not-json: 10)"


def test_each_reason_is_quoted_once() -> None:
    log = DiscardLog()
    log.note(NOT_JSON, "not JSON", b"banner")
    warning = log.note(DiscardReason.UNKNOWN_ID, "response to unknown request id 9", b'{"id":9}')
    assert warning is not None and warning.startswith("discarded a message from the server (unknown-id)")
    assert log.note(DiscardReason.UNKNOWN_ID, "response to unknown request id 9", b"{}") is None


def test_the_summary_counts_what_was_not_said_and_only_once() -> None:
    log = DiscardLog()
    assert log.summary() is None
    log.note(NOT_JSON, "not JSON", b"banner")
    assert log.summary() is None  # the host heard of the only one
    log.note(NOT_JSON, "not JSON", b"banner")
    log.note(DiscardReason.UNKNOWN_ID, "unknown", b"{}")
    log.note(DiscardReason.UNKNOWN_ID, "unknown", b"{}")
    assert log.summary() == "discarded 4 messages from the server in all (not-json: 2, unknown-id: 2)"
    assert log.summary() is None


def test_a_banner_warns_once_quoting_its_first_line_and_is_counted_at_the_end() -> None:
    client = ready_client()
    client.receive_data(b"Starting server...\nListening on stdio\nReady\n", 0.0)
    events = drain_events(client)
    assert [type(event) for event in events] == [MessageDiscarded] * 3
    assert [event.warning is not None for event in events if isinstance(event, MessageDiscarded)] == [
        True, False, False]
    client.close(now=1.0)
    [ended] = [event for event in drain_events(client) if isinstance(event, ConnectionTerminated)]
    assert ended.warning == "discarded 3 messages from the server in all (not-json: 3)"

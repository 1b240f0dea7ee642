"""SseParser against the WHATWG event-stream interpretation rules, one rule per test.

The Hypothesis tests check split invariance and agreement with ``reference_parse``, a
literal transcription of the spec that decodes the whole stream first.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.errors import LocalProtocolError, MessageTooLarge
from mcp_sansio.sse import SseEvent, SseParser

BOM = b"\xef\xbb\xbf"

# (events, last event id, retry) after the whole stream, or "too large".
Outcome = tuple[list[SseEvent], str, int | None] | str


def parse(*chunks: bytes, max_event_bytes: int = 32 * 1024 * 1024) -> Outcome:
    """Feed ``chunks`` in order, then close; what the parser saw."""
    parser = SseParser(max_event_bytes=max_event_bytes)
    events: list[SseEvent] = []
    try:
        for chunk in chunks:
            events += parser.feed(chunk)
    except MessageTooLarge:
        return "too large"
    events += parser.close()
    return events, parser.last_event_id, parser.retry


def events_of(*chunks: bytes) -> list[SseEvent]:
    """Just the events of ``parse``."""
    outcome = parse(*chunks)
    assert not isinstance(outcome, str)
    return outcome[0]


def as_text(outcome: Outcome) -> object:
    """``outcome`` with each event's data as the spec's text, to compare with the reference."""
    if isinstance(outcome, str):
        return outcome
    events, last_id, retry = outcome
    return [(e.event, e.text, e.id, e.retry) for e in events], last_id, retry


def reference_parse(stream: bytes) -> object:
    """The spec's algorithm, character by character, on the decoded stream (as ``as_text``)."""
    text = stream.decode("utf-8", "replace").removeprefix("\ufeff")
    lines: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char in "\r\n":
            lines.append("".join(current))
            current = []
            if text[i : i + 2] == "\r\n":
                i += 1
        else:
            current.append(char)
        i += 1
    events: list[tuple[str, str, str, int | None]] = []
    data = event_type = id_buffer = last_id = ""
    retry: int | None = None
    for line in lines:
        if not line:
            last_id = id_buffer
            if data:
                events.append((event_type or "message", data[:-1], last_id, retry))
            data = event_type = ""
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event_type = value
        elif name == "data":
            data += value + "\n"
        elif name == "id" and "\0" not in value:
            id_buffer = value
        elif name == "retry" and value and all(c in "0123456789" for c in value):
            retry = int(value) if int(value) < 2**64 else retry
    return events, last_id, retry


def chunked(stream: bytes, cuts: list[int]) -> list[bytes]:
    """``stream`` cut at the given offsets."""
    edges = [0, *sorted(cut % (len(stream) + 1) for cut in cuts), len(stream)]
    return [stream[start:end] for start, end in itertools.pairwise(edges)]


# Lines built from field names, separators and values, so that many streams hold events.
NAMES = st.sampled_from(
    [b"data", b"data", b"data", b"id", b"id", b"event", b"retry", b"other", b"", BOM + b"data"]
)
SEPARATORS = st.sampled_from([b":", b": ", b":  ", b""])
VALUE_PARTS = st.sampled_from(
    [
        *(b"x", b"7", b"0", b"42", b"message", b" ", b":", b"\x00"),
        *(b"\xc3\xa9", b"\xc3", b"\xa9", b"\xff", b"\xe2\x82", "\u0663".encode()),
    ]
)
FIELD_LINES = st.builds(
    lambda name, sep, parts: name + sep + b"".join(parts),
    NAMES,
    SEPARATORS,
    st.lists(VALUE_PARTS, max_size=4),
)
LINES = st.one_of(FIELD_LINES, FIELD_LINES, st.just(b""))
LINE_ENDS = st.sampled_from([b"\n", b"\r", b"\r\n"])
STRUCTURED = st.builds(
    lambda bom, lines, rest: (BOM if bom else b"") + b"".join(a + b for a, b in lines) + rest,
    st.booleans(),
    st.lists(st.tuples(LINES, LINE_ENDS), max_size=30),
    st.binary(max_size=3),
)
# Runs of events in the shapes MCP servers send (which the parser reads in bulk), with
# the disturbances that must send it back to the line path: another event name, a
# second data line, a NUL or a lone CR in a value, a line end of another kind.
CANONICAL_VALUES = st.lists(st.sampled_from([b"7", b"x", b"{}", b"\xc3\xa9", b"\xff", b"\x00", b"\r", b" "]),
                            max_size=3).map(b"".join)
CANONICAL_EVENT = st.builds(
    lambda head, ident, data, extra: [*head, *ident, b"data: " + data, *extra, b""],
    st.sampled_from([[], [b"event: message"], [b"event: message"], [b"event: other"]]),
    st.one_of(st.just([]), CANONICAL_VALUES.map(lambda v: [b"id: " + v])),
    CANONICAL_VALUES,
    st.sampled_from([[], [], [], [b"data: more"], [b": comment"]]),
)
CANONICAL = st.builds(
    lambda eol, events, odd: b"".join(
        line + (odd[1] if odd[0] == i else eol) for i, line in enumerate(itertools.chain(*events))
    ),
    LINE_ENDS,
    st.lists(CANONICAL_EVENT, max_size=12),
    st.tuples(st.integers(min_value=-1, max_value=40), LINE_ENDS),
)
STREAMS = STRUCTURED | CANONICAL | st.binary(max_size=60)
CUTS = st.lists(st.integers(min_value=0), max_size=12)


@given(STREAMS, CUTS)
def test_any_chunking_gives_the_same_result_as_one_feed(stream: bytes, cuts: list[int]) -> None:
    assert parse(*chunked(stream, cuts)) == parse(stream)


@given(STREAMS)
def test_byte_by_byte_gives_the_same_result_as_one_feed(stream: bytes) -> None:
    assert parse(*(stream[i : i + 1] for i in range(len(stream)))) == parse(stream)


@given(STREAMS, CUTS)
def test_result_matches_the_reference_implementation(stream: bytes, cuts: list[int]) -> None:
    assert as_text(parse(*chunked(stream, cuts))) == reference_parse(stream)


@given(STREAMS, CUTS, st.integers(min_value=1, max_value=40))
def test_size_bound_does_not_depend_on_chunking(stream: bytes, cuts: list[int], limit: int) -> None:
    whole = parse(stream, max_event_bytes=limit)
    assert parse(*chunked(stream, cuts), max_event_bytes=limit) == whole
    if whole != "too large":
        assert as_text(whole) == reference_parse(stream)


def test_lf_ends_a_line() -> None:
    assert events_of(b"data: a\n\n") == [SseEvent(data=b"a")]


def test_cr_ends_a_line() -> None:
    assert events_of(b"data: a\r\r") == [SseEvent(data=b"a")]


def test_crlf_ends_a_line() -> None:
    assert events_of(b"data: a\r\n\r\n") == [SseEvent(data=b"a")]


def test_mixed_line_ends_in_one_stream() -> None:
    assert events_of(b"data: a\rdata: b\ndata: c\r\n\n") == [SseEvent(data=b"a\nb\nc")]


def test_cr_cr_lf_is_two_line_ends() -> None:
    assert events_of(b"data: a\r\r\ndata: b\n\n") == [SseEvent(data=b"a"), SseEvent(data=b"b")]


def test_crlf_line_end_split_across_chunks_is_one_line_end() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\ndata: b\r") == []
    assert parser.feed(b"\n\r\n") == [SseEvent(data=b"a\nb")]


def test_cr_at_end_of_chunk_dispatches_without_waiting() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\r\r") == [SseEvent(data=b"a")]
    assert parser.feed(b"\ndata: b\n\n") == [SseEvent(data=b"b")]


def test_text_after_cr_at_end_of_chunk_starts_a_new_line() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"data: b\r\r") == [SseEvent(data=b"a\nb")]


def test_lf_chunk_after_cr_chunk_is_one_line_end() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n") == []
    assert parser.feed(b"\n") == [SseEvent(data=b"a")]


def test_empty_chunks_change_nothing() -> None:
    parser = SseParser()
    assert parser.feed(b"") == []
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"") == []
    assert parser.feed(b"\n\n") == [SseEvent(data=b"a")]


def test_leading_bom_is_stripped() -> None:
    assert events_of(BOM + b"data: a\n\n") == [SseEvent(data=b"a")]


def test_leading_bom_split_across_chunks_is_stripped() -> None:
    assert events_of(BOM[:1], BOM[1:2], BOM[2:] + b"data: a\n\n") == [SseEvent(data=b"a")]


def test_only_one_leading_bom_is_stripped() -> None:
    assert events_of(BOM + BOM + b"data: a\n\ndata: b\n\n") == [SseEvent(data=b"b")]


def test_bom_after_the_start_of_the_stream_is_kept() -> None:
    assert events_of(b"data: a\n\n", BOM + b"data: b\n\n") == [SseEvent(data=b"a")]


def test_partial_bom_at_the_start_is_data_not_a_bom() -> None:
    assert events_of(BOM[:2], b"\ndata: a\n\n") == [SseEvent(data=b"a")]


def test_comment_line_is_ignored() -> None:
    assert events_of(b": keep-alive\ndata: a\n:\n\n") == [SseEvent(data=b"a")]


def test_one_leading_space_is_stripped_from_the_value() -> None:
    assert events_of(b"data:  a \n\n") == [SseEvent(data=b" a ")]


def test_value_without_space_after_colon() -> None:
    assert events_of(b"data:a:b\n\n") == [SseEvent(data=b"a:b")]


def test_line_without_colon_is_a_field_with_empty_value() -> None:
    assert events_of(b"data\ndata\n\n") == [SseEvent(data=b"\n")]


def test_event_field_sets_the_event_type() -> None:
    assert events_of(b"event: ping\ndata: a\n\n") == [SseEvent(event="ping", data=b"a")]


def test_empty_event_field_means_message() -> None:
    assert events_of(b"event:\ndata: a\n\n") == [SseEvent(data=b"a")]


def test_event_type_is_reset_after_each_event() -> None:
    events = events_of(b"event: ping\ndata: a\n\ndata: b\n\n")
    assert events == [SseEvent(event="ping", data=b"a"), SseEvent(data=b"b")]


def test_event_type_is_reset_by_an_event_without_data() -> None:
    assert events_of(b"event: ping\n\ndata: a\n\n") == [SseEvent(data=b"a")]


def test_data_lines_are_joined_with_lf() -> None:
    assert events_of(b"data: a\ndata: b\ndata: c\n\n") == [SseEvent(data=b"a\nb\nc")]


def test_only_the_final_lf_of_the_data_is_removed() -> None:
    assert events_of(b"data: a\ndata:\n\n") == [SseEvent(data=b"a\n")]


def test_empty_data_field_dispatches_an_event_with_empty_data() -> None:
    assert events_of(b"id: 1\ndata:\n\n") == [SseEvent(data=b"", id="1")]


def test_event_without_data_is_not_dispatched() -> None:
    assert events_of(b"event: ping\nid: 1\n\n") == []


def test_event_is_dispatched_only_at_a_blank_line() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\n") == []
    assert parser.feed(b"\n") == [SseEvent(data=b"a")]


def test_blank_lines_without_fields_dispatch_nothing() -> None:
    assert events_of(b"\n\r\n\r\n\n") == []


def test_id_sets_the_event_id() -> None:
    assert events_of(b"id: 7\ndata: a\n\n") == [SseEvent(data=b"a", id="7")]


def test_last_event_id_carries_over_to_later_events() -> None:
    events = events_of(b"id: 7\ndata: a\n\ndata: b\n\n")
    assert events == [SseEvent(data=b"a", id="7"), SseEvent(data=b"b", id="7")]


def test_empty_id_resets_the_last_event_id() -> None:
    events = events_of(b"id: 7\ndata: a\n\nid\ndata: b\n\n")
    assert events == [SseEvent(data=b"a", id="7"), SseEvent(data=b"b", id="")]


def test_id_containing_nul_is_ignored() -> None:
    events = events_of(b"id: 7\ndata: a\n\nid: 8\x009\ndata: b\n\n")
    assert events == [SseEvent(data=b"a", id="7"), SseEvent(data=b"b", id="7")]


def test_last_event_id_is_updated_only_at_a_blank_line() -> None:
    parser = SseParser()
    parser.feed(b"id: 1\n\nid: 2\ndata: a\n")
    assert parser.last_event_id == "1"
    parser.feed(b"\n")
    assert parser.last_event_id == "2"


def test_priming_event_sets_last_event_id_and_retry_without_dispatch() -> None:
    parser = SseParser()
    assert parser.feed(b"id: stream-1/0\nretry: 2500\n\n") == []
    assert (parser.last_event_id, parser.retry) == ("stream-1/0", 2500)


def test_retry_of_ascii_digits_sets_the_reconnection_time() -> None:
    parser = SseParser()
    parser.feed(b"retry: 3000\n")
    assert parser.retry == 3000


def test_retry_with_leading_zeros_is_decimal() -> None:
    parser = SseParser()
    parser.feed(b"retry: 0010\n")
    assert parser.retry == 10


@pytest.mark.parametrize(
    "value", [b"", b"1.5", b"-1", b"+1", b"1 ", b"0x10", "\u0661\u0662".encode(), b"1e3"]
)
def test_retry_that_is_not_only_ascii_digits_is_ignored(value: bytes) -> None:
    parser = SseParser()
    parser.feed(b"retry: 5\nretry: " + value + b"\n")
    assert parser.retry == 5


def test_retry_too_large_for_64_bits_is_ignored() -> None:
    parser = SseParser()
    parser.feed(b"retry: 18446744073709551615\n")
    assert parser.retry == 2**64 - 1
    parser.feed(b"retry: 18446744073709551616\nretry: 1" + b"0" * 5000 + b"\n")
    assert parser.retry == 2**64 - 1


def test_event_carries_the_reconnection_time_at_dispatch() -> None:
    events = events_of(b"data: a\n\nretry: 10\ndata: b\n\ndata: c\n\n")
    assert [event.retry for event in events] == [None, 10, 10]


def test_unknown_field_is_ignored() -> None:
    assert events_of(b"foo: bar\nDATA: x\ndata: a\n\n") == [SseEvent(data=b"a")]


def test_invalid_utf8_is_decoded_with_replacement() -> None:
    [event] = events_of(b"event: \xff\ndata: a\xc3\ndata: \xe2\x82\n\n")
    assert event.event == "\ufffd"
    assert event.data == b"a\xc3\n\xe2\x82"  # as received: the JSON decoder judges it
    assert event.text == "a\ufffd\n\ufffd"


def test_utf8_sequence_split_across_chunks_is_decoded() -> None:
    assert events_of(b"data: \xc3", b"\xa9\n\n") == [SseEvent(data="\u00e9".encode())]


def test_incomplete_event_at_eof_is_discarded() -> None:
    parser = SseParser()
    assert parser.feed(b"id: 1\ndata: a\n") == []
    assert parser.close() == []
    assert parser.last_event_id == ""


def test_feed_after_close_raises() -> None:
    parser = SseParser()
    parser.close()
    with pytest.raises(LocalProtocolError):
        parser.feed(b"data: a\n\n")


def test_event_at_the_limit_is_accepted() -> None:
    parser = SseParser(max_event_bytes=13)
    assert parser.feed(b"data:12345678\n\n") == [SseEvent(data=b"12345678")]


def test_event_over_the_limit_raises_message_too_large() -> None:
    parser = SseParser(max_event_bytes=8)
    with pytest.raises(MessageTooLarge) as caught:
        parser.feed(b"data: 12\ndata: 12\n")
    assert caught.value.limit == 8


def test_event_size_counts_every_field_line() -> None:
    parser = SseParser(max_event_bytes=10)
    with pytest.raises(MessageTooLarge):
        parser.feed(b"id: 12345\nevent: ab\n")


def test_event_size_counts_bytes_not_characters() -> None:
    parser = SseParser(max_event_bytes=8)
    with pytest.raises(MessageTooLarge):
        parser.feed("data:\u00e9\u00e9\n".encode())


def test_comments_do_not_count_toward_the_event_size() -> None:
    parser = SseParser(max_event_bytes=8)
    assert parser.feed(b": 123456\n" * 10 + b"data:123\n\n") == [SseEvent(data=b"123")]


def test_blank_line_starts_a_new_event_size() -> None:
    parser = SseParser(max_event_bytes=8)
    events = parser.feed(b"data:123\n\nid:12345\n\ndata:456\n\n")
    assert events == [SseEvent(data=b"123"), SseEvent(data=b"456", id="12345")]


def test_long_comment_line_raises_message_too_large() -> None:
    parser = SseParser(max_event_bytes=8)
    with pytest.raises(MessageTooLarge):
        parser.feed(b": 123456789\n")


def test_long_unterminated_line_raises_before_it_ends() -> None:
    parser = SseParser(max_event_bytes=8)
    parser.feed(b": 1234")
    with pytest.raises(MessageTooLarge):
        parser.feed(b"56789")


def test_parser_stays_broken_after_message_too_large() -> None:
    parser = SseParser(max_event_bytes=8)
    with pytest.raises(MessageTooLarge):
        parser.feed(b"data: 123456789\n")
    with pytest.raises(MessageTooLarge):
        parser.feed(b"data: a\n\n")
    assert parser.close() == []


def test_max_event_bytes_must_be_positive() -> None:
    with pytest.raises(LocalProtocolError):
        SseParser(max_event_bytes=0)


# The bulk path: runs of events in the usual shapes, read without a step per line.


def test_run_of_usual_events_in_one_chunk() -> None:
    stream = b"".join(b"event: message\nid: %d\ndata: {\"n\": %d}\n\n" % (n, n) for n in range(50))
    events = events_of(stream)
    assert [(e.event, e.data, e.id) for e in events] == [
        ("message", b'{"n": %d}' % n, str(n)) for n in range(50)
    ]


def test_run_of_crlf_events_without_event_lines() -> None:
    stream = b"".join(b"id: %d\r\ndata: x%d\r\n\r\n" % (n, n) for n in range(20))
    parser = SseParser()
    assert [(e.data, e.id) for e in parser.feed(stream)] == [(b"x%d" % n, str(n)) for n in range(20)]
    assert parser.last_event_id == "19"


def test_run_of_data_only_events_keeps_the_last_event_id() -> None:
    parser = SseParser()
    parser.feed(b"id: 7\n\n")
    assert [(e.data, e.id) for e in parser.feed(b"data: a\n\ndata: b\n\n")] == [(b"a", "7"), (b"b", "7")]


def test_run_split_in_the_middle_of_an_event_continues_in_the_next_chunk() -> None:
    stream = b"".join(b"event: message\ndata: %d\n\n" % n for n in range(30))
    for cut in (1, 17, len(stream) // 2, len(stream) - 3):
        assert [e.data for e in events_of(stream[:cut], stream[cut:])] == [b"%d" % n for n in range(30)]


@pytest.mark.parametrize(
    "odd",
    [
        b"event: other\ndata: x\n\n",  # another event name
        b"data: x\ndata: y\n\n",  # two data lines
        b": keep-alive\ndata: x\n\n",  # a comment
        b"id: a\x00b\ndata: x\n\n",  # a NUL in the id: the id is ignored
        b"data: x\ry\n\n",  # a lone CR ends a line
        b"retry: 5\ndata: x\n\n",  # another field
    ],
)
def test_a_run_broken_by_another_shape_gives_what_the_spec_says(odd: bytes) -> None:
    usual = b"event: message\nid: 1\ndata: u\n\n"
    stream = usual * 3 + odd + usual * 3
    assert as_text(parse(stream)) == reference_parse(stream)
    assert as_text(parse(*chunked(stream, [5, 60, 100]))) == reference_parse(stream)


def test_a_run_of_crlf_events_with_a_lone_cr_in_data_gives_what_the_spec_says() -> None:
    stream = b"data: a\r\n\r\ndata: b\rc\r\n\r\ndata: d\r\n\r\n"
    assert as_text(parse(stream)) == reference_parse(stream)


def test_an_event_over_the_limit_inside_a_run_raises() -> None:
    parser = SseParser(max_event_bytes=20)
    with pytest.raises(MessageTooLarge):
        parser.feed(b"data: a\n\n" * 3 + b"data: " + b"x" * 20 + b"\n\n" + b"data: b\n\n")


def test_an_event_over_the_limit_ended_in_the_same_chunk_raises() -> None:
    parser = SseParser(max_event_bytes=12)
    with pytest.raises(MessageTooLarge):
        parser.feed(b"data: 12345\ndata: 67890\n\n")

"""Newline framing: LF and CRLF, lines split anywhere, EOF, blank lines, the line bound."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.framing import LineBuffer


def _feed_in_chunks(data: bytes, cuts: list[int], limit: int) -> tuple[list[bytes], bool]:
    """Feed ``data`` cut at ``cuts``, then EOF; the lines and whether it overflowed."""
    lines = LineBuffer(limit)
    out: list[bytes] = []
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        out += lines.feed(data[start:cut])
        start = cut
    out += lines.close()
    return out, lines.overflow is not None


def test_lf_terminated_lines() -> None:
    assert LineBuffer(100).feed(b"a\nbc\n") == [b"a", b"bc"]


def test_crlf_terminated_lines() -> None:
    assert LineBuffer(100).feed(b"a\r\nbc\r\n") == [b"a", b"bc"]


def test_single_line_fast_path_strips_crlf() -> None:
    assert LineBuffer(100).feed(b'{"x":1}\r\n') == [b'{"x":1}']


def test_only_one_carriage_return_is_stripped() -> None:
    assert LineBuffer(100).feed(b"a\r\r\nb\n") == [b"a\r", b"b"]


def test_line_split_across_chunks() -> None:
    lines = LineBuffer(100)
    assert lines.feed(b'{"a"') == []
    assert lines.feed(b":1}") == []
    assert lines.feed(b"\nnext") == [b'{"a":1}']
    assert lines.buffered == 4


def test_crlf_line_end_split_across_chunks() -> None:
    lines = LineBuffer(100)
    assert lines.feed(b"abc\r") == []
    assert lines.feed(b"\n") == [b"abc"]


def test_final_unterminated_line_is_returned_at_eof() -> None:
    lines = LineBuffer(100)
    assert lines.feed(b"a\nlast") == [b"a"]
    assert lines.close() == [b"last"]
    assert lines.buffered == 0


def test_eof_strips_a_trailing_carriage_return() -> None:
    lines = LineBuffer(100)
    lines.feed(b"last\r")
    assert lines.close() == [b"last"]


def test_eof_with_nothing_buffered_returns_nothing() -> None:
    assert LineBuffer(100).close() == []


def test_blank_lines_are_dropped() -> None:
    assert LineBuffer(100).feed(b"\n\r\n\na\n\n") == [b"a"]
    assert LineBuffer(100).feed(b"\n") == []
    assert LineBuffer(100).feed(b"\r\n") == []


def test_line_of_exactly_the_bound_is_accepted() -> None:
    assert LineBuffer(3).feed(b"abc\n") == [b"abc"]
    assert LineBuffer(3).feed(b"x\nabc\n") == [b"x", b"abc"]


def test_line_over_the_bound_overflows() -> None:
    lines = LineBuffer(3)
    assert lines.feed(b"abcd\n") == []
    assert lines.overflow == 4


def test_lines_before_an_oversized_line_are_still_returned() -> None:
    lines = LineBuffer(3)
    assert lines.feed(b"ab\nabcd\ncd\n") == [b"ab"]
    assert lines.overflow == 4


def test_carriage_return_counts_toward_the_bound_in_every_chunking() -> None:
    whole = LineBuffer(3)
    assert whole.feed(b"abc\r\n") == []
    assert whole.overflow == 4
    split = LineBuffer(3)
    assert [split.feed(bytes([b])) for b in b"abc\r\n"] == [[], [], [], [], []]
    assert split.overflow == 4


def test_unterminated_line_over_the_bound_overflows_without_buffering_more() -> None:
    lines = LineBuffer(10)
    assert lines.feed(b"0123456789") == []
    assert lines.overflow is None
    chunk = b"x" * 4096
    assert lines.feed(chunk) == []
    assert lines.overflow == 10 + len(chunk)
    assert lines.buffered == 0


def test_remainder_after_the_last_newline_over_the_bound_overflows() -> None:
    lines = LineBuffer(3)
    assert lines.feed(b"ok\nabcdef") == [b"ok"]
    assert lines.overflow == 6
    assert lines.buffered == 0


def test_after_overflow_nothing_more_is_produced() -> None:
    lines = LineBuffer(3)
    lines.feed(b"abcdefg")
    assert lines.feed(b"\nok\n") == []
    assert lines.close() == []


def test_buffer_never_exceeds_bound_plus_one_chunk() -> None:
    limit, chunk = 1000, b"y" * 300
    lines = LineBuffer(limit)
    for _ in range(50):
        lines.feed(chunk)
        assert lines.buffered <= limit + len(chunk)
    assert lines.overflow is not None


def test_newline_search_resumes_after_eof_reset() -> None:
    lines = LineBuffer(100)
    lines.feed(b"abcdef")
    assert lines.close() == [b"abcdef"]
    assert lines.feed(b"x\n") == [b"x"]


_STREAM = st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r", b"\r\n", b"{}", b"xyzw"]), max_size=40)


@given(
    parts=_STREAM,
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=20),
    limit=st.integers(min_value=1, max_value=12),
)
def test_any_chunking_gives_the_same_lines_as_feeding_whole(
    parts: list[bytes], cuts: list[int], limit: int
) -> None:
    data = b"".join(parts)
    cuts = [min(cut, len(data)) for cut in cuts]
    assert _feed_in_chunks(data, cuts, limit) == _feed_in_chunks(data, [], limit)


@given(parts=_STREAM, limit=st.integers(min_value=1, max_value=12))
def test_byte_by_byte_gives_the_same_lines_as_feeding_whole(parts: list[bytes], limit: int) -> None:
    data = b"".join(parts)
    assert _feed_in_chunks(data, list(range(len(data))), limit) == _feed_in_chunks(data, [], limit)

"""A server's stderr: the tail kept for errors, and the lines let into the log, both bounded."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio import ClientConfig, StderrLog, StderrTail

# Lines cut at 10 bytes; 3 lines per 1 s (a bucket of 3, one back every third of a second).
SMALL = ClientConfig(stderr_log_line_bytes=10, stderr_log_lines=3, stderr_log_window=1.0)
MIB = 1024 * 1024


# ------------------------------------------------------------------ the tail


def test_tail_keeps_everything_under_the_limit() -> None:
    tail = StderrTail(100)
    tail.feed(b"hello\n")
    assert (tail.text(), tail.total, tail.dropped) == ("hello\n", 6, 0)


def test_tail_keeps_only_the_last_bytes_and_counts_the_rest() -> None:
    tail = StderrTail(5)
    tail.feed(b"0123")
    tail.feed(b"456789")
    assert (tail.total, tail.dropped) == (10, 5)
    assert tail.text() == "[5 earlier bytes dropped]\n56789"


def test_zero_limit_keeps_nothing() -> None:
    tail = StderrTail(0)
    tail.feed(b"abc\n")
    assert tail.text() == "[4 earlier bytes dropped]\n"


def test_tail_is_decoded_leniently() -> None:
    tail = StderrTail(100)
    tail.feed(b"bad \xff byte\n")
    assert tail.text() == "bad \ufffd byte\n"


# ------------------------------------------------------------------- the log


def test_complete_lines_are_logged_and_a_partial_one_waits() -> None:
    log = StderrLog(ClientConfig())
    assert log.feed(b"one\ntwo\r\nthr", 0.0) == ["one", "two"]
    assert log.feed(b"ee\n", 0.0) == ["three"]


def test_the_last_unterminated_line_is_logged_at_the_end() -> None:
    log = StderrLog(ClientConfig())
    assert log.feed(b"warn", 0.0) == []
    assert log.close(0.0) == ["warn"]
    assert log.close(0.0) == []


def test_invalid_utf8_is_decoded_leniently() -> None:
    assert StderrLog(ClientConfig()).feed(b"bad \xff byte\n", 0.0) == ["bad \ufffd byte"]


def test_a_long_line_is_cut_with_the_count_of_bytes_not_logged() -> None:
    log = StderrLog(SMALL)
    assert log.feed(b"0123456789abcdef\n", 0.0) == ["0123456789 [... 6 more bytes of this line not logged]"]


def test_a_line_that_never_ends_keeps_only_its_bound() -> None:
    log = StderrLog(SMALL)
    for _ in range(100):
        assert log.feed(b"x" * 1000, 0.0) == []
    assert log.close(0.0) == ["x" * 10 + " [... 99990 more bytes of this line not logged]"]


def test_lines_over_the_rate_are_counted_in_one_summary_when_logging_resumes() -> None:
    log = StderrLog(SMALL)
    assert log.feed(b"1\n2\n3\n4\n5\n", 0.0) == ["1", "2", "3"]
    assert log.feed(b"6\n", 0.1) == []
    assert log.feed(b"7\n", 0.5) == ["[3 lines (6 bytes) of stderr not logged: over 3 lines in 1 s]", "7"]


def test_the_bucket_refills_at_the_rate_and_holds_no_more_than_its_size() -> None:
    log = StderrLog(SMALL)
    assert log.feed(b"a\nb\nc\n", 0.0) == ["a", "b", "c"]
    assert log.feed(b"d\ne\nf\ng\n", 100.0) == ["d", "e", "f"]


def test_the_end_of_the_stream_sums_up_what_was_held_back() -> None:
    log = StderrLog(SMALL)
    log.feed(b"1\n2\n3\n4\npartial", 0.0)
    assert log.close(0.0) == ["[2 lines (9 bytes) of stderr not logged: over 3 lines in 1 s]"]


def test_a_clock_that_goes_back_refills_nothing() -> None:
    log = StderrLog(SMALL)
    log.feed(b"1\n2\n3\n", 5.0)
    assert log.feed(b"4\n", 1.0) == []


def test_a_flood_of_short_lines_logs_a_bounded_amount() -> None:
    log = StderrLog(ClientConfig())
    logged = [line for second in range(10) for line in log.feed(b"flood\n" * 100_000, float(second))]
    logged += log.close(10.0)
    assert len(logged) <= 200 + 9 * 20 + 10  # the bucket, its refills, the summaries
    assert logged[-1].startswith("[") and "not logged" in logged[-1]


def test_fifty_mebibytes_without_a_newline_log_one_bounded_line() -> None:
    log = StderrLog(ClientConfig())
    chunk = b"z" * 65536
    assert all(log.feed(chunk, 0.0) == [] for _ in range(50 * MIB // len(chunk)))
    [line] = log.close(0.0)
    assert len(line) < 4200 and f"{50 * MIB - 4096} more bytes" in line


_chunks = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\r", b"")), max_size=12)


@given(_chunks, st.integers(1, 30))
def test_any_chunking_logs_the_same_lines_when_the_rate_allows(chunks: list[bytes], line_bytes: int) -> None:
    config = ClientConfig(stderr_log_line_bytes=line_bytes, stderr_log_lines=10_000)
    whole = StderrLog(config)
    expected = whole.feed(b"".join(chunks), 0.0) + whole.close(0.0)
    split = StderrLog(config)
    got = [line for chunk in chunks for line in split.feed(chunk, 0.0)] + split.close(0.0)
    assert got == expected

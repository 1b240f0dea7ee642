"""The stderr tail: bounded, counting what it dropped, split into lines leniently."""

from __future__ import annotations

from mcp_sansio import StderrTail

PIECE = 64 * 1024  # the longest line StderrTail logs in one piece


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


def test_complete_lines_are_returned() -> None:
    assert StderrTail(100).feed(b"one\ntwo\r\nthree") == ["one", "two"]


def test_line_split_across_chunks_is_joined() -> None:
    tail = StderrTail(100)
    assert tail.feed(b"warn") == []
    assert tail.feed(b"ing: x\nnext") == ["warning: x"]
    assert tail.flush() == ["next"]
    assert tail.flush() == []


def test_invalid_utf8_is_decoded_leniently() -> None:
    tail = StderrTail(100)
    assert tail.feed(b"bad \xff byte\n") == ["bad \ufffd byte"]
    assert tail.text() == "bad \ufffd byte\n"


def test_lines_are_not_split_when_not_wanted() -> None:
    tail = StderrTail(100)
    tail.feed(b"partial")
    assert tail.feed(b" more\n", want_lines=False) == []
    assert tail.flush() == []
    assert tail.text() == "partial more\n"


def test_long_partial_line_is_flushed_in_bounded_pieces() -> None:
    tail = StderrTail(10)
    lines = tail.feed(b"x" * (PIECE + 1))
    assert [len(line) for line in lines] == [PIECE, 1]
    assert tail.flush() == []


def test_long_complete_line_in_one_read_is_cut_into_pieces() -> None:
    lines = StderrTail(10).feed(b"y" * (2 * PIECE + 5) + b"\nz\n")
    assert [len(line) for line in lines] == [PIECE, PIECE, 5, 1]


def test_partial_line_never_grows_past_the_piece_size() -> None:
    tail = StderrTail(10)
    out: list[str] = []
    for _ in range(10):
        out += tail.feed(b"w" * (PIECE // 3))
    assert all(len(line) <= PIECE for line in out)
    assert sum(map(len, out)) + sum(map(len, tail.flush())) == 10 * (PIECE // 3)

"""Fuzz target for the stdio line framing (``mcp_sansio.framing.LineBuffer``).

The first byte picks the line bound (1..256 bytes); the rest is the stream. It is fed
whole, then in chunks of every size from 1 to 7 (byte by byte first); each run must give
the same lines and the same verdict on overflow, and every line must respect the framing
contract. ``LineBuffer`` raises nothing, so any exception is a bug.

Run with atheris: ``python fuzz/fuzz_framing.py fuzz/corpus/framing``.
"""

from __future__ import annotations

import sys

from mcp_sansio.framing import LineBuffer


def _feed(data: bytes, limit: int, chunk: int) -> tuple[list[bytes], bool]:
    lines = LineBuffer(limit)
    out: list[bytes] = []
    for start in range(0, len(data), chunk):
        piece = data[start : start + chunk]
        out += lines.feed(piece)
        if lines.buffered > limit + len(piece):
            raise AssertionError(f"buffered {lines.buffered} bytes with a bound of {limit}")
    out += lines.close()
    return out, lines.overflow is not None


def test_one_input(data: bytes) -> None:
    """Check one input; raises AssertionError when the framing contract breaks."""
    if not data:
        return
    limit, stream = 1 + data[0], data[1:]
    whole = _feed(stream, limit, max(len(stream), 1))
    for line in whole[0]:
        if not line or b"\n" in line or len(line) > limit:
            raise AssertionError(f"bad line {line[:80]!r} (bound {limit})")
    for chunk in range(1, 8):
        split = _feed(stream, limit, chunk)
        if split != whole:
            raise AssertionError(f"chunks of {chunk} gave {split!r}, whole gave {whole!r}")


if __name__ == "__main__":
    import atheris

    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()

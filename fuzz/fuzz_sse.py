"""Atheris target for :class:`mcp_sansio.sse.SseParser`.

Each input is parsed whole and then byte by byte, once with the default bound and once
with a small one (so the size checks are reached): the events, the final
``last_event_id`` and ``retry``, and whether :class:`MessageTooLarge` was raised must
all agree. ``MessageTooLarge`` is the only error the parser may raise; it is caught
here and compared, so anything that escapes is a bug.

Run: ``python fuzz/fuzz_sse.py fuzz/corpus/sse`` (needs atheris).
"""

from __future__ import annotations

import sys

from mcp_sansio.errors import MessageTooLarge
from mcp_sansio.sse import SseEvent, SseParser

# The default bound, and one small enough for short fuzz inputs to exceed.
LIMITS = (32 * 1024 * 1024, 64)

# (events, last event id, retry) after the input, or None when MessageTooLarge was raised.
Outcome = tuple[list[SseEvent], str, int | None] | None


def parse(chunks: list[bytes], max_event_bytes: int) -> Outcome:
    """Feed ``chunks`` to a fresh parser and close it."""
    parser = SseParser(max_event_bytes=max_event_bytes)
    events: list[SseEvent] = []
    try:
        for chunk in chunks:
            events += parser.feed(chunk)
    except MessageTooLarge:
        return None
    events += parser.close()
    return events, parser.last_event_id, parser.retry


def test_one_input(data: bytes) -> None:
    """Check that feeding ``data`` whole and byte by byte gives the same outcome."""
    for limit in LIMITS:
        whole = parse([data], limit)
        bytewise = parse([data[i : i + 1] for i in range(len(data))], limit)
        if whole != bytewise:
            raise AssertionError(f"limit {limit}: whole {whole!r} != byte by byte {bytewise!r}")


if __name__ == "__main__":
    import atheris

    atheris.instrument_all()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()

"""Replaying a memory-growth reproducer: the trace's messages sent again on one
connection, with the server's resident memory sampled, until it grows past the bound the
run used (or the replay's time is up).

A memory trace holds what was sent on the connection that grew; one pass may fall short
of the bound (the run had sent more before its samples began), so the body is sent again
with its request ids moved past every id used so far (the handshake is sent once).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from mcp_sansio.fuzz.case import CaseStep, Replies
from mcp_sansio.fuzz.rules import Finding
from mcp_sansio.fuzz.run_oracles import judge_memory
from mcp_sansio.fuzz.wire import renumbered

from .execute import execute
from .model import Target

__all__ = ["replay_memory"]

_OPENING = ("initialize", "notifications/initialized")
_ID_STRIDE = 1_000_000
_SAMPLE_EVERY = 0.1


def replay_memory(
    target: Target,
    steps: Sequence[CaseStep],
    limit: int,
    *,
    replies: Replies = Replies.REFUSE,
    budget: float = 60.0,
    passes: int = 8,
) -> list[Finding]:
    """Send ``steps`` (then their body again, up to ``passes`` times in ``budget``
    seconds) to a fresh server; the memory-growth finding if its memory grew past ``limit``
    bytes, else nothing.

    Raises:
        TargetUnavailable: the server cannot be started or reached.
    """
    conn = target.connect()
    conn.replies = replies
    start = time.monotonic()
    samples: list[tuple[float, int]] = []
    last = [0.0]

    def sample() -> None:
        now = time.monotonic()
        if now - last[0] >= _SAMPLE_EVERY:
            last[0] = now
            rss = conn.rss()
            if rss:
                samples.append((now - start, rss))

    body = [s for s in steps if s.method not in _OPENING]
    found: list[Finding] = []
    try:
        batch = list(steps)
        for number in range(passes):
            execute(conn, batch, sample, settle=0.5, until=start + budget)
            sample()
            found = judge_memory(samples, limit)
            if found or not conn.alive() or time.monotonic() >= start + budget:
                break
            batch = [renumbered(s, (number + 1) * _ID_STRIDE) for s in body]
    finally:
        conn.close()
    return found

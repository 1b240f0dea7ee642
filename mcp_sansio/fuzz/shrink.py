"""Shrinking a failing sequence of steps to a minimal one (delta debugging).

Zeller and Hildebrandt's ddmin over the steps of a reproducer: try removing chunks of
the sequence, halving the chunk size when nothing can go, and keep any smaller sequence
that still fails. The test itself (replaying against the server) is the caller's: the
shrinker only decides what to try, so it stays pure. ``keep`` marks steps that must stay
(the handshake), and ``budget`` bounds the number of tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["ddmin"]

T = TypeVar("T")


def ddmin(
    items: Sequence[T],
    fails: Callable[[list[T]], bool],
    *,
    keep: Callable[[T], bool] | None = None,
    budget: int = 64,
) -> list[T]:
    """The smallest subsequence of ``items`` found for which ``fails`` holds (``items``
    itself is assumed to fail). Items for which ``keep`` is true are never removed; at most
    ``budget`` calls of ``fails`` are made."""
    fixed = [keep is not None and keep(item) for item in items]
    current = list(range(len(items)))
    movable = [i for i in current if not fixed[i]]
    chunks = 2
    tests = 0
    while len(movable) >= 1 and tests < budget:
        size = max(1, len(movable) // chunks)
        removed = False
        for start in range(0, len(movable), size):
            if tests >= budget:
                break
            drop = set(movable[start : start + size])
            candidate = [i for i in current if i not in drop]
            tests += 1
            if fails([items[i] for i in candidate]):
                current = candidate
                movable = [i for i in movable if i not in drop]
                chunks = max(chunks - 1, 2)
                removed = True
                break
        if not removed:
            if size == 1:
                break
            chunks = min(chunks * 2, len(movable))
    return [items[i] for i in current]

"""Deadlines of many connections (or sessions, or tasks), earliest first, at a cost that does
not grow with them.

A server asks for its next deadline after every input; walking every open connection for
it made each request cost more as connections grew (3x beside 10,000 idle ones). Here
each key (a connection id) has at most one live entry in a heap, never later than its
deadline: a deadline that moves later (every request moves an idle timeout) costs a
dict write, and the entry is moved on only when it comes first. Entries of keys that
went are dropped when they come first, and the heap is rebuilt once they outnumber the
live ones, so a churn of short connections leaves nothing behind. Time is passed in.
"""

from __future__ import annotations

import heapq
from typing import Generic, TypeVar

__all__ = ["Deadlines"]

K = TypeVar("K", int, str)


class Deadlines(Generic[K]):
    """A deadline per key (a connection's or a session's number, a task's id); :meth:`first`
    is the earliest, :meth:`due` takes those that passed."""

    __slots__ = ("_armed", "_at", "_heap")

    def __init__(self) -> None:
        self._at: dict[K, float] = {}  # key -> its deadline
        self._armed: dict[K, float] = {}  # key -> its heap entry's time (<= its deadline)
        self._heap: list[tuple[float, K]] = []

    def get(self, key: K) -> float | None:
        """``key``'s deadline, if it has one."""
        return self._at.get(key)

    def set(self, key: K, deadline: float | None) -> None:
        """``key``'s deadline is ``deadline`` now (``None``: it has none)."""
        if deadline is None:
            self._at.pop(key, None)
            return
        self._at[key] = deadline
        armed = self._armed.get(key)
        if armed is not None and armed <= deadline:
            return
        self._armed[key] = deadline
        heapq.heappush(self._heap, (deadline, key))
        if len(self._heap) > 2 * len(self._at) + 64:
            self._armed = dict(self._at)
            self._heap = [(at, k) for k, at in self._at.items()]
            heapq.heapify(self._heap)

    def first(self) -> float | None:
        """The earliest deadline; changes nothing observable (entries before it that are
        stale are dropped or moved on)."""
        heap, at, armed = self._heap, self._at, self._armed
        while heap:
            time, key = heap[0]
            if armed.get(key) != time:  # a stale entry: the key was armed anew since
                heapq.heappop(heap)
                continue
            deadline = at.get(key)
            if deadline is None:  # the key has no deadline now
                heapq.heappop(heap)
                del armed[key]
            elif deadline > time:  # moved later meanwhile
                heapq.heapreplace(heap, (deadline, key))
                armed[key] = deadline
            else:
                return time
        return None

    def due(self, now: float) -> list[K]:
        """The keys whose deadline is ``now`` or earlier, earliest first; they have none now."""
        keys = []
        while (first := self.first()) is not None and first <= now:
            key = heapq.heappop(self._heap)[1]
            del self._armed[key], self._at[key]
            keys.append(key)
        return keys

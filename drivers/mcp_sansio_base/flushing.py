"""When the event-loop drivers write what calls queued: the same rule on asyncio and anyio.

A lone call goes out at once; calls started together (more than one waits) go out in one
write, from the loop's next turn, once they have all been queued. The blocking driver
needs no rule: its calls cannot start together.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Flusher"]


class Flusher:
    """Coalesces a driver's flushes: ``pump`` writes, ``soon(fn)`` runs ``fn`` on the
    loop's next turn."""

    __slots__ = ("_pending", "_pump", "_soon")

    def __init__(self, pump: Callable[[], None], soon: Callable[[Callable[[], None]], object]) -> None:
        self._pump = pump
        self._soon = soon
        self._pending = False

    def flush(self, waiting: int) -> None:
        """A call was queued; ``waiting`` calls now wait for their answers."""
        if self._pending:
            return
        if waiting <= 1:
            self._pump()
        else:
            self._pending = True
            self._soon(self._later)

    def _later(self) -> None:
        self._pending = False
        self._pump()

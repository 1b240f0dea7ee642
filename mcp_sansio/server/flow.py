"""Backpressure: the one rule every server transport applies to the bytes it holds for a client.

A stream (an HTTP response, a WebSocket connection, stdout) has a :class:`Backlog`: the
bytes the core queued for it that the driver has not yet taken. A driver takes bytes
only when its socket or pipe can take them (never into a buffer of its own), so the
backlog is what a client that does not read costs. Three bounds apply (:class:`FlowLimits`):

- over ``high_water_bytes`` the stream is *congested*: a handler producing into it waits
  (``Endpoint.congested``; the runner parks an awaited ``ctx.report_progress``/``ctx.log``)
  until the driver has taken the backlog down to the mark again;
- a stream congested for ``stall_timeout`` seconds, or whose backlog would pass
  ``max_buffer_bytes``, is dropped: its client is not reading. What dropping means is the
  transport's (an HTTP stream ends as a closed connection, a WebSocket connection closes,
  stdio ends the session).

Finished answers for a congested stream are held, encoded, by the transport
(``Endpoint.hold``) rather than piled onto it, and answered as it drains: pipelined calls
finishing at once cost at most ``max_held_bytes`` (beyond one answer). An answer that
would pass it sends every held one at once, and a stream that cannot take them passes
``max_buffer_bytes`` and is dropped as above.

The stall clock starts when the driver first hears of the congestion: a congested
backlog not yet stamped asks for a timeout at once (:meth:`Backlog.deadline` returns
:data:`AT_ONCE`, a time every driver's clock is past), and :meth:`Backlog.stamp` records
the driver's ``now``. No clock is kept here.
"""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = ["AT_ONCE", "Backlog", "FlowLimits"]

AT_ONCE: Final = 0.0
"""A deadline that is due whenever it is read: the drivers' clocks (``loop.time()``,
``anyio.current_time()``, ``time.monotonic()``) are past it, and a driver hands
``handle_timeout`` ``max(deadline, clock())``. What asks for it wants ``handle_timeout``
called with the driver's time at once (the core keeps no clock of its own)."""


class FlowLimits(msgspec.Struct, frozen=True, kw_only=True):
    """How much output one stream may hold for a client that does not read.

    Attributes:
        high_water_bytes: a backlog over this is congested: handlers producing into the
            stream wait until it is taken down to this again.
        max_buffer_bytes: a backlog that would pass this drops the stream.
        stall_timeout: seconds a stream may stay congested before it is dropped.
        max_held_bytes: finished answers (encoded) held for congested streams, beyond one.
    """

    high_water_bytes: int = 256 * 1024
    max_buffer_bytes: int = 4 * 1024 * 1024
    stall_timeout: float = 30.0
    max_held_bytes: int = 8 * 1024 * 1024


class Backlog:
    """Bytes queued for one stream and not yet taken by the driver."""

    __slots__ = ("congested_at", "size")

    def __init__(self) -> None:
        self.size = 0
        self.congested_at: float | None = None  # when the driver first saw it congested

    def fits(self, more: int, limits: FlowLimits) -> bool:
        """Whether ``more`` bytes may be queued (``False``: the stream must be dropped). One
        message always fits a backlog that is not congested, however large: the bound is
        on what a client leaves unread, not on the size of a message (``max_line_bytes``
        is that), and a client keeping its backlog under the high-water mark is reading.
        So what waits is at most ``max(max_buffer_bytes, high_water_bytes + one message)``
        (limits whose high-water mark is not under the bound leave only an empty backlog)."""
        return (self.size == 0 or self.size + more <= limits.max_buffer_bytes
                or self.size <= limits.high_water_bytes < limits.max_buffer_bytes)

    def add(self, size: int) -> None:
        """``size`` bytes were queued."""
        self.size += size

    def taken(self, size: int, limits: FlowLimits) -> None:
        """The driver took ``size`` bytes; under the high-water mark the stall clock stops."""
        self.size -= size
        if self.size <= limits.high_water_bytes:
            self.congested_at = None

    def congested(self, limits: FlowLimits) -> bool:
        """Whether producers should wait; changes nothing."""
        return self.size > limits.high_water_bytes

    def deadline(self, limits: FlowLimits, latest: float = AT_ONCE) -> float | None:
        """When the stream is dropped as stalled (``latest``, by default :data:`AT_ONCE`,
        while congested but not yet stamped: the stall clock waits for the driver's
        time); changes nothing."""
        if not self.congested(limits):
            return None
        return latest if self.congested_at is None else self.congested_at + limits.stall_timeout

    def stamp(self, now: float, limits: FlowLimits) -> bool:
        """Start the stall clock at ``now`` if it is congested; whether it stalled (was
        congested for ``stall_timeout`` already)."""
        if not self.congested(limits):
            return False
        if self.congested_at is None:
            self.congested_at = now
        return now >= self.congested_at + limits.stall_timeout

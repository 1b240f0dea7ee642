"""What a server writes to stderr: a bounded tail for errors, and bounded lines for the log.

Drivers drain stderr continuously (a server that floods it must never block on a full
pipe) and feed every chunk to both. :class:`StderrTail` keeps the last bytes for
``ConnectionClosed.stderr_tail``. :class:`StderrLog` decides which lines reach the host's
log, so a flooding server cannot fill memory or disk through it: each line is cut at
``stderr_log_line_bytes`` (the count of bytes cut is said), and at most about
``stderr_log_lines`` lines per ``stderr_log_window`` seconds are let through (a token
bucket); what is held back is summed up in one line when logging resumes or at the end.
"""

from __future__ import annotations

from .config import ClientConfig

__all__ = ["StderrLog", "StderrTail"]


class StderrTail:
    """Keeps the last ``limit`` bytes of a stream and counts what it dropped."""

    __slots__ = ("_buf", "_limit", "dropped", "total")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buf = bytearray()
        self.total = 0
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        """Record ``data``, dropping the oldest bytes beyond the limit."""
        self.total += len(data)
        buf = self._buf
        buf += data
        excess = len(buf) - self._limit
        if excess > 0:
            del buf[:excess]
            self.dropped += excess

    def text(self) -> str:
        """The kept tail, decoded leniently."""
        prefix = f"[{self.dropped} earlier bytes dropped]\n" if self.dropped else ""
        return prefix + self._buf.decode("utf-8", "replace")


class StderrLog:
    """Splits a stderr stream into log lines, each bounded, at a bounded rate (module docstring).

    Feed every chunk with the driver's clock; log each returned line (at INFO). Lines are
    decoded leniently (invalid UTF-8 replaced); a line is only returned once it ends
    (``\\n``, or the end of the stream), so a line that never ends costs one line's bound.
    """

    __slots__ = ("_cut", "_head", "_held_bytes", "_held_lines", "_last", "_line_bytes", "_lines",
                 "_tokens", "_window")

    def __init__(self, config: ClientConfig) -> None:
        """Use ``config``'s ``stderr_log_line_bytes``, ``stderr_log_lines`` and ``stderr_log_window``."""
        self._line_bytes = config.stderr_log_line_bytes
        self._lines = config.stderr_log_lines
        self._window = config.stderr_log_window
        self._head = bytearray()  # the current line, up to the bound
        self._cut = 0  # bytes of the current line beyond the bound
        self._tokens = float(self._lines)
        self._last: float | None = None
        self._held_lines = 0  # lines not logged since the last summary
        self._held_bytes = 0

    def feed(self, data: bytes, now: float) -> list[str]:
        """Take a chunk of stderr; return the lines to log now (a summary may come first)."""
        out: list[str] = []
        position, end = 0, len(data)
        while position < end:
            newline = data.find(b"\n", position)
            if newline < 0:
                self._take(data, position, end)
                break
            self._refill(now)
            if self._tokens < 1:  # nothing more gets through at this instant: just count
                last = data.rindex(b"\n", position)
                self._held_lines += data.count(b"\n", position, last + 1)
                self._held_bytes += len(self._head) + self._cut + last + 1 - position
                self._head.clear()
                self._cut = 0
                self._take(data, last + 1, end)
                break
            self._take(data, position, newline)
            out += self._end_line()
            position = newline + 1
        return out

    def close(self, now: float) -> list[str]:
        """The stream ended: the last unterminated line (if let through) and the summary."""
        out: list[str] = []
        if self._head or self._cut:
            self._refill(now)
            if self._tokens < 1:
                self._held_lines += 1
                self._held_bytes += len(self._head) + self._cut
            else:
                out += self._end_line()
        if self._held_lines:
            out.append(self._summary())
        return out

    def _take(self, data: bytes, start: int, stop: int) -> None:
        room = self._line_bytes - len(self._head)
        if stop - start > room:
            self._head += data[start:start + room]
            self._cut += stop - start - room
        else:
            self._head += data[start:stop]

    def _refill(self, now: float) -> None:
        last, self._last = self._last, now
        if last is not None and now > last:
            self._tokens = min(self._lines, self._tokens + (now - last) * self._lines / self._window)

    def _end_line(self) -> list[str]:
        """The current line, let through (a token is available): after the summary, if any."""
        self._tokens -= 1
        text = self._head.rstrip(b"\r").decode("utf-8", "replace")
        if self._cut:
            text += f" [... {self._cut} more bytes of this line not logged]"
        self._head.clear()
        self._cut = 0
        out = [self._summary()] if self._held_lines else []
        out.append(text)
        return out

    def _summary(self) -> str:
        lines, size = self._held_lines, self._held_bytes
        self._held_lines = self._held_bytes = 0
        return (f"[{lines} lines ({size} bytes) of stderr not logged: over {self._lines} lines "
                f"in {self._window:g} s]")

"""A bounded record of what a server writes to stderr: the tail kept, the rest counted.

Drivers drain stderr continuously (a server that floods it must never block on a full
pipe) and feed it here; the tail goes into ``ConnectionClosed.stderr_tail``.
"""

from __future__ import annotations

__all__ = ["StderrTail"]

_MAX_PARTIAL_LINE = 64 * 1024


class StderrTail:
    """Keeps the last ``limit`` bytes of a stream and splits it into lines for logging."""

    __slots__ = ("_buf", "_limit", "_partial", "dropped", "total")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buf = bytearray()
        self._partial = b""
        self.total = 0
        self.dropped = 0

    def feed(self, data: bytes, *, want_lines: bool = True) -> list[str]:
        """Record ``data``; return the complete lines in it when ``want_lines``.

        Lines are decoded leniently (invalid UTF-8 replaced) and a line longer than
        64 KiB is cut into pieces, so logging stays bounded too.
        """
        self.total += len(data)
        buf = self._buf
        buf += data
        excess = len(buf) - self._limit
        if excess > 0:
            del buf[:excess]
            self.dropped += excess
        if not want_lines:
            self._partial = b""
            return []
        text = self._partial + data
        *lines, rest = text.split(b"\n")
        if len(rest) > _MAX_PARTIAL_LINE:
            lines.append(rest)
            rest = b""
        self._partial = rest
        out: list[str] = []
        for raw in lines:
            line = raw.rstrip(b"\r")
            if len(line) <= _MAX_PARTIAL_LINE:
                out.append(line.decode("utf-8", "replace"))
            else:  # one read may hold a huge line: log it in bounded pieces
                out.extend(line[i : i + _MAX_PARTIAL_LINE].decode("utf-8", "replace")
                           for i in range(0, len(line), _MAX_PARTIAL_LINE))
        return out

    def flush(self) -> list[str]:
        """End of stream: the last unterminated line, if any."""
        rest, self._partial = self._partial, b""
        return [rest.decode("utf-8", "replace")] if rest else []

    def text(self) -> str:
        """The kept tail, decoded leniently."""
        prefix = f"[{self.dropped} earlier bytes dropped]\n" if self.dropped else ""
        return prefix + self._buf.decode("utf-8", "replace")

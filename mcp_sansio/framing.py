"""Newline-delimited framing for the stdio transport, with a bounded line buffer.

MCP's stdio transport sends one JSON-RPC message per line (``\\n``; ``\\r\\n`` tolerated).
A line longer than the bound is reported, never buffered: the buffer holds at most
``max_line_bytes`` plus one read, so a hostile peer cannot cause a MemoryError.
"""

from __future__ import annotations

__all__ = ["LineBuffer"]


class LineBuffer:
    """Splits a byte stream into lines without their terminators.

    ``feed`` returns complete lines; ``close`` returns the final unterminated one.
    Blank lines are dropped (they carry no message). A line is too long when the bytes
    before its ``\\n`` (a ``\\r`` included) exceed the bound, whatever the chunking; then
    ``overflow`` holds its size (so far) and the buffer stops producing lines.
    """

    __slots__ = ("_buf", "_max", "_scanned", "overflow")

    def __init__(self, max_line_bytes: int) -> None:
        self._buf = bytearray()
        self._max = max_line_bytes
        self._scanned = 0
        self.overflow: int | None = None

    def feed(self, data: bytes) -> list[bytes]:
        """Append ``data`` and return every line it completed, up to an oversized one."""
        if self.overflow is not None:
            return []
        limit = self._max
        buf = self._buf
        if not buf and data.endswith(b"\n") and data.count(b"\n") == 1:
            # Fast path: one whole line in one read, the common case for replies.
            if len(data) > limit + 1:
                self._overflowed(len(data) - 1)
                return []
            line = data[:-2] if data.endswith(b"\r\n") else data[:-1]
            return [line] if line else []
        buf += data
        end = buf.rfind(b"\n", self._scanned)
        if end < 0:
            self._scanned = len(buf)
            if len(buf) > limit:
                self._overflowed(len(buf))
            return []
        lines = bytes(buf[:end]).split(b"\n")
        del buf[: end + 1]
        self._scanned = 0
        out: list[bytes] = []
        for raw in lines:
            if len(raw) > limit:
                self._overflowed(len(raw))
                return out
            line = raw[:-1] if raw.endswith(b"\r") else raw
            if line:
                out.append(line)
        if len(buf) > limit:
            self._overflowed(len(buf))
        return out

    def close(self) -> list[bytes]:
        """End of stream: the final unterminated line, if any."""
        if self.overflow is not None:
            return []
        rest = bytes(self._buf)
        self._buf.clear()
        self._scanned = 0
        rest = rest.removesuffix(b"\r")
        return [rest] if rest else []

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete line."""
        return len(self._buf)

    def _overflowed(self, size: int) -> None:
        self.overflow = size
        self._buf = bytearray()
        self._scanned = 0

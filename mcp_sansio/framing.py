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

    __slots__ = ("_max", "_parts", "_size", "overflow")

    def __init__(self, max_line_bytes: int) -> None:
        self._parts: list[bytes] = []  # chunks of the open line, joined once it ends
        self._size = 0
        self._max = max_line_bytes
        self.overflow: int | None = None

    def sole_line(self, data: bytes) -> bytes | None:
        """The line ``data`` holds when it is exactly one whole line and nothing is
        buffered (the usual read: one reply), without building a list; ``None`` for any
        other ``data`` (then :meth:`feed` it). A blank line gives ``b""``."""
        end = len(data) - 1
        if data.find(b"\n") != end or end < 0 or end > self._max or self._parts or self.overflow is not None:
            return None  # no newline, or several, or none to find (b""), too long, or not alone
        return data[: end - 1] if end and data[end - 1] == 13 else data[:end]  # 13: "\r"

    def feed(self, data: bytes) -> list[bytes]:
        """Append ``data`` and return every line it completed, up to an oversized one.

        A reader on a hot path asks :meth:`sole_line` first, and feeds what it declines.
        """
        if self.overflow is not None:
            return []
        limit = self._max
        last = data.rfind(b"\n")
        if last < 0:
            self._size += len(data)
            if self._size > limit:
                self._overflowed(self._size)
            else:
                self._parts.append(data)
            return []
        first = data.find(b"\n")
        if self._size + first > limit:
            self._overflowed(self._size + first)
            return []
        if self._parts:
            self._parts.append(data[:last])
            block = b"".join(self._parts)
            self._parts = []
        else:
            block = data[:last]
        tail = data[last + 1 :]
        self._size = len(tail)
        lines = block.split(b"\n") if first != last else [block]
        out: list[bytes] = []
        for raw in lines:
            if len(raw) > limit:
                self._overflowed(len(raw))
                return out
            line = raw[:-1] if raw.endswith(b"\r") else raw
            if line:
                out.append(line)
        if self._size > limit:
            self._overflowed(self._size)
        elif tail:
            self._parts.append(tail)
        return out

    def close(self) -> list[bytes]:
        """End of stream: the final unterminated line, if any."""
        if self.overflow is not None:
            return []
        rest = b"".join(self._parts).removesuffix(b"\r")
        self._parts = []
        self._size = 0
        return [rest] if rest else []

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete line."""
        return self._size

    def _overflowed(self, size: int) -> None:
        self.overflow = size
        self._parts = []
        self._size = 0

"""Incremental ``text/event-stream`` parser: bytes in, :class:`SseEvent` out.

Implements the WHATWG HTML "event stream interpretation" rules
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)
for the bodies of Streamable HTTP responses and GET streams. The parser works on bytes
and decodes UTF-8 (with replacement) once per field, which gives the same text as decoding
the whole stream first: every byte the rules look at is ASCII, and an ASCII byte always
ends a malformed UTF-8 sequence.
"""

from __future__ import annotations

from typing import Final

import msgspec

from mcp_sansio.errors import LocalProtocolError, MessageTooLarge

__all__ = ["SseEvent", "SseParser"]

_BOM: Final = b"\xef\xbb\xbf"
# A ``retry:`` value that does not fit in 64 bits is ignored: no timer could honour it.
_MAX_RETRY_MS: Final = 2**64 - 1
_MAX_RETRY_DIGITS: Final = len(str(_MAX_RETRY_MS))


class SseEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One dispatched event.

    Attributes:
        event: the ``event:`` field, ``"message"`` when absent or empty.
        data: the ``data:`` lines joined with ``\\n``.
        id: the stream's last event ID when the event was dispatched (it may have been
            set by an earlier event).
        retry: the stream's reconnection time in milliseconds at dispatch, or ``None``
            if the stream has not set one yet.
    """

    event: str = "message"
    data: str
    id: str = ""
    retry: int | None = None


class SseParser:
    """Turns chunks of an event stream into :class:`SseEvent` objects.

    ``last_event_id`` and ``retry`` follow the stream even when no event is dispatched:
    MCP servers "prime" a stream with an event that has an ``id:`` (and often a
    ``retry:``) but no data, which the spec never dispatches, yet the client must learn
    the ID to resume from. ``last_event_id`` is updated at each blank line, as the spec's
    "last event ID string" is; ``retry`` as soon as its line arrives.

    Bounds: no line, and no event (its field lines together, comments excluded), may
    exceed ``max_event_bytes`` bytes, line ends not counted; either raises
    :class:`MessageTooLarge`, whatever the chunking. The parser is then broken and
    every further ``feed`` raises again.
    """

    __slots__ = (
        "_after_cr",
        "_at_start",
        "_closed",
        "_data",
        "_error",
        "_event_size",
        "_event_type",
        "_id_buffer",
        "_last_event_id",
        "_limit",
        "_retry",
        "_tail",
        "_tail_size",
    )

    def __init__(self, *, max_event_bytes: int = 32 * 1024 * 1024) -> None:
        """Create a parser for one stream.

        Args:
            max_event_bytes: the largest line, and the largest event, in bytes.

        Raises:
            LocalProtocolError: ``max_event_bytes`` is not positive.
        """
        if max_event_bytes < 1:
            raise LocalProtocolError(f"max_event_bytes must be positive, got {max_event_bytes}")
        self._limit = max_event_bytes
        self._last_event_id = ""
        self._retry: int | None = None
        # The spec's per-stream buffers; data is kept as lines, joined at dispatch.
        self._id_buffer = ""
        self._event_type = b""
        self._data: list[bytes] = []
        self._event_size = 0  # bytes of the pending event's field lines
        # Pieces of the current unterminated line (or of a possible BOM at the start).
        self._tail: list[bytes] = []
        self._tail_size = 0
        self._at_start = True
        self._after_cr = False  # the last byte seen was CR: a leading LF is its partner
        self._error: MessageTooLarge | None = None
        self._closed = False

    @property
    def last_event_id(self) -> str:
        """The last event ID string: what to send as ``Last-Event-ID`` when resuming."""
        return self._last_event_id

    @property
    def retry(self) -> int | None:
        """The reconnection time the stream asked for, in milliseconds, or ``None``."""
        return self._retry

    def feed(self, data: bytes) -> list[SseEvent]:
        """Parse the next chunk of the stream.

        Args:
            data: any number of bytes; line ends may be split across chunks.

        Returns:
            Every event completed by this chunk, in order.

        Raises:
            MessageTooLarge: a line or an event exceeded ``max_event_bytes``
                (events completed earlier in the same chunk are lost with it).
            LocalProtocolError: called after :meth:`close`.
        """
        if self._error is not None:
            raise MessageTooLarge(str(self._error), limit=self._limit)
        if self._closed:
            raise LocalProtocolError("feed() called after close()")
        if self._at_start:
            data = self._skip_bom(data)
        if not data:
            return []
        if self._after_cr:
            self._after_cr = False
            if data[0] == 0x0A:
                data = data[1:]
                if not data:
                    return []
        if b"\r" in data:
            lines = data.splitlines()
            last = data[-1]
            self._after_cr = last == 0x0D
            tail = b"" if last in b"\r\n" else lines.pop()
        else:
            lines = data.split(b"\n")
            tail = lines.pop()
        limit = self._limit
        if not lines:
            self._tail.append(tail)
            self._tail_size += len(tail)
            if self._tail_size > limit:
                raise self._too_large("an SSE line", self._tail_size)
            return []
        held = self._tail_size
        if held:
            self._tail.append(lines[0])
            lines[0] = b"".join(self._tail)
        self._tail = [tail] if tail else []
        self._tail_size = len(tail)
        if len(data) + held > limit:
            longest = max(self._tail_size, *map(len, lines))
            if longest > limit:
                raise self._too_large("an SSE line", longest)
        return self._process(lines)

    def close(self) -> list[SseEvent]:
        """End of stream: discard any incomplete event, as the spec requires.

        Returns:
            Always ``[]``: a final CR has already ended its line, and an event without
            its blank line is never dispatched.
        """
        self._closed = True
        self._tail = []
        self._tail_size = 0
        self._data = []
        self._event_size = 0
        self._event_type = b""
        return []

    def _skip_bom(self, data: bytes) -> bytes:
        """Drop one UTF-8 BOM at the very start, holding back bytes until it is decided."""
        if self._tail:
            data = self._tail[0] + data
            self._tail = []
            self._tail_size = 0
        if len(data) < len(_BOM) and _BOM.startswith(data):
            if data:
                self._tail = [data]
                self._tail_size = len(data)
            return b""
        self._at_start = False
        return data.removeprefix(_BOM)

    def _process(self, lines: list[bytes]) -> list[SseEvent]:
        """Interpret complete lines (the spec's per-line steps); the hot loop."""
        events: list[SseEvent] = []
        data = self._data
        size = self._event_size
        event_type = self._event_type
        id_buffer = self._id_buffer
        last_id = self._last_event_id
        retry = self._retry
        limit = self._limit
        for line in lines:
            if not line:
                last_id = id_buffer
                if data:
                    joined = data[0] if len(data) == 1 else b"\n".join(data)
                    events.append(
                        SseEvent(
                            event=event_type.decode("utf-8", "replace") if event_type else "message",
                            data=joined.decode("utf-8", "replace"),
                            id=last_id,
                            retry=retry,
                        )
                    )
                    data = []
                event_type = b""
                size = 0
                continue
            if line[:6] == b"data: ":  # the common spelling: no partition, one copy fewer
                size += len(line)
                if size > limit:
                    raise self._too_large("an SSE event", size)
                data.append(line[6:])
                continue
            name, _, value = line.partition(b":")
            if not name:
                continue  # a comment
            size += len(line)
            if size > limit:
                raise self._too_large("an SSE event", size)
            if value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                data.append(value)
            elif name == b"id":
                if b"\0" not in value:
                    id_buffer = value.decode("utf-8", "replace")
            elif name == b"event":
                event_type = value
            elif name == b"retry":
                retry = _parse_retry(value, retry)
            # Any other field is ignored.
        self._data = data
        self._event_size = size
        self._event_type = event_type
        self._id_buffer = id_buffer
        self._last_event_id = last_id
        self._retry = retry
        return events

    def _too_large(self, what: str, size: int) -> MessageTooLarge:
        """Break the parser and build the error to raise."""
        self._error = MessageTooLarge(
            f"{what} exceeds {self._limit} bytes (at least {size})", limit=self._limit
        )
        return self._error


def _parse_retry(value: bytes, current: int | None) -> int | None:
    """The new reconnection time: ``value`` if it is only ASCII digits, else ``current``."""
    if not value.isdigit():
        return current
    digits = value.lstrip(b"0")
    if len(digits) > _MAX_RETRY_DIGITS:
        return current
    number = int(digits or b"0")
    return number if number <= _MAX_RETRY_MS else current

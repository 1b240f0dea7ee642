"""Incremental ``text/event-stream`` parser: bytes in, :class:`SseEvent` out.

Implements the WHATWG HTML "event stream interpretation" rules
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)
for the bodies of Streamable HTTP responses and GET streams.

The parser works on bytes. Every byte the rules look at is ASCII, and an ASCII byte
always ends a malformed UTF-8 sequence, so decoding each field on its own gives the same
text as decoding the whole stream first. An event's data stays bytes (:attr:`SseEvent.data`):
MCP hands it straight to the JSON decoder, which wants UTF-8 bytes, and decoding it to
text first would only be undone. :attr:`SseEvent.text` gives the spec's text.
"""

from __future__ import annotations

from itertools import repeat
from operator import itemgetter
from typing import Final

import msgspec

from mcp_sansio.errors import LocalProtocolError, MessageTooLarge

__all__ = ["SseEvent", "SseParser"]

_BOM: Final = b"\xef\xbb\xbf"
# A ``retry:`` value that does not fit in 64 bits is ignored: no timer could honour it.
_MAX_RETRY_MS: Final = 2**64 - 1
_MAX_RETRY_DIGITS: Final = len(str(_MAX_RETRY_MS))
_LF: Final = 0x0A
_CR: Final = 0x0D


class SseEvent(msgspec.Struct, frozen=True):
    """One dispatched event.

    Attributes:
        data: the ``data:`` lines joined with ``\\n``, as the bytes that arrived
            (UTF-8 by the spec; see :attr:`text`).
        event: the ``event:`` field, ``"message"`` when absent or empty.
        id: the stream's last event ID when the event was dispatched (it may have been
            set by an earlier event).
        retry: the stream's reconnection time in milliseconds at dispatch, or ``None``
            if the stream has not set one yet.
    """

    data: bytes
    event: str = "message"
    id: str = ""
    retry: int | None = None

    @property
    def text(self) -> str:
        """The data as the spec's text: UTF-8, malformed sequences replaced by U+FFFD."""
        return self.data.decode("utf-8", "replace")


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
        self._event_type = "message"
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
            if data[0] == _LF:
                data = data[1:]
                if not data:
                    return []
        # Runs of whole events of one usual shape are read in bulk (_batch); the line
        # path (_lines) takes the rest: the end of an event begun in an earlier chunk,
        # anything unusual, and the incomplete event at the end.
        lines = data.split(b"\n")
        cr = b"\r" if b"\r" in data else b""  # then lines should end with CR (CRLF)
        first = start = 0
        events: list[SseEvent] = []
        if self._tail or self._event_size:
            try:  # the first blank line (not the end of a held line) ends the pending event
                first = lines.index(cr, 1 if self._tail else 0, len(lines) - 1) + 1
            except ValueError:
                return self._lines(data)
            start = sum(map(len, lines[:first])) + first
            events = self._lines(data[:start])
        if start < len(data):
            events += self._batch(data, lines, first, start, cr)
        return events

    def _lines(self, data: bytes) -> list[SseEvent]:
        """Split ``data`` into lines, keep the unterminated rest, interpret the others."""
        if b"\r" in data:
            # bytes.splitlines() ends lines at CR, LF and CRLF alone, as the spec does. A CR
            # that ends the chunk has ended its line; an LF that starts the next one is
            # its partner.
            lines = data.splitlines()
            last = data[-1]
            self._after_cr = last == _CR
            tail = b"" if last in (_CR, _LF) else lines.pop()
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

    def _batch(self, data: bytes, lines: list[bytes], first: int, start: int, cr: bytes) -> list[SseEvent]:
        """Interpret ``data[start:]``, which starts a line (``lines[first]``, split at
        LF) with no event pending, in bulk when it is a run of events of one usual
        shape; else line by line.

        The usual shapes are what MCP servers send: an optional ``event: message``
        line, an optional ``id: X`` line, one ``data: D`` line and a blank line, each
        line ended by LF, or by CRLF when ``cr``. The first event fixes the shape;
        every whole event after it is then checked and taken apart with list slices
        and C-level ``map``, not with a Python step per line. A run that breaks the
        shape anywhere (another field, a second data line, a stray CR, a NUL in an id),
        or data larger than the event bound, goes to the line path, which gives the
        same result for these shapes.
        """
        has_event = lines[first] == b"event: message" + cr
        has_id = len(lines) > first + has_event and lines[first + has_event].startswith(b"id: ")
        width = 2 + has_event + has_id
        count = (len(lines) - 1 - first) // width  # whole events (the last piece is unterminated)
        if not count or len(data) - start > self._limit:
            return self._lines(data[start:])
        end = first + width * count
        values = lines[first + has_event + has_id : end : width]
        ids = lines[first + has_event : end : width] if has_id else []
        if (
            (has_event and lines[first:end:width].count(lines[first]) != count)
            or lines[first + width - 1 : end : width].count(cr) != count
            or not all(map(bytes.startswith, values, repeat(b"data: ")))
            or not all(map(bytes.startswith, ids, repeat(b"id: ")))
            or b"\0" in b"".join(ids)
            or (cr and not (_crlf_ended(values) and _crlf_ended(ids)))
        ):
            return self._lines(data[start:])
        cut = slice(6, -1) if cr else slice(6, None)
        payloads = map(itemgetter(cut), values)
        if has_id:
            id_cut = slice(4, -1) if cr else slice(4, None)
            # One decode for all: LF is ASCII, so it cannot join or split a UTF-8 sequence.
            id_list = b"\n".join(map(itemgetter(id_cut), ids)).decode("utf-8", "replace").split("\n")
            self._id_buffer = self._last_event_id = id_list[-1]
            events = list(map(SseEvent, payloads, repeat("message"), id_list, repeat(self._retry)))
        else:
            events = list(map(SseEvent, payloads, repeat("message"), repeat(self._last_event_id),
                              repeat(self._retry)))
        rest = lines[end:]  # the lines after the run, the unterminated last one included
        if len(rest) > 1 or rest[0]:
            events += self._lines(data[len(data) - sum(map(len, rest)) - len(rest) + 1 :])
        return events

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
        self._event_type = "message"
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
        """Interpret complete lines (the spec's per-line steps); the hot loop.

        The tests are ordered by how often MCP servers send each line: data, blank,
        then the rest.
        """
        events: list[SseEvent] = []
        data = self._data
        size = self._event_size
        event_type = self._event_type
        id_buffer = self._id_buffer
        last_id = self._last_event_id
        retry = self._retry
        limit = self._limit
        for line in lines:
            if line[:6] == b"data: ":  # the common spelling: no partition
                size += len(line)
                data.append(line[6:])
            elif not line:
                if size > limit:
                    raise self._too_large("an SSE event", size)
                last_id = id_buffer
                if data:
                    events.append(SseEvent(data[0] if len(data) == 1 else b"\n".join(data),
                                           event_type, last_id, retry))
                    data = []
                event_type = "message"
                size = 0
            elif line == b"event: message":
                size += 14
                event_type = "message"
            else:
                name, _, value = line.partition(b":")
                if not name:
                    continue  # a comment
                size += len(line)
                if value[:1] == b" ":
                    value = value[1:]
                if name == b"data":
                    data.append(value)
                elif name == b"id":
                    if b"\0" not in value:
                        id_buffer = value.decode("utf-8", "replace")
                elif name == b"event":
                    event_type = value.decode("utf-8", "replace") if value else "message"
                elif name == b"retry":
                    retry = _parse_retry(value, retry)
                # Any other field is ignored.
        if size > limit:
            raise self._too_large("an SSE event", size)
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


def _crlf_ended(lines: list[bytes]) -> bool:
    """Whether every line (split at LF) ends with CR and holds no other: then each was
    ended by CRLF, with no lone CR (itself a line end) inside. ``find`` is a memchr."""
    return sum(map(bytes.find, lines, repeat(b"\r"))) == sum(map(len, lines)) - len(lines) and all(
        map(bytes.endswith, lines, repeat(b"\r")))


def _parse_retry(value: bytes, current: int | None) -> int | None:
    """The new reconnection time: ``value`` if it is only ASCII digits, else ``current``."""
    if not value.isdigit():
        return current
    digits = value.lstrip(b"0")
    if len(digits) > _MAX_RETRY_DIGITS:
        return current
    number = int(digits or b"0")
    return number if number <= _MAX_RETRY_MS else current

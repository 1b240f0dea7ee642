"""What the host should log about incoming messages the client skipped: quoted once, then counted.

A server that prints a banner on stdout, or keeps answering requests that were given up,
would otherwise cost a warning per message. The session notes every
:class:`~mcp_sansio.events.MessageDiscarded` here and puts what to say in its ``warning``:
the first message skipped for each reason is quoted (cut), later ones only counted; the
count is said when it reaches 10, 100, 1000, ... and, in ``ConnectionTerminated.warning``,
at the end of the connection if anything was skipped since the last word.
"""

from __future__ import annotations

from typing import Final

import msgspec

from .events import DiscardReason

__all__ = ["DiscardLog", "undecodable"]

_QUOTE: Final = 120  # bytes of a skipped message quoted


class DiscardLog:
    """Counts skipped messages by reason and says when the host should hear of them."""

    __slots__ = ("_by_reason", "_told")

    def __init__(self) -> None:
        self._by_reason: dict[DiscardReason, int] = {}
        self._told = 0  # the total the host last heard

    def note(self, reason: DiscardReason, detail: str, excerpt: bytes) -> str | None:
        """Count one skipped message; return the warning to log now, if any."""
        count = self._by_reason[reason] = self._by_reason.get(reason, 0) + 1
        total = sum(self._by_reason.values())
        if count == 1:
            self._told = total
            quote = excerpt[:_QUOTE].decode("utf-8", "replace")
            more = "..." if len(excerpt) > _QUOTE else ""
            return (f"discarded a message from the server ({reason.value}): {detail}; it read "
                    f"{quote!r}{more} (more such messages are only counted)")
        if total >= 10 and total == 10 ** (len(str(total)) - 1):
            self._told = total
            return f"discarded {total} messages from the server so far ({self._breakdown()})"
        return None

    def summary(self) -> str | None:
        """The connection ended: the count, if messages were skipped since the last warning."""
        total = sum(self._by_reason.values())
        if total == self._told:
            return None
        self._told = total
        return f"discarded {total} messages from the server in all ({self._breakdown()})"

    def _breakdown(self) -> str:
        return ", ".join(f"{reason.value}: {count}" for reason, count in self._by_reason.items())


def undecodable(data: bytes, exc: Exception) -> tuple[DiscardReason, str]:
    """Why a message that did not decode is skipped: JSON but no JSON-RPC envelope, not
    UTF-8, or not JSON at all; and the words for it."""
    if isinstance(exc, msgspec.ValidationError | RecursionError):
        return DiscardReason.NOT_JSON_RPC, f"not JSON-RPC: {exc}"
    try:
        data.decode()
    except UnicodeDecodeError:
        return DiscardReason.INVALID_UTF8, "the message is not valid UTF-8"
    return DiscardReason.NOT_JSON, f"not JSON: {exc}"


def undecodable_answer(data: bytes, exc: Exception) -> str:
    """Why an answer (its id read by :func:`~mcp_sansio.jsonrpc.recover_response_id`) did
    not decode, as the end of a sentence that starts with what it answers."""
    if isinstance(exc, RecursionError):
        return "could not be decoded: its JSON nests deeper than the decoder allows"
    reason, detail = undecodable(data, exc)
    if reason is DiscardReason.INVALID_UTF8:
        return "could not be decoded: it is not valid UTF-8"
    return f"could not be decoded: {detail}"


def whole_but_undecodable(data: bytes, exc: Exception) -> bool:
    """Whether a message that did not decode is whole (nested too deep, a member of the
    wrong type, invalid UTF-8 inside it) rather than cut short (a server dying mid-line)
    or no JSON at all: only a whole one is worth answering for its request."""
    if isinstance(exc, msgspec.ValidationError | RecursionError):
        return True
    try:
        data.decode()
    except UnicodeDecodeError as error:
        return error.reason != "unexpected end of data"  # a character cut in half: a line cut short
    return False

"""What a session asked a handshake-era client and awaits: its own requests (elicitation,
sampling, roots) by JSON-RPC id and by ticket, with their deadlines.

The session decides what to send and what to tell the handler; this table only holds the
questions in flight, and :func:`answer_event` reads the client's response to one.
"""

from __future__ import annotations

from typing import Final

import msgspec

from .. import jsonrpc
from ..events import ErrorData, FailureReason
from ..jsonrpc import Envelope
from .deadlines import Deadlines
from .events import ANSWER_TYPES, AnswerFailed, AnswerReceived

__all__ = ["Outbound", "Questions", "answer_event"]

_ANSWER_DECODERS: Final = {method: msgspec.json.Decoder(tp) for method, tp in ANSWER_TYPES.items()}


class Outbound(msgspec.Struct, kw_only=True):
    """A request we sent the client (handshake era), awaiting its answer."""

    ticket: int
    method: str
    call: int
    deadline: float


class Questions:
    """The requests in flight from a session to its client.

    Args:
        first_request_id: our JSON-RPC ids are numbered after it (workers sharing a
            session number theirs apart).
    """

    __slots__ = ("_deadlines", "_next_id", "_outbound", "_tickets")

    def __init__(self, first_request_id: int) -> None:
        self._next_id = first_request_id
        self._outbound: dict[int, Outbound] = {}
        self._tickets: dict[int, int] = {}  # ticket -> our request id
        self._deadlines: Deadlines[int] = Deadlines()

    def open(self, ticket: int, method: str, call: int, deadline: float) -> int:
        """Record a question ``ticket`` asked for ``call``; its fresh JSON-RPC id."""
        self._next_id += 1
        rid = self._next_id
        self._outbound[rid] = Outbound(ticket=ticket, method=method, call=call, deadline=deadline)
        self._tickets[ticket] = rid
        self._deadlines.set(rid, deadline)
        return rid

    def get(self, rid: int) -> Outbound:
        """The question ``rid`` (which must be in flight)."""
        return self._outbound[rid]

    def close(self, rid: int) -> Outbound:
        """Forget the question ``rid`` (which must be in flight); what it was."""
        out = self._outbound.pop(rid)
        self._tickets.pop(out.ticket, None)
        self._deadlines.set(rid, None)
        return out

    def answered(self, rid: object) -> Outbound | None:
        """The question a response with id ``rid`` answers, now forgotten; ``None`` for
        an id we are not waiting on."""
        return self.close(rid) if isinstance(rid, int) and rid in self._outbound else None

    def of_ticket(self, ticket: int) -> int:
        """The JSON-RPC id of the question ``ticket`` (which must be in flight)."""
        return self._tickets[ticket]

    def ids(self) -> list[int]:
        """Every question in flight."""
        return list(self._outbound)

    def due(self, now: float) -> list[int]:
        """The questions whose deadline is at or before ``now`` (the caller closes them)."""
        return self._deadlines.due(now)

    def next_deadline(self) -> float | None:
        """The earliest deadline of a question in flight."""
        return self._deadlines.first()


def answer_event(out: Outbound, env: Envelope) -> AnswerReceived | AnswerFailed:
    """What the client's response ``env`` to the question ``out`` tells the handler."""
    if isinstance(env.error, jsonrpc.ErrorObject):
        err = env.error
        error = ErrorData(code=err.code, message=err.message, data=err.data)
        return AnswerFailed(ticket=out.ticket, method=out.method, message=err.message,
                            reason=FailureReason.ERROR_RESPONSE, error=error)
    assert isinstance(env.result, msgspec.Raw)  # classify() guarantees it
    try:
        result = _ANSWER_DECODERS[out.method].decode(env.result)
    except (msgspec.DecodeError, RecursionError) as exc:
        return AnswerFailed(ticket=out.ticket, method=out.method, reason=FailureReason.INVALID_RESULT,
                            message=f"invalid {out.method} result: {exc}")
    return AnswerReceived(ticket=out.ticket, method=out.method, result=result)

"""What the fuzz client sends: steps (one message each, with what its answer must be) and
cases (a sequence of steps that probes one thing).

A step holds the exact bytes it sends, so a trace replays byte for byte; the rest of its
fields tell the oracles what to expect. Builders here make the messages; the planner
(``plan.py``) decides which to make.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

import msgspec

__all__ = ["Case", "Check", "Expect", "Replies", "CaseStep", "encode", "message_step", "raw_step"]

_encoder: Final = msgspec.json.Encoder()


class Expect(enum.Enum):
    """What must answer a step."""

    RESPONSE = "response"  # a request: exactly one response with its id
    NOTHING = "nothing"  # a notification: no response
    ANY = "any"  # malformed input: an answer, if any, has a null id; the server stays up
    CANCELLED = "cancelled"  # a request we cancel: no answer once the cancel was processed


class Replies(enum.Enum):
    """How the fuzz client answers the server's own requests (sampling, elicitation,
    roots) during a case; ``ping`` is always answered at once."""

    REFUSE = "refuse"  # -32601 at once (the client declared no capability)
    WRONG = "wrong"  # a result that fits no schema
    NEVER = "never"  # no answer at all
    LATE = "late"  # a plausible result, 1.5 s late


class Check(enum.Enum):
    """What the answer to a request must look like, beyond being one response."""

    RESULT = "result"  # a result valid against the method's result schema, or an error
    PING = "ping"  # a result, promptly: the server is alive
    INVALID_ARGS = "invalid-args"  # arguments break inputSchema: an error, or isError
    UNKNOWN_METHOD = "unknown-method"  # -32601
    INVALID_REQUEST = "invalid-request"  # not a valid request: no result
    FORGED_CURSOR = "forged-cursor"  # an error, if any, is -32602
    UNKNOWN_TOOL = "unknown-tool"  # tools/call of a tool never listed: an error (or isError)
    BOGUS_VERSION = "bogus-version"  # the result does not echo the bogus version
    STATUS_400 = "status-400"  # HTTP: the request must be refused with 400 Bad Request
    STATUS_404 = "status-404"  # HTTP: a terminated session's id must get 404 Not Found
    STATUS_403 = "status-403"  # HTTP: a foreign Origin must get 403 Forbidden
    STATUS_401 = "status-401"  # HTTP: a missing or invalid token must get 401 (with discovery)
    OTHER_PRINCIPAL = "other-principal"  # HTTP: another principal using a session must be refused
    NONE = "none"  # anything


class CaseStep(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One message the fuzz client sends.

    Attributes:
        data: the exact bytes (one line over stdio, one body over HTTP).
        label: what it probes, for people (``tools/call add invalid:type /a``).
        method: the MCP method it carries, or ``None`` for garbage.
        id: the request id the answer must carry (``None`` for anything else).
        expect: what must answer it.
        check: what the answer must look like.
        timeout: seconds to wait for the answer before the next step; 0 sends on at once
            (the answer is collected at the end of the case).
        patient: the request may legitimately take longer than ``timeout`` (a tool call):
            no answer in time is not a finding by itself (the liveness ping decides).
        tool: the tool a ``tools/call`` calls (for its ``outputSchema``).
        cancels: the id a ``notifications/cancelled`` cancels.
        progress_token: the progress token the request carries, if any.
        follow: its answer may call for more steps (the planner's ``follow_up``: a
            2026-07-28 ``input_required`` result is retried, with its ``requestState``
            tampered and replayed).
        headers: extra HTTP request headers, as sent (HTTP only; the last wins).
        session: ``"keep"`` (default), ``"none"`` (no session id), ``"#N"`` (the N-th
            session this connection opened, from 0) or a literal session id (HTTP only).
        http_method: ``POST``, or ``GET`` / ``DELETE`` (HTTP only; ``data`` unused).
        path: another request target on the same origin (HTTP only; a metadata URL).
    """

    data: bytes = b""
    label: str
    method: str | None = None
    id: int | str | None = None
    expect: Expect = Expect.RESPONSE
    check: Check = Check.NONE
    timeout: float = 5.0
    patient: bool = False
    tool: str | None = None
    cancels: int | str | None = None
    progress_token: int | str | None = None
    follow: bool = False
    headers: tuple[tuple[str, str], ...] = ()
    session: str = "keep"
    http_method: str = "POST"
    path: str | None = None


class Case(msgspec.Struct, frozen=True, kw_only=True):
    """A sequence of steps that probes one thing; ``fresh`` cases start on a new
    connection, before any handshake (their steps include it when they need one).
    ``capabilities`` is what the client declares in them, ``replies`` how it answers the
    server's requests."""

    name: str
    steps: tuple[CaseStep, ...]
    fresh: bool = False
    capabilities: dict[str, object] = msgspec.field(default_factory=dict)
    replies: Replies = Replies.REFUSE


def encode(message: object) -> bytes:
    """Compact JSON, member order kept (traces show the same bytes)."""
    return _encoder.encode(message)


def message_step(message: Mapping[str, object], label: str, **fields: object) -> CaseStep:
    """A step sending ``message``; its ``method`` and ``id`` come from the message
    unless given, and a message without an id expects no response."""
    method = message.get("method")
    request_id = message.get("id")
    defaults: dict[str, object] = {
        "method": method if isinstance(method, str) else None,
        "id": request_id if isinstance(request_id, int | str) and not isinstance(request_id, bool) else None,
        "expect": Expect.RESPONSE if "id" in message else Expect.NOTHING,
    }
    return msgspec.convert(
        {"data": encode(message), "label": label, **defaults, **fields}, CaseStep, from_attributes=True
    )


def raw_step(data: bytes, label: str, **fields: object) -> CaseStep:
    """A step sending ``data`` as is (malformed input): any answer must have a null id."""
    return msgspec.convert(
        {"data": data, "label": label, "expect": Expect.ANY, **fields}, CaseStep, from_attributes=True
    )

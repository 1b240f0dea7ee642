"""What a runner saw of one fuzz case, as records the oracles judge.

State held: none in this module; a :data:`Record` is one fact the runner observed (a step
sent, a message received, an HTTP status, a wait given up, the case's end), with the time
it happened, and a :class:`Context` what the runner knew besides (the revision, its schema,
the server's tools, what came before the case). They are the boundary between the runner,
which does I/O and reads the clock, and the oracles (:mod:`.oracles`), which do neither,
so a case's records replay into the same findings anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from .schemacheck import json_type

__all__ = ["Context", "Ended", "HttpAnswer", "Received", "Record", "Sent", "TimedOut", "id_key", "loose_id"]


class Sent(msgspec.Struct, frozen=True, kw_only=True, tag="sent"):
    """Step ``step`` was sent at ``t``."""

    step: int
    t: float


class Received(msgspec.Struct, frozen=True, kw_only=True, tag="received"):
    """One message (a stdio line, or one JSON body or SSE event over HTTP) at ``t``."""

    t: float
    data: bytes


class HttpAnswer(msgspec.Struct, frozen=True, kw_only=True, tag="http"):
    """The HTTP status and content type that answered step ``step``, the
    ``Mcp-Session-Id`` it set and its ``WWW-Authenticate`` challenge, if any."""

    step: int
    t: float
    status: int
    content_type: str = ""
    session: str = ""
    challenge: str = ""


class TimedOut(msgspec.Struct, frozen=True, kw_only=True, tag="timeout"):
    """The runner stopped waiting for the answer to step ``step`` at ``t``."""

    step: int
    t: float


class Ended(msgspec.Struct, frozen=True, kw_only=True, tag="ended"):
    """The case ended at ``t``; ``alive`` is false when the server had exited (with
    ``returncode``) or its connection was gone."""

    t: float
    alive: bool
    returncode: int | None = None


Record = Sent | Received | HttpAnswer | TimedOut | Ended


class Context(msgspec.Struct, kw_only=True):
    """What the oracles know besides the records.

    Attributes:
        version: the negotiated revision.
        schema: that revision's ``schema.json`` document, or ``None`` to skip result
            validation.
        tools: the server's tools by name (for ``outputSchema``).
        client_capabilities: what the fuzz client declared.
        initialized: ``notifications/initialized`` was sent before this case.
        earlier_ids: ids of requests sent on this connection before the case (their late
            answers are not "unknown").
        earlier_tokens: progress tokens of requests sent before the case (a request of an
            earlier case may still be running and reporting progress).
        stdio: the transport is stdio (every stdout line must be a message).
    """

    version: str
    schema: Mapping[str, object] | None = None
    tools: Mapping[str, Mapping[str, object]] = msgspec.field(default_factory=dict)
    client_capabilities: Mapping[str, object] = msgspec.field(default_factory=dict)
    initialized: bool = True
    earlier_ids: frozenset[tuple[str, object]] = frozenset()
    earlier_tokens: frozenset[tuple[str, object]] = frozenset()
    stdio: bool = True


def id_key(value: object) -> tuple[str, object]:
    """A key under which JSON-equal ids meet (``1`` and ``1.0``, never ``true``)."""
    if isinstance(value, float) and value.is_integer():
        return "integer", int(value)
    return json_type(value), value if isinstance(value, int | str | float | None) else repr(value)


def loose_id(value: object) -> str | None:
    """What an id looks like once its JSON type is forgotten (``1`` and ``"1"`` meet): how
    a response whose id has the wrong type is still matched to its request."""
    if isinstance(value, bool) or not isinstance(value, int | str | float):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)

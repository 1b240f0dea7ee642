"""Pure helpers every driver shares for what the server asks of the client.

Which capabilities to declare from the handlers an application registered, which
handler answers which server request, and how a handler's outcome (a typed Struct, a
plain wire-shape dict, or the exception it raised) becomes the answer. Deciding here
makes every driver answer, and reject a malformed answer, the same way; the drivers
only call the handler (awaiting it or not).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Protocol, TypeVar, cast

import msgspec

from . import jsonrpc, skills
from .errors import LocalProtocolError, McpSansioError, RequestError
from .events import RequestId, ServerRequestReceived
from .types import (
    RESULT_TYPES,
    ClientCapabilities,
    CreateMessageRequestParams,
    ElicitRequestParams,
    ListRootsResult,
    Root,
    RootsCapability,
)

__all__ = [
    "NO_HANDLER",
    "answer",
    "client_capabilities",
    "coerce_result",
    "handler_for",
    "roots_result",
]

T = TypeVar("T")


class _NoHandler(enum.Enum):
    NO_HANDLER = "no handler"


NO_HANDLER: Final = _NoHandler.NO_HANDLER
"""The outcome to :func:`answer` when :func:`handler_for` found no handler."""


class _Answering(Protocol):
    """The part of a client session that answers server requests."""

    def respond(self, request_id: RequestId, result: msgspec.Struct | Mapping[str, object], *,
                now: float) -> None: ...
    def respond_error(self, request_id: RequestId, code: int, message: str, data: object = None, *,
                      now: float) -> None: ...

_URL_AND_FORM: Final[dict[str, object]] = {"form": {}, "url": {}}


def client_capabilities(*, sampling: bool, elicitation: bool, roots: bool) -> ClientCapabilities:
    """The capabilities to declare: only what a handler exists for (no handler, no claim),
    and the extensions the drivers implement themselves (Skills)."""
    return ClientCapabilities(
        sampling={} if sampling else None,
        elicitation=dict(_URL_AND_FORM) if elicitation else None,
        roots=RootsCapability(list_changed=True) if roots else None,
        extensions={skills.EXTENSION: {}},
    )


def coerce_result(method: str, value: object) -> msgspec.Struct | Mapping[str, object]:
    """Check a handler's answer to the server's ``method`` request and return it to send.

    A Struct is sent as it is; a mapping must convert to the method's result type, and
    is then sent as given, so fields the types do not model survive.

    Raises:
        LocalProtocolError: the value is neither, or does not match the result type.
    """
    if isinstance(value, msgspec.Struct):
        return value
    if not isinstance(value, Mapping):
        raise LocalProtocolError(
            f"a {method} handler must return a result Struct or a dict, not {type(value).__name__}"
        )
    tp = RESULT_TYPES.get(method)
    if tp is not None:
        try:
            msgspec.convert(value, tp)
        except msgspec.ValidationError as exc:
            raise LocalProtocolError(f"invalid {method} result from the handler: {exc}") from exc
    return value


def roots_result(roots: Sequence[Root | Mapping[str, object]]) -> ListRootsResult:
    """``roots/list`` answer from ``Root`` Structs or ``{"uri", "name"}`` dicts.

    Raises:
        LocalProtocolError: a root is malformed.
    """
    out: list[Root] = []
    for root in roots:
        if isinstance(root, Root):
            out.append(root)
            continue
        try:
            out.append(msgspec.convert(root, Root))
        except msgspec.ValidationError as exc:
            raise LocalProtocolError(f"invalid root {root!r}: {exc}") from exc
    return ListRootsResult(roots=out)


def handler_for(
    method: str,
    *,
    roots: Callable[[], T] | None,
    sampling: Callable[[CreateMessageRequestParams], T] | None,
    elicitation: Callable[[ElicitRequestParams], T] | None,
) -> Callable[[msgspec.Struct], T] | None:
    """The application handler that answers the server's ``method`` request, if any.

    The handler takes the request's decoded params; ``roots`` serves ``roots/list``
    from the roots the application set. ``None`` means nobody answers it: pass
    :data:`NO_HANDLER` to :func:`answer`.
    """
    if method == "roots/list" and roots is not None:
        serve = roots
        return lambda _params: serve()
    if method == "sampling/createMessage" and sampling is not None:
        sample = sampling
        return lambda params: sample(cast(CreateMessageRequestParams, params))
    if method == "elicitation/create" and elicitation is not None:
        elicit = elicitation
        return lambda params: elicit(cast(ElicitRequestParams, params))
    return None


def answer(session: _Answering, event: ServerRequestReceived, outcome: object, *, now: float) -> None:
    """Queue the answer to the server's request from what its handler came to.

    ``outcome`` is the handler's return value (checked by :func:`coerce_result`), the
    exception it raised, or :data:`NO_HANDLER`. A :class:`RequestError` goes back as
    that JSON-RPC error; another mcp-sansio error (a malformed answer) as an internal
    error with its message; any other exception as an internal error naming only its
    type, since its message may hold data the server must not see.

    Raises:
        LocalProtocolError: the server request is not awaiting an answer.
    """
    rid, method = event.request_id, event.method
    if outcome is NO_HANDLER:
        session.respond_error(rid, jsonrpc.METHOD_NOT_FOUND, f"no handler for {method}", now=now)
    elif isinstance(outcome, RequestError):
        session.respond_error(rid, outcome.code, outcome.message, outcome.data, now=now)
    elif isinstance(outcome, McpSansioError):
        session.respond_error(rid, jsonrpc.INTERNAL_ERROR, str(outcome), now=now)
    elif isinstance(outcome, BaseException):
        session.respond_error(rid, jsonrpc.INTERNAL_ERROR,
                              f"the client's {method} handler failed ({type(outcome).__name__})", now=now)
    else:
        try:
            session.respond(rid, coerce_result(method, outcome), now=now)
        except LocalProtocolError as exc:  # malformed, or a value JSON cannot hold
            session.respond_error(rid, jsonrpc.INTERNAL_ERROR, str(exc), now=now)

"""JSON-RPC 2.0 envelopes on msgspec, decoded in two stages.

Stage one decodes only the envelope, keeping ``params`` / ``result`` as ``msgspec.Raw``;
the session decodes the payload by method (stage two). Encoding goes straight from
Structs to bytes. See https://www.jsonrpc.org/specification and the MCP "Base Protocol".
"""

from __future__ import annotations

import enum
from typing import Final

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .errors import LocalProtocolError

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Envelope",
    "Kind",
    "classify",
    "decode",
    "encode_error",
    "encode_notification",
    "encode_request",
    "encode_result",
    "result_span",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603


class ErrorObject(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The ``error`` member of a response."""

    code: int
    message: str = ""
    data: object = None


class Envelope(msgspec.Struct, kw_only=True):
    """Any JSON-RPC message; which members are set tells its kind (see :func:`classify`)."""

    jsonrpc: str | UnsetType = UNSET
    id: int | str | UnsetType | None = UNSET
    method: str | UnsetType = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: ErrorObject | UnsetType = UNSET


class Kind(enum.Enum):
    """The four shapes a JSON-RPC message can take, plus "none of them"."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    RESULT = "result"
    ERROR = "error"
    INVALID = "invalid"


_encoder: Final = msgspec.json.Encoder()

decode: Final = msgspec.json.Decoder(Envelope | list[Envelope]).decode
"""Decode one JSON text into an envelope, or a list of them for a batch (the decoder's own
method, so each message costs no Python call more).

Raises:
    msgspec.DecodeError: the text is not JSON (``msgspec.ValidationError``: JSON,
        but not JSON-RPC shaped); the caller turns this into an event.
    RecursionError: the JSON nests deeper than the decoder goes; callers treat it
        like a ``msgspec.ValidationError``.
"""


# The two compact layouts of a success response that servers write: members in the
# spec's order (Python SDK, msgspec, serde), or the result first (the TypeScript SDK).
_ID_FIRST: Final = b'{"jsonrpc":"2.0","id":'
_ID_FIRST_RESULT: Final = b',"result":{'
_RESULT_FIRST: Final = b'{"result":{'
_RESULT_FIRST_ID: Final = b'},"jsonrpc":"2.0","id":'


def result_span(data: bytes) -> tuple[int, int, int] | None:
    """The id and the bounds of the result object, if ``data`` has the frame of a compact
    success response: ``{"jsonrpc":"2.0","id":N,"result":{...}}`` or
    ``{"result":{...},"jsonrpc":"2.0","id":N}``, N a positive integer; else ``None``.

    Only the frame is checked, which costs a few byte searches where :func:`decode` scans
    the whole result to delimit its ``Raw`` (for a large result, nearly the cost of
    decoding it). The message is then exactly a response with these three members, as
    :func:`decode` would find, if and only if ``data[start:end]`` decodes as JSON: a
    caller decodes that slice and goes through :func:`decode` when it does not.
    """
    if data.startswith(_ID_FIRST):
        at = data.find(_ID_FIRST_RESULT, 22, 64)
        if at < 0 or not data.endswith(b"}}"):
            return None
        digits, start, end = data[22:at], at + 10, len(data) - 1
    elif data.startswith(_RESULT_FIRST):
        at = data.rfind(_RESULT_FIRST_ID)
        if at < 0 or not data.endswith(b"}"):
            return None
        digits, start, end = data[at + 23 : -1], 10, at + 1
    else:
        return None
    if not digits.isdigit() or digits.startswith(b"0"):  # JSON has no leading zeros
        return None
    return int(digits), start, end


def classify(env: Envelope) -> Kind:
    """Which kind of message ``env`` is; ``INVALID`` for shapes JSON-RPC does not allow."""
    if env.jsonrpc != "2.0":
        return Kind.INVALID
    if env.method is not UNSET:
        if env.result is not UNSET or env.error is not UNSET:
            return Kind.INVALID
        if env.id is UNSET:
            return Kind.NOTIFICATION
        return Kind.INVALID if env.id is None else Kind.REQUEST
    if env.error is not UNSET:
        return Kind.INVALID if env.result is not UNSET else Kind.ERROR
    if env.result is not UNSET and env.id is not UNSET and env.id is not None:
        return Kind.RESULT
    return Kind.INVALID


class _Request(msgspec.Struct, omit_defaults=True):
    jsonrpc: str
    id: int | str
    method: str
    params: object = None


class _Notification(msgspec.Struct, omit_defaults=True):
    jsonrpc: str
    method: str
    params: object = None


class _Result(msgspec.Struct):
    jsonrpc: str
    id: int | str
    result: object


class _Error(msgspec.Struct):
    jsonrpc: str
    id: int | str | None
    error: ErrorObject


def _encode(message: msgspec.Struct) -> bytes:
    try:
        return _encoder.encode(message)
    except (TypeError, RecursionError) as exc:  # msgspec's "unsupported type", or nesting
        raise _unencodable(exc) from exc


def _unencodable(exc: Exception) -> LocalProtocolError:
    return LocalProtocolError(f"cannot encode the message as JSON: {exc}")


def encode_request(request_id: int | str, method: str, params: object) -> bytes:
    """A request; ``params`` is a Struct, a mapping, or ``None`` to omit it.

    Raises:
        LocalProtocolError: ``params`` holds a value JSON cannot represent (as do the
            other ``encode_*`` functions for their payloads).
    """
    try:  # not through _encode: one call less for every request
        return _encoder.encode(_Request("2.0", request_id, method, params))
    except (TypeError, RecursionError) as exc:
        raise _unencodable(exc) from exc


def encode_notification(method: str, params: object) -> bytes:
    """A notification; ``params`` is a Struct, a mapping, or ``None`` to omit it."""
    return _encode(_Notification("2.0", method, params))


def encode_result(request_id: int | str, result: object) -> bytes:
    """A successful response."""
    return _encode(_Result("2.0", request_id, result))


def encode_error(
    request_id: int | str | None, code: int, message: str, data: object = None
) -> bytes:
    """An error response; ``request_id`` is ``None`` when the request's id is unknown."""
    return _encode(_Error("2.0", request_id, ErrorObject(code=code, message=message, data=data)))

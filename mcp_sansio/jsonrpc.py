"""JSON-RPC 2.0 envelopes on msgspec, decoded in two stages.

Stage one decodes only the envelope, keeping ``params`` / ``result`` as ``msgspec.Raw``;
the session decodes the payload by method (stage two). Encoding goes straight from
Structs to bytes. See https://www.jsonrpc.org/specification and the MCP "Base Protocol".
"""

from __future__ import annotations

import enum
import re
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
    "recover_response_id",
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


# ---------------------------------------------------------------- recovering an id

_SCAN_BYTES: Final = 4096  # how much of a message's start is read for its id; the end gives ~100
_SCAN_DEPTH: Final = 64  # nested deeper, the start is given up (a 100,000-deep answer costs 64 steps)
_STRUCTURAL: Final = re.compile(rb'["{}\[\],:]')
_WHITESPACE: Final = b" \t\r\n"
_NUMBER: Final = frozenset(b"-0123456789")
_TOKEN: Final = msgspec.json.Decoder(int | str)
_RESPONSE_KEYS: Final = frozenset({"result", "error"})


def recover_response_id(data: bytes) -> int | str | None:
    """The ``id`` of a response that did not decode (nested too deep, not UTF-8, a bad
    member), read cheaply: the members of the top-level object in the first 4 KiB, and
    its last member; ``None`` unless that shows a response (a ``result`` or ``error``
    member, no ``method``) and its id.

    Exact for any JSON text whose top level is an object with unique keys, read whole
    (4 KiB, values nested under 64 deep): the id found is the message's own, never one
    from a nested value or a string; past that, the id or nothing. For a text that is no
    JSON, a best guess from what it looks like. Costs at most a few thousand steps.
    """
    head = data[:_SCAN_BYTES]
    start = _skip(head, 0)
    if start >= len(head) or head[start] != 0x7B:  # "{"
        return None
    keys, found = _head_members(head, start)
    if "method" in keys or not keys & _RESPONSE_KEYS:
        return None
    if found is None and "id" not in keys:
        found = _last_member_id(data)
    return found


def _skip(data: bytes, at: int) -> int:
    """The index of the first non-whitespace byte from ``at``."""
    while at < len(data) and data[at] in _WHITESPACE:
        at += 1
    return at


def _string_end(data: bytes, at: int) -> int:
    """The index after the string whose opening quote is at ``at``, or -1 when it does not end."""
    at += 1
    while True:
        close = data.find(b'"', at)
        if close < 0:
            return -1
        slashes = 0
        while data[close - 1 - slashes] == 0x5C:  # "\\"
            slashes += 1
        if slashes % 2 == 0:
            return close + 1
        at = close + 1


def _token(data: bytes) -> int | str | None:
    """A JSON string or integer token, decoded; ``None`` for anything else."""
    try:
        value = _TOKEN.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    return value if type(value) is int or type(value) is str else None


def _head_members(data: bytes, start: int) -> tuple[set[str], int | str | None]:
    """The keys of the top-level object's members that start in ``data`` (read from its
    ``{`` at ``start``), and the ``id``, if a member whose value is whole in ``data`` has it."""
    keys: set[str] = set()
    found: int | str | None = None
    depth = 0
    expect_key = False  # at depth 1, right after "{" or ","
    at = start
    while (match := _STRUCTURAL.search(data, at)) is not None:
        at = match.start()
        char = data[at]
        if char == 0x22:  # '"'
            end = _string_end(data, at)
            if end < 0:
                break
            if depth == 1 and expect_key:
                key = _token(data[at:end])
                colon = _skip(data, end)
                if not isinstance(key, str) or colon >= len(data) or data[colon] != 0x3A:  # ":"
                    break
                if key == "id":
                    found = None if key in keys else _scalar_member(data, colon + 1)  # two: which?
                keys.add(key)
                expect_key = False
            at = end
            continue
        if char in b"{[":
            depth += 1
            if depth > _SCAN_DEPTH:
                break  # a value nested this deep holds no member of ours: the end may say more
            expect_key = depth == 1
        elif char in b"}]":
            depth -= 1
            if depth <= 0:
                break
        elif char == 0x2C and depth == 1:  # ","
            expect_key = True
        at += 1
    return keys, found


def _scalar_member(data: bytes, at: int) -> int | str | None:
    """The string or integer value starting at ``at`` (after whitespace), when a ``,`` or
    ``}`` follows it in ``data``."""
    at = _skip(data, at)
    if at >= len(data):
        return None
    if data[at] == 0x22:
        end = _string_end(data, at)
    else:
        end = at
        while end < len(data) and data[end] not in b",}" and data[end] not in _WHITESPACE:
            end += 1
    after = _skip(data, end) if end > at else len(data)
    if after >= len(data) or data[after] not in b",}":
        return None
    return _token(data[at:end])


def _last_member_id(data: bytes) -> int | str | None:
    """The id when it is the top-level object's last member (``..., "id": 7}``, as the
    TypeScript SDK writes responses), read backwards from the end."""
    tail = data[-128:].rstrip(_WHITESPACE)
    if not tail.endswith(b"}"):
        return None
    end = len(tail) - 1
    value_end = len(tail[:end].rstrip(_WHITESPACE))
    if value_end == 0:
        return None
    if tail[value_end - 1] == 0x22:
        value_start = _opening_quote(tail, value_end - 1)
    else:
        value_start = value_end
        while value_start > 0 and tail[value_start - 1] in _NUMBER:
            value_start -= 1
    colon = len(tail[:value_start].rstrip(_WHITESPACE)) - 1
    if value_start <= 0 or value_start == value_end or colon < 0 or tail[colon] != 0x3A:
        return None
    key_end = len(tail[:colon].rstrip(_WHITESPACE))
    if key_end == 0 or tail[key_end - 1] != 0x22:
        return None
    key_start = _opening_quote(tail, key_end - 1)
    before = len(tail[:key_start].rstrip(_WHITESPACE)) - 1
    if key_start <= 0 or before < 0 or tail[before] not in b",{" or _token(tail[key_start:key_end]) != "id":
        return None
    return _token(tail[value_start:value_end])


def _opening_quote(data: bytes, close: int) -> int:
    """The index of the quote opening the string whose closing quote is at ``close``; -1 if none."""
    at = close
    while (at := data.rfind(b'"', 0, at)) >= 0:
        slashes = 0
        while at - 1 - slashes >= 0 and data[at - 1 - slashes] == 0x5C:
            slashes += 1
        if slashes % 2 == 0:
            return at
    return -1

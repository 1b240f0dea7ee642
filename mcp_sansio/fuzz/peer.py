"""What the fuzz client must understand of incoming messages to pace itself: which
request a response answers, and how to answer the server's own requests.

The fuzz client declares no capabilities, so it answers every server request with
``-32601`` (``ping`` excepted, which gets its empty result); the oracles separately
blame requests the capabilities did not allow.
"""

from __future__ import annotations

from typing import Final

import msgspec

from ..jsonrpc import METHOD_NOT_FOUND, encode_error, encode_result
from .oracles import id_key

__all__ = ["answer_key", "reply_for"]

_decode: Final = msgspec.json.Decoder().decode


def _message(data: bytes) -> dict[str, object] | None:
    try:
        value = _decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def answer_key(data: bytes) -> tuple[str, object] | None:
    """The id key of the request ``data`` answers, if it is a response."""
    message = _message(data)
    if message is None or "method" in message or "id" not in message:
        return None
    return id_key(message["id"])


def reply_for(data: bytes) -> bytes | None:
    """Our answer to ``data`` if it is a server request (else ``None``)."""
    message = _message(data)
    if message is None or not isinstance(message.get("method"), str):
        return None
    rid = message.get("id")
    if not isinstance(rid, int | str) or isinstance(rid, bool):
        return None
    if message["method"] == "ping":
        return encode_result(rid, {})
    return encode_error(rid, METHOD_NOT_FOUND, f"the fuzz client does not support {message['method']}")

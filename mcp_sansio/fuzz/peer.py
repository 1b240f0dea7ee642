"""What the fuzz client must understand of incoming messages to pace itself: which
request a response answers, and how to answer the server's own requests.

The fuzz client usually declares no capabilities and answers every server request with
``-32601`` (``ping`` excepted, which gets its empty result); the oracles separately blame
requests the capabilities did not allow. Cases that declare sampling, elicitation and roots
answer them wrongly, never, or late (:class:`~.case.Replies`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec

from ..jsonrpc import METHOD_NOT_FOUND, encode_error, encode_result
from .case import Replies
from .records import id_key

__all__ = ["LATE_DELAY", "PLAUSIBLE_ANSWERS", "answer_id", "answer_key", "reply_for"]

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


def answer_id(data: bytes) -> tuple[bool, object]:
    """Whether ``data`` is a response, and its id as sent."""
    message = _message(data)
    if message is None or "method" in message or "id" not in message:
        return False, None
    return True, message["id"]


PLAUSIBLE_ANSWERS: Final[Mapping[str, object]] = {
    "sampling/createMessage": {
        "role": "assistant",
        "content": {"type": "text", "text": "fuzz"},
        "model": "fuzz",
    },
    "elicitation/create": {"action": "decline"},
    "roots/list": {"roots": []},
}
LATE_DELAY: Final = 1.5


def reply_for(data: bytes, replies: Replies = Replies.REFUSE) -> tuple[bytes, float] | None:
    """Our answer to ``data`` if it is a server request, and how many seconds to hold it
    (``None``: not a request, or ``replies`` says never)."""
    message = _message(data)
    if message is None or not isinstance(message.get("method"), str):
        return None
    rid = message.get("id")
    method = str(message["method"])
    if not isinstance(rid, int | str) or isinstance(rid, bool):
        return None
    if method == "ping":
        return encode_result(rid, {}), 0.0
    known = method in PLAUSIBLE_ANSWERS
    if replies is Replies.NEVER and known:
        return None
    if replies is Replies.WRONG and known:
        return encode_result(rid, {"fuzz": "this result fits no schema", "content": 42}), 0.0
    if replies is Replies.LATE and known:
        return encode_result(rid, PLAUSIBLE_ANSWERS[method]), LATE_DELAY
    return encode_error(rid, METHOD_NOT_FOUND, f"the fuzz client does not support {method}"), 0.0

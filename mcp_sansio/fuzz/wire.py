"""Wire-level material for the planner: malformed messages, ids of every JSON type and
size, and small helpers over JSON bytes and header lists."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from .case import CaseStep, Check, encode
from .rng import Rng

__all__ = ["decode_json", "garbage", "odd_ids", "renumbered", "result_of", "without_header"]


def without_header(headers: tuple[tuple[str, str], ...], name: str) -> tuple[tuple[str, str], ...]:
    return tuple(h for h in headers if h[0] != name)


def decode_json(data: bytes) -> object:
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None


def result_of(answer: bytes) -> dict[str, object]:
    """The ``result`` member of a response, or ``{}``."""
    message = decode_json(answer)
    result = message.get("result") if isinstance(message, dict) else None
    return result if isinstance(result, dict) else {}


def garbage(rng: Rng, new_id: Callable[[], int]) -> list[tuple[str, bytes]]:
    """Malformed messages (a batch is one since 2025-06-18; before, a batch of pings is
    answered by a batch): each must get a null-id error, an answer echoing its id, or
    nothing, and not hurt."""
    rid = new_id()
    return [
        ("invalid JSON", b'{"jsonrpc":"2.0","id":' + str(rid).encode() + b',"method":"ping"'),
        ("invalid UTF-8", b'{"jsonrpc":"2.0","method":"notifications/fuzz","params":{"s":"\xff\xfe"}}'),
        ("not an object", encode(rng.choice([1, "text", None, True]))),
        ("empty batch", b"[]"),
        ("wrong jsonrpc version", encode({"jsonrpc": "1.0", "id": new_id(), "method": "ping"})),
        ("no jsonrpc member", encode({"id": new_id(), "method": "ping"})),
        ("deep nesting", b"[" * 100_000 + b"]" * 100_000),
        ("response to nothing", encode({"jsonrpc": "2.0", "id": 987654321, "result": {}})),
        ("method not a string", encode({"jsonrpc": "2.0", "id": new_id(), "method": 42})),
        (
            "batch of two pings",
            encode([{"jsonrpc": "2.0", "id": new_id(), "method": "ping"} for _ in range(2)]),
        ),
    ]


def odd_ids(rid: int) -> Sequence[tuple[str, object, Check]]:
    """Ids of every JSON type and size: valid ones must come back unchanged; invalid ones
    must not get a result."""
    return (
        ("string id", f"fuzz-{rid}", Check.PING),
        ("empty string id", "", Check.PING),
        ("long string id", "i" * 4096 + str(rid), Check.PING),
        ("zero id", 0, Check.PING),
        ("negative id", -rid, Check.PING),
        ("2^53-1 id", 2**53 - 1, Check.PING),
        ("null id", None, Check.INVALID_REQUEST),
        ("boolean id", True, Check.INVALID_REQUEST),
        ("object id", {"fuzz": rid}, Check.INVALID_REQUEST),
        ("fractional id", rid + 0.5, Check.INVALID_REQUEST),
    )


def renumbered(step: CaseStep, offset: int) -> CaseStep:
    """``step`` with its integer request id (and the id a cancellation names) moved by
    ``offset``: a sequence sent again on the same connection reuses no id."""
    message = decode_json(step.data)
    if not isinstance(message, dict):
        return step
    changed = False
    rid = message.get("id")
    if isinstance(rid, int) and not isinstance(rid, bool):
        message["id"] = rid + offset
        changed = True
    params = message.get("params")
    cancels = params.get("requestId") if isinstance(params, dict) else None
    if isinstance(params, dict) and isinstance(cancels, int) and not isinstance(cancels, bool):
        params["requestId"] = cancels + offset
        changed = True
    if not changed:
        return step
    return msgspec.structs.replace(
        step,
        data=encode(message),
        id=step.id + offset if isinstance(step.id, int) else step.id,
        cancels=step.cancels + offset if isinstance(step.cancels, int) else step.cancels,
    )

"""How a session's answers look on the wire: the HTTP status an error response has on its
own, the era's additions to a result, and what an answer tells telemetry. Pure functions
of their arguments; the session holds no state for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec
from msgspec import Raw

from .. import jsonrpc
from ..events import RequestId
from ..modern import MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION
from ..versions import VersionRules
from .events import ANSWERED, CallOutcome
from .wire import Params

__all__ = ["encode_result", "names_a_version", "outcome_of", "status"]

# HTTP status of an error response on its own (2026-07-28 "Streamable HTTP": an unknown
# method is 404, an unsupported version or missing capability 400, as is a request
# missing its _meta, which passes its status itself). A message that is no valid request
# is 400 in every era; any other JSON-RPC error is the result of a 200 exchange.
_MODERN_STATUS: Final[Mapping[int, int]] = {
    jsonrpc.METHOD_NOT_FOUND: 404, MISSING_CLIENT_CAPABILITY: 400, UNSUPPORTED_PROTOCOL_VERSION: 400,
}
_BAD_MESSAGE: Final = 400
_BAD_CODES: Final = frozenset({jsonrpc.PARSE_ERROR, jsonrpc.INVALID_REQUEST})
_PARAMS: Final = msgspec.json.Decoder(Params)


def status(code: int, modern: bool) -> int:
    """The HTTP status of an error response with ``code`` in an era."""
    if code in _BAD_CODES:
        return _BAD_MESSAGE
    return _MODERN_STATUS.get(code, 200) if modern else 200


def names_a_version(raw: bytes | Raw) -> bool:
    """Whether params the method's own decoder refused still name a stateless-era version."""
    try:
        meta = _PARAMS.decode(raw).meta
    except (msgspec.DecodeError, RecursionError):
        return False
    return meta is not None and meta.protocol_version is not None


def encode_result(rid: RequestId, result: msgspec.Struct | dict[str, object], rules: VersionRules | None,
                  server_meta: Mapping[str, object] | None, *, cache: tuple[int, str] | None = None,
                  result_type: str = "complete") -> bytes:
    """The response for ``result``; a stateless-era result (``rules`` given) gets
    ``resultType``, ``server_meta`` (the server's identity, if given) in ``_meta`` and,
    when ``cache`` gives them, the caching hints ``ttlMs`` and ``cacheScope``."""
    if rules is None or not rules.cache_hints:
        return jsonrpc.encode_result(rid, result)
    body = result if isinstance(result, dict) else msgspec.to_builtins(result)
    assert isinstance(body, dict)  # every result is an object
    body["resultType"] = result_type
    if server_meta is not None:
        meta = body.get("_meta")
        body["_meta"] = {**server_meta, **meta} if isinstance(meta, dict) else server_meta
    if cache is not None:
        body.setdefault("ttlMs", cache[0])
        body.setdefault("cacheScope", cache[1])
    return jsonrpc.encode_result(rid, body)


def outcome_of(result: msgspec.Struct) -> CallOutcome:
    """What answering with ``result`` tells telemetry: a tool result with ``isError`` is a
    tool error (the OpenTelemetry MCP conventions' ``tool_error``)."""
    if getattr(result, "is_error", None) is True:
        content = getattr(result, "content", None) or ()
        text = next((getattr(c, "text", None) for c in content if getattr(c, "text", None)), None)
        return CallOutcome(message=text, tool_error=True)
    return ANSWERED

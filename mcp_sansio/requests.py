"""The client's record of one request awaiting its answer, by kind.

Every request is an :class:`OutgoingRequest`; a "list everything" request also holds a
:class:`Paging` (the pages gathered so far), and a stateless-era request answered with
``input_required`` an :class:`InputRounds` (the app's answers gathered so far). Each
kind keeps its own state and decides its own next step; the session only routes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

import msgspec
from msgspec import UNSET, Raw

from . import modern, skills
from .capabilities import INPUT_REQUESTS
from .errors import LocalProtocolError
from .events import ServerRequestReceived
from .types import REQUEST_PARAMS, RESULTS, ClientCapabilities, MethodResult, WireStruct

__all__ = ["CLIENT_RESULTS", "LIST_FIELDS", "SAFE_TO_REPEAT", "InputRounds", "OutgoingRequest", "Paging",
           "Params", "input_event", "with_progress_token"]

Params = msgspec.Struct | Mapping[str, object] | None

CLIENT_RESULTS: Final[Mapping[str, MethodResult[WireStruct]]] = {
    **RESULTS, skills.LIST_SKILLS.method: skills.LIST_SKILLS, skills.GET_SKILL.method: skills.GET_SKILL,
}
"""What the session decodes each answer with, by the method it answers: the MCP methods'
:class:`~mcp_sansio.types.MethodResult` and the Skills extension's."""

LIST_FIELDS: Final[Mapping[str, str]] = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resource_templates",
    "prompts/list": "prompts",
    "skills/list": "skills",
}
"""List methods that "list everything" can follow, and the field holding the items."""

SAFE_TO_REPEAT: Final = frozenset({
    "server/discover", "tools/list", "resources/list", "resources/templates/list", "resources/read",
    "prompts/list", "prompts/get", "completion/complete",
})
"""Requests a broken stream may be repeated for, under a new id (2026-07-28: no resumption)."""

_INPUT_DECODER: Final = msgspec.json.Decoder(modern.InputRequest)
_INPUT_PARAMS: Final[Mapping[str, msgspec.json.Decoder[msgspec.Struct]]] = {
    method: msgspec.json.Decoder(REQUEST_PARAMS[method]) for method in INPUT_REQUESTS
}

Hint = tuple[float, int | None, str | None]  # per page: (when it came, ttlMs, cacheScope)


class Paging(msgspec.Struct):
    """The pages of a "list everything" request gathered so far."""

    field: str  # the result field holding the items
    items: list[object] = msgspec.field(default_factory=list)
    seen: set[str] = msgspec.field(default_factory=set)  # cursors followed: a repeat is a loop
    hints: list[Hint] = msgspec.field(default_factory=list)
    pages: int = 0

    def add(self, result: msgspec.Struct, now: float) -> str | None:
        """Take one page; the cursor of the next one, or ``None`` after the last."""
        self.items.extend(getattr(result, self.field))
        self.pages += 1
        self.hints.append((now, getattr(result, "ttl_ms", None), getattr(result, "cache_scope", None)))
        cursor: str | None = getattr(result, "next_cursor", None)
        return cursor or None

    def follow(self, method: str, cursor: str, max_pages: int) -> str | None:
        """Note that ``cursor`` is followed next; why not, when it must not be."""
        if cursor in self.seen:
            return f"{method}: the server repeated cursor {cursor[:80]!r}"
        if self.pages >= max_pages:
            return f"{method}: gave up after {self.pages} pages"
        self.seen.add(cursor)
        return None

    def merged(self, last: msgspec.Struct, now: float) -> msgspec.Struct:
        """The last page's result holding every page's items (and their merged caching hints)."""
        merged = msgspec.structs.replace(last, **{self.field: self.items, "next_cursor": None})
        if self.pages > 1:
            merged = msgspec.structs.replace(merged, **_merged_hints(self.hints, now))
        return merged


class InputRounds(msgspec.Struct):
    """MRTR (stateless era): the rounds of input a request was answered with so far."""

    count: int = 0
    awaiting: set[str] = msgspec.field(default_factory=set)  # input keys the app has yet to answer
    responses: dict[str, Raw] = msgspec.field(default_factory=dict)
    state: str | None = None  # the server's requestState, echoed in the retry

    def begin(self, keys: set[str], state: str | None) -> None:
        """A new round asks for ``keys``."""
        self.count += 1
        self.awaiting = keys
        self.responses = {}
        self.state = state

    def answered(self, key: str, response: Raw) -> bool:
        """The app answered ``key``; whether the round is complete."""
        self.responses[key] = response
        self.awaiting.discard(key)
        return not self.awaiting

    def retry_params(self, params: dict[str, object]) -> dict[str, object]:
        """The original request's params with this round's answers and ``requestState``
        (either left out when there is none)."""
        params.pop("inputResponses", None)
        params.pop("requestState", None)
        if self.responses:
            params["inputResponses"] = self.responses
        if self.state is not None:
            params["requestState"] = self.state
        return params


class OutgoingRequest(msgspec.Struct):
    """One request awaiting its answer (a Struct: built in C, once per request)."""

    id: int
    method: str
    timeout: float
    deadline: float
    limit_at: float | None
    origin: int  # the id the caller knows (a later page or a re-issue goes under another)
    wire: bytes  # the encoded request, for a transport that must re-send it
    paging: Paging | None = None  # a "list everything"
    rounds: InputRounds | None = None  # answered with input_required at least once

    @property
    def awaiting_input(self) -> bool:
        """The server answered; the app's input is what the request waits for."""
        rounds = self.rounds
        return rounds is not None and bool(rounds.awaiting)

    def deadline_from(self, now: float) -> float:
        """A fresh per-request deadline from ``now``, within the overall limit."""
        deadline = now + self.timeout
        limit = self.limit_at
        return limit if limit is not None and limit < deadline else deadline


def input_event(request_id: int, key: str, raw: Raw,
                capabilities: ClientCapabilities) -> ServerRequestReceived | str:
    """One entry of a result's ``inputRequests`` as the event for the app (its id names
    the request and the key), or why it cannot be one."""
    try:
        request = _INPUT_DECODER.decode(raw)
        need = INPUT_REQUESTS.get(request.method)
        if need is None:
            return f"the server asked for {request.method!r}, which is not an input request"
        if getattr(capabilities, need, None) is None:
            return (f"the server asked for {request.method!r}, which needs the {need!r} "
                    "capability this client did not declare")
        params = _INPUT_PARAMS[request.method].decode(request.params)
    except (msgspec.DecodeError, RecursionError) as exc:
        return f"invalid input request {key!r}: {exc}"
    return ServerRequestReceived(request_id=f"input:{request_id}:{key}", method=request.method,
                                 params=params)


def with_progress_token(params: Params, rid: int, extra: Mapping[str, object] | None) -> object:
    """``params`` with ``_meta.progressToken`` set to the request id (MCP "Progress"), plus
    the stateless era's per-request ``_meta`` when ``extra`` is given.

    A caller's Struct is copied, never changed (the session sets the token in place in
    the params it built itself).

    Raises:
        LocalProtocolError: (stateless era) ``params`` do not encode as a JSON object.
    """
    if params is None:
        return {"_meta": {**(extra or {}), "progressToken": rid}}
    if isinstance(params, msgspec.Struct):
        meta = getattr(params, "meta", UNSET)
        if extra is not None and (meta is UNSET or params.__struct_config__.array_like):
            return with_progress_token(_json_object(params), rid, extra)
        if meta is UNSET:
            return params
        merged = {**(meta or {}), **(extra or {}), "progressToken": rid}
        return msgspec.structs.replace(params, meta=merged)
    meta = params.get("_meta")
    base = meta if isinstance(meta, Mapping) else {}
    return {**params, "_meta": {**base, **(extra or {}), "progressToken": rid}}


def _merged_hints(pages: list[Hint], now: float) -> dict[str, object]:
    """The caching hints of a list gathered from several pages (MCP 2026-07-28 "Caching",
    "Interaction with Pagination"): fresh while every page is, each from when it arrived;
    ``public`` only if every page is; no hints at all if a page had none."""
    if any(ttl is None for _, ttl, _ in pages):
        return {"ttl_ms": None, "cache_scope": None}
    until = min(at * 1000 + max(ttl or 0, 0) for at, ttl, _ in pages)
    scopes = {scope for *_, scope in pages}
    scope = "public" if scopes == {"public"} else None if scopes == {None} else "private"
    return {"ttl_ms": max(0, math.floor(until - now * 1000)), "cache_scope": scope}


def _json_object(params: msgspec.Struct) -> dict[str, object]:
    """A Struct as the JSON object it encodes to, so a ``_meta`` member can join it.

    Raises:
        LocalProtocolError: it holds a value JSON cannot represent, or is no object.
    """
    try:
        value = msgspec.json.decode(msgspec.json.encode(params))
    except (TypeError, RecursionError) as exc:
        raise LocalProtocolError(f"cannot encode the params as JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise LocalProtocolError(f"the params must encode as a JSON object, not {type(value).__name__}")
    return value

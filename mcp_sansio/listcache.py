"""A bounded cache of list results (tools, resources, prompts) per server, with expiry.

The host keeps each server's last ``tools/list`` (and the others) here so it need not ask
again before every model turn. Entries are keyed by server, kind and cursor (``None``
for the whole list) and evicted least-recently-used beyond ``max_entries_per_server``.
A ``notifications/*/list_changed`` invalidates the kinds :func:`kinds_invalidated_by`
names; a closed connection invalidates the whole server.

The caching hints of MCP 2026-07-28 ("Caching") are honoured: a result's ``ttlMs``
(:func:`hint_ttl`) makes its entry expire that long after it was stored (``now``, as the
caller passes it; ``0`` means it is not cached at all), and its ``cacheScope`` says
whether the entry may outlive the authorization context it was fetched in: when a
connection is lost, :meth:`ListCache.invalidate_context` keeps only ``public`` entries
still within their TTL. A result without hints (an older server) is cached until a
notification or the end of its connection, as before.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Mapping
from typing import Final, Generic, TypeVar

import msgspec

from mcp_sansio.errors import LocalProtocolError

__all__ = ["ListCache", "ListKey", "ListKind", "hint_ttl", "kinds_invalidated_by"]

V = TypeVar("V")


class ListKind(enum.Enum):
    """Which list a cached result is, by the method that fetched it (``RESOURCE_READ``: the
    contents of one resource, keyed by its URI)."""

    TOOLS = "tools/list"
    RESOURCES = "resources/list"
    RESOURCE_TEMPLATES = "resources/templates/list"
    PROMPTS = "prompts/list"
    RESOURCE_READ = "resources/read"


_INVALIDATED_BY: Final[Mapping[str, frozenset[ListKind]]] = {
    "notifications/tools/list_changed": frozenset({ListKind.TOOLS}),
    "notifications/prompts/list_changed": frozenset({ListKind.PROMPTS}),
    "notifications/resources/list_changed": frozenset({ListKind.RESOURCES, ListKind.RESOURCE_TEMPLATES}),
    "notifications/resources/updated": frozenset({ListKind.RESOURCE_READ}),
}
"""The spec announces template changes with ``resources/list_changed`` too; an update of
one resource drops every cached read of the server (simple, and never stale)."""


def kinds_invalidated_by(method: str) -> frozenset[ListKind]:
    """Return the kinds a notification makes stale (none for other methods)."""
    return _INVALIDATED_BY.get(method, frozenset())


def hint_ttl(ttl_ms: int | None) -> float | None:
    """Seconds a result stays fresh by its ``ttlMs`` hint, for :meth:`ListCache.put`:
    ``None`` without a hint (cached until invalidated), ``0.0`` for ``0`` or a negative
    value ("immediately stale": not cached)."""
    return None if ttl_ms is None else max(ttl_ms, 0) / 1000


class ListKey(msgspec.Struct, frozen=True, kw_only=True):
    """Identifies one cached list (or one page of it, by ``cursor``), or one resource read
    (by ``uri``)."""

    server: str
    kind: ListKind
    cursor: str | None = None
    uri: str | None = None


class _Entry(Generic[V]):
    __slots__ = ("expires_at", "public", "value")

    def __init__(self, value: V, expires_at: float | None, public: bool) -> None:
        self.value = value
        self.expires_at = expires_at
        self.public = public


class ListCache(Generic[V]):
    """LRU cache of list results, bounded per server."""

    def __init__(self, *, max_entries_per_server: int = 20) -> None:
        """Create an empty cache.

        Raises:
            LocalProtocolError: ``max_entries_per_server`` is below 1.
        """
        if max_entries_per_server < 1:
            raise LocalProtocolError("max_entries_per_server must be at least 1")
        self._max = max_entries_per_server
        self._servers: dict[str, OrderedDict[ListKey, _Entry[V]]] = {}

    def put(self, key: ListKey, value: V, now: float, ttl: float | None = None, *,
            scope: str | None = None) -> None:
        """Store ``value``, evicting the server's least recently used entry if full.

        Args:
            key: what the value is.
            value: the list result.
            now: the current time, in seconds on the driver's clock.
            ttl: seconds the value stays fresh, or ``None`` for until invalidated. A ``ttl``
                that is not positive (or NaN) means "do not cache": any old entry is removed.
            scope: the result's ``cacheScope``; only ``"public"`` lets an entry with a
                ``ttl`` outlive its authorization context (:meth:`invalidate_context`).
        """
        entries = self._servers.setdefault(key.server, OrderedDict())
        entries.pop(key, None)
        if ttl is not None and not ttl > 0:
            return
        public = ttl is not None and scope == "public"
        entries[key] = _Entry(value, None if ttl is None else now + ttl, public)
        if len(entries) > self._max:
            entries.popitem(last=False)

    def get(self, key: ListKey, now: float) -> V | None:
        """Return the fresh value for ``key`` and mark it recently used, else ``None``.

        An entry found expired (``now`` at or past its expiry) is removed.
        """
        entries = self._servers.get(key.server, OrderedDict())
        entry = entries.get(key)
        if entry is None:
            return None
        if entry.expires_at is not None and now >= entry.expires_at:
            del entries[key]
            return None
        entries.move_to_end(key)
        return entry.value

    def invalidate(self, server: str, kind: ListKind) -> None:
        """Drop every page of one kind of list for ``server``."""
        entries = self._servers.get(server, OrderedDict())
        for key in [key for key in entries if key.kind is kind]:
            del entries[key]

    def invalidate_server(self, server: str) -> None:
        """Drop everything cached for ``server`` (the host is done with it)."""
        self._servers.pop(server, None)

    def invalidate_context(self, server: str) -> None:
        """The authorization context of ``server`` ended (its connection was lost; the next
        may use other credentials): drop all but the ``public`` entries with a TTL, which
        stay until they expire or a notification invalidates them."""
        entries = self._servers.get(server, OrderedDict())
        for key in [key for key, entry in entries.items() if not entry.public]:
            del entries[key]

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._servers.values())

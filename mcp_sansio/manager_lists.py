"""What each server a host runs offers, as it last listed it, and the caches of its lists.

State held: per server, what it listed last of each kind (tools, prompts, resources,
templates), whether or not the listing was cached; the list cache and the cache of
resource reads (:mod:`mcp_sansio.listcache`, bounded per server, kept as the 2026-07-28
caching hints say); a generation counter per server and kind, which a change notification
or a lost connection bumps so that a listing begun before it is stale; how many stale
listings in a row were fetched again; and the warnings (a name listed twice) not yet
given. It lives apart from each server's life (:mod:`~mcp_sansio.manager_lifecycle`) and
from the names and routes built from it (:class:`~mcp_sansio.manager.ServerManagerCore`),
which rebuilds those whenever :attr:`ServerLists.known` changes.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import msgspec

from .errors import LocalProtocolError
from .listcache import ListCache, ListKey, ListKind, hint_ttl, kinds_invalidated_by
from .manager_lifecycle import UnknownServer
from .session import LIST_FIELDS
from .types import Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool

__all__ = ["Listed", "ServerLists"]


@dataclasses.dataclass(slots=True)
class Listed:
    """What one server listed last, of each kind (``None``: not listed yet)."""

    tools: list[Tool] | None = None
    prompts: list[Prompt] | None = None
    resources: list[Resource] | None = None
    templates: list[ResourceTemplate] | None = None


_KNOWN: Final[Mapping[ListKind, tuple[str, type]]] = {
    ListKind.TOOLS: ("tools", Tool),
    ListKind.PROMPTS: ("prompts", Prompt),
    ListKind.RESOURCES: ("resources", Resource),
    ListKind.RESOURCE_TEMPLATES: ("templates", ResourceTemplate),
}
"""The ``Listed`` field each kind of listing fills, and the type of its items."""


class ServerLists:
    """Every server's listings and the caches of them (module docstring)."""

    def __init__(self, names: Iterable[str], *, max_entries_per_server: int, max_relists: int) -> None:
        self.listed = {name: Listed() for name in names}
        """What each server listed last, by name (read it; the listings fill it)."""
        self.known = 0
        """Counts the listings that named what a server offers; names built from
        :attr:`listed` are stale once it moved."""
        self._max_relists = max_relists
        self._notices: deque[str] = deque()  # see next_warning()
        self._warned: set[str] = set()
        self._cache: ListCache[list[object]] = ListCache(max_entries_per_server=max_entries_per_server)
        self._reads: ListCache[ReadResourceResult] = ListCache(max_entries_per_server=max_entries_per_server)
        self._generations: dict[tuple[str, ListKind], int] = {}
        self._relists: dict[tuple[str, ListKind], int] = {}  # stale listings fetched again in a row

    def begin_list(self, name: str, kind: ListKind) -> int:
        """Note that a listing starts; pass the token to :meth:`store`."""
        return self._generations.get((name, kind), 0)

    def cached(self, name: str, kind: ListKind, now: float) -> list[object] | None:
        """The cached list of ``kind`` for ``name``, if any."""
        return self._cache.get(ListKey(server=name, kind=kind), now)

    def store(self, name: str, kind: ListKind, items: Sequence[object], token: int, now: float, *,
              ttl_ms: int | None = None, cache_scope: str | None = None) -> None:
        """Cache a listing, unless a change notification or a loss made it stale meanwhile.

        ``ttl_ms`` and ``cache_scope`` are the result's caching hints (see
        :mod:`mcp_sansio.listcache`). A tools listing also becomes the server's known
        tools (names, counts, routing), whether it is cached or not.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: ``kind`` is ``RESOURCE_READ`` (see :meth:`store_read`).
        """
        self._check_list(name, kind)
        if token != self._generations.get((name, kind), 0):
            return
        key = ListKey(server=name, kind=kind)
        self._cache.put(key, list(items), now, hint_ttl(ttl_ms), scope=cache_scope)
        self.know(name, kind, items)

    def store_result(self, name: str, kind: ListKind, result: msgspec.Struct | None, token: int,
                     now: float) -> list[object] | None:
        """:meth:`store` a whole list result (``None``: the server has no such list) with
        its caching hints, and return its items.

        Returns:
            ``None`` when a ``list_changed`` notification overtook the listing (it arrived
            after :meth:`begin_list`): the list may predate the change, so the driver
            fetches it again. After ``max_relists`` such listings in a row the last one is
            returned and names the tools, uncached.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: ``kind`` is ``RESOURCE_READ``.
        """
        self._check_list(name, kind)
        items: list[object] = [] if result is None else list(getattr(result, LIST_FIELDS[kind.value]))
        if kind is ListKind.TOOLS or kind is ListKind.PROMPTS:
            items = self._first_of_each_name(name, kind, items)
        relists = self._relists.pop((name, kind), 0)
        if token != self._generations.get((name, kind), 0):
            if relists < self._max_relists:
                self._relists[name, kind] = relists + 1
                return None
            self.know(name, kind, items)
            return items
        self.store(name, kind, items, token, now, ttl_ms=getattr(result, "ttl_ms", None),
                   cache_scope=getattr(result, "cache_scope", None))
        return items

    def next_warning(self) -> str | None:
        """The next thing the host should log at WARNING (a server that listed a name
        twice), or ``None``; each is given once."""
        return self._notices.popleft() if self._notices else None

    def _first_of_each_name(self, name: str, kind: ListKind, items: list[object]) -> list[object]:
        """``items`` without a second tool (or prompt) of a name: model APIs refuse two."""
        seen: set[object] = set()
        kept: list[object] = []
        dropped: set[str] = set()
        for item in items:
            key = getattr(item, "name", None)
            if key in seen:
                dropped.add(str(key))
                continue
            seen.add(key)
            kept.append(item)
        if dropped:
            noun = "tool" if kind is ListKind.TOOLS else "prompt"
            again = ", ".join(repr(each) for each in sorted(dropped))
            text = (f"server {name!r} listed the {noun} name{'s' if len(dropped) > 1 else ''} {again} more "
                    f"than once: the first of each is used, the others are left out")
            if text not in self._warned:
                self._warned.add(text)
                self._notices.append(text)
        return kept

    def cached_read(self, name: str, uri: str, now: float) -> ReadResourceResult | None:
        """The cached ``resources/read`` of ``uri`` on ``name``, if still fresh."""
        return self._reads.get(ListKey(server=name, kind=ListKind.RESOURCE_READ, uri=uri), now)

    def store_read(self, name: str, uri: str, result: ReadResourceResult, token: int, now: float) -> None:
        """Cache a ``resources/read`` for as long as its ``ttlMs`` says (a token from
        ``begin_list(name, ListKind.RESOURCE_READ)``). A read without hints is not cached:
        a resource may change without any notification."""
        if token != self._generations.get((name, ListKind.RESOURCE_READ), 0):
            return
        ttl = hint_ttl(result.ttl_ms)
        key = ListKey(server=name, kind=ListKind.RESOURCE_READ, uri=uri)
        self._reads.put(key, result, now, 0.0 if ttl is None else ttl, scope=result.cache_scope)

    def notification_received(self, name: str, method: str) -> None:
        """Drop the lists a ``notifications/*/list_changed`` from ``name`` makes stale, and
        its reads on ``notifications/resources/updated``."""
        for kind in kinds_invalidated_by(method):
            self._cache.invalidate(name, kind)
            self._reads.invalidate(name, kind)
            self._bump(name, kind)

    def _check_list(self, name: str, kind: ListKind) -> None:
        if name not in self.listed:
            raise UnknownServer(f"no server is named {name!r}")
        if kind is ListKind.RESOURCE_READ:
            raise LocalProtocolError("a resource read is no list: store it with store_read()")

    def know(self, name: str, kind: ListKind, items: Sequence[object]) -> None:
        """A listing of ``name`` names what the server offers now (cached or not)."""
        field, item_type = _KNOWN[kind]
        setattr(self.listed[name], field, [item for item in items if isinstance(item, item_type)])
        self.known += 1  # the names built from the listings are rebuilt when next asked for

    def _bump(self, name: str, kind: ListKind) -> None:
        self._generations[name, kind] = self._generations.get((name, kind), 0) + 1

    def invalidate_server(self, name: str, *, keep_public: bool = False) -> None:
        for cache in (self._cache, self._reads):
            if keep_public:
                cache.invalidate_context(name)
            else:
                cache.invalidate_server(name)
        for kind in ListKind:
            self._bump(name, kind)

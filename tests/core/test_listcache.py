"""The bounded, expiring cache of list results per server."""

from __future__ import annotations

import pytest

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.listcache import ListCache, ListKey, ListKind, hint_ttl, kinds_invalidated_by
from mcp_sansio.session import server_offers
from mcp_sansio.types import ResourcesCapability, ServerCapabilities

TOOLS = ListKey(server="a", kind=ListKind.TOOLS)
PROMPTS = ListKey(server="a", kind=ListKind.PROMPTS)
OTHER_TOOLS = ListKey(server="b", kind=ListKind.TOOLS)


def page(cursor: str) -> ListKey:
    return ListKey(server="a", kind=ListKind.RESOURCES, cursor=cursor)


def test_stored_value_is_returned() -> None:
    cache: ListCache[list[str]] = ListCache()
    cache.put(TOOLS, ["t1"], now=0.0)
    assert cache.get(TOOLS, now=1e9) == ["t1"]


def test_missing_key_gives_none() -> None:
    assert ListCache[int]().get(TOOLS, now=0.0) is None


def test_put_replaces_the_old_value() -> None:
    cache: ListCache[int] = ListCache()
    cache.put(TOOLS, 1, now=0.0)
    cache.put(TOOLS, 2, now=0.0)
    assert (cache.get(TOOLS, now=0.0), len(cache)) == (2, 1)


def test_least_recently_used_entry_of_a_full_server_is_evicted() -> None:
    cache: ListCache[int] = ListCache(max_entries_per_server=2)
    cache.put(page("1"), 1, now=0.0)
    cache.put(page("2"), 2, now=0.0)
    cache.get(page("1"), now=0.0)
    cache.put(page("3"), 3, now=0.0)
    assert [cache.get(page(c), now=0.0) for c in "123"] == [1, None, 3]


def test_bound_is_per_server() -> None:
    cache: ListCache[int] = ListCache(max_entries_per_server=1)
    cache.put(TOOLS, 1, now=0.0)
    cache.put(OTHER_TOOLS, 2, now=0.0)
    assert (cache.get(TOOLS, now=0.0), cache.get(OTHER_TOOLS, now=0.0)) == (1, 2)


def test_default_bound_is_20_entries_per_server() -> None:
    cache: ListCache[int] = ListCache()
    for index in range(25):
        cache.put(page(str(index)), index, now=0.0)
    assert len(cache) == 20
    assert cache.get(page("4"), now=0.0) is None


def test_bound_below_one_is_rejected() -> None:
    with pytest.raises(LocalProtocolError):
        ListCache[int](max_entries_per_server=0)


def test_entry_expires_at_now_plus_ttl() -> None:
    cache: ListCache[int] = ListCache()
    cache.put(TOOLS, 1, now=10.0, ttl=5.0)
    assert cache.get(TOOLS, now=14.9) == 1
    assert cache.get(TOOLS, now=15.0) is None
    assert len(cache) == 0


@pytest.mark.parametrize("ttl", [0.0, -1.0, float("nan")])
def test_ttl_that_is_not_positive_stores_nothing_and_removes_the_old_value(ttl: float) -> None:
    cache: ListCache[int] = ListCache()
    cache.put(TOOLS, 1, now=0.0)
    cache.put(TOOLS, 2, now=0.0, ttl=ttl)
    assert cache.get(TOOLS, now=0.0) is None


def test_invalidate_drops_every_page_of_one_kind_only() -> None:
    cache: ListCache[int] = ListCache()
    for key in (page("1"), page("2"), PROMPTS):
        cache.put(key, 1, now=0.0)
    cache.invalidate("a", ListKind.RESOURCES)
    assert [cache.get(key, now=0.0) for key in (page("1"), page("2"), PROMPTS)] == [None, None, 1]


def test_invalidate_of_an_unknown_server_does_nothing() -> None:
    cache: ListCache[int] = ListCache()
    cache.invalidate("ghost", ListKind.TOOLS)
    cache.invalidate_server("ghost")
    assert len(cache) == 0


def test_invalidate_server_drops_all_its_kinds_and_nothing_else() -> None:
    cache: ListCache[int] = ListCache()
    for key in (TOOLS, PROMPTS, OTHER_TOOLS):
        cache.put(key, 1, now=0.0)
    cache.invalidate_server("a")
    assert [cache.get(key, now=0.0) for key in (TOOLS, PROMPTS, OTHER_TOOLS)] == [None, None, 1]


@pytest.mark.parametrize(
    ("method", "kinds"),
    [
        ("notifications/tools/list_changed", {ListKind.TOOLS}),
        ("notifications/prompts/list_changed", {ListKind.PROMPTS}),
        (
            "notifications/resources/list_changed",
            {ListKind.RESOURCES, ListKind.RESOURCE_TEMPLATES},
        ),
        ("notifications/resources/updated", {ListKind.RESOURCE_READ}),
        ("notifications/message", set()),
    ],
)
def test_list_changed_notifications_name_the_kinds_to_invalidate(method: str, kinds: set[ListKind]) -> None:
    assert kinds_invalidated_by(method) == kinds


# -- the caching hints of 2026-07-28 ("Caching") -------------------------------------------


@pytest.mark.parametrize(("ttl_ms", "seconds"), [(None, None), (0, 0.0), (-5, 0.0), (1500, 1.5)])
def test_a_ttl_hint_is_milliseconds_of_freshness_and_negative_means_zero(
        ttl_ms: int | None, seconds: float | None) -> None:
    assert hint_ttl(ttl_ms) == seconds


def test_an_entry_expires_ttl_ms_after_it_was_stored() -> None:
    cache: ListCache[int] = ListCache()
    cache.put(TOOLS, 1, now=10.0, ttl=hint_ttl(1500))
    assert cache.get(TOOLS, now=11.499) == 1
    assert cache.get(TOOLS, now=11.5) is None
    assert len(cache) == 0


def test_a_zero_ttl_hint_is_not_cached() -> None:
    cache: ListCache[int] = ListCache()
    cache.put(TOOLS, 1, now=0.0)
    cache.put(TOOLS, 2, now=0.0, ttl=hint_ttl(0), scope="public")
    assert cache.get(TOOLS, now=0.0) is None


def test_only_public_entries_with_a_ttl_outlive_their_authorization_context() -> None:
    cache: ListCache[str] = ListCache()
    cache.put(TOOLS, "public", now=0.0, ttl=60.0, scope="public")
    cache.put(PROMPTS, "private", now=0.0, ttl=60.0, scope="private")
    cache.put(page("1"), "unscoped", now=0.0, ttl=60.0)
    cache.put(page("2"), "no ttl", now=0.0, scope="public")
    cache.put(OTHER_TOOLS, "other server", now=0.0)
    cache.invalidate_context("a")
    cache.invalidate_context("ghost")
    assert [cache.get(key, now=1.0) for key in (TOOLS, PROMPTS, page("1"), page("2"), OTHER_TOOLS)] == [
        "public", None, None, None, "other server"]
    assert cache.get(TOOLS, now=60.0) is None


def test_a_notification_invalidates_a_fresh_public_entry() -> None:
    cache: ListCache[int] = ListCache()
    cache.put(TOOLS, 1, now=0.0, ttl=60.0, scope="public")
    cache.invalidate("a", ListKind.TOOLS)
    assert cache.get(TOOLS, now=0.0) is None


def test_a_list_is_offered_when_its_capability_is_declared() -> None:
    caps = ServerCapabilities(resources=ResourcesCapability())
    assert [server_offers(caps, kind.value) for kind in ListKind] == [False, True, True, False, True]
    assert not server_offers(None, "tools/list")  # before the handshake
    assert server_offers(None, "ping")  # needs no capability

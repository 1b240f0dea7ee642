"""The in-memory event store: several events kept at once are kept as one by one would keep
them (the same ids, the same replays, the same bounds)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.server.stores import MemoryEventStore

Batch = tuple[str, int, list[tuple[bytes, bool]], int | None]

batches = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(1, 3),
                             st.lists(st.tuples(st.binary(max_size=12), st.booleans()), max_size=3),
                             st.none() | st.integers(0, 5)),
                   max_size=12)


@given(batches, st.integers(1, 6), st.integers(1, 40))
def test_events_kept_at_once_are_kept_as_one_by_one(plan: list[Batch], max_events: int,
                                                     max_bytes: int) -> None:
    together = MemoryEventStore(max_events=max_events, max_bytes=max_bytes)
    apart = MemoryEventStore(max_events=max_events, max_bytes=max_bytes)
    issued: list[tuple[str, str]] = []
    for session, stream, events, request_id in plan:
        ids = together.extend(session, stream, events, request_id)
        one_by_one = [apart.append(session, stream, data, final, request_id if i == 0 else None)
                      for i, (data, final) in enumerate(events)]
        assert ids == one_by_one
        issued += [(session, event_id) for event_id in ids]
    for session, event_id in issued:
        assert together.replay(session, event_id) == apart.replay(session, event_id)

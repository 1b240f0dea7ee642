"""The deadline heap of the servers' connections against a plain dict: the earliest
deadline and the keys due are always the dict's, however deadlines move and keys go."""

from __future__ import annotations

import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sansio.server.deadlines import Deadlines

_KEYS = st.integers(min_value=0, max_value=20)
_TIMES = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)
_OPS = st.lists(st.one_of(
    st.tuples(st.just("set"), _KEYS, st.one_of(st.none(), _TIMES)),
    st.tuples(st.just("first"), _KEYS, st.none()),
    st.tuples(st.just("due"), _KEYS, _TIMES),
), max_size=200)


@settings(max_examples=300, deadline=None)
@given(_OPS)
def test_the_earliest_deadline_and_those_due_are_a_plain_dicts(
        ops: list[tuple[str, int, float | None]]) -> None:
    deadlines = Deadlines()
    model: dict[int, float] = {}
    for op, key, time in ops:
        if op == "set":
            deadlines.set(key, time)
            if time is None:
                model.pop(key, None)
            else:
                model[key] = time
        elif op == "first":
            assert deadlines.first() == min(model.values(), default=None)
        else:
            assert time is not None
            due = deadlines.due(time)
            expected = [k for k, at in model.items() if at <= time]
            assert sorted(due) == sorted(expected)
            assert [model[k] for k in due] == sorted(model[k] for k in due)  # earliest first
            for k in due:
                del model[k]
        assert all(deadlines.get(k) == at for k, at in model.items())


def test_a_churn_of_keys_leaves_nothing_behind() -> None:
    deadlines = Deadlines()
    deadlines.set(0, 1.0)  # the first to come due keeps every later entry below it
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for key in range(1, 20_001):
            deadlines.set(key, 2.0 + key)
            deadlines.set(key, None)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 50_000  # an entry kept per key would be over 2 MB
    assert deadlines.first() == 1.0

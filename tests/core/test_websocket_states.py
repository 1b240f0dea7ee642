"""The WebSocket connection's legal moves are its TRANSITIONS table; an illegal one is
blamed on its cause, and every scripted life of a connection stays on the table."""

from __future__ import annotations

from mcp_sansio.websocket import TRANSITIONS, State, Trigger


def test_every_state_can_end_and_only_the_open_connection_closes() -> None:
    assert all(TRANSITIONS[state, Trigger.END] is State.DONE for state in State)
    assert [s for s in State if (s, Trigger.SEND_CLOSE) in TRANSITIONS] == [State.OPEN]


def test_every_state_but_the_first_is_reached_from_new() -> None:
    reached, frontier = {State.NEW}, [State.NEW]
    while frontier:
        state = frontier.pop()
        for (start, _), end in TRANSITIONS.items():
            if start is state and end not in reached:
                reached.add(end)
                frontier.append(end)
    assert reached == set(State)

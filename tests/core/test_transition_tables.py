"""Every state machine moves along its own TRANSITIONS table (``machines.step``): a move
in the table goes where it says, any other raises, blamed on its cause (the peer for a
``RECV_*`` trigger), and leaves the state as it was."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Set

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio import http_transport, manager, session, websocket
from mcp_sansio.config import ClientConfig
from mcp_sansio.errors import LocalProtocolError, RemoteProtocolError
from mcp_sansio.hostconfig import Scope, ServerEntry, ServerState, StdioServerConfig
from mcp_sansio.types import ClientCapabilities

# A machine put in a state: (move it by a trigger, read its state).
Machine = tuple[Callable[[enum.Enum], None], Callable[[], enum.Enum]]


def _session_in(state: enum.Enum) -> Machine:
    client = session.ClientSession(ClientConfig(), ClientCapabilities())
    client._phase = state  # type: ignore[assignment]
    return client._advance, lambda: client.phase  # type: ignore[return-value]


def _websocket_in(state: enum.Enum) -> Machine:
    client = websocket.WebSocketClient("ws://example.test/mcp")
    client._link = state  # type: ignore[assignment]
    return client._move, lambda: client._link  # type: ignore[return-value]


def _manager_in(state: enum.Enum) -> Machine:
    entry = ServerEntry(name="a", config=StdioServerConfig(command="server"), scope=Scope.PROJECT,
                        source="/p/.mcp.json", state=ServerState.ENABLED, state_source="/p/.mcp.json")
    core = manager.ServerManagerCore([entry], env={})
    record = core._servers["a"]
    record.state = state  # type: ignore[assignment]
    return (lambda trigger: core._advance(record, trigger)), lambda: record.state


def _exchange_in(state: enum.Enum) -> Machine:
    client = http_transport.HttpClient("http://example.test/mcp")
    exchange = client._exchange(http_transport._Kind.POST, "POST", client.url, b"{}", ())
    exchange.stage = state  # type: ignore[assignment]
    return exchange.move, lambda: exchange.stage  # type: ignore[return-value]


TABLES: list[tuple[str, Mapping[tuple[enum.Enum, enum.Enum], enum.Enum], Set[enum.Enum], type[enum.Enum],
                   type[enum.Enum], Callable[[enum.Enum], Machine]]] = [
    ("session", session.TRANSITIONS, session.PEER_TRIGGERS, session.Phase, session.Trigger,  # type: ignore[list-item]
     _session_in),
    ("websocket", websocket.TRANSITIONS, websocket.PEER_TRIGGERS, websocket.State,  # type: ignore[list-item]
     websocket.Trigger, _websocket_in),
    ("manager", manager.TRANSITIONS, frozenset(), manager.ConnectionState, manager.Trigger,  # type: ignore[list-item]
     _manager_in),
    ("http-exchange", http_transport.EXCHANGE_TRANSITIONS, frozenset(), http_transport.Stage,  # type: ignore[list-item]
     http_transport.Step, _exchange_in),
]


@pytest.mark.parametrize(("table", "peer", "states", "triggers", "machine_in"), [row[1:] for row in TABLES],
                         ids=[row[0] for row in TABLES])
@given(data=st.data())
def test_every_trigger_in_every_state_follows_the_table_blaming_its_cause(
    table: Mapping[tuple[enum.Enum, enum.Enum], enum.Enum], peer: Set[enum.Enum], states: type[enum.Enum],
    triggers: type[enum.Enum], machine_in: Callable[[enum.Enum], Machine], data: st.DataObject,
) -> None:
    state, trigger = data.draw(st.sampled_from(states)), data.draw(st.sampled_from(triggers))
    move, read = machine_in(state)
    expected = table.get((state, trigger))
    if expected is None:
        blamed = RemoteProtocolError if trigger in peer else LocalProtocolError
        with pytest.raises(blamed, match=rf"^{trigger.value} is not allowed while .*{state.value}$"):
            move(trigger)
        assert read() is state
    else:
        move(trigger)
        assert read() is expected

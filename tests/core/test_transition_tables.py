"""Every state machine moves along its own TRANSITIONS table (``machines.step``): a move
in the table goes where it says, any other raises, blamed on its cause (the peer for a
``RECV_*`` trigger), and leaves the state as it was."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Set
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio import http11_connection, http_exchange, http_transport, manager_lifecycle, session, websocket
from mcp_sansio.config import ClientConfig
from mcp_sansio.errors import LocalProtocolError, RemoteProtocolError
from mcp_sansio.hostconfig import Scope, ServerEntry, ServerState, StdioServerConfig
from mcp_sansio.types import ClientCapabilities
from mcp_sansio.urls import parse_url

# A machine put in a state: (move it by a trigger, read its state). The machines' states and
# triggers are different enums, walked by one test: they are typed ``Any`` here.
Machine = tuple[Callable[[Any], None], Callable[[], object]]
Table = Mapping[tuple[Any, Any], Any]


def _session_in(state: Any) -> Machine:
    client = session.ClientSession(ClientConfig(), ClientCapabilities())
    client._phase = state
    return client._advance, lambda: client.phase


def _websocket_in(state: Any) -> Machine:
    client = websocket.WebSocketClient("ws://example.test/mcp")
    client._state = state
    return client._move, lambda: client._state


def _manager_in(state: Any) -> Machine:
    entry = ServerEntry(name="a", config=StdioServerConfig(command="server"), scope=Scope.PROJECT,
                        source="/p/.mcp.json", state=ServerState.ENABLED, state_source="/p/.mcp.json")
    table = manager_lifecycle.ServerTable([entry], env={}, transports=frozenset({"stdio"}),
                                          restart=manager_lifecycle.RestartPolicy(), max_local=1,
                                          max_remote=1, connect_timeout=30.0)
    record = table.servers["a"]
    record.state = state
    return (lambda trigger: table._advance(record, trigger)), lambda: record.state


def _exchange_in(state: Any) -> Machine:
    client = http_transport.HttpClient("http://example.test/mcp")
    exchange = client._exchange(http_exchange.ExchangeKind.POST, "POST", client.url, b"{}", ())
    exchange.stage = state
    return exchange.move, lambda: exchange.stage


def _pooled_connection_in(state: Any) -> Machine:
    url = parse_url("http://example.test/mcp")
    head = http11_connection.h11_request("GET", url, (), b"")
    exchange = http11_connection.PooledExchange(1, url, head, b"", short=False)
    connection = http11_connection.PooledConnection(1, exchange, max_header_bytes=1024)
    connection.state = state
    return connection.move, lambda: connection.state


TABLES: list[tuple[str, Table, Set[Any], type[enum.Enum], type[enum.Enum], Callable[[Any], Machine]]] = [
    ("session", session.TRANSITIONS, session.PEER_TRIGGERS, session.Phase, session.Trigger,
     _session_in),
    ("websocket", websocket.TRANSITIONS, websocket.PEER_TRIGGERS, websocket.State,
     websocket.Trigger, _websocket_in),
    ("manager", manager_lifecycle.TRANSITIONS, frozenset(), manager_lifecycle.ConnectionState,
     manager_lifecycle.Trigger,
     _manager_in),
    ("http-exchange", http_exchange.EXCHANGE_TRANSITIONS, frozenset(), http_exchange.ExchangeStage,
     http_exchange.ExchangeTrigger, _exchange_in),
    ("http11-connection", http11_connection.CONNECTION_TRANSITIONS, frozenset(),
     http11_connection.ConnectionState, http11_connection.ConnectionTrigger, _pooled_connection_in),
]


@pytest.mark.parametrize(("table", "peer", "states", "triggers", "machine_in"), [row[1:] for row in TABLES],
                         ids=[row[0] for row in TABLES])
@given(data=st.data())
def test_every_trigger_in_every_state_follows_the_table_blaming_its_cause(
    table: Table, peer: Set[Any], states: type[enum.Enum], triggers: type[enum.Enum],
    machine_in: Callable[[Any], Machine], data: st.DataObject,
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

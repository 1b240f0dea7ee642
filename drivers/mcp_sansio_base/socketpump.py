"""The half of every socket driver's pump that is the same on every loop.

After each input a socket driver hands the core's events to their waiters, performs its
actions (open, start TLS, close) and gives each connection the bytes the core queued for
it, unless that socket is still busy with the last ones: then the core keeps them
(bounded, that is its backpressure) until the socket takes more. Each driver says only
what "busy" is and how bytes reach its socket.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from mcp_sansio.events import Action, ClientEvent

__all__ = ["Outgoing", "SocketPump"]


class Outgoing(Protocol):
    """What the pump takes from a socket-based core (HttpClient, WebSocketClient)."""

    def next_action(self) -> Action | None: ...
    def connections_with_data(self) -> Iterable[int]: ...
    def data_to_send(self, connection: int) -> bytes: ...


class SocketPump:
    """Mixed in before a driver's loop base: :meth:`_hand_out` over its primitives."""

    if TYPE_CHECKING:
        def _deliver_events(self, event: ClientEvent | None = None) -> None:
            """The façade's delivery of the core's events (the loop base has it)."""

    def _hand_out(self, net: Outgoing) -> None:
        """Deliver the events, perform the actions, give each idle socket its bytes."""
        self._deliver_events()
        while (action := net.next_action()) is not None:
            self._perform(action)
        for connection in net.connections_with_data():
            if self._busy(connection):
                continue  # the core keeps it (bounded) until the socket takes more
            data = net.data_to_send(connection)  # (dropped when the socket is gone)
            if data:
                self._take(connection, data)

    def _perform(self, action: Action) -> None:
        """Open, start TLS on or close a connection, as the core asks."""
        raise NotImplementedError

    def _busy(self, connection: int) -> bool:
        """Whether ``connection``'s socket still holds bytes it has not taken."""
        raise NotImplementedError

    def _take(self, connection: int, data: bytes) -> None:
        """Give ``data`` to ``connection``'s socket, if it is still there."""
        raise NotImplementedError

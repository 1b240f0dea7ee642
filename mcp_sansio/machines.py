"""Moving a state machine along its transition table, written once for every machine
(the client session, its WebSocket connection, the host's manager)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Set
from typing import TypeVar

from .errors import LocalProtocolError, RemoteProtocolError

__all__ = ["step"]

S = TypeVar("S", bound=enum.Enum)
T = TypeVar("T", bound=enum.Enum)


def step(table: Mapping[tuple[S, T], S], state: S, trigger: T, *, peer: Set[T] = frozenset(),
         subject: str = "") -> S:
    """The state ``trigger`` moves ``state`` to by ``table``.

    Raises:
        RemoteProtocolError: the move is not in the table and the peer caused it
            (``trigger`` in ``peer``).
        LocalProtocolError: the move is not in the table and the caller caused it. The
            message names ``subject`` (``"the connection is"``), the trigger and the state.
    """
    new = table.get((state, trigger))
    if new is None:
        error = RemoteProtocolError if trigger in peer else LocalProtocolError
        raise error(f"{trigger.value} is not allowed while {subject}{state.value}")
    return new

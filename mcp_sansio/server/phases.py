"""The handshake era's phases as a table (STYLE.md section 6).

A stateless 2026-07-28 request needs no phase; a handshake-era connection moves from
``NEW`` through ``initialize`` and ``notifications/initialized`` to ``READY``, and ends
``CLOSED``; a session rebuilt from a shared session store resumes ``READY``. A trigger
the table does not allow changes nothing: the session answers the request with an error
or ignores the notification, and the connection stays up.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

__all__ = ["PEER", "TRANSITIONS", "Phase", "Trigger"]


class Phase(enum.Enum):
    """Where the handshake era's session is; stateless requests need none of it."""

    NEW = "new"  # no initialize yet
    INITIALIZING = "initializing"  # initialize answered, notifications/initialized not yet
    READY = "ready"
    CLOSED = "closed"  # the connection ended


class Trigger(enum.Enum):
    """What moves the phase."""

    RECV_INITIALIZE = "receive initialize"
    RECV_INITIALIZED = "receive notifications/initialized"
    RESUME = "resume from the session store"
    CLOSE = "close"


PEER: Final = frozenset({Trigger.RECV_INITIALIZE, Trigger.RECV_INITIALIZED})
"""The triggers the client causes (a refused one is the client's mistake)."""


TRANSITIONS: Final[Mapping[tuple[Phase, Trigger], Phase]] = {
    (Phase.NEW, Trigger.RECV_INITIALIZE): Phase.INITIALIZING,
    (Phase.INITIALIZING, Trigger.RECV_INITIALIZED): Phase.READY,
    (Phase.NEW, Trigger.RESUME): Phase.READY,
    (Phase.NEW, Trigger.CLOSE): Phase.CLOSED,
    (Phase.INITIALIZING, Trigger.CLOSE): Phase.CLOSED,
    (Phase.READY, Trigger.CLOSE): Phase.CLOSED,
}

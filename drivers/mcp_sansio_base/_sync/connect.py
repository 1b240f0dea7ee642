# Generated from drivers/mcp_sansio_base/_async/connect.py by scripts/unasync.py: do not edit.
"""``with connect_*(...) as client``: start on entry, close on exit, for every driver."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Generic, Protocol, TypeVar

__all__ = ["Connect"]


class _Startable(Protocol):
    def _start(self) -> None: ...
    def close(self) -> None: ...


C = TypeVar("C", bound=_Startable)


class Connect(Generic[C]):
    """What ``connect_*`` returns: the connection is made on entry (through its handshake)
    and closed on exit, whatever ended the block."""

    def __init__(self, factory: Callable[[], C]) -> None:
        self._factory = factory
        self._conn: C | None = None

    def __enter__(self) -> C:
        conn = self._factory()
        conn._start()
        self._conn = conn
        return conn

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._conn is not None:
            self._conn.close()

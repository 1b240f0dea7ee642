"""``async with connect_*(...) as client``: start on entry, close on exit, for every driver."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Generic, Protocol, TypeVar

__all__ = ["Connect"]


class _Startable(Protocol):
    async def _start(self) -> None: ...
    async def aclose(self) -> None: ...


C = TypeVar("C", bound=_Startable)


class Connect(Generic[C]):
    """What ``connect_*`` returns: the connection is made on entry (through its handshake)
    and closed on exit, whatever ended the block."""

    def __init__(self, factory: Callable[[], C]) -> None:
        self._factory = factory
        self._conn: C | None = None

    async def __aenter__(self) -> C:
        conn = self._factory()
        await conn._start()
        self._conn = conn
        return conn

    async def __aexit__(self, et: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._conn is not None:
            await self._conn.aclose()

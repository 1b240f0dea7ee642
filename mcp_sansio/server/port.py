"""What the per-method code (``methods``, ``tasks``, ``skills``, ``paging``) sees of a
session: the request it serves, the listen streams it opens, and the session itself as a
protocol, so that those modules name no session class and the session can dispatch to
them without an import knot.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import msgspec

from ..events import RequestId
from ..versions import VersionRules
from .authz import Principal
from .wire import ListenFilter

if TYPE_CHECKING:
    from .app import MCPServer
    from .calls import Call
    from .config import ServerConfig
    from .events import ServerEvent
    from .handshake import Handshake
    from .stores import TaskStore
    from .tasks import TaskEnd, TaskRecord

__all__ = ["Listen", "Outlet", "Request", "SessionPort"]


class Request(NamedTuple):
    """A client request as the method handlers see it (``now``: when it arrived)."""

    request_id: RequestId
    method: str
    channel: int | None
    key: tuple[int | None, RequestId]
    params: Any  # the Struct of METHODS[method].decoder
    rules: VersionRules
    modern: bool
    now: float
    principal: Principal | None = None


class Listen(msgspec.Struct, kw_only=True):
    """An open ``subscriptions/listen`` stream and the notifications it gets."""

    request_id: RequestId
    channel: int | None
    filter: ListenFilter


class Outlet(Protocol):
    """What a session's method code uses of the transport it lives in."""

    secret: bytes
    wall_offset: float

    def new_ticket(self) -> int:
        """A fresh ticket."""
        ...

    def new_id(self, kind: str) -> str:
        """A fresh unguessable id (a session's, a task's)."""
        ...

    def emit(self, event: ServerEvent) -> None:
        """Queue ``event``."""
        ...

    def send(self, channel: int | None, data: bytes) -> None:
        """A message that ends no request."""
        ...

    def finish(self, channel: int | None, data: bytes, status: int, now: float) -> None:
        """The response that ends the request of ``channel``."""
        ...


class SessionPort(Protocol):
    """A session as its method code sees it (``ServerSession`` is one)."""

    @property
    def app(self) -> MCPServer:
        """What the server offers."""
        ...

    @property
    def config(self) -> ServerConfig:
        """The server's limits."""
        ...

    @property
    def host(self) -> Outlet:
        """The transport."""
        ...

    @property
    def handshake(self) -> Handshake:
        """The handshake era's state."""
        ...

    @property
    def listens(self) -> Mapping[tuple[int | None, RequestId], Listen]:
        """The open ``subscriptions/listen`` streams."""
        ...

    @property
    def tasks(self) -> Mapping[str, TaskRecord]:
        """The session's tasks, by id."""
        ...

    @property
    def task_store(self) -> TaskStore | None:
        """Where tasks are shared with other workers, if they are."""
        ...

    def new_call(self) -> int:
        """A fresh call handle owned by this session."""
        ...

    def timed(self) -> None:
        """This session armed a deadline."""
        ...

    def start_call(self, rec: Call) -> None:
        """Record ``rec`` as in flight."""
        ...

    def finish_call(self, rec: Call) -> None:
        """``rec`` is answered."""
        ...

    def release_request(self, rec: Call) -> None:
        """``rec``'s request is answered while its call goes on."""
        ...

    def cancel_call(self, call: int, reason: str | None) -> None:
        """Stop ``call`` on the server's own initiative."""
        ...

    def listen(self, key: tuple[int | None, RequestId], listen: Listen) -> None:
        """A ``subscriptions/listen`` stream opened."""
        ...

    def add_task(self, task: TaskRecord) -> None:
        """``task`` lives in this session now."""
        ...

    def drop_task(self, task_id: str) -> None:
        """Forget the task ``task_id``."""
        ...

    def keep_task_end(self, end: TaskEnd, retry_at: float) -> None:
        """A task's end the task store did not take: offered to it again from ``retry_at``."""
        ...

    def reject(self, request: Request, code: int, message: str, data: object = None) -> None:
        """Answer ``request`` with a JSON-RPC error."""
        ...

    def answer(self, request: Request, result: msgspec.Struct, *,
               cache: tuple[int, str] | None = None) -> None:
        """Answer ``request`` with ``result``."""
        ...

    def encode_result(self, rid: RequestId, result: msgspec.Struct | dict[str, object],
                      rules: VersionRules | None, *, cache: tuple[int, str] | None = None,
                      result_type: str = "complete") -> bytes:
        """The response for ``result`` in its era."""
        ...

"""The life of each server a host runs: connecting, connected, failed, and tried again.

State held: one :class:`ServerRecord` per configured server (its expanded configuration,
its state along ``TRANSITIONS``, the last failure, the failures in the current episode and
when the next attempt may start) and the FIFO of servers queued for a start-up slot, in a
:class:`ServerTable`. It answers what a use of a server must do (:data:`UseDecision`),
which attempts may start now (at most ``max_local`` stdio and ``max_remote`` remote servers
connecting at once, first come first served) and what an attempt's outcome or a lost
connection leads to (:func:`mcp_sansio.retry.decide`). It lives apart from
:class:`~mcp_sansio.manager.ServerManagerCore`, which holds what the servers offer (their
lists, the caches, the model-facing names) and routes by it, so that a server's life is one
table and one record whatever it lists.

States follow ``TRANSITIONS``: ``pending`` -start-> ``connecting`` -succeed-> ``connected``
-lose-> ``failed`` -start-> ``connecting`` ...; an attempt may also end ``failed`` or
``needs-auth``; ``disabled`` servers are never started. Every failure schedules the next
attempt with backoff (``RestartPolicy.retry``), counted per episode of consecutive
failures; a connection that stayed up ``stable_after`` seconds starts a new episode when
it is lost. An episode that runs out of attempts is *given up*, not lost for good: the
first use after ``cooldown`` starts a fresh one. Attempts are made on use (or by
``connect_all``), never in the background.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import shlex
from collections.abc import Mapping, Sequence
from typing import Final

import msgspec

from .errors import LocalProtocolError, McpSansioError
from .hostconfig import (
    ExpansionWarning,
    Scope,
    ServerConfig,
    ServerEntry,
    ServerState,
    StdioServerConfig,
    expand_server,
)
from .machines import step
from .retry import RetryAt, RetryPolicy, decide

__all__ = [
    "SHELL_PREFIX_VARIABLE",
    "TRANSITIONS",
    "ConnectPlan",
    "Connected",
    "ConnectionState",
    "Failure",
    "Join",
    "RestartPolicy",
    "ServerRecord",
    "ServerStatus",
    "ServerTable",
    "ServerUnavailable",
    "Trigger",
    "Unavailable",
    "UnknownServer",
    "UseDecision",
    "WaitUntil",
]

SHELL_PREFIX_VARIABLE: Final = "MCP_SANSIO_SHELL_PREFIX"
"""The environment variable whose words go before every stdio server's command."""


class ConnectionState(enum.Enum):
    """Where one server's connection is."""

    PENDING = "pending"
    """Not connected and not tried yet (or closed by the host)."""
    CONNECTING = "connecting"
    """An attempt holds a start-up slot and is under way."""
    CONNECTED = "connected"
    FAILED = "failed"
    """The last attempt failed or the connection was lost; see ``retry_at``."""
    NEEDS_AUTH = "needs-auth"
    """The server answered 401/403: the host must authorize before connecting again."""
    DISABLED = "disabled"
    """Turned off in the configuration; never started."""


class Trigger(enum.Enum):
    """What moves a server between states."""

    START = "start"
    SUCCEED = "succeed"
    FAIL = "fail"
    NEED_AUTH = "need-auth"
    LOSE = "lose"
    CLOSE = "close"


_S = ConnectionState
TRANSITIONS: Final[Mapping[tuple[ConnectionState, Trigger], ConnectionState]] = {
    (_S.PENDING, Trigger.START): _S.CONNECTING,
    (_S.FAILED, Trigger.START): _S.CONNECTING,
    (_S.CONNECTING, Trigger.SUCCEED): _S.CONNECTED,
    (_S.CONNECTING, Trigger.FAIL): _S.FAILED,
    (_S.CONNECTING, Trigger.NEED_AUTH): _S.NEEDS_AUTH,
    (_S.CONNECTED, Trigger.LOSE): _S.FAILED,
    # The host closing everything: live and starting connections end, verdicts stay.
    (_S.PENDING, Trigger.CLOSE): _S.PENDING,
    (_S.CONNECTING, Trigger.CLOSE): _S.PENDING,
    (_S.CONNECTED, Trigger.CLOSE): _S.PENDING,
    (_S.FAILED, Trigger.CLOSE): _S.FAILED,
    (_S.NEEDS_AUTH, Trigger.CLOSE): _S.NEEDS_AUTH,
    (_S.DISABLED, Trigger.CLOSE): _S.DISABLED,
}


class UnknownServer(McpSansioError, KeyError):
    """No server of that name is configured."""

    def __str__(self) -> str:
        return str(self.args[0])


class ServerUnavailable(McpSansioError):
    """A server could not be used: it is disabled, needs authorization, or failed.

    Attributes:
        server: the server's name.
        state: its state when the use was refused.
    """

    def __init__(self, message: str, *, server: str, state: ConnectionState) -> None:
        super().__init__(message)
        self.server = server
        self.state = state


class RestartPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """When a failed or lost server is tried again.

    Attributes:
        retry: backoff between consecutive failed attempts; ``max_attempts`` bounds an episode.
        stable_after: seconds a connection must stay up for its loss to start a new episode.
        cooldown: after an episode is given up, seconds before a use may start a fresh one.
    """

    retry: RetryPolicy = RetryPolicy(max_attempts=3, initial_delay=1.0, max_delay=30.0)
    stable_after: float = 60.0
    cooldown: float = 300.0

    def __post_init__(self) -> None:
        """Reject periods that are negative or not finite.

        Raises:
            LocalProtocolError: ``stable_after`` or ``cooldown`` is negative or not finite.
        """
        if not all(math.isfinite(value) and value >= 0 for value in (self.stable_after, self.cooldown)):
            raise LocalProtocolError(f"stable_after and cooldown must be finite and >= 0: {self!r}")


class Failure(msgspec.Struct, frozen=True, kw_only=True):
    """Why an attempt failed or a connection ended, as the user should read it."""

    message: str
    stderr_tail: str = ""
    needs_auth: bool = False


class ServerStatus(msgspec.Struct, frozen=True, kw_only=True):
    """One server as the host shows it.

    Attributes:
        name: the server's name.
        state: where its connection is.
        scope: the scope of the file that defines it.
        source: that file.
        transport: ``"stdio"``, ``"http"``, ``"sse"`` or ``"ws"``.
        error: the last failure, while ``failed`` or ``needs-auth``.
        stderr_tail: what a stdio server last wrote to stderr, with the failure.
        tool_count: how many tools it listed last, or ``None`` before a listing.
        attempts: consecutive failures in the current episode.
        retry_at: while ``failed``, when a use may try again (the driver's clock).
        shell_prefix: the words a stdio server's command is run after
            (``MCP_SANSIO_SHELL_PREFIX``, then its ``shellPrefix``), quoted; ``""`` if none.
    """

    name: str
    state: ConnectionState
    scope: Scope
    source: str
    transport: str
    error: str | None = None
    stderr_tail: str = ""
    tool_count: int | None = None
    attempts: int = 0
    retry_at: float | None = None
    shell_prefix: str = ""


class ConnectPlan(msgspec.Struct, frozen=True, kw_only=True):
    """Start connecting to ``name`` now, giving up after ``timeout`` seconds; a stdio
    ``config`` is the command as started (its shell prefixes applied)."""

    name: str
    config: ServerConfig
    timeout: float


class Connected(msgspec.Struct, frozen=True, kw_only=True):
    """The server is connected: use its client."""


class Join(msgspec.Struct, frozen=True, kw_only=True):
    """An attempt is queued or under way: wait for its outcome, then ask again."""


class WaitUntil(msgspec.Struct, frozen=True, kw_only=True):
    """The server is backing off: ask again at ``at``."""

    at: float


class Unavailable(msgspec.Struct, frozen=True, kw_only=True):
    """Fail the use at once, with ``message``."""

    message: str


UseDecision = Connected | Join | WaitUntil | Unavailable


@dataclasses.dataclass(slots=True, kw_only=True)
class ServerRecord:
    """One configured server's life (what it lists is the manager's, not here)."""

    entry: ServerEntry
    config: ServerConfig
    transport: str
    state: ConnectionState
    failure: Failure | None = None
    unsupported: bool = False
    queued: bool = False
    failures: int = 0
    gave_up: bool = False
    connected_at: float | None = None
    retry_at: float | None = None
    shell_prefix: tuple[str, ...] = ()  # the environment's, for a stdio server

    @property
    def local(self) -> bool:
        return isinstance(self.config, StdioServerConfig)


class ServerTable:
    """Every configured server's record and the queue for start-up slots (module docstring)."""

    def __init__(self, entries: Sequence[ServerEntry], *, env: Mapping[str, str], transports: frozenset[str],
                 restart: RestartPolicy, max_local: int, max_remote: int, connect_timeout: float) -> None:
        """Expand every entry's ``${VAR}`` placeholders from ``env`` and set up its record;
        a server of a transport not in ``transports`` fails for good.

        Raises:
            LocalProtocolError: two entries share a name.
        """
        self._restart = restart
        self._limits = {True: max_local, False: max_remote}
        self._connect_timeout = connect_timeout
        self.warnings: list[ExpansionWarning] = []
        """What ``${VAR}`` expansion could not fill, for the host to show."""
        prefix, prefix_error = _shell_prefix(env)
        self.servers: dict[str, ServerRecord] = {}
        """Every record by name, in configuration order (read it; the table moves them)."""
        for entry in entries:
            if entry.name in self.servers:
                raise LocalProtocolError(f"server {entry.name!r} is configured twice")
            expanded, warnings = expand_server(entry.name, entry.config, env)
            self.warnings += warnings
            server = ServerRecord(entry=entry, config=expanded, transport=_transport_of(expanded),
                                  state=_S.DISABLED if entry.state is ServerState.DISABLED else _S.PENDING)
            refusal = None
            if server.transport not in transports:
                refusal = f"this driver cannot connect to {server.transport} servers"
            elif server.local:
                server.shell_prefix, refusal = prefix, prefix_error
            if server.state is _S.PENDING and refusal is not None:
                server.state, server.unsupported = _S.FAILED, True
                server.failure = Failure(message=refusal)
            self.servers[entry.name] = server
        self._queue: list[str] = []
        self._closed = False

    def get(self, name: str) -> ServerRecord:
        """The record of ``name``.

        Raises:
            UnknownServer: no such server.
        """
        server = self.servers.get(name)
        if server is None:
            raise UnknownServer(f"no server is named {name!r}")
        return server

    def connected_names(self) -> list[str]:
        """The servers connected now."""
        return [name for name, server in self.servers.items() if server.state is _S.CONNECTED]

    def attempting(self, name: str) -> bool:
        """Whether an attempt for ``name`` is queued or under way.

        Raises:
            UnknownServer: no such server.
        """
        server = self.get(name)
        return server.queued or server.state is _S.CONNECTING

    def status(self, name: str, now: float, tool_count: int | None) -> ServerStatus:
        """One server's status; ``attempts`` reads 0 once a connection has been stable.

        Raises:
            UnknownServer: no such server.
        """
        server = self.get(name)
        stable = server.connected_at is not None and now - server.connected_at >= self._restart.stable_after
        failure = server.failure if server.state in (_S.FAILED, _S.NEEDS_AUTH) else None
        return ServerStatus(
            name=name, state=server.state, scope=server.entry.scope, source=server.entry.source,
            transport=server.transport, error=failure.message if failure else None,
            stderr_tail=failure.stderr_tail if failure else "",
            tool_count=tool_count,
            attempts=0 if stable else server.failures,
            retry_at=server.retry_at if server.state is _S.FAILED else None,
            shell_prefix=shlex.join((*server.shell_prefix, *getattr(server.config, "shell_prefix", ()))),
        )

    def use(self, name: str, now: float) -> UseDecision:
        """Decide what a use of ``name`` (a call, a listing, ``connect``) must do; a server
        that is pending, or failed with its retry due, is queued.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: the table is closed.
        """
        server = self.get(name)
        if self._closed:
            raise LocalProtocolError("the server manager is closed")
        state = server.state
        if state is _S.CONNECTED:
            return Connected()
        if server.queued or state is _S.CONNECTING:
            return Join()
        if state is _S.FAILED and not server.unsupported:
            assert server.retry_at is not None  # every failure schedules one
            if now < server.retry_at and not server.gave_up:
                return WaitUntil(at=server.retry_at)
            if now >= server.retry_at:
                if server.gave_up:
                    server.failures, server.gave_up = 0, False
                self._enqueue(name)
                return Join()
        elif state is _S.PENDING:
            self._enqueue(name)
            return Join()
        return Unavailable(message=self._refusal(name, server, now))

    def queue_all(self) -> list[str]:
        """Queue every server not tried yet; the servers whose attempts (new or already
        under way) to wait for."""
        for name, server in self.servers.items():
            if server.state is _S.PENDING and not server.queued and not self._closed:
                self._enqueue(name)
        return [name for name in self.servers if self.attempting(name)]

    def start_due(self) -> list[ConnectPlan]:
        """Take queued servers, in order, while start-up slots of their kind are free; each
        is ``connecting`` until its outcome."""
        busy = {True: 0, False: 0}
        for server in self.servers.values():
            if server.state is _S.CONNECTING:
                busy[server.local] += 1
        plans: list[ConnectPlan] = []
        for name in list(self._queue):
            server = self.servers[name]
            if busy[server.local] < self._limits[server.local]:
                busy[server.local] += 1
                self._queue.remove(name)
                server.queued = False
                self._advance(server, Trigger.START)
                config = server.config
                if isinstance(config, StdioServerConfig):
                    config = config.wrapped(server.shell_prefix)
                plans.append(ConnectPlan(name=name, config=config, timeout=self._connect_timeout))
        return plans

    def connected(self, name: str, now: float) -> None:
        """The attempt for ``name`` succeeded.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: no attempt was under way.
        """
        server = self.get(name)
        self._advance(server, Trigger.SUCCEED)
        server.connected_at, server.retry_at, server.failure = now, None, None

    def connect_failed(self, name: str, failure: Failure, now: float, jitter: float) -> None:
        """The attempt for ``name`` failed; schedule the next unless it needs authorization.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: no attempt was under way, or ``jitter`` is outside [0, 1).
        """
        server = self.get(name)
        self._advance(server, Trigger.NEED_AUTH if failure.needs_auth else Trigger.FAIL)
        server.failure = failure
        if not failure.needs_auth:
            self.schedule_retry(name, now, jitter)

    def lose(self, name: str, failure: Failure, now: float) -> None:
        """The connection of ``name`` ended (then :meth:`schedule_retry`); one that stayed
        up ``stable_after`` starts a new episode.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: it was not connected.
        """
        server = self.get(name)
        self._advance(server, Trigger.LOSE)
        assert server.connected_at is not None  # set on every success
        if now - server.connected_at >= self._restart.stable_after:
            server.failures = 0
        server.connected_at, server.failure = None, failure

    def schedule_retry(self, name: str, now: float, jitter: float) -> None:
        """Count a failure of ``name`` and set when it may be tried again (or give the
        episode up until ``cooldown``).

        Raises:
            LocalProtocolError: ``jitter`` is outside [0, 1).
        """
        server = self.servers[name]
        server.failures += 1
        decision = decide(self._restart.retry, server.failures, now, None, jitter)
        if isinstance(decision, RetryAt):
            server.retry_at, server.gave_up = decision.at, False
        else:
            server.retry_at, server.gave_up = now + self._restart.cooldown, True

    def close(self) -> None:
        """The host closed every connection: nothing is queued or connected, and nothing
        more may be used."""
        self._closed = True
        self._queue.clear()
        for server in self.servers.values():
            server.queued = False
            self._advance(server, Trigger.CLOSE)
            server.connected_at = None

    def _advance(self, server: ServerRecord, trigger: Trigger) -> None:
        server.state = step(TRANSITIONS, server.state, trigger, subject=f"server {server.entry.name!r} is ")

    def _enqueue(self, name: str) -> None:
        self.servers[name].queued = True
        self._queue.append(name)

    def _refusal(self, name: str, server: ServerRecord, now: float) -> str:
        reason = server.failure.message if server.failure else ""
        if server.state is _S.DISABLED:
            return f"server {name!r} is disabled ({server.entry.state_source})"
        if server.state is _S.NEEDS_AUTH:
            return f"server {name!r} needs authorization: {reason}"
        if server.unsupported:
            return f"server {name!r} failed: {reason}"
        assert server.retry_at is not None
        return (f"server {name!r} failed: {reason}; gave up after {server.failures} attempts,"
                f" next try in {server.retry_at - now:.0f} s")


def _shell_prefix(env: Mapping[str, str]) -> tuple[tuple[str, ...], str | None]:
    """The words of ``MCP_SANSIO_SHELL_PREFIX``, or why they cannot be had (then no stdio
    server may start: running it outside the sandbox the user asked for is worse)."""
    try:
        return tuple(shlex.split(env.get(SHELL_PREFIX_VARIABLE, ""))), None
    except ValueError as exc:
        return (), f"{SHELL_PREFIX_VARIABLE} cannot be split into words ({exc}): fix or unset it"


def _transport_of(config: ServerConfig) -> str:
    return "stdio" if isinstance(config, StdioServerConfig) else config.transport.value

"""The decisions of a host that runs many MCP servers at once, for the drivers' ``ServerManager``.

:class:`ServerManagerCore` keeps one record per configured server and answers what a
driver asks: which connection attempts may start now (at most ``max_local`` stdio and
``max_remote`` remote servers connecting at once, first come first served), what a use of
a server must do (:data:`UseDecision`), what state an attempt's outcome or a lost
connection leads to, when the next attempt is due (:func:`mcp_sansio.retry.decide`), which
timeouts apply, whether a ``tools/call`` that failed with JSON-RPC error -32042 (URL
elicitation required, MCP 2025-11-25 "Elicitation") is retried, and what the model gets
for a result (:mod:`mcp_sansio.result_policy`). It also owns the list cache and the
model-facing tool names. The driver opens and closes connections, reads the clock and
the entropy, and writes result files.

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
import re
import shlex
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Final

import msgspec

from mcp_sansio.errors import (
    ConnectionClosed,
    LocalProtocolError,
    McpSansioError,
    RequestError,
    SessionExpired,
    Unauthorized,
)
from mcp_sansio.hostconfig import (
    ExpansionWarning,
    Scope,
    ServerConfig,
    ServerEntry,
    ServerState,
    StdioServerConfig,
    expand_server,
)
from mcp_sansio.listcache import ListCache, ListKey, ListKind, hint_ttl, kinds_invalidated_by
from mcp_sansio.machines import step
from mcp_sansio.naming import ToolNamer, ToolNames, UnknownPromptName, UnknownToolName, servers_for
from mcp_sansio.result_policy import KeptResult, ResultDecision, ResultPolicy, apply_result_policy
from mcp_sansio.retry import RetryAt, RetryPolicy, decide
from mcp_sansio.session import LIST_FIELDS
from mcp_sansio.types import (
    CallToolResult,
    ContentBlock,
    ElicitRequestParams,
    ElicitResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)
from mcp_sansio.types import URLElicitationRequiredErrorData as _ElicitationData

__all__ = [
    "ALL_TRANSPORTS",
    "SHELL_PREFIX_VARIABLE",
    "URL_ELICITATION_REQUIRED",
    "ConnectPlan",
    "Connected",
    "ConnectionState",
    "Failure",
    "Join",
    "ManagerConfig",
    "NamedPrompt",
    "NamedTool",
    "PromptRoute",
    "RestartPolicy",
    "ServerManagerCore",
    "ServerResource",
    "ServerResourceTemplate",
    "ServerStatus",
    "ServerUnavailable",
    "ToolRoute",
    "Unavailable",
    "UnknownServer",
    "UseDecision",
    "WaitUntil",
    "elicitations_accepted",
    "failure_from",
    "is_connection_loss",
    "timeout_from_env",
]

SHELL_PREFIX_VARIABLE: Final = "MCP_SANSIO_SHELL_PREFIX"
"""The environment variable whose words go before every stdio server's command."""
URL_ELICITATION_REQUIRED: Final = -32042
"""JSON-RPC error code of a request that needs URL-mode elicitations first (2025-11-25)."""
ALL_TRANSPORTS: Final = frozenset({"stdio", "http", "sse", "ws"})
DEFAULT_CONNECT_TIMEOUT: Final = 30.0
DEFAULT_TOOL_TIMEOUT: Final = 60.0
_MILLISECONDS: Final = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,6})?")
_MAX_MESSAGE: Final = 300


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


class ManagerConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Every limit of a server manager.

    Attributes:
        max_local: stdio servers starting at once.
        max_remote: remote (http, sse, ws) servers connecting at once.
        connect_timeout: seconds for one attempt (start-up and handshake); ``None`` reads
            ``MCP_TIMEOUT`` (milliseconds) from the environment, else 30 s.
        tool_timeout: seconds for a request when neither the call nor the server's
            ``timeout`` says; ``None`` reads ``MCP_TOOL_TIMEOUT`` (milliseconds), else 60 s.
        restart: when failed servers are tried again.
        max_elicitation_retries: retries of a ``tools/call`` answered with -32042.
        max_relists: listings fetched again in a row because a ``list_changed``
            notification overtook them (see :meth:`ServerManagerCore.store_result`).
        list_cache_entries: cached lists per server (and, apart, cached resource reads).
        result_policy: how large tool results are cut or persisted.
    """

    max_local: int = 3
    max_remote: int = 20
    connect_timeout: float | None = None
    tool_timeout: float | None = None
    restart: RestartPolicy = RestartPolicy()
    max_elicitation_retries: int = 3
    max_relists: int = 3
    list_cache_entries: int = 20
    result_policy: ResultPolicy = ResultPolicy()

    def __post_init__(self) -> None:
        """Reject limits no manager can work with.

        Raises:
            LocalProtocolError: a limit below 1, a negative retry count, or a timeout
                that is not a positive finite number.
        """
        if min(self.max_local, self.max_remote, self.list_cache_entries) < 1:
            raise LocalProtocolError("max_local, max_remote and list_cache_entries must be at least 1")
        if min(self.max_elicitation_retries, self.max_relists) < 0:
            raise LocalProtocolError("max_elicitation_retries and max_relists must not be negative")
        for timeout in (self.connect_timeout, self.tool_timeout):
            if timeout is not None:
                _check_timeout(timeout)


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


class ToolRoute(msgspec.Struct, frozen=True, kw_only=True):
    """Call ``tool`` on ``server`` with a deadline of ``timeout`` seconds."""

    server: str
    tool: str
    timeout: float


class NamedTool(msgspec.Struct, frozen=True, kw_only=True):
    """A tool under the name the model sees (``mcp__<server>__<tool>``)."""

    name: str
    server: str
    tool: Tool


class PromptRoute(msgspec.Struct, frozen=True, kw_only=True):
    """Get ``prompt`` from ``server`` with a deadline of ``timeout`` seconds."""

    server: str
    prompt: str
    timeout: float


class NamedPrompt(msgspec.Struct, frozen=True, kw_only=True):
    """A prompt under the name a user or model invokes it by (``mcp__<server>__<prompt>``)."""

    name: str
    server: str
    prompt: Prompt


class ServerResource(msgspec.Struct, frozen=True, kw_only=True):
    """A resource and the server that lists it (read it with ``read_resource(server, uri)``)."""

    server: str
    resource: Resource


class ServerResourceTemplate(msgspec.Struct, frozen=True, kw_only=True):
    """A resource template and the server that lists it."""

    server: str
    template: ResourceTemplate


@dataclasses.dataclass(slots=True, kw_only=True)
class _Server:
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
    tools: list[Tool] | None = None  # what the server listed last, of each kind
    prompts: list[Prompt] | None = None
    resources: list[Resource] | None = None
    templates: list[ResourceTemplate] | None = None
    shell_prefix: tuple[str, ...] = ()  # the environment's, for a stdio server

    @property
    def local(self) -> bool:
        return isinstance(self.config, StdioServerConfig)


_KNOWN: Final[Mapping[ListKind, tuple[str, type]]] = {
    ListKind.TOOLS: ("tools", Tool),
    ListKind.PROMPTS: ("prompts", Prompt),
    ListKind.RESOURCES: ("resources", Resource),
    ListKind.RESOURCE_TEMPLATES: ("templates", ResourceTemplate),
}
"""The ``_Server`` field each kind of listing fills, and the type of its items."""


def _check_timeout(timeout: float) -> None:
    if not (math.isfinite(timeout) and timeout > 0):
        raise LocalProtocolError(f"a timeout must be a positive number of seconds, not {timeout}")


def _shell_prefix(env: Mapping[str, str]) -> tuple[tuple[str, ...], str | None]:
    """The words of ``MCP_SANSIO_SHELL_PREFIX``, or why they cannot be had (then no stdio
    server may start: running it outside the sandbox the user asked for is worse)."""
    try:
        return tuple(shlex.split(env.get(SHELL_PREFIX_VARIABLE, ""))), None
    except ValueError as exc:
        return (), f"{SHELL_PREFIX_VARIABLE} cannot be split into words ({exc}): fix or unset it"


def timeout_from_env(env: Mapping[str, str], name: str, default: float) -> float:
    """Read a timeout given in milliseconds (``MCP_TIMEOUT=10000``), in seconds.

    A missing, empty, zero or malformed value gives ``default``.
    """
    value = env.get(name, "").strip()
    if not _MILLISECONDS.fullmatch(value) or float(value) <= 0:
        return default
    return float(value) / 1000


def _one_line(text: str) -> str:
    return " ".join(text.split())[:_MAX_MESSAGE]


def failure_from(exc: Exception, *, stderr_tail: str = "") -> Failure:
    """Describe the exception that ended an attempt or a connection.

    Args:
        exc: what the driver caught (an ``McpSansioError``, or an ``OSError``).
        stderr_tail: the server's stderr, when the exception does not carry it.
    """
    if isinstance(exc, Unauthorized):
        return Failure(message=_one_line(f"HTTP {exc.status}: {exc}"), needs_auth=True)
    if isinstance(exc, ConnectionClosed) and exc.stderr_tail:
        stderr_tail = exc.stderr_tail
    return Failure(message=_one_line(str(exc) or type(exc).__name__), stderr_tail=stderr_tail)


def is_connection_loss(exc: Exception) -> bool:
    """Whether a failed request means the connection itself is gone."""
    return isinstance(exc, ConnectionClosed | SessionExpired)


def elicitations_accepted(answers: Sequence[object]) -> bool:
    """Whether the host accepted every elicitation (``ElicitResult`` or its dict)."""
    for answer in answers:
        action = answer.action if isinstance(answer, ElicitResult) else None
        if isinstance(answer, Mapping):
            action = answer.get("action")
        if action != "accept":
            return False
    return True


def _transport_of(config: ServerConfig) -> str:
    return "stdio" if isinstance(config, StdioServerConfig) else config.transport.value


class ServerManagerCore:
    """The state of every configured server and the decisions about them (module docstring)."""

    def __init__(
        self,
        entries: Sequence[ServerEntry],
        *,
        env: Mapping[str, str],
        config: ManagerConfig | None = None,
        transports: frozenset[str] = ALL_TRANSPORTS,
    ) -> None:
        """Expand every entry's ``${VAR}`` placeholders from ``env`` and set up its record.

        Args:
            entries: the merged configuration (``merge_scopes(...).entries.values()``).
            env: the environment: placeholders, ``MCP_TIMEOUT``, ``MCP_TOOL_TIMEOUT`` and
                ``MAX_MCP_OUTPUT_TOKENS``.
            config: the limits; the defaults if ``None``.
            transports: what the driver can connect to; other servers fail for good.

        Raises:
            LocalProtocolError: two entries share a name.
        """
        self._config = config = config or ManagerConfig()
        self._env = dict(env)
        self._connect_timeout = config.connect_timeout or timeout_from_env(
            env, "MCP_TIMEOUT", DEFAULT_CONNECT_TIMEOUT)
        self._tool_timeout = config.tool_timeout or timeout_from_env(
            env, "MCP_TOOL_TIMEOUT", DEFAULT_TOOL_TIMEOUT)
        self.warnings: list[ExpansionWarning] = []
        """What ``${VAR}`` expansion could not fill, for the host to show."""
        self._notices: deque[str] = deque()  # see next_warning()
        self._warned: set[str] = set()
        prefix, prefix_error = _shell_prefix(env)
        self._servers: dict[str, _Server] = {}
        for entry in entries:
            if entry.name in self._servers:
                raise LocalProtocolError(f"server {entry.name!r} is configured twice")
            expanded, warnings = expand_server(entry.name, entry.config, env)
            self.warnings += warnings
            server = _Server(entry=entry, config=expanded, transport=_transport_of(expanded),
                             state=_S.DISABLED if entry.state is ServerState.DISABLED else _S.PENDING)
            refusal = None
            if server.transport not in transports:
                refusal = f"this driver cannot connect to {server.transport} servers"
            elif server.local:
                server.shell_prefix, refusal = prefix, prefix_error
            if server.state is _S.PENDING and refusal is not None:
                server.state, server.unsupported = _S.FAILED, True
                server.failure = Failure(message=refusal)
            self._servers[entry.name] = server
        self._queue: list[str] = []
        self._closed = False
        bound = config.list_cache_entries
        self._cache: ListCache[list[object]] = ListCache(max_entries_per_server=bound)
        self._reads: ListCache[ReadResourceResult] = ListCache(max_entries_per_server=bound)
        self._generations: dict[tuple[str, ListKind], int] = {}
        self._relists: dict[tuple[str, ListKind], int] = {}  # stale listings fetched again in a row
        self._names: ToolNames | None = None
        self._prompt_names: ToolNames | None = None

    # --------------------------------------------------------------- status

    @property
    def connect_timeout(self) -> float:
        """Seconds one connection attempt may take."""
        return self._connect_timeout

    def names(self) -> list[str]:
        """Every configured server's name, in configuration order."""
        return list(self._servers)

    def connected_names(self) -> list[str]:
        """The servers connected now."""
        return [name for name, server in self._servers.items() if server.state is _S.CONNECTED]

    def attempting(self, name: str) -> bool:
        """Whether an attempt for ``name`` is queued or under way.

        Raises:
            UnknownServer: no such server.
        """
        server = self._get(name)
        return server.queued or server.state is _S.CONNECTING

    def status(self, name: str, now: float) -> ServerStatus:
        """One server's status; ``attempts`` reads 0 once a connection has been stable.

        Raises:
            UnknownServer: no such server.
        """
        server = self._get(name)
        stable = server.connected_at is not None and now - server.connected_at >= self._restart.stable_after
        failure = server.failure if server.state in (_S.FAILED, _S.NEEDS_AUTH) else None
        return ServerStatus(
            name=name, state=server.state, scope=server.entry.scope, source=server.entry.source,
            transport=server.transport, error=failure.message if failure else None,
            stderr_tail=failure.stderr_tail if failure else "",
            tool_count=None if server.tools is None else len(server.tools),
            attempts=0 if stable else server.failures,
            retry_at=server.retry_at if server.state is _S.FAILED else None,
            shell_prefix=shlex.join((*server.shell_prefix, *getattr(server.config, "shell_prefix", ()))),
        )

    def statuses(self, now: float) -> dict[str, ServerStatus]:
        """Every server's status, in configuration order."""
        return {name: self.status(name, now) for name in self._servers}

    # ----------------------------------------------------------- scheduling

    def use(self, name: str, now: float) -> UseDecision:
        """Decide what a use of ``name`` (a call, a listing, ``connect``) must do.

        A server that is pending, or failed with its retry due, is queued: the driver
        then runs :meth:`start_due`.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: the manager is closed.
        """
        server = self._get(name)
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
        """Queue every server not tried yet (``connect_all``).

        Returns:
            The servers whose attempts (new or already under way) to wait for.
        """
        for name, server in self._servers.items():
            if server.state is _S.PENDING and not server.queued and not self._closed:
                self._enqueue(name)
        return [name for name in self._servers if self.attempting(name)]

    def start_due(self) -> list[ConnectPlan]:
        """Take queued servers, in order, while start-up slots of their kind are free.

        Returns:
            The attempts to begin now; each server is ``connecting`` until its outcome.
        """
        busy = {True: 0, False: 0}
        for server in self._servers.values():
            if server.state is _S.CONNECTING:
                busy[server.local] += 1
        limits = {True: self._config.max_local, False: self._config.max_remote}
        plans: list[ConnectPlan] = []
        for name in list(self._queue):
            server = self._servers[name]
            if busy[server.local] < limits[server.local]:
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
        server = self._get(name)
        self._advance(server, Trigger.SUCCEED)
        server.connected_at, server.retry_at, server.failure = now, None, None

    def connect_failed(self, name: str, failure: Failure, now: float, jitter: float) -> None:
        """The attempt for ``name`` failed; schedule the next unless it needs authorization.

        Args:
            name: the server.
            failure: why (see :func:`failure_from`).
            now: the driver's clock.
            jitter: entropy in [0, 1) for the backoff.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: no attempt was under way, or ``jitter`` is outside [0, 1).
        """
        server = self._get(name)
        self._advance(server, Trigger.NEED_AUTH if failure.needs_auth else Trigger.FAIL)
        server.failure = failure
        if not failure.needs_auth:
            self._schedule_retry(server, now, jitter)

    def connection_lost(self, name: str, failure: Failure, now: float, jitter: float) -> None:
        """The connection of ``name`` ended: forget its lists (all but those the server
        marked ``public`` with a TTL still running) and schedule a restart.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: it was not connected, or ``jitter`` is outside [0, 1).
        """
        server = self._get(name)
        self._advance(server, Trigger.LOSE)
        assert server.connected_at is not None  # set on every success
        if now - server.connected_at >= self._restart.stable_after:
            server.failures = 0
        server.connected_at, server.failure = None, failure
        self._invalidate_server(name, keep_public=True)
        self._schedule_retry(server, now, jitter)

    def close(self) -> None:
        """The host closed every connection: nothing is queued, connected or cached."""
        self._closed = True
        self._queue.clear()
        for name, server in self._servers.items():
            server.queued = False
            self._advance(server, Trigger.CLOSE)
            server.connected_at = None
            self._invalidate_server(name)

    # ----------------------------------------------------------------- lists

    def begin_list(self, name: str, kind: ListKind) -> int:
        """Note that a listing starts; pass the token to :meth:`store`."""
        return self._generations.get((name, kind), 0)

    def cached(self, name: str, kind: ListKind, now: float) -> list[object] | None:
        """The cached list of ``kind`` for ``name``, if any."""
        return self._cache.get(ListKey(server=name, kind=kind), now)

    def store(self, name: str, kind: ListKind, items: Sequence[object], token: int, now: float, *,
              ttl_ms: int | None = None, cache_scope: str | None = None) -> None:
        """Cache a listing, unless a change notification or a loss made it stale meanwhile.

        ``ttl_ms`` and ``cache_scope`` are the result's caching hints (see
        :mod:`mcp_sansio.listcache`). A tools listing also becomes the server's known
        tools (names, counts, routing), whether it is cached or not.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: ``kind`` is ``RESOURCE_READ`` (see :meth:`store_read`).
        """
        self._check_list(name, kind)
        if token != self._generations.get((name, kind), 0):
            return
        key = ListKey(server=name, kind=kind)
        self._cache.put(key, list(items), now, hint_ttl(ttl_ms), scope=cache_scope)
        self._know(name, kind, items)

    def store_result(self, name: str, kind: ListKind, result: msgspec.Struct | None, token: int,
                     now: float) -> list[object] | None:
        """:meth:`store` a whole list result (``None``: the server has no such list) with
        its caching hints, and return its items.

        Returns:
            ``None`` when a ``list_changed`` notification overtook the listing (it arrived
            after :meth:`begin_list`): the list may predate the change, so the driver
            fetches it again. After ``max_relists`` such listings in a row the last one is
            returned and names the tools, uncached.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: ``kind`` is ``RESOURCE_READ``.
        """
        self._check_list(name, kind)
        items: list[object] = [] if result is None else list(getattr(result, LIST_FIELDS[kind.value]))
        if kind is ListKind.TOOLS or kind is ListKind.PROMPTS:
            items = self._first_of_each_name(name, kind, items)
        relists = self._relists.pop((name, kind), 0)
        if token != self._generations.get((name, kind), 0):
            if relists < self._config.max_relists:
                self._relists[name, kind] = relists + 1
                return None
            self._know(name, kind, items)
            return items
        self.store(name, kind, items, token, now, ttl_ms=getattr(result, "ttl_ms", None),
                   cache_scope=getattr(result, "cache_scope", None))
        return items

    def next_warning(self) -> str | None:
        """The next thing the host should log at WARNING (a server that listed a name
        twice), or ``None``; each is given once."""
        return self._notices.popleft() if self._notices else None

    def _first_of_each_name(self, name: str, kind: ListKind, items: list[object]) -> list[object]:
        """``items`` without a second tool (or prompt) of a name: model APIs refuse two."""
        seen: set[object] = set()
        kept: list[object] = []
        dropped: set[str] = set()
        for item in items:
            key = getattr(item, "name", None)
            if key in seen:
                dropped.add(str(key))
                continue
            seen.add(key)
            kept.append(item)
        if dropped:
            noun = "tool" if kind is ListKind.TOOLS else "prompt"
            again = ", ".join(repr(each) for each in sorted(dropped))
            text = (f"server {name!r} listed the {noun} name{'s' if len(dropped) > 1 else ''} {again} more "
                    f"than once: the first of each is used, the others are left out")
            if text not in self._warned:
                self._warned.add(text)
                self._notices.append(text)
        return kept

    def cached_read(self, name: str, uri: str, now: float) -> ReadResourceResult | None:
        """The cached ``resources/read`` of ``uri`` on ``name``, if still fresh."""
        return self._reads.get(ListKey(server=name, kind=ListKind.RESOURCE_READ, uri=uri), now)

    def store_read(self, name: str, uri: str, result: ReadResourceResult, token: int, now: float) -> None:
        """Cache a ``resources/read`` for as long as its ``ttlMs`` says (a token from
        ``begin_list(name, ListKind.RESOURCE_READ)``). A read without hints is not cached:
        a resource may change without any notification."""
        if token != self._generations.get((name, ListKind.RESOURCE_READ), 0):
            return
        ttl = hint_ttl(result.ttl_ms)
        key = ListKey(server=name, kind=ListKind.RESOURCE_READ, uri=uri)
        self._reads.put(key, result, now, 0.0 if ttl is None else ttl, scope=result.cache_scope)

    def notification_received(self, name: str, method: str) -> None:
        """Drop the lists a ``notifications/*/list_changed`` from ``name`` makes stale, and
        its reads on ``notifications/resources/updated``."""
        for kind in kinds_invalidated_by(method):
            self._cache.invalidate(name, kind)
            self._reads.invalidate(name, kind)
            self._bump(name, kind)

    # ----------------------------------------------------------------- tools

    def tool_names(self) -> ToolNames:
        """Model-facing names of every known tool, of connected servers and of servers
        that failed since they listed theirs (so their names survive a restart)."""
        if self._names is None:
            self._names = ToolNamer.build({
                name: [tool.name for tool in server.tools]
                for name, server in self._servers.items()
                if server.tools is not None and server.state is not _S.DISABLED
            })
        return self._names

    def named_tools(self) -> list[NamedTool]:
        """Every tool of every connected server, under its model-facing name."""
        names = self.tool_names()
        return [
            NamedTool(name=names.model_name(name, tool.name), server=name, tool=tool)
            for name, server in self._servers.items()
            if server.state is _S.CONNECTED and server.tools is not None
            for tool in server.tools
        ]

    def route(self, model_name: str, timeout: float | None = None) -> ToolRoute:
        """Where a model-facing tool name goes, with the call's deadline.

        Raises:
            UnknownToolName: no known tool has that name.
            LocalProtocolError: ``timeout`` is not a positive finite number.
        """
        server, tool = self.tool_names().route(model_name)
        return ToolRoute(server=server, tool=tool, timeout=self.request_timeout(server, timeout))

    # --------------------------------------------------- prompts, resources

    def prompt_names(self) -> ToolNames:
        """Names of every known prompt (``mcp__<server>__<prompt>``), kept like the tools'."""
        if self._prompt_names is None:
            self._prompt_names = ToolNamer.build({
                name: [prompt.name for prompt in server.prompts]
                for name, server in self._servers.items()
                if server.prompts is not None and server.state is not _S.DISABLED
            }, kind="prompt")
        return self._prompt_names

    def named_prompts(self) -> list[NamedPrompt]:
        """Every prompt of every connected server, under its model-facing name."""
        names = self.prompt_names()
        return [
            NamedPrompt(name=names.model_name(name, prompt.name), server=name, prompt=prompt)
            for name, server in self._servers.items()
            if server.state is _S.CONNECTED and server.prompts is not None
            for prompt in server.prompts
        ]

    def route_prompt(self, model_name: str, timeout: float | None = None) -> PromptRoute:
        """Where a model-facing prompt name goes, with the request's deadline.

        Raises:
            UnknownPromptName: no known prompt has that name.
            LocalProtocolError: ``timeout`` is not a positive finite number.
        """
        server, prompt = self.prompt_names().route(model_name)
        return PromptRoute(server=server, prompt=prompt, timeout=self.request_timeout(server, timeout))

    def named_resources(self) -> list[ServerResource | ServerResourceTemplate]:
        """Every resource, then every template, of every connected server, by server."""
        found: list[ServerResource | ServerResourceTemplate] = []
        for name, server in self._servers.items():
            if server.state is _S.CONNECTED:
                found += [ServerResource(server=name, resource=it) for it in server.resources or ()]
                found += [ServerResourceTemplate(server=name, template=it) for it in server.templates or ()]
        return found

    def servers_for(self, model_name: str) -> list[str]:
        """The servers a model-facing name may belong to, before they listed anything: the
        only ones a use of an unknown name starts (see :func:`mcp_sansio.naming.servers_for`)."""
        return servers_for(model_name, list(self._servers))

    def unroutable(self, model_name: str, kind: ListKind, now: float) -> McpSansioError:
        """Why no tool (``kind`` TOOLS) or prompt (PROMPTS) has ``model_name`` once the
        servers it may belong to were tried: one of them is not connected (disabled,
        failed, needing authorization), or no such name exists."""
        noun = "prompt" if kind is ListKind.PROMPTS else "tool"
        for name in self.servers_for(model_name):
            server = self._servers[name]
            if server.state is not _S.CONNECTED:
                failure = server.failure
                why = f"is disabled ({server.entry.state_source})" if server.state is _S.DISABLED else (
                    f"{server.state.value}: {failure.message}" if failure else "is not connected")
                return ServerUnavailable(f"{noun} {model_name!r}: server {name!r} {why}", server=name,
                                         state=server.state)
        error = UnknownPromptName if kind is ListKind.PROMPTS else UnknownToolName
        return error(f"no {noun} is named {model_name!r}")

    def request_timeout(self, name: str, timeout: float | None = None) -> float:
        """A request's deadline: the call's own, else the server's ``timeout``, else the default.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: ``timeout`` is not a positive finite number.
        """
        server = self._get(name)
        if timeout is not None:
            _check_timeout(timeout)
            return timeout
        return server.config.timeout or self._tool_timeout

    def elicitation_retry(self, error: RequestError, retries: int) -> list[ElicitRequestParams] | None:
        """The elicitations to hand the host before retrying a ``tools/call``, if any.

        Args:
            error: how the call failed.
            retries: how many times this call was already retried.

        Returns:
            ``None`` unless the error is -32042 with well-formed elicitations and fewer
            than ``max_elicitation_retries`` retries were made.
        """
        if error.code != URL_ELICITATION_REQUIRED or retries >= self._config.max_elicitation_retries:
            return None
        try:
            data = msgspec.convert(error.data, _ElicitationData)
        except msgspec.ValidationError:
            return None
        return data.elicitations or None

    def shape_result(self, route: ToolRoute, result: CallToolResult) -> ResultDecision:
        """Apply the result-size policy to a tool's result (the tool's ``_meta`` hint included).

        Raises:
            UnknownServer: no such server.
        """
        tools = self._get(route.server).tools or []
        meta = next((tool.meta for tool in tools if tool.name == route.tool), None)
        return apply_result_policy(result.content, server=route.server, tool=route.tool,
                                   policy=self._config.result_policy, env=self._env, tool_meta=meta)

    @staticmethod
    def final_result(
        result: CallToolResult, decision: ResultDecision, path: str | None = None
    ) -> CallToolResult:
        """The result the caller gets: as it came, cut, or pointing at the persisted file.

        Raises:
            LocalProtocolError: a :class:`PersistResult` without the ``path`` written.
        """
        if isinstance(decision, KeptResult):
            if not decision.truncated:
                return result
            blocks = decision.content
        elif path is None:
            raise LocalProtocolError("a persisted result needs the path it was written to")
        else:
            blocks = decision.replacement_content(path)
        return msgspec.structs.replace(result, content=msgspec.convert(blocks, list[ContentBlock]))

    # --------------------------------------------------------------- helpers

    @property
    def _restart(self) -> RestartPolicy:
        return self._config.restart

    def _get(self, name: str) -> _Server:
        server = self._servers.get(name)
        if server is None:
            raise UnknownServer(f"no server is named {name!r}")
        return server

    def _advance(self, server: _Server, trigger: Trigger) -> None:
        server.state = step(TRANSITIONS, server.state, trigger, subject=f"server {server.entry.name!r} is ")

    def _enqueue(self, name: str) -> None:
        self._servers[name].queued = True
        self._queue.append(name)

    def _schedule_retry(self, server: _Server, now: float, jitter: float) -> None:
        server.failures += 1
        decision = decide(self._restart.retry, server.failures, now, None, jitter)
        if isinstance(decision, RetryAt):
            server.retry_at, server.gave_up = decision.at, False
        else:
            server.retry_at, server.gave_up = now + self._restart.cooldown, True

    def _refusal(self, name: str, server: _Server, now: float) -> str:
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

    def _check_list(self, name: str, kind: ListKind) -> None:
        self._get(name)
        if kind is ListKind.RESOURCE_READ:
            raise LocalProtocolError("a resource read is no list: store it with store_read()")

    def _know(self, name: str, kind: ListKind, items: Sequence[object]) -> None:
        """A listing of ``name`` names what the server offers now (cached or not)."""
        field, item_type = _KNOWN[kind]
        setattr(self._servers[name], field, [item for item in items if isinstance(item, item_type)])
        self._names = self._prompt_names = None  # rebuilt when next asked for

    def _bump(self, name: str, kind: ListKind) -> None:
        self._generations[name, kind] = self._generations.get((name, kind), 0) + 1

    def _invalidate_server(self, name: str, *, keep_public: bool = False) -> None:
        for cache in (self._cache, self._reads):
            if keep_public:
                cache.invalidate_context(name)
            else:
                cache.invalidate_server(name)
        for kind in ListKind:
            self._bump(name, kind)

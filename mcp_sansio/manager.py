"""The decisions of a host that runs many MCP servers at once, for the drivers' ``ServerManager``.

:class:`ServerManagerCore` answers what a driver asks. Each server's life (which attempts
may start, what a use must do, what an outcome or a lost connection leads to) is its
:class:`~mcp_sansio.manager_lifecycle.ServerTable`'s; this module holds what the servers
offer and the host's decisions by it. State held: what each server listed last (tools,
prompts, resources, templates), the list cache and the cache of resource reads with the
generation counters that make a listing overtaken by a change notification stale, the
model-facing tool and prompt names built from the listings, and the warnings not yet
given. It decides which timeouts apply, whether a ``tools/call`` that failed with JSON-RPC
error -32042 (URL elicitation required, MCP 2025-11-25 "Elicitation") is retried, and what
the model gets for a result (:mod:`mcp_sansio.result_policy`). The driver opens and closes
connections, reads the clock and the entropy, and writes result files.
"""

from __future__ import annotations

import math
import re
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
from mcp_sansio.hostconfig import ExpansionWarning, ServerEntry
from mcp_sansio.listcache import ListKind
from mcp_sansio.manager_lifecycle import (
    ConnectionState,
    ConnectPlan,
    Failure,
    RestartPolicy,
    ServerStatus,
    ServerTable,
    ServerUnavailable,
    UseDecision,
)
from mcp_sansio.manager_lists import ServerLists
from mcp_sansio.naming import ToolNamer, ToolNames, UnknownPromptName, UnknownToolName, servers_for
from mcp_sansio.result_policy import KeptResult, ResultDecision, ResultPolicy, apply_result_policy
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
    "URL_ELICITATION_REQUIRED",
    "ManagerConfig",
    "NamedPrompt",
    "NamedTool",
    "PromptRoute",
    "ServerManagerCore",
    "ServerResource",
    "ServerResourceTemplate",
    "ToolRoute",
    "elicitations_accepted",
    "failure_from",
    "is_connection_loss",
    "timeout_from_env",
]

URL_ELICITATION_REQUIRED: Final = -32042
"""JSON-RPC error code of a request that needs URL-mode elicitations first (2025-11-25)."""
ALL_TRANSPORTS: Final = frozenset({"stdio", "http", "sse", "ws"})
DEFAULT_CONNECT_TIMEOUT: Final = 30.0
DEFAULT_TOOL_TIMEOUT: Final = 60.0
_MILLISECONDS: Final = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,6})?")
_MAX_MESSAGE: Final = 300


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


_S = ConnectionState




def _check_timeout(timeout: float) -> None:
    if not (math.isfinite(timeout) and timeout > 0):
        raise LocalProtocolError(f"a timeout must be a positive number of seconds, not {timeout}")


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
        self._table = ServerTable(entries, env=env, transports=transports, restart=config.restart,
                                  max_local=config.max_local, max_remote=config.max_remote,
                                  connect_timeout=self._connect_timeout)
        self.warnings: list[ExpansionWarning] = self._table.warnings
        """What ``${VAR}`` expansion could not fill, for the host to show."""
        self._servers = self._table.servers  # read here; moved by the table
        self._lists = ServerLists(self._servers, max_entries_per_server=config.list_cache_entries,
                                  max_relists=config.max_relists)
        self._listed = self._lists.listed  # read here; filled by the listings
        self._names: tuple[int, ToolNames] | None = None  # (ServerLists.known when built, names)
        self._prompt_names: tuple[int, ToolNames] | None = None

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
        return self._table.connected_names()

    def attempting(self, name: str) -> bool:
        """Whether an attempt for ``name`` is queued or under way.

        Raises:
            UnknownServer: no such server.
        """
        return self._table.attempting(name)

    def status(self, name: str, now: float) -> ServerStatus:
        """One server's status; ``attempts`` reads 0 once a connection has been stable.

        Raises:
            UnknownServer: no such server.
        """
        listed = self._listed.get(name)
        tools = None if listed is None else listed.tools
        return self._table.status(name, now, tool_count=None if tools is None else len(tools))

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
        return self._table.use(name, now)

    def queue_all(self) -> list[str]:
        """Queue every server not tried yet (``connect_all``).

        Returns:
            The servers whose attempts (new or already under way) to wait for.
        """
        return self._table.queue_all()

    def start_due(self) -> list[ConnectPlan]:
        """Take queued servers, in order, while start-up slots of their kind are free.

        Returns:
            The attempts to begin now; each server is ``connecting`` until its outcome.
        """
        return self._table.start_due()

    def connected(self, name: str, now: float) -> None:
        """The attempt for ``name`` succeeded.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: no attempt was under way.
        """
        self._table.connected(name, now)

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
        self._table.connect_failed(name, failure, now, jitter)

    def connection_lost(self, name: str, failure: Failure, now: float, jitter: float) -> None:
        """The connection of ``name`` ended: forget its lists (all but those the server
        marked ``public`` with a TTL still running) and schedule a restart.

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: it was not connected, or ``jitter`` is outside [0, 1).
        """
        self._table.lose(name, failure, now)
        self._lists.invalidate_server(name, keep_public=True)
        self._table.schedule_retry(name, now, jitter)

    def close(self) -> None:
        """The host closed every connection: nothing is queued, connected or cached."""
        self._table.close()
        for name in self._servers:
            self._lists.invalidate_server(name)

    # ----------------------------------------------------------------- lists

    def begin_list(self, name: str, kind: ListKind) -> int:
        """Note that a listing starts; pass the token to :meth:`store`."""
        return self._lists.begin_list(name, kind)

    def cached(self, name: str, kind: ListKind, now: float) -> list[object] | None:
        """The cached list of ``kind`` for ``name``, if any."""
        return self._lists.cached(name, kind, now)

    def store(self, name: str, kind: ListKind, items: Sequence[object], token: int, now: float, *,
              ttl_ms: int | None = None, cache_scope: str | None = None) -> None:
        """Cache a listing, unless it is stale (see :meth:`ServerLists.store`).

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: ``kind`` is ``RESOURCE_READ`` (see :meth:`store_read`).
        """
        self._lists.store(name, kind, items, token, now, ttl_ms=ttl_ms, cache_scope=cache_scope)

    def store_result(self, name: str, kind: ListKind, result: msgspec.Struct | None, token: int,
                     now: float) -> list[object] | None:
        """:meth:`store` a whole list result and return its items, or ``None`` when a
        ``list_changed`` notification overtook it (see :meth:`ServerLists.store_result`).

        Raises:
            UnknownServer: no such server.
            LocalProtocolError: ``kind`` is ``RESOURCE_READ``.
        """
        return self._lists.store_result(name, kind, result, token, now)

    def next_warning(self) -> str | None:
        """The next thing the host should log at WARNING (a server that listed a name
        twice), or ``None``; each is given once."""
        return self._lists.next_warning()

    def cached_read(self, name: str, uri: str, now: float) -> ReadResourceResult | None:
        """The cached ``resources/read`` of ``uri`` on ``name``, if still fresh."""
        return self._lists.cached_read(name, uri, now)

    def store_read(self, name: str, uri: str, result: ReadResourceResult, token: int, now: float) -> None:
        """Cache a ``resources/read`` for as long as its ``ttlMs`` says (see
        :meth:`ServerLists.store_read`)."""
        self._lists.store_read(name, uri, result, token, now)

    def notification_received(self, name: str, method: str) -> None:
        """Drop the lists a ``notifications/*/list_changed`` from ``name`` makes stale, and
        its reads on ``notifications/resources/updated``."""
        self._lists.notification_received(name, method)

    # ----------------------------------------------------------------- tools

    def tool_names(self) -> ToolNames:
        """Model-facing names of every known tool, of connected servers and of servers
        that failed since they listed theirs (so their names survive a restart)."""
        if self._names is None or self._names[0] != self._lists.known:
            self._names = self._lists.known, ToolNamer.build({
                name: [tool.name for tool in listed.tools]
                for name, listed in self._listed.items()
                if listed.tools is not None and self._servers[name].state is not _S.DISABLED
            })
        return self._names[1]

    def named_tools(self) -> list[NamedTool]:
        """Every tool of every connected server, under its model-facing name."""
        names = self.tool_names()
        return [
            NamedTool(name=names.model_name(name, tool.name), server=name, tool=tool)
            for name, listed in self._listed.items()
            if self._servers[name].state is _S.CONNECTED and listed.tools is not None
            for tool in listed.tools
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
        if self._prompt_names is None or self._prompt_names[0] != self._lists.known:
            self._prompt_names = self._lists.known, ToolNamer.build({
                name: [prompt.name for prompt in listed.prompts]
                for name, listed in self._listed.items()
                if listed.prompts is not None and self._servers[name].state is not _S.DISABLED
            }, kind="prompt")
        return self._prompt_names[1]

    def named_prompts(self) -> list[NamedPrompt]:
        """Every prompt of every connected server, under its model-facing name."""
        names = self.prompt_names()
        return [
            NamedPrompt(name=names.model_name(name, prompt.name), server=name, prompt=prompt)
            for name, listed in self._listed.items()
            if self._servers[name].state is _S.CONNECTED and listed.prompts is not None
            for prompt in listed.prompts
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
        for name, listed in self._listed.items():
            if self._servers[name].state is _S.CONNECTED:
                found += [ServerResource(server=name, resource=it) for it in listed.resources or ()]
                found += [ServerResourceTemplate(server=name, template=it) for it in listed.templates or ()]
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
        server = self._table.get(name)
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
        self._table.get(route.server)
        tools = self._listed[route.server].tools or []
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

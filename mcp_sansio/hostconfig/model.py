"""Typed shapes of a host's MCP server configuration: servers, scopes, entries, errors.

Everything here is plain data. :mod:`.parse` builds it from JSON text, :mod:`.merge`
combines documents from several scopes, and :mod:`.expand` substitutes variables.
"""

from __future__ import annotations

import enum

import msgspec

from mcp_sansio.errors import McpSansioError

__all__ = [
    "ConfigError",
    "HttpServerConfig",
    "Scope",
    "ScopeDocument",
    "ServerConfig",
    "ServerEntry",
    "ServerState",
    "StdioServerConfig",
    "Transport",
]


class ConfigError(McpSansioError):
    """A configuration file is not valid JSON, or one of its entries is malformed.

    Attributes:
        file: the path (or other source name) of the file at fault.
        server: the server entry at fault, or ``None`` for a file-level problem.
        field: the field at fault inside the entry (``args[2]``, ``headers.X``), or ``None``.
        line: 1-based line of a JSON syntax error, else ``None``.
        column: 1-based column of a JSON syntax error, else ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str,
        server: str | None = None,
        field: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        where = file if line is None else f"{file}:{line}:{column}"
        if server is not None:
            where += f": server {server!r}"
        if field is not None:
            where += f": field {field!r}"
        super().__init__(f"{where}: {message}")
        self.file = file
        self.server = server
        self.field = field
        self.line = line
        self.column = column


class Transport(enum.Enum):
    """How a remote server is reached; local servers are :class:`StdioServerConfig`."""

    HTTP = "http"
    """Streamable HTTP (``"streamable-http"`` and ``"streamableHttp"`` are aliases)."""
    SSE = "sse"
    """The deprecated HTTP+SSE transport of protocol revision 2024-11-05."""
    WS = "ws"
    """WebSocket."""


class StdioServerConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A server the host starts as a subprocess and talks to over stdin/stdout.

    Attributes:
        command: the program to run, looked up on ``PATH`` by the driver.
        args: its arguments.
        env: variables added to the host's environment for the child.
        cwd: the child's working directory, or ``None`` for the host's.
        timeout: per-request timeout in seconds, or ``None`` for the host default.
        shell_prefix: words run before the command (``"shellPrefix"``: a sandbox, or
            ``bun run``); the host puts ``MCP_SANSIO_SHELL_PREFIX`` before them.
    """

    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    timeout: float | None = None
    shell_prefix: tuple[str, ...] = ()

    def wrapped(self, outer: tuple[str, ...] = ()) -> StdioServerConfig:
        """The definition as started: ``outer``, then :attr:`shell_prefix`, then the
        command and its arguments (nothing to wrap: ``self``)."""
        prefix = (*outer, *self.shell_prefix)
        if not prefix:
            return self
        return msgspec.structs.replace(self, command=prefix[0], args=(*prefix[1:], self.command, *self.args),
                                       shell_prefix=())


class HttpServerConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A server the host reaches over the network.

    Attributes:
        url: the endpoint URL.
        transport: which remote transport to speak.
        headers: extra HTTP headers sent on every request (e.g. ``Authorization``).
        timeout: per-request timeout in seconds, or ``None`` for the host default.
    """

    url: str
    transport: Transport = Transport.HTTP
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    timeout: float | None = None


ServerConfig = StdioServerConfig | HttpServerConfig
"""One validated server definition."""


class Scope(enum.IntEnum):
    """Where a definition comes from; a higher scope wins for the same server name."""

    PLUGIN = 0
    """Bundled with a plugin or extension of the host."""
    USER = 1
    """The user's own file, for every project (``~/.config/mcp-sansio/mcp.json``)."""
    PROJECT = 2
    """Checked into the project (``.mcp.json``), shared with everyone working on it."""
    LOCAL = 3
    """Private to this user in this project (``.mcp.local.json``), never committed."""


class ScopeDocument(msgspec.Struct, frozen=True, kw_only=True):
    """What one file (or plugin) says about servers, before merging.

    Attributes:
        scope: the file's scope.
        source: the file path or another name for where this came from, for provenance.
        servers: full definitions by server name.
        disabled: names this document turns off, whoever defines them (an entry with
            ``"disabled": true``, or a ``disabledMcpServers`` list).
        enabled: names this document turns back on after a lower document disabled them
            (a bare ``{"disabled": false}`` entry, or an ``enabledMcpjsonServers`` list).
    """

    scope: Scope
    source: str
    servers: dict[str, ServerConfig] = msgspec.field(default_factory=dict)
    disabled: frozenset[str] = frozenset()
    enabled: frozenset[str] = frozenset()


class ServerState(enum.Enum):
    """Whether the host should connect to a merged server."""

    ENABLED = "enabled"
    DISABLED = "disabled"


class ServerEntry(msgspec.Struct, frozen=True, kw_only=True):
    """The winning definition of one server name, with where it came from.

    Attributes:
        name: the server name (the key under ``mcpServers``).
        config: the definition from the highest-scope document that defines the name.
        scope: that document's scope.
        source: that document's source.
        state: ``DISABLED`` if the highest document mentioning the name turned it off.
        state_source: the source of the document that decided ``state``.
    """

    name: str
    config: ServerConfig
    scope: Scope
    source: str
    state: ServerState
    state_source: str

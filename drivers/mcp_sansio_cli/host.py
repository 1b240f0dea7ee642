"""``servers``, ``tools``, ``prompts`` and ``resources`` of the configured servers, and what
``call``, ``prompt`` and ``inspect SERVER`` do with them.

The servers come from the configuration files that apply to the working directory
(``.mcp.json`` up to the root, ``.mcp.local.json``, ``~/.config/mcp-sansio/mcp.json``; see
:mod:`mcp_sansio.hostconfig.discovery`), below them Claude Code's ``~/.claude.json`` and
Claude Desktop's ``claude_desktop_config.json`` when present, and above them every
``--config FILE``. The asyncio :class:`~mcp_sansio_asyncio.manager.ServerManager` runs
them; progress and errors go to stderr, results to stdout. A listing exits with status 1
when a server it covers failed (or needs authorization), after showing what it could.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Final

from mcp_sansio.errors import McpSansioError
from mcp_sansio.events import NotificationReceived
from mcp_sansio.hostconfig import ConfigError, ServerEntry, load_config_files, merge_scopes, read_config_file
from mcp_sansio.hostconfig.model import ScopeDocument
from mcp_sansio.manager import NamedPrompt, NamedTool, ServerResource, ServerResourceTemplate
from mcp_sansio.manager_lifecycle import ConnectionState, ServerStatus, ServerUnavailable
from mcp_sansio.naming import UnknownName, servers_for
from mcp_sansio.types import CallToolResult, GetPromptResult
from mcp_sansio_asyncio import AsyncClient
from mcp_sansio_asyncio.manager import ServerManager, ServerNotificationHandler

from .args import EXIT_FAILURE, CliError, UsageError, config_options, output_options
from .output import Activity, print_json, report_error, table

__all__ = ["add_parsers", "call_tool", "connect_one", "get_prompt", "load_entries", "run"]

_POLL: Final = 0.05
_STDERR_CHARS: Final = 2000
_STDERR_LINES: Final = 5
_ENDED: Final = frozenset({ConnectionState.CONNECTED, ConnectionState.FAILED, ConnectionState.NEEDS_AUTH})
_BAD: Final = frozenset({ConnectionState.FAILED, ConnectionState.NEEDS_AUTH})
_LISTINGS: Final = {
    "servers": "the configured servers: scope, file, state, tools",
    "tools": "every tool of the configured servers, as a model sees it: mcp__<server>__<tool>",
    "prompts": "every prompt of the configured servers, named like the tools",
    "resources": "every resource and resource template of the configured servers",
}


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``servers``, ``tools``, ``prompts`` and ``resources`` to ``sub``."""
    for name, text in _LISTINGS.items():
        parents = [output_options(), config_options()]
        parser = sub.add_parser(name, parents=parents, help=text, description=text)
        parser.add_argument("names", nargs="*", metavar="SERVER", help="only these servers")


def run(args: argparse.Namespace) -> int:
    """Run a listing; return the exit status (1 if a server it covers failed).

    Raises:
        CliError: the configuration cannot be read, or names a server that does not exist.
    """
    return asyncio.run(_listing(args))


async def _listing(args: argparse.Namespace) -> int:
    names: list[str] = args.names
    async with _configured(args, names) as manager:
        await _connect(manager, names)
        tools = await manager.tools()  # the servers table counts them too
        if args.command == "tools":
            _print_tools([tool for tool in tools if _chosen(tool.server, names)], args.json)
        elif args.command == "prompts":
            _print_prompts([item for item in await manager.prompts() if _chosen(item.server, names)],
                           args.json)
        elif args.command == "resources":
            _print_resources([item for item in await manager.resources() if _chosen(item.server, names)],
                             args.json)
        statuses = [status for name, status in manager.states.items() if _chosen(name, names)]
        if args.command == "servers":
            _print_servers(statuses, args.json)
    failed = [status for status in statuses if status.state in _BAD]
    for status in failed:
        report_error(f"server {status.name!r} {status.state.value}: {status.error}", _stderr_lines(status))
    return EXIT_FAILURE if failed else 0


def _chosen(name: str, names: Sequence[str]) -> bool:
    return not names or name in names


@contextlib.asynccontextmanager
async def _configured(
    args: argparse.Namespace, names: Sequence[str] = (), *,
    on_notification: ServerNotificationHandler | None = None,
) -> AsyncIterator[ServerManager]:
    """The manager of the configured servers (none started), warnings shown.

    Raises:
        UsageError: a ``--config`` file does not exist.
        CliError: the configuration cannot be read, or one of ``names`` is not in it.
    """
    configs = [Path(path) for path in args.config]
    missing = [path for path in configs if not path.is_file()]
    if missing:  # the command line names it: nothing can start (status 2)
        raise UsageError(f"--config {missing[0]}: no such file")
    entries, warnings = load_entries(configs, Path.cwd(), Path.home(), os.environ)
    for warning in warnings:
        sys.stderr.write(f"mcp-sansio: warning: {warning}\n")
    known = {entry.name for entry in entries}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise CliError(f"no server is named {unknown[0]!r} in the configuration")
    if not entries:
        sys.stderr.write(f"mcp-sansio: no MCP servers are configured for {Path.cwd()} "
                         f"(add them to .mcp.json, or give --config FILE)\n")
    async with ServerManager(entries, on_notification=on_notification) as manager:
        for expansion in manager.warnings:
            sys.stderr.write(f"mcp-sansio: warning: {expansion.message}\n")
        yield manager


def load_entries(configs: Sequence[Path], cwd: Path, home: Path,
                 env: Mapping[str, str]) -> tuple[list[ServerEntry], list[str]]:
    """The merged server entries for ``cwd`` (module docstring), and the warnings about
    the files (not about Claude's own, which need not define servers).

    Raises:
        CliError: a file cannot be read, is malformed, or a ``--config`` file is missing.
    """
    documents: list[ScopeDocument] = []
    warnings: list[str] = []
    try:
        for path in _other_hosts(home, env):
            text = _read(path)
            if text is not None:
                documents += read_config_file(str(path), text, project=cwd).documents
        for file in load_config_files(_read, cwd, home, env, configs=configs):
            documents += file.documents
            warnings += file.warnings
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    return list(merge_scopes(documents).entries.values()), warnings


def _other_hosts(home: Path, env: Mapping[str, str]) -> list[Path]:
    """Claude Desktop's and Claude Code's files, lowest precedence first."""
    config_home = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    if not config_home.is_absolute():
        config_home = home / ".config"
    return [config_home / "Claude" / "claude_desktop_config.json", home / ".claude.json"]


def _read(path: PurePath) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {path}: {exc}") from exc


async def _connect(manager: ServerManager, names: Sequence[str]) -> None:
    """Connect (``names``, or every server), telling stderr how each attempt ends."""
    async def connect_one(name: str) -> None:
        with contextlib.suppress(ServerUnavailable):  # the state says why
            await manager.connect(name)

    async def connect_named() -> None:
        await asyncio.gather(*map(connect_one, names))

    task = asyncio.ensure_future(connect_named() if names else manager.connect_all())
    targets = names or [name for name, status in manager.states.items()
                        if status.state is not ConnectionState.DISABLED]
    reported: list[str] = []
    while True:
        finished = task.done()
        states = manager.states
        for name in targets:
            if states[name].state in _ENDED and name not in reported:
                reported.append(name)
                sys.stderr.write(f"[{len(reported)}/{len(targets)}] {_progress(states[name])}\n")
        if finished:
            break
        await asyncio.wait({task}, timeout=_POLL)
    task.result()


def _progress(status: ServerStatus) -> str:
    return f"{status.name} ({status.transport}) {status.state.value}"


def _stderr_lines(status: ServerStatus) -> tuple[str, ...]:
    lines = status.stderr_tail[-_STDERR_CHARS:].strip().splitlines()[-_STDERR_LINES:]
    return tuple(f"stderr: {line}" for line in lines)


# ------------------------------------------------- call, prompt, inspect NAME


async def call_tool(args: argparse.Namespace, arguments: Mapping[str, object],
                    activity: Activity) -> CallToolResult:
    """Call ``args.tool`` by its model-facing name, starting only the server it routes to;
    ``activity`` shows its progress and the server's log messages.

    Raises:
        CliError: no tool has that name, or its server failed (saying why).
        McpSansioError: the call failed.
    """
    async def on_notification(server: str, event: NotificationReceived) -> None:
        if event.method == "notifications/message":
            activity.log(event.params, server)

    async with _configured(args, on_notification=on_notification) as manager:
        _need_servers(manager, "call a tool of one server")
        for name in servers_for(args.tool, list(manager.states)):  # ask them for log messages
            with contextlib.suppress(McpSansioError):  # the call says better what went wrong
                client = await manager.connect(name)
                if client.server_capabilities.logging is not None:
                    await client.set_logging_level(activity.log_level, timeout=args.timeout)
        try:
            return await manager.call_tool(args.tool, arguments, timeout=args.timeout,
                                           on_progress=activity.progress)
        except UnknownName as exc:
            raise CliError(f"{exc}; `mcp-sansio tools` lists the tools") from exc
        except ServerUnavailable as exc:
            raise CliError(str(exc), details=_stderr_lines(manager.states[exc.server])) from exc


async def get_prompt(args: argparse.Namespace, arguments: Mapping[str, str]) -> GetPromptResult:
    """Get ``args.prompt`` by its model-facing name, starting only the server it routes to.

    Raises:
        CliError: no prompt has that name, or its server failed (saying why).
        McpSansioError: the request failed.
    """
    async with _configured(args) as manager:
        _need_servers(manager, "get a prompt of one server")
        try:
            return await manager.get_prompt(args.prompt, arguments, timeout=args.timeout)
        except UnknownName as exc:
            raise CliError(f"{exc}; `mcp-sansio prompts` lists the prompts") from exc
        except ServerUnavailable as exc:
            raise CliError(str(exc), details=_stderr_lines(manager.states[exc.server])) from exc


@contextlib.asynccontextmanager
async def connect_one(args: argparse.Namespace, name: str) -> AsyncIterator[AsyncClient]:
    """The client of the configured server ``name``, connected.

    Raises:
        CliError: no server has that name, or it failed (saying why).
    """
    async with _configured(args, [name]) as manager:
        try:
            client = await manager.connect(name)
        except ServerUnavailable as exc:
            raise CliError(str(exc), details=_stderr_lines(manager.states[exc.server])) from exc
        yield client


def _need_servers(manager: ServerManager, what: str) -> None:
    if not manager.states:
        raise UsageError(f"no MCP servers are configured for {Path.cwd()}: add them to .mcp.json or "
                         f"give --config FILE; to {what}, give --stdio CMD or --url URL")


# ------------------------------------------------------------------ printing


def _print_servers(statuses: Sequence[ServerStatus], as_json: bool) -> None:
    rows = [{
        "name": status.name, "scope": status.scope.name.lower(), "source": status.source,
        "transport": status.transport, "shell_prefix": status.shell_prefix, "state": status.state.value,
        "tools": status.tool_count or 0, "error": status.error,
        "stderr_tail": status.stderr_tail[-_STDERR_CHARS:],
    } for status in statuses]
    if as_json:
        print_json(rows)
        return
    keys = ("name", "scope", "state", "tools", "transport", "source")
    table("Servers", ["name", "scope", "state", "tools", "transport", "file"],
          [[str(row[key]) for key in keys] for row in rows])
    for status in statuses:
        if status.shell_prefix:
            sys.stdout.write(f"{status.name} starts behind: {status.shell_prefix}\n")


def _print_tools(tools: Sequence[NamedTool], as_json: bool) -> None:
    rows = [{"name": tool.name, "server": tool.server, "tool": tool.tool.name,
             "description": tool.tool.description or ""} for tool in tools]
    if as_json:
        print_json(rows)
        return
    table("Tools", ["name", "description"], [[row["name"], row["description"]] for row in rows])


def _print_prompts(prompts: Sequence[NamedPrompt], as_json: bool) -> None:
    rows = [{"name": item.name, "server": item.server, "prompt": item.prompt.name,
             "arguments": [argument.name for argument in item.prompt.arguments or ()],
             "description": item.prompt.description or ""} for item in prompts]
    if as_json:
        print_json(rows)
        return
    table("Prompts", ["name", "description"],
          [[str(row["name"]), _described(str(row["description"]), row["arguments"])] for row in rows])


def _described(description: str, arguments: object) -> str:
    if not isinstance(arguments, list) or not arguments:
        return description
    return f"{description} (arguments: {', '.join(map(str, arguments))})".lstrip()


def _print_resources(found: Sequence[ServerResource | ServerResourceTemplate], as_json: bool) -> None:
    rows: list[dict[str, str]] = []
    for item in found:
        if isinstance(item, ServerResource):
            rows.append({"server": item.server, "kind": "resource", "uri": item.resource.uri,
                         "name": item.resource.name, "mime_type": item.resource.mime_type or ""})
        else:
            rows.append({"server": item.server, "kind": "template", "uri": item.template.uri_template,
                         "name": item.template.name, "mime_type": item.template.mime_type or ""})
    if as_json:
        print_json(rows)
        return
    table("Resources", ["server", "kind", "uri", "name"],
          [[row["server"], row["kind"], row["uri"], row["name"]] for row in rows])

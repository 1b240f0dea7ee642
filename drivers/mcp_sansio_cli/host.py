"""``mcp-sansio servers``, ``tools`` and ``call mcp__<server>__<tool>``: the configured servers.

The servers come from the configuration files that apply to the working directory
(``.mcp.json`` up to the root, ``.mcp.local.json``, ``~/.config/mcp-sansio/mcp.json``; see
:mod:`mcp_sansio.hostconfig.discovery`), below them Claude Code's ``~/.claude.json`` and
Claude Desktop's ``claude_desktop_config.json`` when present, and above them every
``--config FILE``. The asyncio :class:`~mcp_sansio_asyncio.manager.ServerManager` runs
them; progress goes to stderr, results to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath
from typing import Final

import msgspec

from mcp_sansio.hostconfig import (
    ConfigError,
    ServerEntry,
    load_documents,
    merge_scopes,
    read_config_file,
)
from mcp_sansio.hostconfig.model import ScopeDocument
from mcp_sansio.manager import ConnectionState, NamedTool, ServerStatus, ServerUnavailable
from mcp_sansio.naming import UnknownToolName
from mcp_sansio_asyncio.manager import ServerManager

from .main import CliError, parse_arguments, print_result

__all__ = ["add_commands", "run", "uses_config"]

COMMANDS: Final = ("servers", "tools")
_EXIT_FAILURE: Final = 1
_POLL: Final = 0.05
_STDERR_CHARS: Final = 2000
_ENDED: Final = frozenset({ConnectionState.CONNECTED, ConnectionState.FAILED, ConnectionState.NEEDS_AUTH})


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                 common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``servers`` and ``tools`` to ``sub``; return the parent parser of ``--config``."""
    config = argparse.ArgumentParser(add_help=False)
    config.add_argument("--config", metavar="FILE", action="append", default=[],
                        help="also read this configuration file (any known format); repeatable")
    for name, text in (("servers", "the configured servers: scope, file, state, tools"),
                       ("tools", "every tool of the configured servers, as the model sees it")):
        parser = sub.add_parser(name, parents=[common, config], help=text)
        parser.add_argument("names", nargs="*", metavar="SERVER", help="only these servers")
    return config


def uses_config(args: argparse.Namespace) -> bool:
    """Whether the command runs the configured servers rather than ``--stdio``/``--url``."""
    if args.command in COMMANDS:
        return True
    return args.command == "call" and (
        args.tool.startswith("mcp__") or (args.stdio is None and args.url is None))


async def run(args: argparse.Namespace) -> int:
    """Run ``servers``, ``tools`` or ``call`` on the configured servers; return the exit status.

    Raises:
        CliError: the configuration cannot be read, or a named server or tool failed.
        McpSansioError: the tool call failed.
    """
    entries = load_entries([Path(path) for path in args.config], Path.cwd(), Path.home(), os.environ)
    names: list[str] = getattr(args, "names", [])
    known = {entry.name for entry in entries}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise CliError(f"no server is named {unknown[0]!r} in the configuration")
    if not entries:
        sys.stderr.write(f"mcp-sansio: no MCP servers are configured for {Path.cwd()}\n")
    async with ServerManager(entries) as manager:
        for warning in manager.warnings:
            sys.stderr.write(f"mcp-sansio: warning: {warning.message}\n")
        await _connect(manager, names)
        if args.command == "call":
            return await _call(manager, args)
        tools = await manager.tools()
        states = {name: status for name, status in manager.states.items() if not names or name in names}
        if args.command == "servers":
            _print_servers(list(states.values()), args.json)
        else:
            _print_tools([tool for tool in tools if tool.server in states], args.json)
    failed = [status for status in states.values() if names and status.state is not ConnectionState.CONNECTED]
    if failed:
        raise CliError(f"server {failed[0].name!r} {failed[0].state.value}: {failed[0].error}")
    return 0


def load_entries(configs: Sequence[Path], cwd: Path, home: Path, env: Mapping[str, str]) -> list[ServerEntry]:
    """The merged server entries for ``cwd`` (module docstring), sorted by name.

    Raises:
        CliError: a file cannot be read, is malformed, or a ``--config`` file is missing.
    """
    documents: list[ScopeDocument] = []
    try:
        for path in _other_hosts(home, env):
            text = _read(path)
            if text is not None:
                documents += read_config_file(str(path), text, project=cwd).documents
        documents += load_documents(_read, cwd, home, env, configs=configs)
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    return list(merge_scopes(documents).entries.values())


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
    why = "" if status.error is None else f": {status.error}"
    return f"{status.name} ({status.transport}) {status.state.value}{why}"


async def _call(manager: ServerManager, args: argparse.Namespace) -> int:
    arguments = parse_arguments(args.args)
    try:
        result = await manager.call_tool(args.tool, arguments, timeout=args.timeout)
    except UnknownToolName as exc:
        raise CliError(f"{exc}; `mcp-sansio tools` lists the tools") from exc
    print_result(result, args.json)
    return _EXIT_FAILURE if result.is_error else 0


def _print_servers(statuses: Sequence[ServerStatus], as_json: bool) -> None:
    rows = [{
        "name": status.name, "scope": status.scope.name.lower(), "source": status.source,
        "transport": status.transport, "state": status.state.value, "tools": status.tool_count or 0,
        "error": status.error, "stderr_tail": status.stderr_tail[-_STDERR_CHARS:],
    } for status in statuses]
    if as_json:
        sys.stdout.write(msgspec.json.encode(rows).decode() + "\n")
        return
    keys = ("name", "scope", "state", "tools", "transport", "source", "error")
    _table("Servers", ["name", "scope", "state", "tools", "transport", "file", "error"],
           [["" if row[key] is None else str(row[key]) for key in keys] for row in rows])


def _print_tools(tools: Sequence[NamedTool], as_json: bool) -> None:
    rows = [{"name": tool.name, "server": tool.server, "tool": tool.tool.name,
             "description": tool.tool.description or ""} for tool in tools]
    if as_json:
        sys.stdout.write(msgspec.json.encode(rows).decode() + "\n")
        return
    _table("Tools", ["name", "server", "description"],
           [[row["name"], row["server"], row["description"]] for row in rows])


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{title} ({len(rows)})", title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    Console().print(table)

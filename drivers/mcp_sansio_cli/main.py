"""The ``mcp-sansio`` command line: a demo, ``inspect`` and ``call``, on the asyncio driver.

With no arguments it starts the bundled demo server and shows what a new user wants to
see. ``servers``, ``tools`` and ``call mcp__<server>__<tool>`` run the configured servers
(:mod:`mcp_sansio_cli.host`). Every failure is one line on stderr and a non-zero exit
status, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from collections.abc import Sequence
from typing import Final

import msgspec

from mcp_sansio import ClientConfig, McpSansioError
from mcp_sansio.types import CallToolResult, ContentBlock, ImageContent, TextContent
from mcp_sansio_asyncio import AsyncClient, connect_stdio

__all__ = ["CliError", "main", "parse_arguments", "print_result"]

_EXIT_FAILURE: Final = 1
_EXIT_USAGE: Final = 2
_EXIT_INTERRUPTED: Final = 130
_DEFAULT_TIMEOUT: Final = 60.0


class CliError(Exception):
    """A failure to report as one line (the message) with exit status 1."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-sansio",
        description="Talk to MCP servers. With no command, run the bundled demo server.",
    )
    from . import auth_cmd, host

    sub = parser.add_subparsers(dest="command")
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument("--json", action="store_true", help="machine-readable output")
    common = argparse.ArgumentParser(add_help=False, parents=[output])
    common.add_argument("--timeout", type=float, help="seconds per request (default 60)")
    common.add_argument("--stdio", metavar="CMD", help='server command line, e.g. "python server.py"')
    common.add_argument("--url", help="server URL (Streamable HTTP, falling back to HTTP+SSE)")
    sub.add_parser("demo", parents=[common], help="run the bundled demo server (the default)")
    sub.add_parser("inspect", parents=[common], help="server info, tools, resources and prompts")
    config = host.add_commands(sub, output)
    auth_cmd.add_commands(sub, output)
    call = sub.add_parser("call", parents=[common, config], help=(
        "call one tool: mcp__<server>__<tool> of the configured servers, or a tool of --stdio/--url"))
    call.add_argument("tool", help="the tool's name")
    call.add_argument("--args", default="{}", help="the arguments as a JSON object")
    parser.set_defaults(command="demo", stdio=None, url=None, json=False, timeout=None)
    return parser


def _server_command(spec: str | None) -> tuple[str, list[str]]:
    if spec is None:
        return sys.executable, ["-m", "mcp_sansio_cli.demo_server"]
    try:
        argv = shlex.split(spec)
    except ValueError as exc:
        raise CliError(f"cannot parse --stdio: {exc}") from exc
    if not argv:
        raise CliError("--stdio needs a command")
    return argv[0], argv[1:]


def _config(timeout: float) -> ClientConfig:
    return ClientConfig(request_timeout=timeout, initialize_timeout=min(timeout, 30.0))


def _to_builtins(value: object) -> object:
    return msgspec.to_builtins(value)


def _content_text(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return f"[image {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
    return f"[{type(block).__name__}]"


async def _inspect(client: AsyncClient, as_json: bool) -> None:
    caps = client.server_capabilities
    tools = await client.list_tools() if caps.tools is not None else []
    resources = await client.list_resources() if caps.resources is not None else []
    prompts = await client.list_prompts() if caps.prompts is not None else []
    if as_json:
        sys.stdout.write(msgspec.json.encode({
            "server_info": client.server_info, "protocol_version": client.protocol_version,
            "capabilities": caps, "instructions": client.instructions,
            "tools": tools, "resources": resources, "prompts": prompts,
        }).decode() + "\n")
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    info = client.server_info
    console.print(f"[bold]{info.title or info.name}[/bold] {info.version}  "
                  f"(protocol {client.protocol_version})")
    for title, rows, columns in (
        ("Tools", [(t.name, t.description or "") for t in tools], ("name", "description")),
        ("Resources", [(r.uri, r.name) for r in resources], ("uri", "name")),
        ("Prompts", [(p.name, p.description or "") for p in prompts], ("name", "description")),
    ):
        table = Table(title=f"{title} ({len(rows)})", title_justify="left")
        for column in columns:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
        console.print(table)


def parse_arguments(raw_args: str) -> dict[str, object]:
    """The ``--args`` JSON object.

    Raises:
        CliError: it is not JSON, or not an object.
    """
    try:
        arguments = msgspec.json.decode(raw_args)
    except msgspec.DecodeError as exc:
        raise CliError(f"--args is not JSON: {exc}") from exc
    if not isinstance(arguments, dict):
        raise CliError("--args must be a JSON object")
    return arguments


async def _call(client: AsyncClient, tool: str, raw_args: str, as_json: bool, timeout: float) -> int:
    result = await client.call_tool(tool, parse_arguments(raw_args), timeout=timeout)
    print_result(result, as_json)
    return _EXIT_FAILURE if result.is_error else 0


def print_result(result: CallToolResult, as_json: bool) -> None:
    """Write a tool result to stdout: its wire shape, or its content as text."""
    if as_json:
        sys.stdout.write(msgspec.json.encode(result).decode() + "\n")
        return
    for block in result.content:
        sys.stdout.write(_content_text(block) + "\n")
    if result.structured_content is not None:
        sys.stdout.write(msgspec.json.encode(result.structured_content).decode() + "\n")


async def _demo(client: AsyncClient) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    console = Console()
    info = client.server_info
    console.print(f"Connected to [bold]{info.title or info.name}[/bold] {info.version} "
                  f"over stdio, protocol {client.protocol_version}")
    if client.instructions:
        console.print(f"[dim]{client.instructions}[/dim]")
    table = Table(title="Tools", title_justify="left")
    table.add_column("name")
    table.add_column("description")
    for tool in await client.list_tools():
        table.add_row(tool.name, tool.description or "")
    console.print(table)
    with Progress(TextColumn("long_task"), BarColumn(), TextColumn("{task.completed:.0f}/{task.total:.0f}"),
                  TextColumn("{task.description}"), TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("", total=20)

        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            bar.update(task, completed=progress, total=total, description=message or "")

        result = await client.call_tool("long_task", {"steps": 20, "interval": 0.1},
                                        on_progress=on_progress)
    console.print("Result: " + " ".join(_content_text(b) for b in result.content))


async def _run(args: argparse.Namespace) -> int:
    from . import auth_cmd, host

    if args.command == "auth":
        return await auth_cmd.run(args)
    if host.uses_config(args):
        return await host.run(args)
    timeout = args.timeout or _DEFAULT_TIMEOUT
    if args.url is not None:
        from mcp_sansio_asyncio.http import connect_http  # loads h11 and ssl: only when asked for

        async with connect_http(args.url, config=_config(timeout)) as remote:
            return await _session(remote, args, timeout)
    command, argv = _server_command(args.stdio)
    async with connect_stdio(command, argv, config=_config(timeout)) as client:
        return await _session(client, args, timeout)


async def _session(client: AsyncClient, args: argparse.Namespace, timeout: float) -> int:
    if args.command == "inspect":
        await _inspect(client, args.json)
        return 0
    if args.command == "call":
        return await _call(client, args.tool, args.args, args.json, timeout)
    await _demo(client)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mcp-sansio``; returns (and exits with) the status."""
    args = _parser().parse_args(argv)
    try:
        status = asyncio.run(_run(args))
    except KeyboardInterrupt:
        status = _EXIT_INTERRUPTED
    except (McpSansioError, CliError) as exc:
        sys.stderr.write(f"mcp-sansio: error: {_one_line(str(exc))}\n")
        status = _EXIT_FAILURE
    if argv is None:
        sys.exit(status)
    return status


def _one_line(text: str) -> str:
    return " ".join(text.split())[:500]

"""``demo``, ``inspect``, ``call`` and ``prompt``: one server, given by ``--stdio CMD`` or
``--url URL``, or a configured one (by ``SERVER`` name, or by a ``mcp__<server>__<name>``).

Everything that needs no server is checked first (``--args``, a missing target), so a bad
command line starts nothing and exits with status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Sequence
from typing import Final

from mcp_sansio import ClientConfig
from mcp_sansio.types import Tool
from mcp_sansio_asyncio import AsyncClient, connect_stdio

from . import host
from .args import (
    EXIT_FAILURE,
    UsageError,
    config_options,
    json_object,
    output_options,
    request_options,
    server_command,
    string_arguments,
    target_options,
)
from .output import block_text, print_json, print_prompt, print_result, table

__all__ = ["add_parsers", "run"]

_DEFAULT_TIMEOUT: Final = 60.0
_MODEL_PREFIX: Final = "mcp__"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``demo``, ``inspect``, ``call`` and ``prompt`` to ``sub``."""
    common = [output_options(), request_options()]
    sub.add_parser("demo", parents=common, help="run the bundled demo server (the default)")
    inspect = sub.add_parser("inspect", parents=[*common, target_options(), config_options()],
                             help="server info, tools, resources and prompts of one server")
    inspect.add_argument("name", nargs="?", metavar="SERVER", help="a configured server (or --stdio/--url)")
    call = sub.add_parser("call", parents=[*common, target_options(), config_options()], help=(
        "call one tool: mcp__<server>__<tool> of the configured servers, or a tool of --stdio/--url"))
    call.add_argument("tool", help="the tool's name")
    call.add_argument("--args", default="{}", help="the arguments as a JSON object")
    call.add_argument("--timing", action="store_true",
                      help="print where the time went (connect and handshake, the call, close) on stderr")
    prompt = sub.add_parser("prompt", parents=[*common, target_options(), config_options()], help=(
        "get one prompt: mcp__<server>__<prompt> of the configured servers, or a prompt of --stdio/--url"))
    prompt.add_argument("prompt", help="the prompt's name")
    prompt.add_argument("--args", default="{}", help="the arguments as a JSON object of strings")


def run(args: argparse.Namespace) -> int:
    """Run ``demo`` (also with no command), ``inspect``, ``call`` or ``prompt``.

    Raises:
        UsageError: the command line cannot work (checked before anything starts).
        CliError: a configured server is unknown or failed.
        McpSansioError: the server or the request failed.
    """
    command = args.command or "demo"
    direct = args.stdio is not None or args.url is not None
    if command == "inspect":
        _check_inspect(args, direct)
    elif command == "call":
        args.arguments = json_object(args.args)
        _check_name(args.tool, "tool", "call", direct)
    elif command == "prompt":
        args.arguments = string_arguments(json_object(args.args))
        _check_name(args.prompt, "prompt", "prompt", direct)
    if command != "demo" and not direct:
        return asyncio.run(_configured(command, args))
    return asyncio.run(_direct(command, args))


def _check_inspect(args: argparse.Namespace, direct: bool) -> None:
    if args.name is None and not direct:
        raise UsageError("inspect needs a server: the SERVER name of a configured one (`mcp-sansio servers` "
                         "lists them), --stdio CMD or --url URL; `mcp-sansio demo` shows the demo server")
    if args.name is not None and direct:
        raise UsageError("inspect takes a SERVER name or --stdio/--url, not both")


def _check_name(name: str, noun: str, command: str, direct: bool) -> None:
    if not direct and not name.startswith(_MODEL_PREFIX):
        raise UsageError(
            f"{command} {name}: say which server: --stdio CMD or --url URL for one server, or the "
            f"mcp__<server>__<{noun}> name of a configured server's {noun} (`mcp-sansio {noun}s` lists them)")


class Timing:
    """The phases of one command and how long each took (``--timing``), on the monotonic
    clock; printed on stderr so that stdout stays the result."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.phases: list[tuple[str, float]] = []
        self._start = self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        """The phase ``name`` ended now (it began when the previous one ended)."""
        now = time.perf_counter()
        self.phases.append((name, now - self._last))
        self._last = now

    def report(self) -> str:
        """``timing (ms): connect+handshake 81.0 | tools/call add 2.9 | close 20.1 | total 104.0``."""
        parts = [f"{name} {seconds * 1000:.1f}" for name, seconds in self.phases]
        return "timing (ms): " + " | ".join([*parts, f"total {(self._last - self._start) * 1000:.1f}"])

    def print(self) -> None:
        """Print :meth:`report` on stderr when ``--timing`` asked for it."""
        if self.enabled:
            print(self.report(), file=sys.stderr)


async def _configured(command: str, args: argparse.Namespace) -> int:
    if command == "call":
        timing = Timing(args.timing)
        try:
            result = await host.call_tool(args, args.arguments)
        finally:
            timing.lap(f"start servers, tools/call {args.tool}, close")
            timing.print()
        print_result(result, args.json)
        return EXIT_FAILURE if result.is_error else 0
    if command == "prompt":
        print_prompt(await host.get_prompt(args, args.arguments), args.json)
        return 0
    async with host.connect_one(args, args.name) as client:
        await _inspect(client, args.json)
    return 0


async def _direct(command: str, args: argparse.Namespace) -> int:
    timeout = args.timeout or _DEFAULT_TIMEOUT
    config = ClientConfig(request_timeout=timeout, initialize_timeout=min(timeout, 30.0))
    if command == "call":
        timing = Timing(args.timing)
        try:
            return await _timed_call(args, config, timeout, timing)
        finally:
            timing.print()
    async with _connect(args, config) as client:
        if command == "inspect":
            await _inspect(client, args.json)
        elif command == "prompt":
            print_prompt(await client.get_prompt(args.prompt, args.arguments, timeout=timeout), args.json)
        else:
            await _demo(client)
    return 0


async def _timed_call(args: argparse.Namespace, config: ClientConfig, timeout: float, timing: Timing) -> int:
    """``call`` of one server, each phase timed."""
    async with _connect(args, config) as client:
        timing.lap("connect+handshake")
        result = await client.call_tool(args.tool, args.arguments, timeout=timeout)
        timing.lap(f"tools/call {args.tool}")
    timing.lap("close")
    print_result(result, args.json)
    return EXIT_FAILURE if result.is_error else 0


@contextlib.asynccontextmanager
async def _connect(args: argparse.Namespace, config: ClientConfig) -> AsyncIterator[AsyncClient]:
    if args.url is not None:
        from mcp_sansio_asyncio.http import connect_http  # loads h11 and ssl: only when asked for

        async with connect_http(args.url, config=config) as remote:
            yield remote
        return
    command, argv = server_command(args.stdio)
    async with connect_stdio(command, argv, config=config) as client:
        yield client


async def _inspect(client: AsyncClient, as_json: bool) -> None:
    caps = client.server_capabilities
    tools = await client.list_tools() if caps.tools is not None else []
    resources = await client.list_resources() if caps.resources is not None else []
    prompts = await client.list_prompts() if caps.prompts is not None else []
    if as_json:
        print_json({"server_info": client.server_info, "protocol_version": client.protocol_version,
                    "capabilities": caps, "instructions": client.instructions,
                    "tools": tools, "resources": resources, "prompts": prompts})
        return
    info = client.server_info
    sys.stdout.write(f"{info.title or info.name} {info.version} (protocol {client.protocol_version})\n")
    if client.instructions:
        sys.stdout.write(f"Instructions: {client.instructions.strip()}\n")
    _tools_table(tools)
    table("Resources", ["uri", "name"], [[resource.uri, resource.name] for resource in resources])
    table("Prompts", ["name", "description"], [[prompt.name, prompt.description or ""] for prompt in prompts])


def _tools_table(tools: Sequence[Tool]) -> None:
    table("Tools", ["name", "description"], [[tool.name, tool.description or ""] for tool in tools])


async def _demo(client: AsyncClient) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console()
    info = client.server_info
    console.print(f"Connected to [bold]{info.title or info.name}[/bold] {info.version} "
                  f"over stdio, protocol {client.protocol_version}")
    if client.instructions:
        console.print(f"[dim]{client.instructions}[/dim]")
    _tools_table(await client.list_tools())
    with Progress(TextColumn("long_task"), BarColumn(), TextColumn("{task.completed:.0f}/{task.total:.0f}"),
                  TextColumn("{task.description}"), TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("", total=20)

        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            bar.update(task, completed=progress, total=total, description=message or "")

        result = await client.call_tool("long_task", {"steps": 20, "interval": 0.1},
                                        on_progress=on_progress)
    console.print("Result: " + " ".join(block_text(block) for block in result.content))

"""``demo``, ``inspect``, ``call``, ``prompt`` and ``read``: one server, given by ``--stdio CMD``
or ``--url URL``, or a configured one (by ``SERVER`` name, or by a ``mcp__<server>__<name>``).

``call`` shows the server's log messages on stderr while it waits, and its progress: a live
line on a terminal, a line per report elsewhere with ``--verbose``. ``inspect`` shows what
it could list when a listing fails, then the error (status 1).

Everything that needs no server is checked first (``--args``, a missing target), so a bad
command line starts nothing and exits with status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Final

from mcp_sansio import ClientConfig, ConnectionClosed, McpSansioError, NotificationReceived, RequestError
from mcp_sansio.jsonrpc import METHOD_NOT_FOUND
from mcp_sansio.types import CallToolResult, Prompt, Resource, ResourceTemplate, TextContent, Tool
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
from .output import (
    Activity,
    block_text,
    print_json,
    print_prompt,
    print_resource,
    print_result,
    report_error,
    shown,
    table,
)

__all__ = ["add_parsers", "run"]

_DEFAULT_TIMEOUT: Final = 60.0
_MODEL_PREFIX: Final = "mcp__"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``demo``, ``inspect``, ``call``, ``prompt`` and ``read`` to ``sub``."""
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
    call.add_argument("-v", "--verbose", action="store_true",
                      help="show progress on stderr even when it is not a terminal (a line per report), "
                           "and the server's debug log messages")
    prompt = sub.add_parser("prompt", parents=[*common, target_options(), config_options()], help=(
        "get one prompt: mcp__<server>__<prompt> of the configured servers, or a prompt of --stdio/--url"))
    prompt.add_argument("prompt", help="the prompt's name")
    prompt.add_argument("--args", default="{}", help="the arguments as a JSON object of strings")
    read = sub.add_parser("read", parents=[*common, target_options(), config_options()], help=(
        "read one resource of a configured SERVER or of --stdio/--url: text as it is, blobs by MIME type "
        "and size"))
    read.add_argument("uri", metavar="URI", help="the resource's URI")
    read.add_argument("name", nargs="?", metavar="SERVER", help="a configured server (or --stdio/--url)")


def run(args: argparse.Namespace) -> int:
    """Run ``demo`` (also with no command), ``inspect``, ``call``, ``prompt`` or ``read``.

    Raises:
        UsageError: the command line cannot work (checked before anything starts).
        CliError: a configured server is unknown or failed.
        McpSansioError: the server or the request failed.
    """
    command = args.command or "demo"
    direct = args.stdio is not None or args.url is not None
    if command in ("inspect", "read"):
        _check_target(command, args, direct)
    elif command == "call":
        args.arguments = json_object(args.args)
        _check_name(args.tool, "tool", "call", direct)
    elif command == "prompt":
        args.arguments = string_arguments(json_object(args.args))
        _check_name(args.prompt, "prompt", "prompt", direct)
    if command != "demo" and not direct:
        return asyncio.run(_configured(command, args))
    return asyncio.run(_direct(command, args))


def _check_target(command: str, args: argparse.Namespace, direct: bool) -> None:
    if args.name is None and not direct:
        raise UsageError(f"{command} needs a server: the SERVER name of a configured one (`mcp-sansio "
                         "servers` lists them), --stdio CMD or --url URL; `mcp-sansio demo` shows the demo "
                         "server")
    if args.name is not None and direct:
        raise UsageError(f"{command} takes a SERVER name or --stdio/--url, not both")


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
        activity = Activity(verbose=args.verbose)
        try:
            result = await host.call_tool(args, args.arguments, activity)
        finally:
            activity.end()
            timing.lap(f"start servers, tools/call {args.tool}, close")
            timing.print()
        print_result(result, args.json)
        return _tool_status(args.tool, result)
    if command == "prompt":
        print_prompt(await host.get_prompt(args, args.arguments), args.json)
        return 0
    async with host.connect_one(args, args.name) as client:
        if command == "read":
            print_resource(await client.read_resource(args.uri, timeout=args.timeout), args.json)
            return 0
        return await _inspect(client, args.json)


async def _direct(command: str, args: argparse.Namespace) -> int:
    timeout = args.timeout or _DEFAULT_TIMEOUT
    config = ClientConfig(request_timeout=timeout, initialize_timeout=min(timeout, 30.0))
    activity = Activity(verbose=getattr(args, "verbose", False))
    timing = Timing(getattr(args, "timing", False))
    result: CallToolResult | None = None
    try:
        async with _connect(args, config, activity) as client:
            timing.lap("connect+handshake")
            if command == "inspect":
                return await _inspect(client, args.json)
            if command == "call":
                if client.server_capabilities.logging is not None:
                    with contextlib.suppress(RequestError):  # refused: the call goes on without
                        await client.set_logging_level(activity.log_level, timeout=timeout)
                result = await client.call_tool(args.tool, args.arguments, timeout=timeout,
                                                on_progress=activity.progress)
                timing.lap(f"tools/call {args.tool}")
            elif command == "prompt":
                print_prompt(await client.get_prompt(args.prompt, args.arguments, timeout=timeout), args.json)
            elif command == "read":
                print_resource(await client.read_resource(args.uri, timeout=timeout), args.json)
            else:
                await _demo(client)
        if result is not None:
            timing.lap("close")
            activity.end()
            print_result(result, args.json)
            return _tool_status(args.tool, result)
    finally:
        activity.end()
        timing.print()
    return 0


def _tool_status(tool: str, result: CallToolResult) -> int:
    """0, or 1 with the one line on stderr every failure gets when the tool reported an error,
    quoting its first text (the result itself is on stdout, where a redirect hides it)."""
    if not result.is_error:
        return 0
    text = next((block.text for block in result.content if isinstance(block, TextContent)), "")
    report_error(f"tool {tool!r} reported an error" + (f": {text}" if text.strip() else ""))
    return EXIT_FAILURE


@contextlib.asynccontextmanager
async def _connect(args: argparse.Namespace, config: ClientConfig,
                   activity: Activity) -> AsyncIterator[AsyncClient]:
    async def on_notification(event: NotificationReceived) -> None:
        if event.method == "notifications/message":
            activity.log(event.params)

    if args.url is not None:
        from mcp_sansio_asyncio.http import connect_http  # loads h11 and ssl: only when asked for

        async with connect_http(args.url, config=config, on_notification=on_notification) as remote:
            yield remote
        return
    command, argv = server_command(args.stdio)
    async with connect_stdio(command, argv, config=config, on_notification=on_notification) as client:
        yield client


async def _inspect(client: AsyncClient, as_json: bool) -> int:
    """Show the server and everything it lists; a listing that fails leaves the others
    shown, then its error (status 1). A server that declares resources but answers
    ``resources/templates/list`` with "method not found" has no templates."""
    caps = client.server_capabilities
    listings: dict[str, tuple[object, Callable[[], Awaitable[Sequence[object]]]]] = {
        "tools": (caps.tools, client.list_tools), "resources": (caps.resources, client.list_resources),
        "resource_templates": (caps.resources, client.list_resource_templates),
        "prompts": (caps.prompts, client.list_prompts)}
    found: dict[str, list[object] | None] = {}
    errors: dict[str, str] = {}
    gone = False
    for key, (declared, fetch) in listings.items():
        found[key] = [] if declared is None else None
        if declared is None or gone:
            continue
        try:
            found[key] = list(await fetch())
        except RequestError as exc:
            if key == "resource_templates" and exc.code == METHOD_NOT_FOUND:
                found[key] = []
            else:
                errors[key] = str(exc)
        except McpSansioError as exc:
            errors[key] = str(exc)
            gone = isinstance(exc, ConnectionClosed)  # then the rest cannot be listed either
    if as_json:
        print_json({"server_info": client.server_info, "protocol_version": client.protocol_version,
                    "capabilities": caps, "instructions": client.instructions, **found,
                    **({"errors": errors} if errors else {})})
    else:
        _print_inspection(client, found)
    for key, error in errors.items():
        report_error(f"listing the {key.replace('_', ' ')} failed: {error}")
    return EXIT_FAILURE if errors else 0


def _print_inspection(client: AsyncClient, found: dict[str, list[object] | None]) -> None:
    info = client.server_info
    sys.stdout.write(f"{shown(info.title or info.name)} {shown(info.version)} "
                     f"(protocol {shown(client.protocol_version)})\n")
    if client.instructions:
        sys.stdout.write(f"Instructions: {shown(client.instructions.strip(), block=True)}\n")
    if (tools := found["tools"]) is not None:
        _tools_table([tool for tool in tools if isinstance(tool, Tool)])
    if (resources := found["resources"]) is not None:
        table("Resources", ["uri", "name"], [[item.uri, item.name] for item in resources
                                             if isinstance(item, Resource)])
    if (templates := found["resource_templates"]) is not None:
        table("Resource templates", ["uri template", "name"],
              [[item.uri_template, item.name] for item in templates if isinstance(item, ResourceTemplate)])
    if (prompts := found["prompts"]) is not None:
        table("Prompts", ["name", "description"],
              [[item.name, item.description or ""] for item in prompts if isinstance(item, Prompt)])


def _tools_table(tools: Sequence[Tool]) -> None:
    table("Tools", ["name", "description"], [[tool.name, tool.description or ""] for tool in tools])


async def _demo(client: AsyncClient) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    def safe(text: str) -> str:  # neither control characters nor rich markup from the server
        return escape(shown(text))

    console = Console()
    info = client.server_info
    console.print(f"Connected to [bold]{safe(info.title or info.name)}[/bold] {safe(info.version)} "
                  f"over stdio, protocol {safe(client.protocol_version)}")
    if client.instructions:
        console.print(f"[dim]{escape(shown(client.instructions, block=True))}[/dim]")
    _tools_table(await client.list_tools())
    with Progress(TextColumn("long_task"), BarColumn(), TextColumn("{task.completed:.0f}/{task.total:.0f}"),
                  TextColumn("{task.description}"), TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("", total=20)

        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            bar.update(task, completed=progress, total=total, description=safe(message or ""))

        result = await client.call_tool("long_task", {"steps": 20, "interval": 0.1},
                                        on_progress=on_progress)
    console.print("Result: " + " ".join(safe(block_text(block)) for block in result.content))

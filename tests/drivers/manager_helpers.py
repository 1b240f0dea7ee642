"""What the server-manager tests of every driver share: entries, quick limits, start-up logs."""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

import anyio
from peer_servers import sdk_server

from mcp_sansio import ClientConfig
from mcp_sansio.hostconfig import Scope, ServerConfig, ServerEntry, ServerState, StdioServerConfig
from mcp_sansio.manager_lifecycle import RestartPolicy
from mcp_sansio.retry import RetryPolicy

MANAGER_SERVER: Final = str(Path(__file__).with_name("manager_server.py"))
# Short shutdown ladders, so servers that ignore stdin's EOF do not slow the tests. A long
# discover_timeout: the official SDK's servers can take over the default 3 s to answer the
# server/discover probe on a loaded machine, and an auto client that has fallen back to
# initialize by then is refused by them (-32022); every server here answers the probe.
QUICK: Final = ClientConfig(shutdown_close_delay=0.2, shutdown_interrupt_delay=0.2,
                            shutdown_terminate_delay=0.2, discover_timeout=30.0)
# Restart at once (tens of milliseconds), so a restart test need not wait out a real backoff.
FAST_RESTART: Final = RestartPolicy(retry=RetryPolicy(max_attempts=3, initial_delay=0.05, max_delay=0.2))


def entry(name: str, config: ServerConfig, *, disabled: bool = False) -> ServerEntry:
    """An entry as ``merge_scopes`` makes it, from ``/project/.mcp.json``."""
    return ServerEntry(name=name, config=config, scope=Scope.PROJECT, source="/project/.mcp.json",
                       state=ServerState.DISABLED if disabled else ServerState.ENABLED,
                       state_source="/project/.mcp.json")


def stdio(command: str, args: list[str], *, timeout: float | None = None) -> StdioServerConfig:
    """A stdio server definition."""
    return StdioServerConfig(command=command, args=tuple(args), timeout=timeout)


def manager_server(*options: str) -> StdioServerConfig:
    """``manager_server.py`` with ``options``."""
    return stdio(sys.executable, [MANAGER_SERVER, *options])


def hostile(*mode: str, timeout: float | None = None) -> StdioServerConfig:
    """``tests/servers/hostile.py`` in ``mode``."""
    return stdio(*sdk_server("hostile", *mode), timeout=timeout)


def hinted(ttl_ms: int) -> list[ServerEntry]:
    """The entry ``hinted``: ``tests/servers/sdk_cache_server.py``, an SDK server hinting
    ``ttl_ms`` and ``public`` on ``tools/list`` and ``resources/read``, whose tool ``grow``
    silently adds ``extra`` and whose resource ``counter://reads`` counts its reads."""
    return [entry("hinted", stdio(*sdk_server("sdk_cache_server", str(ttl_ms), "public")))]


DEMO: Final = stdio(sys.executable, ["-m", "mcp_sansio_cli.demo_server"])
NONEXISTENT: Final = stdio("/nonexistent/mcp-server", [])


def most_starting_at_once(log: Path) -> int:
    """How many servers were between start-up and answering ``initialize`` at the same time."""
    events = [json.loads(line) for line in log.read_text().splitlines()]
    timeline = sorted((event["at"], event["event"] == "start") for event in events)
    starting = most = 0
    for _, is_start in timeline:  # at equal times "ready" (False) sorts first: no false overlap
        starting += 1 if is_start else -1
        most = max(most, starting)
    return most


async def eventually(check: Callable[[], bool | Awaitable[bool]], seconds: float = 5.0) -> None:
    """Wait until ``check()`` holds, polling every 10 ms; fail after ``seconds``."""
    for _ in range(int(seconds / 0.01)):
        outcome = check()
        if await outcome if inspect.isawaitable(outcome) else outcome:
            return
        await anyio.sleep(0.01)
    raise AssertionError(f"{check} never held within {seconds} s")

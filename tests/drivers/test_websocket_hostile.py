"""Every driver against a WebSocket server that floods Ping frames and does not read
(``tests/servers/hostile_ws.py``): one Pong for the latest Ping per write, so what waits
to be sent stays bounded, and deadlines hold however busy the socket is."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from peer_servers import free_port, running_http_server, sdk_server

from mcp_sansio import ClientConfig, RequestTimeout

from .driver_adapter import CONCURRENT_DRIVERS, Driver, text_of

pytestmark = pytest.mark.anyio

CONFIG = ClientConfig(request_timeout=2.0, initialize_timeout=5.0, close_timeout=0.5)


@contextlib.contextmanager
def hostile_ws(mode: str, log: Path) -> Iterator[str]:
    """Run ``hostile_ws.py`` in ``mode``, logging to ``log``; yield its URL."""
    port = free_port()
    command, args = sdk_server("hostile_ws", mode, str(port))
    with running_http_server(command, args, {"HOSTILE_LOG": str(log)}, port, "/ws") as url:
        yield url.replace("http://", "ws://", 1)


def logged_now(log: Path, word: str) -> int | None:
    """The number the server logged after ``word``, if it has."""
    lines = log.read_text().splitlines() if log.exists() else []
    return next((int(line.split()[1]) for line in lines if line.startswith(word + " ")), None)


async def logged(log: Path, word: str) -> int:
    """The number the server logged after ``word``, once it has (within 10 s)."""
    for _ in range(200):
        number = logged_now(log, word)
        if number is not None:
            return number
        await anyio.sleep(0.05)
    pytest.fail(f"the server logged no {word!r} within 10 s")


async def test_a_call_times_out_on_time_while_pings_flood_in(driver: Driver, tmp_path: Path) -> None:
    with hostile_ws("flood", tmp_path / "log") as url:
        async with driver.connect_websocket(url, config=CONFIG) as client:
            started = time.monotonic()
            with pytest.raises(RequestTimeout):
                await client.call_tool("poke")  # never read, so never answered
            assert time.monotonic() - started < 3.0  # the deadline held while the socket was busy


async def test_a_ping_flood_during_a_call_gets_a_pong_per_write_not_one_per_ping(
    driver: Driver, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    with hostile_ws("flood-then-read", log) as url:
        async with driver.connect_websocket(url, config=CONFIG) as client:
            assert text_of(await client.call_tool("poke", timeout=30.0)) == "ok"  # once the flood is over
        pings, pongs = await logged(log, "flooded"), await logged(log, "pongs")
    assert pongs * 50 < pings, (pings, pongs)  # a Pong per Ping would queue as much as the flood


# The blocking driver reads only while a call waits: an idle session of it reads nothing.
@pytest.mark.parametrize("driver", CONCURRENT_DRIVERS, indirect=True)
async def test_a_ping_flood_on_an_idle_session_gets_a_pong_per_write_not_one_per_ping(
    driver: Driver, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    with hostile_ws("flood-then-read", log) as url:
        async with driver.connect_websocket(url, config=CONFIG):
            await logged(log, "flooded")
        pings, pongs = await logged(log, "flooded"), await logged(log, "pongs")
    assert pongs * 50 < pings, (pings, pongs)

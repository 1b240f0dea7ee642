"""How every driver starts, stops and cleans up, whatever the body of its block does."""

from __future__ import annotations

import inspect
import os
import signal
import time

import pytest
from peer_servers import sdk_server

import mcp_sansio_sync
from mcp_sansio import ConnectionClosed
from mcp_sansio_asyncio import AsyncClient

from .driver_adapter import QUICK, Driver, process_is_gone, text_of

pytestmark = pytest.mark.anyio

STALL = sdk_server("hostile", "stall")
NORMAL = sdk_server("hostile", "crash-after", "1000000000")
SLOW_START = sdk_server("hostile", "slow-start", "30")


def open_fds() -> set[str]:
    """This process's open file descriptors."""
    return set(os.listdir("/proc/self/fd"))


async def test_missing_command_fails_with_connection_closed(driver: Driver) -> None:
    with pytest.raises(ConnectionClosed, match="cannot start"):
        async with driver.connect("/nonexistent/mcp-server", ["--stdio"]):
            pytest.fail("connected to nothing")


async def test_exception_in_the_body_propagates_as_is_and_stops_the_server(driver: Driver) -> None:
    pid = None
    with pytest.raises(LookupError, match="from the body"):
        async with driver.connect(*STALL, config=QUICK) as client:
            pid = client.pid
            raise LookupError("from the body")
    assert process_is_gone(pid)


async def test_abandoned_body_still_stops_the_server(driver: Driver) -> None:
    pid = None
    with driver.cancel_after(None) as abandon:
        async with driver.connect(*STALL, config=QUICK) as client:
            pid = client.pid
            abandon(0.3)  # the clock starts once connected: the call, not the start, is abandoned
            await client.call_tool("poke")
        pytest.fail("the stalled call returned")
    assert process_is_gone(pid)


# Not on the blocking driver: an interrupt that lands inside subprocess.Popen after the
# fork loses the child (Popen has handed out no handle to it yet), so no driver code can
# reap it; the event loops' spawns are cancelled cleanly.
@pytest.mark.parametrize("driver", ["asyncio", "anyio-asyncio", "anyio-trio"], indirect=True)
@pytest.mark.parametrize("delay", [0.001, 0.003, 0.01])
async def test_a_connect_abandoned_while_the_server_starts_leaves_nothing_behind(
        driver: Driver, delay: float) -> None:
    with driver.cancel_after(delay):
        async with driver.connect(*SLOW_START, config=QUICK):
            pytest.fail("connected to a server that answers in 30 s")


async def test_no_file_descriptor_is_left_behind_however_the_block_ends(driver: Driver) -> None:
    async with driver.connect(*NORMAL, config=QUICK) as client:
        assert text_of(await client.call_tool("poke")) == "ok"
    before = open_fds()  # after a first connection: the loop's lazily made resources exist
    async with driver.connect(*NORMAL, config=QUICK) as client:
        assert text_of(await client.call_tool("poke")) == "ok"
        assert len(open_fds()) > len(before)
    with pytest.raises(LookupError):
        async with driver.connect(*NORMAL, config=QUICK) as client:
            raise LookupError
    with driver.cancel_after(0.3):
        async with driver.connect(*STALL, config=QUICK) as client:
            await client.call_tool("poke")
    assert open_fds() == before


def test_blocking_client_mirrors_the_async_client_api() -> None:
    def public(cls: type) -> dict[str, object]:
        return {name: attr for name, attr in vars(cls).items() if not name.startswith("_")}

    async_api, sync_api = public(AsyncClient), public(mcp_sansio_sync.Client)
    assert sorted(sync_api) == sorted(async_api)
    for name, attr in async_api.items():
        if isinstance(attr, property):
            assert isinstance(sync_api[name], property), name
            continue
        expected = inspect.signature(attr)  # type: ignore[arg-type]  # a method
        actual = inspect.signature(sync_api[name])  # type: ignore[arg-type]  # a method
        assert [(p.name, p.kind, p.default) for p in actual.parameters.values()] == [
            (p.name, p.kind, p.default) for p in expected.parameters.values()
        ], name
    for conn in (mcp_sansio_sync.StdioConnection,):
        assert {"pid", "stderr_tail", "close", "poll"} <= set(dir(conn))




# Blocking only: an event loop reads every connection all the time; a blocking client
# reads while a call waits, or when polled.
def test_a_blocking_client_notices_when_polled_that_its_server_died_while_idle() -> None:
    with mcp_sansio_sync.connect_stdio(*NORMAL, config=QUICK) as client:
        assert client.pid is not None
        os.kill(client.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while not client.closed:
            assert time.monotonic() < deadline, "the exit went unnoticed"
            client.poll()
            time.sleep(0.01)
        assert client.returncode == -signal.SIGKILL

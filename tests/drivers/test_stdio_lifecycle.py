"""How every driver starts, stops and cleans up, whatever the body of its block does."""

from __future__ import annotations

import inspect
import os

import pytest
from peer_servers import sdk_server

import mcp_sansio_sync
from mcp_sansio import ConnectionClosed
from mcp_sansio_asyncio import AsyncClient

from .driver_adapter import QUICK, Driver, process_is_gone, text_of

pytestmark = pytest.mark.anyio

STALL = sdk_server("hostile", "stall")
NORMAL = sdk_server("hostile", "crash-after", "1000000000")


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
    with driver.cancel_after(0.3):
        async with driver.connect(*STALL, config=QUICK) as client:
            pid = client.pid
            await client.call_tool("poke")
        pytest.fail("the stalled call returned")
    assert process_is_gone(pid)


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
        assert {"pid", "stderr_tail", "close"} <= set(dir(conn))



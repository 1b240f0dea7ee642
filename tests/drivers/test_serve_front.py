"""The ``serve_*`` functions are written once (``mcp_sansio_base/_async/serve.py``, its
blocking twin generated): every driver takes the same arguments, the blocking one adds
``stop`` and runs plain handlers inline by default."""

from __future__ import annotations

import inspect

import pytest

import mcp_sansio_anyio
import mcp_sansio_asyncio
import mcp_sansio_sync


def _params(fn: object) -> dict[str, object]:
    assert callable(fn)
    return {name: p.default for name, p in inspect.signature(fn).parameters.items()}


@pytest.mark.parametrize("name", ["serve_stdio", "serve_http", "serve_websocket"])
def test_every_driver_serves_with_the_same_arguments(name: str) -> None:
    on_asyncio = _params(getattr(mcp_sansio_asyncio, name))
    assert _params(getattr(mcp_sansio_anyio, name)) == on_asyncio
    blocking = _params(getattr(mcp_sansio_sync, name))
    if name != "serve_stdio":  # stdio ends with its input, the sockets when told
        assert blocking.pop("stop") is None
    assert blocking.pop("handler_threads") == 0  # inline on the one thread
    assert on_asyncio.pop("handler_threads") is None  # DEFAULT_HANDLER_THREADS
    assert blocking == on_asyncio


@pytest.mark.parametrize("name", ["serve_stdio", "serve_http", "serve_websocket"])
def test_the_event_loop_drivers_serve_with_coroutines(name: str) -> None:
    assert inspect.iscoroutinefunction(getattr(mcp_sansio_asyncio, name))
    assert inspect.iscoroutinefunction(getattr(mcp_sansio_anyio, name))
    assert not inspect.iscoroutinefunction(getattr(mcp_sansio_sync, name))

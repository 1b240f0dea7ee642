"""``app.asgi(**options)``: the core finds the ASGI driver through an entry point, never by name."""

from __future__ import annotations

import importlib.metadata

import pytest

from mcp_sansio import MCPServer
from mcp_sansio.server.app import DRIVER_ENTRY_POINTS
from mcp_sansio.server.http import HttpConfig
from mcp_sansio.server.stores import MemorySessionStore
from mcp_sansio_asgi import AsgiApp


def test_app_asgi_is_the_asgi_driver_with_the_options_given() -> None:
    app = MCPServer("s")
    config = HttpConfig(allowed_hosts=("mcp.example",), allowed_origins=("https://mcp.example",))
    sessions = MemorySessionStore()
    asgi = app.asgi(config=config, sessions=sessions, secret=b"k" * 32)
    assert isinstance(asgi, AsgiApp)
    assert (asgi.app, asgi.config) == (app, config)
    assert asgi._stores[0] is sessions


def test_app_asgi_rejects_an_option_the_driver_does_not_take() -> None:
    with pytest.raises(TypeError, match="stor"):
        MCPServer("s").asgi(stor="redis://localhost")


def test_app_asgi_without_an_installed_asgi_driver_names_the_entry_point(monkeypatch: pytest.MonkeyPatch
                                                                         ) -> None:
    def nothing(**_: str) -> importlib.metadata.EntryPoints:
        return importlib.metadata.EntryPoints(())

    monkeypatch.setattr("mcp_sansio.server.app.entry_points", nothing)
    with pytest.raises(LookupError, match=DRIVER_ENTRY_POINTS):
        MCPServer("s").asgi()


def test_the_installed_asgi_entry_point_is_the_asgi_driver() -> None:
    (found,) = importlib.metadata.entry_points(group=DRIVER_ENTRY_POINTS, name="asgi")
    assert found.load() is AsgiApp

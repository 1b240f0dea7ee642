"""The README's server examples run as printed, with the forms a FastMCP user types."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
from pathlib import Path

import pytest
from pair import Pair

from mcp_sansio import ClientConfig, MCPServer, ResponseReceived
from mcp_sansio.types import CallToolResult
from mcp_sansio_asgi import AsgiApp

README = (Path(__file__).parent.parent / "README.md").read_text()
SECTION = README.split("## Serving MCP", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```python\n(.*?)```", SECTION, re.S)


def test_the_example_server_registers_tools_a_resource_and_a_prompt() -> None:
    namespace: dict[str, object] = {}
    exec(BLOCKS[0], namespace)
    app = namespace["app"]
    assert isinstance(app, MCPServer)
    registry = app.registry
    assert set(registry.tools) == {"add", "forecast"} and set(registry.prompts) == {"packing"}
    assert "@app.tool\n" in BLOCKS[0] and "-> int:" in BLOCKS[0]  # the bare decorator, a plain int
    assert callable(namespace["asgi"])


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
def test_the_example_server_answers_a_client_in_both_eras(protocol: str) -> None:
    namespace: dict[str, object] = {}
    exec(BLOCKS[0], namespace)
    pair = Pair(namespace["app"], config=ClientConfig(protocol=protocol))  # type: ignore[arg-type]
    pair.start()
    pair.take_client_events()
    ids = [pair.client.call_tool("add", {"a": 2, "b": 3}, now=pair.now),
           pair.client.call_tool("forecast", {"city": "Atlantis"}, now=pair.now)]
    pair.settle()
    results = {e.request_id: e.result for e in pair.take_client_events() if isinstance(e, ResponseReceived)}
    added, refused = (results[rid] for rid in ids)
    assert isinstance(added, CallToolResult) and isinstance(refused, CallToolResult)
    assert added.structured_content == (5 if protocol == "2026-07-28" else {"result": 5})
    assert refused.is_error and refused.content[0].text == "no forecast for Atlantis"  # type: ignore[union-attr]


def test_the_server_core_by_hand_answers_the_call() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(BLOCKS[1], {})
    assert '"text":"5"' in out.getvalue()


def test_the_authorization_example_protects_the_app_and_scopes_its_tool() -> None:
    namespace: dict[str, object] = {}
    exec(BLOCKS[2], namespace)
    app = namespace["app"]
    assert isinstance(app, MCPServer) and app.auth is not None
    assert app.auth.required_scopes == ("mcp",)
    assert app.registry.tools["write"].scopes == ("files:write",)


def test_every_name_the_readme_places_in_a_module_is_there() -> None:
    # "`HttpConfig` is in `mcp_sansio.server.http`": the README named HttpConfig, HttpLimits,
    # WebSocketConfig and FlowLimits without saying where, and `mcp_sansio.server` has none of them.
    names_in = r"((?:`\w+`(?:,\s+|\s+and\s+)?)+)\s+(?:is\s+|are\s+)?in\s+`(mcp_sansio[\w.]*)`"
    placed = re.findall(names_in, README)
    found = {(name, module) for names, module in placed for name in re.findall(r"`(\w+)`", names)}
    assert {("HttpConfig", "mcp_sansio.server.http"), ("HttpLimits", "mcp_sansio.server.http11"),
            ("WebSocketServer", "mcp_sansio.server.websocket")} <= found
    assert [(name, module) for name, module in sorted(found)
            if not hasattr(importlib.import_module(module), name)] == []


def test_the_uvicorn_recipe_builds_a_shared_store_app() -> None:
    deploying = README.split("## Deploying several workers", 1)[1].split("\n## ", 1)[0]
    recipe = re.findall(r"```python\n(.*?)```", deploying, re.S)[0]
    namespace: dict[str, object] = {}
    exec(BLOCKS[0], namespace)  # app.py: the example server
    exec(recipe, namespace)  # the store connects on first use
    assert isinstance(namespace["asgi"], AsgiApp)
    assert namespace["asgi"].config.allowed_hosts == ("mcp.example.com",)

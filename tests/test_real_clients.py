"""Clients nobody here wrote, against ``mcp-sansio serve``: the TypeScript SDK's client
(``tests/peers/ts_client.mjs``) and ``@modelcontextprotocol/inspector-cli``, over stdio and
Streamable HTTP, with the asyncio and the blocking server drivers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from peer_servers import free_port, node_binary, peers_dir, running_http_server

pytestmark = pytest.mark.peer

TESTS = Path(__file__).parent
APP = str(TESTS / "servers" / "served_app.py")
SERVE = [sys.executable, "-m", "mcp_sansio_cli", "serve", APP]


@pytest.fixture(scope="module")
def ts_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The client script beside a ``node_modules`` (ES modules resolve from their own place)."""
    home = tmp_path_factory.mktemp("ts-client")
    (home / "node_modules").symlink_to(peers_dir() / "node_modules")
    shutil.copy(TESTS / "peers" / "ts_client.mjs", home)
    return home / "ts_client.mjs"


@pytest.fixture(scope="module", params=["asyncio", "sync"])
def http_url(request: pytest.FixtureRequest) -> Iterator[str]:
    port = free_port()
    with running_http_server(SERVE[0], [*SERVE[1:], "--driver", request.param, "--http", str(port)], None,
                             port, "/mcp") as url:
        yield url


def node(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run([node_binary(), *args], capture_output=True, timeout=60, check=False, cwd=cwd)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return done.stdout.decode()


EXPECTED = {"server": "served-by-every-driver",
            "tools": ["add", "ask", "progress", "give_up", "give_up_at_once", "exits"], "sum": "42",
            "resource": "hello, resource", "prompt": "Hello, Ada!"}


@pytest.mark.parametrize("driver", ["asyncio", "sync"])
def test_the_typescript_sdk_client_over_stdio(ts_client: Path, driver: str) -> None:
    seen = json.loads(node(str(ts_client), "stdio", *SERVE, "--driver", driver))
    assert {k: v for k, v in seen.items() if k != "protocol"} == EXPECTED


def test_the_typescript_sdk_client_over_http(ts_client: Path, http_url: str) -> None:
    seen = json.loads(node(str(ts_client), "http", http_url))
    assert seen == {**EXPECTED, "protocol": "2025-11-25"}  # its newest revision, with a session


def inspector(*args: str) -> object:
    """Run inspector-cli's ``--cli`` mode; its JSON output. (It reads its own package.json
    relative to the working directory, so it runs from its build directory.)"""
    build = peers_dir() / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build"
    out = node(str(build / "cli.js"), "--cli", *args, cwd=build)
    return json.loads(out[out.index("{"):])


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_inspector_cli_lists_and_calls_tools(transport: str, http_url: str) -> None:
    target = [*SERVE] if transport == "stdio" else ["--transport", "http", http_url]
    listed = inspector(*target, "--method", "tools/list")
    assert [tool["name"] for tool in listed["tools"]] == EXPECTED["tools"]  # type: ignore[index]
    called = inspector(*target, "--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "b=3")
    assert called["content"] == [{"type": "text", "text": "5"}]  # type: ignore[index]

"""Clients nobody here wrote, and ours, through the feature matrix against a FastMCP-style server.

``python bench/client_matrix.py [--driver asyncio|anyio|trio|sync] [--stdio] [--client NAME ...]``

The server is ``tests/servers/newcomer_app.py`` (bare ``@app.tool``, a plain ``-> int`` tool,
a blocking ``def``, ``ToolError``) under ``mcp-sansio serve --http`` (or, with ``--stdio``,
started by each client over stdio). Each client runs in a
process of its own and reports what it saw per feature; this script judges it and prints a
client x feature table (``ok``; ``n/a`` where the client has no way to do it; ``FAIL`` with
what it saw otherwise), and exits 1 if anything failed. The clients:

- ``sdk-2026``: the official Python SDK's ``Client`` (mcp 2.3), in its own era, 2026-07-28.
- ``sdk-2025``: the same, pinned to the handshake era (``mode="legacy"``: 2025-11-25).
- ``typescript``: the TypeScript SDK's ``Client`` (``tests/peers/ts_matrix.mjs``).
- ``inspector``: ``@modelcontextprotocol/inspector-cli`` (one process per method).
- ``fastmcp``: fastmcp's ``Client`` (fastmcp 4.2.3, a dev dependency beside mcp 2.3).
- ``ours``: the ``mcp-sansio`` CLI (``inspect``, ``call``, ``prompt``).

``tests/test_client_matrix.py`` runs the same matrix (the fast clients) as tests.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from peer_servers import free_port, node_binary, peers_dir, running_http_server  # noqa: E402  # after the sys.path line above

APP = str(ROOT / "tests" / "servers" / "newcomer_app.py")
FEATURES = ("initialize", "tools_list", "call_int", "structured", "prompts", "resources", "progress",
            "errors")
TITLES = {
    "initialize": "initialize", "tools_list": "tools/list outputSchema", "call_int": "call -> int",
    "structured": "structured result", "prompts": "prompts", "resources": "resources",
    "progress": "progress", "errors": "errors",
}
WRAPPED = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"],
           "x-fastmcp-wrap-result": True}
TIMEOUT = 120.0

SDK_PROBE = r"""
import json, sys
import anyio
from mcp import Client

from mcp import StdioServerParameters

url, mode = sys.argv[1], sys.argv[2]
if not url.startswith("http"):  # a JSON command line: over stdio
    command = json.loads(url)
    url = StdioServerParameters(command=command[0], args=command[1:])
seen = {}

async def probe(name, body):
    try:
        seen[name] = await body()
    except Exception as exc:
        seen[name] = {"error": f"{type(exc).__name__}: {exc}"}

def dump(value):
    return value.model_dump(mode="json", by_alias=True, exclude_none=True) if value is not None else None

async def main():
    client = Client(url) if mode == "auto" else Client(url, mode=mode)
    async with client:
        seen["initialize"] = client.server_info.name if hasattr(client, "server_info") else "?"
        async def tools():
            listed = await client.list_tools()
            add = next(t for t in listed.tools if t.name == "add")
            return dump(add).get("outputSchema")
        await probe("tools_list", tools)
        async def call_int():
            r = await client.call_tool("add", {"a": 2, "b": 3})
            return {"text": r.content[0].text, "structured": r.structured_content}
        await probe("call_int", call_int)
        async def prompts():
            return (await client.get_prompt("greet", {"name": "Ada"})).messages[0].content.text
        await probe("prompts", prompts)
        async def resources():
            return (await client.read_resource("newcomer://readme")).contents[0].text
        await probe("resources", resources)
        async def progress():
            steps = []
            async def note(p, total, message):
                steps.append(p)
            await client.call_tool("report", {"steps": 3}, progress_callback=note)
            return steps
        await probe("progress", progress)
        async def errors():
            r = await client.call_tool("refuse", {"city": "Atlantis"})
            return {"isError": r.is_error, "text": r.content[0].text}
        await probe("errors", errors)
        seen["protocol"] = client.protocol_version
    print(json.dumps(seen))

anyio.run(main)
"""

FASTMCP_PROBE = r"""
import json, sys
import anyio
from fastmcp import Client

url = sys.argv[1]
if not url.startswith("http"):  # a JSON command line: over stdio
    from fastmcp.client.transports import StdioTransport
    command = json.loads(url)
    url = StdioTransport(command[0], command[1:])
seen = {}

async def probe(name, body):
    try:
        seen[name] = await body()
    except Exception as exc:
        seen[name] = {"error": f"{type(exc).__name__}: {exc}"}

async def main():
    client = Client(url)
    async with client:
        info = client.server_info
        seen["initialize"] = info.name if info is not None else "?"
        seen["protocol"] = client.protocol_version
        async def tools():
            add = next(t for t in await client.list_tools() if t.name == "add")
            return add.model_dump(mode="json", by_alias=True, exclude_none=True).get("outputSchema")
        await probe("tools_list", tools)
        async def call_int():
            r = await client.call_tool("add", {"a": 2, "b": 3})
            return {"text": r.content[0].text, "structured": r.structured_content, "data": r.data}
        await probe("call_int", call_int)
        async def prompts():
            return (await client.get_prompt("greet", {"name": "Ada"})).messages[0].content.text
        await probe("prompts", prompts)
        async def resources():
            return (await client.read_resource("newcomer://readme"))[0].text
        await probe("resources", resources)
        async def progress():
            steps = []
            async def note(p, total, message):
                steps.append(p)
            await client.call_tool("report", {"steps": 3}, progress_handler=note)
            return steps
        await probe("progress", progress)
        async def errors():
            r = await client.call_tool("refuse", {"city": "Atlantis"}, raise_on_error=False)
            return {"isError": r.is_error, "text": r.content[0].text}
        await probe("errors", errors)
    print(json.dumps(seen))

anyio.run(main)
"""


def _run(command: list[str], *, cwd: Path | None = None, ok: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(command, capture_output=True, timeout=TIMEOUT, check=False, cwd=cwd)
    if done.returncode not in ok:
        tail = done.stderr.decode()[-1500:]
        raise RuntimeError(f"{Path(command[0]).name} exited {done.returncode}: {tail}")
    return done.stdout.decode()


def _last_json(out: str) -> Any:
    return json.loads(out[out.index("{"):])


def probe_sdk(url: str, mode: str) -> dict[str, Any]:
    """The official Python SDK's client (``mode``: ``auto`` or ``legacy``)."""
    return dict(_last_json(_run([sys.executable, "-c", SDK_PROBE, url, mode])))


def probe_fastmcp(url: str) -> dict[str, Any]:
    """fastmcp's client."""
    return dict(_last_json(_run([sys.executable, "-c", FASTMCP_PROBE, url])))


def probe_typescript(url: str) -> dict[str, Any]:
    """The TypeScript SDK's client (``tests/peers/ts_matrix.mjs`` beside the peers' node_modules)."""
    with tempfile.TemporaryDirectory() as home:
        (Path(home) / "node_modules").symlink_to(peers_dir() / "node_modules")
        script = shutil.copy(ROOT / "tests" / "peers" / "ts_matrix.mjs", home)
        where = ["http", url] if url.startswith("http") else ["stdio", *json.loads(url)]
        return dict(_last_json(_run([node_binary(), str(script), *where])))


def probe_inspector(url: str) -> dict[str, Any]:
    """``inspector-cli --cli``: one process per method (it has no progress to show)."""
    build = peers_dir() / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build"

    def cli(*args: str) -> Any:
        where = ["--transport", "http", url] if url.startswith("http") else json.loads(url)
        command = [node_binary(), str(build / "cli.js"), "--cli", *where, *args]
        return _last_json(_run(command, cwd=build))

    seen: dict[str, Any] = {"protocol": None}
    probes: dict[str, Callable[[], object]] = {
        "tools_list": lambda: next(t for t in cli("--method", "tools/list")["tools"]
                                   if t["name"] == "add").get("outputSchema"),
        "call_int": lambda: _call_view(cli("--method", "tools/call", "--tool-name", "add",
                                           "--tool-arg", "a=2", "b=3")),
        "prompts": lambda: cli("--method", "prompts/get", "--prompt-name", "greet",
                               "--prompt-args", "name=Ada")["messages"][0]["content"]["text"],
        "resources": lambda: cli("--method", "resources/read", "--uri", "newcomer://readme")["contents"][0]["text"],
        "errors": lambda: _error_view(cli("--method", "tools/call", "--tool-name", "refuse",
                                          "--tool-arg", "city=Atlantis")),
    }
    for name, body in probes.items():
        try:
            seen[name] = body()
        except Exception as exc:  # what it saw goes in the table
            seen[name] = {"error": str(exc)[-300:]}
    seen["initialize"] = "newcomer" if "error" not in str(seen["tools_list"]) else seen["tools_list"]
    seen["progress"] = {"n/a": "inspector-cli shows no progress notifications"}
    return seen


def probe_ours(url: str) -> dict[str, Any]:
    """Our CLI: ``inspect``, ``call``, ``prompt`` (it has no command to read a resource or show
    progress yet: #18 item 8, on another branch)."""
    cli = [sys.executable, "-m", "mcp_sansio_cli"]

    where = ["--url", url] if url.startswith("http") else ["--stdio", shlex.join(json.loads(url))]

    def run(*args: str) -> Any:  # (a tool error exits 1, its result printed all the same)
        return _last_json(_run([*cli, *args, *where, "--json"], ok=(0, 1)))

    seen: dict[str, Any] = {}
    try:
        inspected = run("inspect")
        seen["initialize"] = inspected["server_info"]["name"]
        seen["protocol"] = inspected["protocol_version"]
        tools = inspected.get("tools") or []
        seen["tools_list"] = next(t for t in tools if t["name"] == "add").get("outputSchema")
        listed = [r.get("uri") for r in inspected.get("resources") or []]
        seen["resources"] = {"n/a": f"no read command; listed {listed}"}
    except Exception as exc:  # what it saw goes in the table
        seen["initialize"] = seen["tools_list"] = {"error": str(exc)[-300:]}
    calls: dict[str, Callable[[], object]] = {
        "call_int": lambda: _call_view(run("call", "add", "--args", '{"a": 2, "b": 3}')),
        "prompts": lambda: run("prompt", "greet", "--args",
                               '{"name": "Ada"}')["messages"][0]["content"]["text"],
        "errors": lambda: _error_view(run("call", "refuse", "--args", '{"city": "Atlantis"}')),
    }
    for name, body in calls.items():
        try:
            seen[name] = body()
        except Exception as exc:  # what it saw goes in the table
            seen[name] = {"error": str(exc)[-300:]}
    seen["progress"] = {"n/a": "the CLI shows no progress yet"}
    return seen


def _call_view(result: Any) -> dict[str, Any]:
    return {"text": result["content"][0]["text"], "structured": result.get("structuredContent")}


def _error_view(result: Any) -> dict[str, Any]:
    return {"isError": result.get("isError", False), "text": result["content"][0]["text"]}


CLIENTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "sdk-2026": lambda url: probe_sdk(url, "auto"),
    "sdk-2025": lambda url: probe_sdk(url, "legacy"),
    "typescript": probe_typescript,
    "inspector": probe_inspector,
    "fastmcp": probe_fastmcp,
    "ours": probe_ours,
}


def judge(seen: dict[str, Any]) -> dict[str, str]:
    """``ok``, ``n/a: why`` or ``FAIL: what it saw``, per feature."""
    protocol = seen.get("protocol")
    verdicts: dict[str, str] = {}
    call = seen.get("call_int")
    expected_structured = 5 if protocol == "2026-07-28" else {"result": 5}
    checks: dict[str, Callable[[Any], bool]] = {
        "initialize": lambda v: v == "newcomer",
        "tools_list": lambda v: v == ({"type": "integer"} if protocol == "2026-07-28" else WRAPPED) or (
            protocol is None and v in ({"type": "integer"}, WRAPPED)),
        "call_int": lambda v: isinstance(v, dict) and v.get("text") == "5",
        "prompts": lambda v: v == "Hello, Ada!",
        "resources": lambda v: v == "read me",
        "progress": lambda v: v == [1, 2, 3],
        "errors": lambda v: isinstance(v, dict) and v.get("isError") is True
        and v.get("text") == "no such city: Atlantis",
    }
    for feature in FEATURES:
        value = call if feature == "structured" else seen.get(feature)
        if isinstance(value, dict) and "n/a" in value:
            verdicts[feature] = f"n/a: {value['n/a']}"
            continue
        if feature == "structured":
            good = isinstance(value, dict) and (
                value.get("structured") == expected_structured
                or (protocol is None and value.get("structured") in (5, {"result": 5})))
            if good and isinstance(value, dict) and "data" in value:
                good = value["data"] == 5  # fastmcp unwraps {"result": ...} by the schema's marker
        else:
            good = checks[feature](value)
        verdicts[feature] = "ok" if good else f"FAIL: {json.dumps(value)[:200]}"
    return verdicts


@contextmanager
def served(driver: str, *, stdio: bool = False) -> Iterator[str]:
    """``newcomer_app.py`` under ``mcp-sansio serve --http`` on ``driver``: its URL; with
    ``stdio``, the command line each client starts (JSON), as the clients' target."""
    threads = ["--threads", "4"] if driver == "sync" else []
    args = ["-m", "mcp_sansio_cli", "serve", APP, "--driver", driver, *threads]
    if stdio:
        yield json.dumps([sys.executable, *args])
        return
    port = free_port()
    with running_http_server(sys.executable, [*args, "--http", str(port)], None, port, "/mcp") as url:
        yield url


def matrix(url: str, clients: list[str]) -> dict[str, tuple[str | None, dict[str, str]]]:
    """Each client's negotiated protocol and verdicts."""
    table = {}
    for name in clients:
        try:
            seen = CLIENTS[name](url)
        except Exception as exc:  # a client that cannot run fails every feature
            seen = {feature: {"error": str(exc)[-300:]} for feature in FEATURES}
        table[name] = (seen.get("protocol"), judge(seen))
    return table


def render(table: dict[str, tuple[str | None, dict[str, str]]]) -> str:
    """The matrix as a Markdown table, then the details of what was not ``ok``."""
    head = ["client", "protocol", *(TITLES[f] for f in FEATURES)]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes = []
    for name, (protocol, verdicts) in table.items():
        cells = [v.split(":", 1)[0] for v in verdicts.values()]
        rows.append("| " + " | ".join([name, protocol or "?", *cells]) + " |")
        notes += [f"- {name} / {TITLES[f]}: {v}" for f, v in verdicts.items() if v != "ok"]
    return "\n".join(rows + (["", *notes] if notes else []))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--driver", default="asyncio", choices=("asyncio", "anyio", "trio", "sync"))
    parser.add_argument("--stdio", action="store_true", help="each client starts the server over stdio")
    parser.add_argument("--client", action="append", choices=list(CLIENTS), help="only these (repeatable)")
    args = parser.parse_args()
    with served(args.driver, stdio=args.stdio) as target:
        table = matrix(target, args.client or list(CLIENTS))
    how = "over stdio" if args.stdio else "--http"
    print(f"server: tests/servers/newcomer_app.py, mcp-sansio serve --driver {args.driver} {how}\n")
    print(render(table))
    return 1 if any(v.startswith("FAIL") for _, verdicts in table.values() for v in verdicts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

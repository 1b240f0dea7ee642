"""Run ``mcp-sansio fuzz``, ``mcp-fuzzer`` and ``mcp-toolproof`` on the same corpus of real
servers with the same time budget, and print a table side by side.

Usage: ``python bench/fuzz_corpus.py [--budget 60] [--only NAME] [--peers /work/fuzzpeers/bin]``.
The peers come from their own virtualenv (``pip install mcp-fuzzer mcp-toolproof`` into it;
``--peers`` names its ``bin``); a missing peer gives ``n/a``. For our fuzzer the table gives
the findings (rule and method), the time to the first one and the size of its shrunk
reproducer; for the peers, the findings their own reports count. Stdio servers only for the
peers' columns: HTTP targets are fuzzed by ours alone (``--url``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
NPM_CACHE = Path.home() / ".cache" / "mcp-sansio"


def _node_server(package: str, *args: str) -> str | None:
    """A command running an npm-installed server from the project's cache, if present."""
    for base in NPM_CACHE.glob("**/node_modules/" + package + "/package.json"):
        meta = json.loads(base.read_text())
        main = meta.get("bin")
        entry = next(iter(main.values())) if isinstance(main, dict) else main
        node = shutil.which("node") or str(next(NPM_CACHE.glob("**/bin/node"), "node"))
        return " ".join([node, str(base.parent / str(entry)), *args])
    return None


def corpus() -> dict[str, str | None]:
    """Server name -> stdio command (None: not installed here)."""
    return {
        "sdk-mcpserver": f"{PY} {ROOT / 'tests/servers/sdk_server.py'}",
        "everything": _node_server("@modelcontextprotocol/server-everything", "stdio"),
        "filesystem": _node_server("@modelcontextprotocol/server-filesystem", tempfile.gettempdir()),
        "memory": _node_server("@modelcontextprotocol/server-memory"),
        "sequential-thinking": _node_server("@modelcontextprotocol/server-sequential-thinking"),
        "mcp-server-time": shutil.which("mcp-server-time"),
        "mcp-server-git": (shutil.which("mcp-server-git") or "") and f"mcp-server-git --repository {ROOT}",
        "planted-deep": f"{PY} {ROOT / 'tests/fuzz_servers/planted.py'} deep",
        "planted-code": f"{PY} {ROOT / 'tests/fuzz_servers/planted.py'} code",
    }


def ours(command: str, budget: float, out: Path) -> dict[str, object]:
    started = time.monotonic()
    done = subprocess.run(
        [
            PY,
            "-m",
            "mcp_sansio_cli.fuzz_cmd",
            "fuzz",
            "--stdio",
            command,
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
    return {
        "findings": ", ".join(f"{f['rule']}({f['method'] or '-'})" for f in findings) or "none",
        "first": f"{min(f['time'] for f in findings):.1f}s" if findings else "-",
        "size": ",".join(str(f["steps"]) for f in findings) or "-",
        "wall": time.monotonic() - started,
    }


def _peer(argv: list[str], budget: float, out: Path) -> dict[str, object]:
    started = time.monotonic()
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, check=False, timeout=budget * 2 + 30, cwd=out
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"findings": f"n/a ({type(exc).__name__})", "wall": time.monotonic() - started}
    text = (done.stdout + done.stderr)[-400:].replace("\n", " ")
    return {"findings": f"exit {done.returncode}: {text[-160:]}", "wall": time.monotonic() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--peers", default="/work/fuzzpeers/bin")
    args = parser.parse_args()
    peers = Path(args.peers)
    rows: list[tuple[str, dict[str, object], dict[str, object], dict[str, object]]] = []
    for name, command in corpus().items():
        if args.only and name not in args.only:
            continue
        if not command:
            rows.append((name, {"findings": "not installed"}, {}, {}))
            continue
        out = Path(tempfile.mkdtemp(prefix=f"fuzz-{name}-"))
        mine = ours(command, args.budget, out / "ours")
        fuzzer = (
            _peer(
                [
                    str(peers / "mcp-fuzzer"),
                    "--protocol",
                    "stdio",
                    "--endpoint",
                    command,
                    "--mode",
                    "all",
                    "--output-dir",
                    str(out),
                ],
                args.budget,
                out,
            )
            if (peers / "mcp-fuzzer").exists()
            else {}
        )
        proof = (
            _peer(
                [
                    str(peers / "toolproof"),
                    "fuzz",
                    "--max-time",
                    str(args.budget),
                    "--json",
                    str(out / "toolproof.json"),
                    "--",
                    *command.split(),
                ],
                args.budget,
                out,
            )
            if (peers / "toolproof").exists()
            else {}
        )
        rows.append((name, mine, fuzzer, proof))
    print(
        f"| server (budget {args.budget:g}s) | ours: findings | first | reproducer steps "
        "| mcp-fuzzer | mcp-toolproof |"
    )
    print("|---|---|---|---|---|---|")
    for name, mine, fuzzer, proof in rows:
        print(
            f"| {name} | {mine.get('findings')} | {mine.get('first', '-')} | {mine.get('size', '-')} "
            f"| {fuzzer.get('findings', 'n/a')} | {proof.get('findings', 'n/a')} |"
        )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(ROOT / "drivers"))
    main()

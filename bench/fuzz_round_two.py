"""The closing table of issue 19: our fuzzer beside ``mcp-fuzzer`` and ``mcp-toolproof`` on the
planted targets of round two (each with its clean twin), with the same budget; then the
hostile-server mode on client programs (the peers have no client mode).

Usage: ``python bench/fuzz_round_two.py [--budget 15] [--peers DIR] [--clients]``; the peers
come from their own virtualenv as in ``bench/fuzz_corpus.py`` (``--peers`` names its ``bin``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.fuzz_corpus import PY, ROOT, mcp_fuzzer, ours, toolproof

PLANTED = ROOT / "tests" / "fuzz_servers" / "planted.py"
CLIENTS = ROOT / "tests" / "fuzz_clients"
BUGS = ("badversion", "unlisted", "cursor", "cycle", "wrongid", "twobugs", "drop", "none")


def spec_of(rule: str) -> str:
    from mcp_sansio.fuzz.rules import RULES

    return RULES[rule].spec.split(":", 1)[0]


def client_row(command: str, budget: float, out: Path) -> str:
    done = subprocess.run(
        [
            PY,
            "-m",
            "mcp_sansio_cli",
            "fuzz",
            "--client",
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
        timeout=budget * 3 + 60,
    )
    report = json.loads(done.stdout)
    findings = report["findings"]
    return (
        "; ".join(
            f"{f['rule']}({f['method']}) [{spec_of(f['rule'])}] first {f['time']:.1f}s size {f['steps']}"
            for f in findings
        )
        or "none"
    )


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=float, default=15.0)
    parser.add_argument("--peers", default="/work/fuzzpeers/bin")
    parser.add_argument("--clients", action="store_true", help="also the client rows (slow)")
    args = parser.parse_args()
    peers = Path(args.peers)
    print(
        f"| planted server (budget {args.budget:g}s) | ours | first | reproducer steps "
        "| mcp-fuzzer | mcp-toolproof |"
    )
    print("|---|---|---|---|---|---|")
    for bug in BUGS:
        command = f"{PY} {PLANTED} {bug}"
        out = Path(tempfile.mkdtemp(prefix="fuzz-round-two-"))
        mine = ours(["--stdio", command], "auto", args.budget, out / "ours")
        fuzzer = mcp_fuzzer(peers, command, args.budget, out)
        proof = toolproof(peers, command, args.budget, out)
        print(
            f"| {bug} | {mine.get('findings')} | {mine.get('first', '-')} | {mine.get('size', '-')} "
            f"| {fuzzer.get('findings', 'n/a')} | {proof.get('findings', 'n/a')} |",
            flush=True,
        )
    if args.clients:
        print("\n| client (hostile server) | ours: finding [spec] first, reproducer size |")
        print("|---|---|")
        for name, command in (
            ("planted none", f"{PY} {CLIENTS / 'planted_client.py'} none"),
            ("mcp_sansio_sync", f"{PY} {CLIENTS / 'sansio_client.py'}"),
            ("python SDK (mcp)", f"{PY} {CLIENTS / 'sdk_client.py'}"),
        ):
            out = Path(tempfile.mkdtemp(prefix="fuzz-round-two-client-"))
            print(f"| {name} | {client_row(command, args.budget, out)} |", flush=True)


if __name__ == "__main__":
    main()

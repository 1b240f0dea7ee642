"""``mcp-sansio fuzz`` and ``mcp-sansio replay``: the stateful protocol fuzzer's command line.

``fuzz`` runs :class:`mcp_sansio_fuzz.Fuzzer` against ``--stdio CMD``, ``--url URL`` or a
configured server's name, with a live display (requests sent, cases, findings, how much of
the server's surface was exercised), and prints the findings (``--json``: one object;
``--junit``/``--sarif``: files for CI). Exit status: 1 when anything was found, 0 when
nothing, 2 when the server could not be started or reached. ``replay`` sends a trace's
steps to a fresh server and says whether the finding still happens (exit 1) or not (0).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import Final
from xml.sax.saxutils import escape, quoteattr

import msgspec

from mcp_sansio.fuzz.case import Replies
from mcp_sansio.fuzz.hostile import SCENARIOS
from mcp_sansio.fuzz.oracles import judge
from mcp_sansio.fuzz.records import Context
from mcp_sansio.fuzz.rng import Rng
from mcp_sansio.fuzz.rules import RULES
from mcp_sansio.fuzz.trace import TraceError, load_trace
from mcp_sansio.hostconfig import ConfigError, HttpServerConfig, expand_server, load_documents, merge_scopes
from mcp_sansio_fuzz import Fuzzer, Options, Report, Stats, Target, execute, load_schema
from mcp_sansio_fuzz.clients import BUDGET_USED, ClientFuzzer, run_scenario
from mcp_sansio_fuzz.connections import TargetUnavailable
from mcp_sansio_fuzz.replay import replay_memory

__all__ = ["COMMANDS", "add_parsers", "parse_budget", "resolve_target", "run"]

COMMANDS: Final = ("fuzz", "replay")
EXIT_CLEAN: Final = 0
EXIT_FOUND: Final = 1
EXIT_UNREACHABLE: Final = 2


def parse_budget(text: str) -> float:
    """Seconds from ``60``, ``60s``, ``2m`` or ``1h``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 60s, 2m)")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``fuzz`` and ``replay`` to the ``mcp-sansio`` parser."""
    fuzz = sub.add_parser("fuzz", help="fuzz an MCP server's protocol handling and tools")
    fuzz.add_argument("server", nargs="?", help="a configured server's name (instead of --stdio/--url)")
    fuzz.add_argument("--stdio", metavar="CMD", help='server command line, e.g. "python server.py"')
    fuzz.add_argument("--url", help="Streamable HTTP endpoint")
    fuzz.add_argument(
        "--client",
        metavar="CMD",
        help="hostile-server mode: fuzz this client program (it starts the server named in "
        "MCP_FUZZ_SERVER_COMMAND / MCP_FUZZ_SERVER_ARGV, or {server} in CMD)",
    )
    fuzz.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME",
        help="with --client: run only this hostile scenario (repeatable; default: all)",
    )
    fuzz.add_argument(
        "--client-transport",
        choices=("stdio", "http"),
        default="stdio",
        help="with --client: stdio (the client starts the server) or http (MCP_FUZZ_SERVER_URL)",
    )
    fuzz.add_argument(
        "--client-timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="the per-request timeout the client is told to use (MCP_FUZZ_CLIENT_TIMEOUT; default 5)",
    )
    fuzz.add_argument(
        "--config", action="append", default=[], metavar="FILE", help="extra configuration file"
    )
    fuzz.add_argument("--budget", type=parse_budget, default=60.0, help="time budget (default 60s)")
    fuzz.add_argument("--seed", type=int, default=0, help="random seed (default 0): same seed, same inputs")
    fuzz.add_argument(
        "--era", default="auto", help="auto, or a protocol revision such as 2025-11-25 or 2026-07-28"
    )
    fuzz.add_argument("--out", default="mcp-sansio-fuzz", help="directory for reproducer traces")
    fuzz.add_argument(
        "--memory-limit",
        type=int,
        default=256,
        metavar="MIB",
        help="resident memory growth that counts as a leak (default 256 MiB)",
    )
    fuzz.add_argument(
        "--ping-timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how long a liveness ping may take before the server counts as stalled (default 5)",
    )
    fuzz.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME: VALUE",
        help="HTTP header sent with every request (e.g. a bearer token: the auth checks then run)",
    )
    fuzz.add_argument(
        "--other-header",
        action="append",
        default=[],
        metavar="NAME: VALUE",
        help="HTTP header of a second principal, who tries the first one's session (must be refused)",
    )
    fuzz.add_argument("--json", action="store_true", help="print one JSON object")
    fuzz.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    fuzz.add_argument("--sarif", metavar="FILE", help="write a SARIF 2.1.0 report")
    replay = sub.add_parser("replay", help="replay a fuzz trace and say whether it still fails")
    replay.add_argument("trace", help="a .jsonl trace written by mcp-sansio fuzz")
    replay.add_argument("--stdio", metavar="CMD", help="server command line")
    replay.add_argument("--url", help="Streamable HTTP endpoint")
    replay.add_argument("--client", metavar="CMD", help="the client program (a hostile-server trace)")
    replay.add_argument(
        "--header", action="append", default=[], metavar="NAME: VALUE", help="HTTP header for every request"
    )
    replay.add_argument("--json", action="store_true", help="print one JSON object")


def resolve_target(args: argparse.Namespace) -> Target:
    """The target named by ``--stdio``, ``--url`` or a configured server's name.

    Raises:
        TargetUnavailable: none or several given, or the name is not configured.
    """
    given = [x for x in (args.stdio, args.url, getattr(args, "server", None)) if x]
    if len(given) != 1:
        raise TargetUnavailable("give exactly one of --stdio CMD, --url URL or a configured server's name")
    if args.stdio:
        return Target.stdio(args.stdio)
    if args.url:
        return Target(name=args.url, url=args.url, headers=parse_headers(getattr(args, "header", None) or []))
    return _configured(args.server, [Path(p) for p in getattr(args, "config", [])])


def parse_headers(items: Sequence[str]) -> dict[str, str]:
    """``NAME: VALUE`` strings as a dict.

    Raises:
        TargetUnavailable: an item has no colon.
    """
    headers = {}
    for item in items:
        name, colon, value = item.partition(":")
        if not colon or not name.strip():
            raise TargetUnavailable(f"not a header: {item!r} (NAME: VALUE)")
        headers[name.strip()] = value.strip()
    return headers


def _read(path: PurePath) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _configured(name: str, configs: Sequence[Path]) -> Target:
    try:
        documents = load_documents(_read, Path.cwd(), Path.home(), os.environ, configs=configs)
    except ConfigError as exc:
        raise TargetUnavailable(str(exc)) from exc
    entry = merge_scopes(documents).entries.get(name)
    if entry is None:
        raise TargetUnavailable(f"no server is named {name!r} in the configuration")
    config, _warnings = expand_server(name, entry.config, os.environ)
    if isinstance(config, HttpServerConfig):
        return Target(name=name, url=config.url, headers=dict(config.headers))
    return Target(name=name, argv=(config.command, *config.args), env=dict(config.env), cwd=config.cwd)


def _live(report_to: object) -> tuple[object, object]:
    """A rich live display and its update function (stderr, so --json stays clean)."""
    from rich.console import Console
    from rich.live import Live

    console = Console(stderr=True)
    live = Live(console=console, refresh_per_second=4, transient=True)

    def update(stats: Stats) -> None:
        tools = stats.surface.get("tools", 0)
        called = sum(1 for key in stats.covered if "/" not in key)  # tool names; methods have a slash
        methods = sum(1 for key in stats.covered if "/" in key)
        live.update(
            f"[bold]fuzzing[/] {stats.elapsed:5.1f}s  sent {stats.requests}  cases {stats.cases}  "
            f"findings [red]{stats.findings}[/]  restarts {stats.restarts}  "
            f"tools {min(called, tools)}/{tools}  methods {methods}  [dim]{stats.current[:40]}[/]"
        )

    return live, update


def run(args: argparse.Namespace) -> int:
    """Run ``fuzz`` or ``replay``; return the exit status."""
    try:
        if args.command == "replay":
            return _replay(args)
        return _fuzz(args)
    except TargetUnavailable as exc:
        reason = " ".join(str(exc).split())[:500]
        sys.stderr.write(f"mcp-sansio: error: {reason}\n")
        if args.command == "fuzz":
            _unreachable(args, reason)
        return EXIT_UNREACHABLE


def _unreachable(args: argparse.Namespace, reason: str) -> None:
    """On exit 2, CI still gets its artifacts: the report (``--json``), JUnit and SARIF
    files, each saying why nothing was fuzzed."""
    target = args.stdio or args.url or getattr(args, "server", None) or "-"
    report = Report(
        target=str(target),
        transport="http" if args.url else "stdio",
        version=None,
        seed=args.seed,
        duration=0.0,
        stats=Stats(),
        findings=[],
        error=reason,
    )
    _artifacts(args, report)
    if args.json:
        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")


def _artifacts(args: argparse.Namespace, report: Report) -> None:
    if args.junit:
        Path(args.junit).write_text(junit(report), encoding="utf-8")
    if args.sarif:
        Path(args.sarif).write_text(json.dumps(sarif(report), indent=1), encoding="utf-8")


def _fuzz(args: argparse.Namespace) -> int:
    if args.client:
        return _fuzz_client(args)
    target = resolve_target(args)
    options = Options(
        seed=args.seed,
        era=args.era,
        budget=args.budget,
        out_dir=args.out,
        memory_limit=args.memory_limit << 20,
        ping_timeout=args.ping_timeout,
        other_headers=parse_headers(args.other_header),
    )
    show = not args.json and sys.stderr.isatty()
    live, update = _live(None) if show else (None, None)
    fuzzer = Fuzzer(target, options, progress=update)  # type: ignore[arg-type]  # a Stats callback
    if live is not None:
        with live:  # type: ignore[attr-defined]  # rich.live.Live
            report = fuzzer.run()
    else:
        report = fuzzer.run()
    _artifacts(args, report)
    if args.json:
        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")
    else:
        _print(report)
    return EXIT_FOUND if report.findings else EXIT_CLEAN


def _replay_client(args: argparse.Namespace, header: dict[str, object]) -> int:
    """Run a hostile-server trace's scenario again (same seed and size) against a client."""
    command = args.client or header.get("target")
    scenario, rule, size = header.get("scenario"), header.get("rule"), header.get("size")
    if not isinstance(command, str) or not isinstance(scenario, str):
        raise TargetUnavailable("give --client CMD (the trace names no client)")
    seed, timeout, limit = header.get("seed"), header.get("timeout"), header.get("memory_limit")
    _outcome, found = run_scenario(
        command,
        scenario,
        Rng(seed if isinstance(seed, int) else 0).fork(scenario),
        size=size if isinstance(size, int) else None,
        timeout=float(timeout) if isinstance(timeout, int | float) else 5.0,
        memory_limit=limit if isinstance(limit, int) else 128 << 20,
        transport="http" if header.get("transport") == "http" else "stdio",
    )
    still = [f for f in found if f.rule == rule]
    verdict = "still fails" if still else "no longer fails"
    sys.stdout.write(f"{args.trace}: {rule} ({scenario}) {verdict}\n")
    for f in still:
        sys.stdout.write(f"  {f.message}\n")
    return EXIT_FOUND if still else EXIT_CLEAN


def _fuzz_client(args: argparse.Namespace) -> int:
    options = Options(
        seed=args.seed, budget=args.budget, out_dir=args.out, memory_limit=args.memory_limit << 20
    )
    unknown = [name for name in args.scenario if name not in SCENARIOS]
    if unknown:
        raise TargetUnavailable(f"no scenario {unknown[0]!r} (there are: {', '.join(SCENARIOS)})")
    need = ClientFuzzer.scenario_time(args.client_timeout)
    if args.budget * BUDGET_USED < need:
        raise TargetUnavailable(
            f"--budget {args.budget:g}s runs no scenario: each may take {need:g}s (twice --client-timeout, "
            f"plus 5s); give --budget {math.ceil(need / BUDGET_USED)}s or more")
    fuzzer = ClientFuzzer(
        args.client,
        options,
        timeout=args.client_timeout,
        scenarios=args.scenario or None,
        transport=args.client_transport,
    )
    report = fuzzer.run()
    _artifacts(args, report)
    if args.json:
        body = msgspec.to_builtins(report)
        body["outcomes"] = fuzzer.outcomes
        sys.stdout.write(json.dumps(body) + "\n")
    else:
        from rich.console import Console
        from rich.table import Table

        console = Console()
        table = Table(
            "scenario", "what the client did", title=f"{args.client} (hostile server, seed {args.seed})"
        )
        for name, verdict in fuzzer.outcomes.items():
            table.add_row(name, verdict)
        console.print(table)
        _print(report)
    return EXIT_FOUND if report.findings else EXIT_CLEAN


def _print(report: Report) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    stats = report.stats
    out = sys.stdout
    version = [report.version] if report.version else []  # a client target has none
    about = ", ".join([report.transport, *version, f"seed {report.seed}"])
    console.print(
        f"[bold]{report.target}[/] ({about}): "
        f"{stats.requests} messages in {stats.cases} cases, {report.duration:.1f}s"
    )
    if not report.findings:
        console.print("[green]no findings[/]")
    for title, group in (("findings", report.findings), ("unconfirmed (did not replay)", report.unconfirmed)):
        if not group:
            continue
        # Rule names are never cut (they are what CI and people grep for); the message and the
        # trace path wrap instead.
        table = Table(title=title, expand=False)
        table.add_column("rule", no_wrap=True, min_width=max(len(f.rule) for f in group))
        table.add_column("level", no_wrap=True)
        table.add_column("method", overflow="fold")
        table.add_column("finding", overflow="fold", ratio=3)
        table.add_column("first", no_wrap=True)
        table.add_column("steps", no_wrap=True)
        for f in group:
            table.add_row(f.rule, f.level, f.method or "-", f.message, f"{f.time:.1f}s", str(f.steps))
        console.print(table)
    flag = {"http": "--url", "client": "--client", "client-http": "--client"}.get(report.transport, "--stdio")
    for f in report.findings:
        console.print(f"[bold]{f.rule}[/]: {f.spec}")
        if f.trace:
            # One line whatever the width, so it can be copied whole (rich would wrap it).
            out.write(f"  replay: {shlex.join(['mcp-sansio', 'replay', f.trace, flag, report.target])}\n")
            out.flush()


def junit(report: Report) -> str:
    """A JUnit XML report: one test case per rule that fired."""
    cases = []
    for f in report.findings:
        text = f"{f.message}\nspec: {f.spec}\ntrace: {f.trace}"
        cases.append(
            f"  <testcase classname={quoteattr('mcp-sansio-fuzz.' + f.rule)} "
            f'name={quoteattr(f.method or f.rule)} time="0">\n'
            f"    <failure type={quoteattr(f.rule)} message={quoteattr(f.message)}>{escape(text)}</failure>\n"
            f"  </testcase>"
        )
    if report.error is not None:
        cases.append(
            '  <testcase classname="mcp-sansio-fuzz" name="server unreachable" time="0">\n'
            f'    <error type="unreachable" message={quoteattr(report.error)}>'
            f"{escape(report.error)}</error>\n"
            "  </testcase>"
        )
    elif not cases:
        cases.append('  <testcase classname="mcp-sansio-fuzz" name="no findings" time="0"/>')
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<testsuite name={quoteattr('mcp-sansio fuzz ' + report.target)} "
        f'tests="{len(cases)}" failures="{len(report.findings)}" '
        f'errors="{int(report.error is not None)}" time="{report.duration:.3f}">\n'
        + "\n".join(cases)
        + "\n</testsuite>\n"
    )


def sarif(report: Report) -> dict[str, object]:
    """A SARIF 2.1.0 log: the rules that fired and one result per finding."""
    names = sorted({f.rule for f in report.findings})
    level = {"MUST": "error", "SHOULD": "warning", "ROBUSTNESS": "warning"}
    return {
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "mcp-sansio fuzz",
                        "rules": [
                            {
                                "id": name,
                                "shortDescription": {"text": name},
                                "fullDescription": {"text": RULES[name].spec},
                            }
                            for name in names
                        ],
                    }
                },
                "results": [
                    {
                        "ruleId": f.rule,
                        "level": level.get(f.level, "warning"),
                        "message": {"text": f"{f.method or '-'}: {f.message}"},
                        "locations": [
                            {"physicalLocation": {"artifactLocation": {"uri": f.trace or report.target}}}
                        ],
                    }
                    for f in report.findings
                ],
                "invocations": [
                    {
                        "executionSuccessful": report.error is None,
                        "toolExecutionNotifications": [{"level": "error", "message": {"text": report.error}}]
                        if report.error is not None
                        else [],
                    }
                ],
            }
        ],
    }


def _replay(args: argparse.Namespace) -> int:
    try:
        trace = load_trace(Path(args.trace).read_bytes())
    except (OSError, TraceError) as exc:
        raise TargetUnavailable(f"cannot read {args.trace}: {exc}") from exc
    header = trace.header
    if header.get("mode") == "client":
        return _replay_client(args, header)
    if not (args.stdio or args.url):
        target_name = header.get("target")
        args.stdio = (
            target_name if header.get("transport") == "stdio" and isinstance(target_name, str) else None
        )
    given = argparse.Namespace(stdio=args.stdio, url=args.url, server=None, header=args.header)
    target = resolve_target(given)
    replies, capabilities = header.get("replies"), header.get("capabilities")
    reply_mode = Replies(replies) if replies in {r.value for r in Replies} else Replies.REFUSE
    rule, method, cause = header.get("rule"), header.get("method"), header.get("cause")
    if rule == "memory-growth":
        limit = header.get("memory_limit")
        found = replay_memory(
            target, trace.steps, limit if isinstance(limit, int) else 256 << 20, replies=reply_mode
        )
    else:
        conn = target.connect()
        conn.replies = reply_mode
        try:
            records = execute(conn, trace.steps, settle=2.0)
        finally:
            conn.close()
        version = str(header.get("version") or "2025-11-25")
        ctx = Context(
            version=version,
            schema=load_schema(version),
            initialized=False,
            stdio=target.transport == "stdio",
            client_capabilities=capabilities if isinstance(capabilities, dict) else {},
        )
        found = judge(trace.steps, records, ctx)
    still = [
        f for f in found if f.rule == rule and f.method == method and (cause is None or f.cause == cause)
    ]
    if args.json:
        sys.stdout.write(
            json.dumps(
                {
                    "trace": args.trace,
                    "rule": rule,
                    "method": method,
                    "still_fails": bool(still),
                    "findings": [msgspec.to_builtins(f) for f in found],
                }
            )
            + "\n"
        )
    else:
        verdict = "still fails" if still else "no longer fails"
        sys.stdout.write(f"{args.trace}: {rule} ({method or '-'}) {verdict}\n")
        for f in still:
            sys.stdout.write(f"  {f.message}\n")
    return EXIT_FOUND if still else EXIT_CLEAN

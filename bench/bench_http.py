"""HTTP and stateless-era benchmark: mcp-sansio's asyncio driver against the official SDK.

Both clients call the same official-SDK server (``tests/servers/sdk_server.py``): over
Streamable HTTP with JSON responses and with SSE responses, and over stdio. Each client
runs in a fresh process (``http_clients.py``) and makes sequential ``tools/call echo``
calls; reported per client: the revision it negotiated, calls per second, client CPU and
wall time per call, and ratios to the SDK in both of its modes. Then the SSE parser's
throughput (``bench_sse.py``, run as it is) and the targets.

Run: ``python bench/bench_http.py [--quick] [--json FILE]``; ``--help`` lists the other options.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Final, NamedTuple

if __name__ == "__main__":  # run as a script: make ``bench`` and the test peers importable
    _root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:0] = [_root, os.path.join(_root, "tests")]

from peer_servers import free_port, running_http_server, sdk_server

from bench._common import (
    Results,
    Target,
    add_run_options,
    cell,
    merge_passes,
    num,
    pinned,
    print_hot_spots,
    print_table,
    print_targets,
    ratio,
    run_json,
    run_script,
    scaled,
    scratch_file,
    start_run,
    targets_json,
)
from bench.http_clients import CLIENTS, HANDSHAKE, STATELESS, Plan

OURS: Final = (f"ours-{HANDSHAKE}", f"ours-{STATELESS}")
SDK_MODES: Final = ("sdk-legacy", "sdk-default")
SAME_ERA: Final = {OURS[0]: "sdk-legacy", OURS[1]: "sdk-default"}  # the SDK row each of ours faces


class Workload(NamedTuple):
    """One way of reaching the SDK server: its transport and its command-line flags."""

    transport: str  # "http" or "stdio"
    server_args: tuple[str, ...]


WORKLOADS: Final[Mapping[str, Workload]] = {
    "http-json": Workload("http", ("--transport", "streamable-http", "--json-response")),
    "http-sse": Workload("http", ("--transport", "streamable-http")),
    "stdio": Workload("stdio", ()),
}

# Calls per timed round, rounds per worker, untimed calls before them; passes interleave.
SIZES: Final = {
    "full": {"warmup": 200, "calls": 300, "rounds": 3, "passes": 3},
    "quick": {"warmup": 100, "calls": 200, "rounds": 2, "passes": 1},
}
PROFILE_CALLS: Final = 2000
CPU_FACTOR: Final = 3.0  # the target: at least this much less client CPU per call than the SDK


class Column(NamedTuple):
    """One metric of the table."""

    key: str
    title: str
    fmt: str


COLUMNS: Final = (
    Column("protocol", "protocol", "{}"),
    Column("calls_s", "calls/s", "{:,.0f}"),
    Column("seq_cpu_us", "CPU us/call", "{:,.0f}"),
    Column("seq_wall_us", "wall us/call", "{:,.0f}"),
)
RATIOS: Final = (Column("seq_cpu_us", "CPU", "{:.2f}x"), Column("calls_s", "calls/s", "{:.2f}x"))


# ------------------------------------------------------------------- servers


@contextlib.contextmanager
def http_servers(names: Sequence[str], cpu: int | None) -> Iterator[dict[str, str]]:
    """Run one SDK server per HTTP workload in ``names`` (pinned to ``cpu``); yield their URLs."""
    with contextlib.ExitStack() as stack:
        urls: dict[str, str] = {}
        for name in names:
            workload = WORKLOADS[name]
            if workload.transport != "http":
                continue
            port = free_port()
            command, args = sdk_server("sdk_server", *workload.server_args, "--port", str(port))
            with pinned(cpu):  # the server inherits the affinity
                urls[name] = stack.enter_context(running_http_server(command, args, None, port, "/mcp"))
        yield urls


def plan_for(name: str, urls: Mapping[str, str], size: Mapping[str, int], pin: int | None) -> Plan:
    """The worker plan of workload ``name``."""
    workload = WORKLOADS[name]
    if workload.transport == "http":
        target = [urls[name]]
    else:
        command, args = sdk_server("sdk_server", *workload.server_args)
        target = [command, *args]
    return {"transport": workload.transport, "target": target, "warmup": size["warmup"],
            "calls": size["calls"], "rounds": size["rounds"], "pin": -1 if pin is None else pin,
            "profile_out": ""}


# ------------------------------------------------------------------- measuring


def measure(workloads: Sequence[str], clients: Sequence[str], urls: Mapping[str, str],
            size: Mapping[str, int], pin: int | None) -> tuple[dict[str, dict[str, Results]],
                                                               dict[str, dict[str, list[Results]]]]:
    """Every client on every workload, ``size["passes"]`` times, interleaved so that a busy
    spell hits them alike; returns the merged rows and every pass's rows."""
    runs: dict[str, dict[str, list[Results]]] = {w: {c: [] for c in clients} for w in workloads}
    for n in range(size["passes"]):
        for workload in workloads:
            plan = json.dumps(plan_for(workload, urls, size, pin))
            for client in clients:
                print(f"  pass {n + 1}/{size['passes']}: {workload} {client} ...",
                      file=sys.stderr, flush=True)
                result = run_json(["http_clients.py", client, plan])
                runs[workload][client].append(
                    {k: v for k, v in result.items() if v is None or isinstance(v, float | str)})
    merged: dict[str, dict[str, Results]] = {}
    for workload, by_client in runs.items():
        merged[workload] = {}
        for client, passes in by_client.items():
            row = merge_passes(passes)
            wall = num(row, "seq_wall_us")
            row["calls_s"] = 1e6 / wall if wall else None
            merged[workload][client] = row
    return merged, runs


SSE_LINE: Final = re.compile(
    r"(?P<ends>\S+) (?P<mb>\d+) MB, (?P<events>\d+) events: SseParser\s+(?P<ours>[\d.]+) MB/s"
    r" \| httpx-sse\s+(?P<httpx>[\d.]+) MB/s \| bytes\.split\s+(?P<split>[\d.]+) MB/s")


def sse_parsers() -> tuple[str, dict[str, dict[str, float]]]:
    """Run ``bench_sse.py``; its output and, per line-end style, MB/s of each parser."""
    output = run_script(["bench_sse.py"])
    rates = {m["ends"]: {"SseParser": float(m["ours"]), "httpx-sse": float(m["httpx"]),
                         "bytes.split": float(m["split"])}
             for m in SSE_LINE.finditer(output)}
    return output, rates


# ---------------------------------------------------------------------- output


def table(results: Mapping[str, Mapping[str, Results]]) -> None:
    """One table: absolute numbers, then CPU and calls/s relative to each SDK mode."""
    headers = [c.title for c in COLUMNS]
    headers += [f"{r.title} / {sdk.removeprefix('sdk-')}" for r in RATIOS for sdk in SDK_MODES]
    rows = []
    for workload, by_client in results.items():
        for client, row in by_client.items():
            cells = [cell(row.get(c.key), c.fmt) for c in COLUMNS]
            for r in RATIOS:
                for sdk in SDK_MODES:
                    ref = by_client.get(sdk, {})
                    cells.append(cell(ratio(row.get(r.key), ref.get(r.key)), r.fmt))
            rows.append((f"{workload} {client}", cells))
    print_table("Sequential tools/call echo against the official SDK server (client CPU only, best round;"
                " ratios = value / SDK in that mode)", rows, headers)
    print("sdk-legacy = mcp.Client(mode='legacy'), the initialize handshake; sdk-default = mcp.Client()"
          " (mode 'auto'); ours = mcp_sansio_asyncio with ClientConfig(protocol=...)")


def sse_table(rates: Mapping[str, Mapping[str, float]]) -> None:
    """MB/s of each SSE parser, per line-end style."""
    parsers = ("SseParser", "httpx-sse", "bytes.split")
    rows = [(ends, [*(f"{by[p]:.1f}" for p in parsers), f"{by['SseParser'] / by['httpx-sse']:.2f}x"])
            for ends, by in rates.items()]
    print_table("SSE parser, ~50 MB of MCP events in 64 KiB chunks (bench_sse.py, MB/s of process CPU)",
                rows, [*(f"{p} MB/s" for p in parsers), "ours / httpx-sse"])


def targets(results: Mapping[str, Mapping[str, Results]]) -> list[Target]:
    """Ours over HTTP: at most a third of the client CPU per call of the SDK in the same era
    (the table also compares each row with the other SDK mode)."""
    out: list[Target] = []
    for workload in ("http-json", "http-sse"):
        by_client = results.get(workload, {})
        for client, sdk in SAME_ERA.items():
            if client in by_client:
                limit = scaled(num(by_client.get(sdk, {}), "seq_cpu_us"), 1 / CPU_FACTOR)
                out.append(Target(f"{workload} {client} CPU <= {sdk}/{CPU_FACTOR:g}",
                                  num(by_client[client], "seq_cpu_us"), "<=", limit))
    return out


def profile(workloads: Sequence[str], clients: Sequence[str], urls: Mapping[str, str],
            server_cpu: int | None, top: int) -> None:
    """cProfile each of our clients on each workload; print the hot spots by self time.

    cProfile times by the wall clock, so the client runs on a CPU other than the server's
    when there is one: on the same CPU, every ``send`` would include the server's turn.
    """
    others = sorted(os.sched_getaffinity(0) - {server_cpu})
    client_cpu = others[0] if others else None
    size = {"warmup": 300, "calls": PROFILE_CALLS, "rounds": 1}
    for workload in workloads:
        for client in clients:
            with scratch_file(".pstats") as out:
                plan: Plan = {**plan_for(workload, urls, size, client_cpu), "profile_out": out}
                run_json(["http_clients.py", client, json.dumps(plan)])
                print_hot_spots(f"{workload} / {client}, {PROFILE_CALLS} calls", out, top)


# ------------------------------------------------------------------------ main


def main(argv: Sequence[str] | None = None) -> None:
    """Measure every client on every workload and print the table (or, with ``--profile``,
    the hot spots of ours)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add_run_options(parser, quick_help="fewer calls, one pass (under 40 s)")
    parser.add_argument("--clients", help=f"comma-separated subset of {','.join(CLIENTS)}")
    parser.add_argument("--workloads", help=f"comma-separated subset of {','.join(WORKLOADS)}")
    parser.add_argument("--no-sse", action="store_true", help="skip the SSE parser benchmark")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile our clients on each workload instead of benchmarking")
    opts = parser.parse_args(argv)
    clients = opts.clients.split(",") if opts.clients else list(CLIENTS)
    workloads = opts.workloads.split(",") if opts.workloads else list(WORKLOADS)
    unknown = (set(clients) - set(CLIENTS)) | (set(workloads) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown clients or workloads: {', '.join(sorted(unknown))}")
    started = time.perf_counter()
    pin, load_before = start_run(opts)
    mode = "quick" if opts.quick else "full"
    with http_servers(workloads, pin) as urls:
        if opts.profile:
            profile(workloads, [c for c in clients if c in OURS], urls, pin, top=30)
            return
        results, passes = measure(workloads, clients, urls, SIZES[mode], pin)
    sse_output, sse_rates = ("", {}) if opts.no_sse else sse_parsers()

    table(results)
    if sse_rates:
        sse_table(sse_rates)
    elif sse_output:  # its format changed: show it as it is
        print(f"\nbench_sse.py:\n{sse_output}")
    goals = targets(results)
    print_targets(goals)
    elapsed = time.perf_counter() - started
    print(f"\n{elapsed:.0f} s; load {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({
                "python": platform.python_version(), "cpus": os.cpu_count(),
                "load": [load_before, os.getloadavg()[0]], "seconds": elapsed, "sizes": SIZES[mode],
                "pinned_cpu": pin, "results": results, "passes": passes,
                "sse_mb_s": sse_rates, "sse_output": sse_output, "targets": targets_json(goals),
            }, f, indent=2)


if __name__ == "__main__":
    main()

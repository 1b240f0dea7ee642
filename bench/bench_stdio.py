"""stdio benchmark: mcp-sansio's drivers against the official SDK and two floors.

Every client talks to the same ``bench/fast_server.py`` and runs in a fresh Python
process of its own (``stdio_clients.py``), so imports and RSS are isolated; decoding is
timed in ``stdio_decode.py``. Reported, per client: RSS of an idle connected session,
import time (median of fresh interpreters), client CPU and wall time per sequential
``tools/call``, calls/s and CPU per call with 32 in flight, MB/s for a 10 MB result;
then decode time per message against raw ``msgspec.json.decode``, and the targets.

Run: ``python bench/bench_stdio.py [--quick] [--json FILE]``; ``--help`` lists the other options.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Final, NamedTuple, cast

if __name__ == "__main__":  # run as a script: make the package ``bench`` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import (
    HERE,
    Results,
    Target,
    add_run_options,
    cell,
    child_env,
    merge_passes,
    num,
    print_hot_spots,
    print_table,
    print_targets,
    ratio,
    run_json,
    scaled,
    scratch_file,
    start_run,
    targets_json,
)
from bench.stdio_clients import ASYNC_CLIENTS, SYNC_CLIENTS, Plan
from bench.stdio_decode import IMPLS, SIZES, DecodePlan

CLIENTS: Final = (*ASYNC_CLIENTS, *SYNC_CLIENTS)
BLOCKING: Final = frozenset(SYNC_CLIENTS)
MB10: Final = 10_000_000

FULL: Final[Plan] = {
    "sections": ["seq", "conc", "big"],
    "seq_warmup": 500, "seq_calls": 500, "seq_rounds": 4,
    "conc_warmup": 3200, "conc_calls": 4096, "conc_rounds": 3,
    "big_bytes": MB10, "big_rounds": 3, "profile": "", "profile_out": "", "pin": -1,
}
QUICK: Final[Plan] = {
    **FULL, "seq_warmup": 200, "seq_calls": 250, "seq_rounds": 3,
    "conc_warmup": 640, "conc_calls": 2048, "conc_rounds": 2, "big_rounds": 2,
}
DECODE_FULL: Final[DecodePlan] = {"messages": {"small": 20000, "64k": 2000}, "rounds": 3}
DECODE_QUICK: Final[DecodePlan] = {"messages": {"small": 3200, "64k": 320}, "rounds": 2}
IMPORT_RUNS: Final = {"full": 7, "quick": 3}
PASSES: Final = {"full": 3, "quick": 1}  # runs of every client, interleaved; the best is kept
HIGHER_IS_BETTER: Final = ("conc_calls_s", "big_mb_s")

# What each client must import, timed in a fresh interpreter; drivers must export connect_stdio.
IMPORTS: Final[Mapping[str, str]] = {
    "sdk": "import mcp.client.session",
    "asyncio": "from mcp_sansio_asyncio import connect_stdio",
    "anyio-asyncio": "from mcp_sansio_anyio import connect_stdio",
    "anyio-trio": "from mcp_sansio_anyio import connect_stdio",
    "sync": "from mcp_sansio_sync import connect_stdio",
    "floor": "import asyncio, msgspec",
    "blocking-floor": "import selectors, subprocess, msgspec",
}


class Column(NamedTuple):
    """One metric of the client table."""

    key: str
    title: str
    fmt: str


COLUMNS: Final = (
    Column("rss_mb", "RSS MB", "{:.1f}"),
    Column("rss_net_mb", "RSS net MB", "{:.1f}"),
    Column("import_ms", "import ms", "{:.1f}"),
    Column("seq_cpu_us", "seq CPU us", "{:.1f}"),
    Column("seq_wall_us", "seq wall us", "{:.1f}"),
    Column("conc_calls_s", "32-fl calls/s", "{:,.0f}"),
    Column("conc_cpu_us", "32-fl CPU us", "{:.1f}"),
    Column("big_mb_s", "10MB MB/s", "{:.0f}"),
    Column("big_cpu_ms", "10MB CPU ms", "{:.1f}"),
)


def import_ms(statement: str, runs: int) -> float | None:
    """Median milliseconds ``statement`` takes in a fresh interpreter (``None`` if it fails)."""
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    samples: list[float] = []
    for i in range(runs + 1):  # the first run may compile bytecode: not counted
        proc = subprocess.run([sys.executable, "-c", code], cwd=HERE, env=child_env(),
                              capture_output=True, text=True, check=False)
        if proc.returncode:
            return None
        if i:
            samples.append(float(proc.stdout) * 1e3)
    return statistics.median(samples)


def floor_of(client: str) -> str:
    """The floor a client is compared with: the blocking one for blocking clients."""
    return "blocking-floor" if client in BLOCKING else "floor"


# ---------------------------------------------------------------------- output


def client_tables(clients: Mapping[str, Results]) -> None:
    """Absolute numbers, then ratios to the SDK and to the floor."""
    live = {name: r for name, r in clients.items() if "skipped" not in r}
    headers = [c.title for c in COLUMNS]
    print_table("Clients (absolute; CPU = client process only, best round)",
                [(n, [cell(r.get(c.key), c.fmt) for c in COLUMNS]) for n, r in live.items()], headers)
    for label, ref_of in (("SDK", lambda _: "sdk"), ("floor*", floor_of)):
        rows = []
        for name, r in live.items():
            ref = live.get(ref_of(name), {})
            rows.append((name, [cell(ratio(r.get(c.key), ref.get(c.key)), "{:.2f}x") for c in COLUMNS]))
        print_table(f"Ratio to {label} (value / reference)", rows, headers)
    print("* floor = the asyncio floor for async clients, the blocking floor for blocking ones")
    for name, r in clients.items():
        if "skipped" in r:
            print(f"skipped {name}: {r['skipped']}")


def decode_table(decode: Mapping[str, Mapping[str, float]]) -> None:
    """Microseconds per message and the ratio to raw msgspec."""
    raw = decode.get("raw", {})
    headers = [h for s in SIZES for h in (f"{s} us/msg", f"{s} / raw")]
    rows = []
    for impl, values in decode.items():
        cells = []
        for size in SIZES:
            value = values.get(f"{size}_us")
            cells += [cell(value, "{:.2f}"), cell(ratio(value, raw.get(f"{size}_us")), "{:.2f}x")]
        rows.append((impl, cells))
    print_table("Decode one tools/call response (small = echo reply, 64k = 64 KiB text)", rows, headers)


def targets(clients: Mapping[str, Results], decode: Mapping[str, Mapping[str, float]]) -> list[Target]:
    """The goals of the brief, for each of our async drivers measured and the sync one."""
    sdk, floor = clients.get("sdk", {}), clients.get("floor", {})
    out: list[Target] = []
    for name in ("asyncio", "anyio-asyncio", "anyio-trio"):
        ours = clients.get(name, {})
        if "skipped" in ours or not ours:
            continue
        sdk_import = num(sdk, "import_ms")
        out += [
            Target(f"{name}: seq CPU/call <= 1.3x floor", num(ours, "seq_cpu_us"), "<=",
                   scaled(num(floor, "seq_cpu_us"), 1.3)),
            Target(f"{name}: 32-in-flight calls/s >= 8x SDK", num(ours, "conc_calls_s"), ">=",
                   scaled(num(sdk, "conc_calls_s"), 8)),
            Target(f"{name}: 10 MB MB/s >= 5x SDK", num(ours, "big_mb_s"), ">=",
                   scaled(num(sdk, "big_mb_s"), 5)),
            Target(f"{name}: import <= SDK/8 and <= 65 ms", num(ours, "import_ms"), "<=",
                   min(65.0, sdk_import / 8) if sdk_import is not None else 65.0),
            Target(f"{name}: RSS <= SDK/3", num(ours, "rss_mb"), "<=", scaled(num(sdk, "rss_mb"), 1 / 3)),
            Target(f"{name}: RSS net <= SDK's/3", num(ours, "rss_net_mb"), "<=",
                   scaled(num(sdk, "rss_net_mb"), 1 / 3)),
        ]
    core, raw = decode.get("core", {}), decode.get("raw", {})
    for size in SIZES:
        key = f"{size}_us"
        out.append(Target(f"core decode ({size}) <= 1.5x raw msgspec", core.get(key), "<=",
                          scaled(raw.get(key), 1.5)))
    sync = clients.get("sync", {})
    if sync and "skipped" not in sync:
        out.append(Target("sync: seq CPU/call <= 50 us", num(sync, "seq_cpu_us"), "<=", 50.0))
    return out


# --------------------------------------------------------------------- profile


def profile(plan: Plan, clients: Sequence[str], top: int) -> None:
    """cProfile each of our clients on each workload; print the hot spots by self time."""
    for name in clients:
        for section in plan["sections"]:
            if section == "conc" and name in BLOCKING:
                continue
            with scratch_file(".pstats") as out:
                one: Plan = {**plan, "sections": [section], "profile": section, "profile_out": out,
                             "seq_calls": 2000, "seq_rounds": 1, "conc_calls": 8192, "conc_rounds": 1,
                             "big_rounds": 1}
                result = run_json(["stdio_clients.py", name, json.dumps(one)])
                if "skipped" in result:
                    print(f"\nskipped {name}: {result['skipped']}")
                    break
                print_hot_spots(f"{name} / {section}", out, top)
    print("\n=== import time of mcp_sansio_asyncio (python -X importtime, top self times)")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import mcp_sansio_asyncio"],
                          cwd=HERE, env=child_env(), capture_output=True, text=True, check=False)
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            rows.append((int(parts[0]), int(parts[1]), parts[2].rstrip()))
    for self_us, cumulative_us, module in sorted(rows, reverse=True)[:top]:
        print(f"  self {self_us / 1e3:7.1f} ms  cumulative {cumulative_us / 1e3:7.1f} ms  {module}")


# ------------------------------------------------------------------------ main


def measure_clients(
    chosen: Sequence[str], plan: Plan, passes: int, seq_cpu: int | None
) -> tuple[dict[str, Results], dict[str, list[Results]]]:
    """Every client ``passes`` times, interleaved so that a busy spell hits them alike;
    returns the merged rows and every pass's rows.

    With ``seq_cpu``, the sequential workload runs in a worker of its own, pinned with its
    server to that CPU: the ping-pong then never waits for an idle core to wake up, whose
    cost varies several-fold with the machine's state and is not the client's.
    """
    if seq_cpu is None:
        workers = [plan]
    else:
        workers = [{**plan, "sections": ["seq"], "pin": seq_cpu},
                   {**plan, "sections": [s for s in plan["sections"] if s != "seq"]}]
    runs: dict[str, list[Results]] = {name: [] for name in chosen}
    for n in range(passes):
        for name in chosen:
            if runs[name] and "skipped" in runs[name][0]:
                continue
            print(f"  pass {n + 1}/{passes}: {name} ...", file=sys.stderr, flush=True)
            row: Results = {}
            for worker in workers:
                result = run_json(["stdio_clients.py", name, json.dumps(worker)])
                row.update({k: v for k, v in result.items() if v is None or isinstance(v, float | str)})
            runs[name].append(row)
    return {name: merge_passes(r, HIGHER_IS_BETTER) for name, r in runs.items()}, runs


def main(argv: Sequence[str] | None = None) -> None:
    """Measure every client and print the tables (or, with ``--profile``, the hot spots)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add_run_options(parser, quick_help="fewer iterations (under 30 s)")
    parser.add_argument("--clients", help=f"comma-separated subset of {','.join(CLIENTS)}")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile our drivers on each workload instead of benchmarking")
    opts = parser.parse_args(argv)
    plan = QUICK if opts.quick else FULL
    chosen = opts.clients.split(",") if opts.clients else list(CLIENTS)
    unknown = set(chosen) - set(CLIENTS)
    if unknown:
        parser.error(f"unknown clients: {', '.join(sorted(unknown))}")
    started = time.perf_counter()
    seq_cpu, load_before = start_run(opts)
    if opts.profile:
        ours = [c for c in chosen if c not in ("sdk", "floor", "blocking-floor")]
        profile(plan, ours, top=25)
        return

    mode = "quick" if opts.quick else "full"
    clients, passes = measure_clients(chosen, plan, PASSES[mode], seq_cpu)
    for name in chosen:
        if "skipped" not in clients[name]:
            clients[name]["import_ms"] = import_ms(IMPORTS[name], IMPORT_RUNS[mode])
    decode_plan = DECODE_QUICK if opts.quick else DECODE_FULL
    decode: dict[str, dict[str, float]] = {}
    for impl in IMPLS:
        print(f"  decoding with {impl} ...", file=sys.stderr, flush=True)
        measured = run_json(["stdio_decode.py", impl, json.dumps(decode_plan)])
        decode[impl] = {k: float(v) for k, v in measured.items() if isinstance(v, int | float)}
    base_rss = float(cast(float, run_json(["stdio_clients.py", "baseline", "{}"])["rss_mb"]))
    for row in clients.values():
        rss = row.get("rss_mb")
        if isinstance(rss, float):
            row["rss_net_mb"] = rss - base_rss

    client_tables(clients)
    print(f"RSS net = RSS minus that of the bench worker connected to nothing ({base_rss:.1f} MB,"
          " no asyncio)")
    decode_table(decode)
    goals = targets(clients, decode)
    print_targets(goals)
    elapsed = time.perf_counter() - started
    print(f"\n{elapsed:.0f} s; load {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({
                "python": platform.python_version(), "cpus": os.cpu_count(),
                "load": [load_before, os.getloadavg()[0]], "seconds": elapsed, "plan": plan,
                "decode_plan": decode_plan, "clients": clients, "passes": passes, "decode_us": decode,
                "baseline_rss_mb": base_rss,
                "targets": targets_json(goals),
            }, f, indent=2)


if __name__ == "__main__":
    main()

"""What the stdio and HTTP benchmarks share: measuring inside a worker, running workers,
merging passes, and printing tables and targets.

Worker side (a client measured in a fresh process): :func:`cpu_seconds`, :class:`Round`,
:func:`sequential`, :func:`record_seq`, the text checks. Orchestrator side:
:data:`MALLOC_ENV`, :func:`child_env`, :func:`run_json`, :func:`merge_passes`,
:func:`print_table`, :class:`Target`. Nothing here imports a client library.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Final, NamedTuple, Protocol, TypeVar

if TYPE_CHECKING:
    import cProfile

HERE: Final = os.path.dirname(os.path.abspath(__file__))
ROOT: Final = os.path.dirname(HERE)
ECHO_ARGS: Final[dict[str, object]] = {"message": "hello world"}

Call = Callable[[str, dict[str, object]], Awaitable[str]]
Results = dict[str, float | str | None]
Pick = Callable[[list[float]], float]

# ------------------------------------------------------------------ measuring (worker side)


def cpu_seconds() -> float:
    """User + system CPU time of this process (the client only: a server is a child or a peer)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Round:
    """Times one round (client CPU and wall clock); cProfiles it into ``profile_out`` if given."""

    def __init__(self, profile_out: str | None = None) -> None:
        self._profiler: cProfile.Profile | None = None
        if profile_out:
            import cProfile

            self._profiler = cProfile.Profile()
        self._out = profile_out
        self.cpu = self.wall = self._cpu0 = self._wall0 = 0.0

    def __enter__(self) -> Round:
        if self._profiler is not None:
            self._profiler.enable()
        self._cpu0, self._wall0 = cpu_seconds(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall0
        self.cpu = cpu_seconds() - self._cpu0
        if self._profiler is not None and self._out:
            self._profiler.disable()
            self._profiler.dump_stats(self._out)


def per_call(rounds: Sequence[Round], calls: int, pick: Pick) -> tuple[float, float]:
    """(CPU, wall) seconds per call of the rounds, each picked by ``pick`` (min or median)."""
    return pick([r.cpu for r in rounds]) / calls, pick([r.wall for r in rounds]) / calls


# The best round (noise on a shared machine only adds) and, as ``*_median``, the median.
PICKS: Final[tuple[tuple[str, Pick], ...]] = (("", min), ("_median", statistics.median))


def record_seq(out: Results, rounds: Sequence[Round], calls: int) -> None:
    """Store ``seq_cpu_us`` and ``seq_wall_us`` per call (best round, and the medians)."""
    if not rounds:
        return
    for suffix, pick in PICKS:
        cpu, wall = per_call(rounds, calls, pick)
        out[f"seq_cpu_us{suffix}"], out[f"seq_wall_us{suffix}"] = cpu * 1e6, wall * 1e6


async def sequential(call: Call, *, warmup: int, calls: int, rounds: int,
                     profile_out: str | None = None) -> list[Round]:
    """``warmup`` untimed echo calls, then ``rounds`` timed rounds of ``calls`` one at a time."""
    for _ in range(warmup):
        await call("echo", ECHO_ARGS)
    timed: list[Round] = []
    for _ in range(rounds):
        with Round(profile_out) as r:
            for _ in range(calls):
                await call("echo", ECHO_ARGS)
        timed.append(r)
    return timed


def check_text(text: str, size: int) -> None:
    """Fail loudly if a tool answered something other than ``size`` characters."""
    if len(text) != size:
        raise RuntimeError(f"wrong tool result: {text[:80]!r}... ({len(text)} chars, expected {size})")


class _HasText(Protocol):
    @property
    def text(self) -> str: ...


T = TypeVar("T", bound=_HasText)


def first_text(content: Sequence[object], kind: type[T]) -> str:
    """The text of a tool result's first content block, which must be a ``kind``.

    Raises:
        TypeError: the first block is not text.
    """
    block = content[0]
    if not isinstance(block, kind):
        raise TypeError(f"expected text, got {block!r}")
    return block.text


class ToolResult(Protocol):
    """What our drivers' ``call_tool`` returns (a ``CallToolResult``)."""

    @property
    def content(self) -> Sequence[object]: ...


def sansio_text_getter() -> Callable[[ToolResult], str]:
    """``first_text`` for our results (imports ``mcp_sansio`` only when called)."""
    from mcp_sansio.types import TextContent

    def text_of(result: ToolResult) -> str:
        return first_text(result.content, TextContent)

    return text_of


# ------------------------------------------------------------------ running workers


# asyncio reads pipes 256 KiB at a time. With glibc's defaults such a buffer is mmapped
# (above the 128 KiB threshold) or, once the threshold has risen, taken from the heap top
# and trimmed back on free: either way syscalls and page faults on every read, 10-20 us
# per call, on or off depending on the process's malloc history. Fixed thresholds take
# that lottery out of every worker alike (--default-malloc shows the untuned numbers).
MALLOC_ENV: Final = {"MALLOC_MMAP_THRESHOLD_": str(1 << 20), "MALLOC_TRIM_THRESHOLD_": str(8 << 20)}


def child_env() -> dict[str, str]:
    """The environment of every worker: the repo and the drivers importable, and bytecode
    cached (outside the tree), as it is for installed packages: compiling our modules
    anew in every process, as PYTHONDONTWRITEBYTECODE would, doubles their import time."""
    path = os.pathsep.join([ROOT, os.path.join(ROOT, "drivers")])
    old = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": f"{path}{os.pathsep}{old}" if old else path,
           "PYTHONPYCACHEPREFIX": os.path.join(tempfile.gettempdir(), "mcp-sansio-bench-pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_script(args: Sequence[str]) -> str:
    """Run a script in bench/ in the workers' environment and return what it printed.

    Raises:
        RuntimeError: it failed or printed nothing (the message quotes its stderr).
    """
    proc = subprocess.run([sys.executable, *args], cwd=HERE, env=child_env(),
                          capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode or not proc.stdout.strip():
        raise RuntimeError(f"{' '.join(args[:2])} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def run_json(args: Sequence[str]) -> dict[str, object]:
    """Run a worker script in bench/ and return the JSON object it printed last."""
    result: dict[str, object] = json.loads(run_script(args).strip().splitlines()[-1])
    return result


@contextlib.contextmanager
def pinned(cpu: int | None) -> Iterator[None]:
    """Run the block (and the processes it starts, which inherit it) on ``cpu`` alone."""
    if cpu is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextlib.contextmanager
def scratch_file(suffix: str) -> Iterator[str]:
    """The path of a temporary file (for a worker to write), removed after the block."""
    with tempfile.NamedTemporaryFile(suffix=suffix, delete=False) as tmp:
        path = tmp.name
    try:
        yield path
    finally:
        os.unlink(path)


def print_hot_spots(title: str, pstats_file: str, top: int) -> None:
    """The ``top`` functions of a cProfile dump by self time."""
    print(f"\n=== profile: {title} (cProfile, sorted by self time)")
    pstats.Stats(pstats_file).sort_stats("tottime").print_stats(top)


def add_run_options(parser: argparse.ArgumentParser, quick_help: str) -> None:
    """The options every benchmark takes: ``--quick``, ``--json``, ``--unpinned``, ``--default-malloc``."""
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--unpinned", action="store_true",
                        help="do not pin the sequential workload (and its server) to one CPU")
    parser.add_argument("--default-malloc", action="store_true",
                        help="leave glibc's dynamic mmap threshold alone (see MALLOC_ENV)")


def start_run(opts: argparse.Namespace) -> tuple[int | None, float]:
    """Apply the run options, print what the run is; returns (the pinned CPU or None, load)."""
    if not opts.default_malloc:
        os.environ.update(MALLOC_ENV)  # for the workers: child_env() copies os.environ
    seq_cpu = None if opts.unpinned else max(os.sched_getaffinity(0))
    load = os.getloadavg()[0]
    mode = "quick" if opts.quick else "full"
    pinning = "seq unpinned" if seq_cpu is None else f"seq pinned to CPU {seq_cpu}"
    malloc = "glibc malloc defaults" if opts.default_malloc else "malloc thresholds fixed (MALLOC_ENV)"
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, "
          f"load {load:.2f}; {mode} run; {pinning}; {malloc}")
    if load > 1.0:
        print("warning: the machine is busy; the numbers will be noisy")
    return seq_cpu, load


def merge_passes(passes: Sequence[Results], higher_is_better: tuple[str, ...] = ()) -> Results:
    """One row from several passes of a client: the best value of each metric (the noise
    of a shared machine only ever makes a number worse), the median of the medians.
    Keys starting with one of ``higher_is_better`` keep the maximum, the others the minimum."""
    if any("skipped" in p for p in passes):
        return dict(passes[0])
    merged: Results = {}
    for key in passes[0]:
        values = [v for p in passes if isinstance(v := p.get(key), int | float)]
        if not values:
            last = passes[-1].get(key)
            merged[key] = last if isinstance(last, str) else None
        elif key.endswith("_median"):
            merged[key] = statistics.median(values)
        else:
            merged[key] = max(values) if key.startswith(higher_is_better) else min(values)
    return merged


# ---------------------------------------------------------------------- output


def ratio(value: object, ref: object) -> float | None:
    """``value / ref`` when both are numbers."""
    if isinstance(value, int | float) and isinstance(ref, int | float) and ref:
        return value / ref
    return None


def num(results: Mapping[str, object], key: str) -> float | None:
    """``results[key]`` if it is a number."""
    value = results.get(key)
    return float(value) if isinstance(value, int | float) else None


def scaled(value: float | None, factor: float) -> float | None:
    """``value * factor``, or ``None``."""
    return None if value is None else value * factor


def cell(value: object, fmt: str) -> str:
    """A number formatted with ``fmt``, ``n/a`` for ``None``, anything else as text."""
    if value is None:
        return "n/a"
    if isinstance(value, int | float):
        return fmt.format(value)
    return str(value)


def print_table(title: str, rows: Sequence[tuple[str, Sequence[str]]], headers: Sequence[str]) -> None:
    """A plain fixed-width table."""
    widths = [max(len(h), *(len(r[1][i]) for r in rows)) for i, h in enumerate(headers)]
    name_w = max(16, *(len(r[0]) for r in rows))
    print(f"\n{title}")
    print(" " * name_w + "".join(f"  {h:>{w}}" for h, w in zip(headers, widths, strict=True)))
    for name, cells in rows:
        print(f"{name:<{name_w}}" + "".join(f"  {c:>{w}}" for c, w in zip(cells, widths, strict=True)))


class Target(NamedTuple):
    """One goal: ``value`` compared with ``limit`` (``<=`` or ``>=``)."""

    name: str
    value: float | None
    op: str
    limit: float | None

    @property
    def verdict(self) -> str:
        """PASS, FAIL or n/a."""
        if self.value is None or self.limit is None:
            return "n/a"
        ok = self.value <= self.limit if self.op == "<=" else self.value >= self.limit
        return "PASS" if ok else "FAIL"


def print_targets(goals: Sequence[Target]) -> None:
    """One line per goal with its verdict."""
    print("\nTargets")
    for t in goals:
        value = "n/a" if t.value is None else f"{t.value:,.1f}"
        limit = "n/a" if t.limit is None else f"{t.limit:,.1f}"
        print(f"  {t.verdict:<4}  {t.name:<46} {value:>10} {t.op} {limit}")


def targets_json(goals: Sequence[Target]) -> list[dict[str, object]]:
    """The goals with their verdicts, for ``--json``."""
    return [{**t._asdict(), "verdict": t.verdict} for t in goals]


OTEL_ENV: Final = "MCP_SANSIO_BENCH_OTEL"
"""Set in a worker's environment to configure OpenTelemetry's SDK before it connects:
``sdk`` (a global tracer provider with an in-memory exporter behind a simple span
processor, and a meter provider with an in-memory reader: every span and metric
recorded), ``sampled-out`` (the same, with a sampler that records no span: propagation
and metrics only), ``metrics`` (the meter provider alone); unset, nothing is configured
(the drivers' telemetry is off)."""


def configure_otel_from_env() -> None:
    """Configure the OpenTelemetry SDK as :data:`OTEL_ENV` asks (see there)."""
    mode = os.environ.get(OTEL_ENV)
    if mode not in ("sdk", "sampled-out", "metrics"):
        return
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased

    if mode != "metrics":
        provider = TracerProvider(sampler=ParentBased(ALWAYS_OFF) if mode == "sampled-out" else None)
        provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
        trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))

"""Hostile-server mode's I/O: start the client under test, be the server it starts, pace
the scenario's bytes, watch the client (exit, time, memory) and judge it.

Over stdio the client is told how to start its server in ``MCP_FUZZ_SERVER_COMMAND`` (a
shell-quoted command line), ``MCP_FUZZ_SERVER_ARGV`` (a JSON list) and any ``{server}`` in
its own command line; that server is :mod:`mcp_sansio_fuzz.relay`, which joins its stdio to
a Unix socket this process serves. ``MCP_FUZZ_CLIENT_TIMEOUT`` is the per-request timeout
the client is asked to use: past twice that (plus 5 s) it counts as hung. Use from a
client's test suite::

    from mcp_sansio_fuzz import ClientFuzzer, Options
    report = ClientFuzzer("python my_client.py", Options(seed=1, budget=120)).run()
    assert not report.findings, report.findings
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import selectors
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from mcp_sansio.framing import LineBuffer
from mcp_sansio.fuzz.hostile import SCENARIOS, ClientOutcome, Emit, HostileServer, judge_client
from mcp_sansio.fuzz.rng import Rng
from mcp_sansio.fuzz.rules import RULES, Finding
from mcp_sansio.fuzz.trace import dump_trace

from . import relay as _relay_module
from .connections import TargetUnavailable, rss_of, session_members
from .hostile_http import serve_hostile
from .model import Options, Report, ReportedFinding, Stats

__all__ = ["BUDGET_USED", "ClientFuzzer", "run_scenario"]

BUDGET_USED: Final = 0.97
"""The share of ``Options.budget`` the scenarios may use (the rest: the report)."""

_OUTPUT_TAIL: Final = 8192
_MAX_CLIENT_LINE: Final = 64 << 20
_HIGH_WATER: Final = 4 << 20
_SAMPLE_EVERY: Final = 0.1


class _Pacer:
    """Emits in flight: what is due to be written, without building huge outputs at once."""

    def __init__(self) -> None:
        self._queue: list[tuple[float, Emit, int]] = []  # (due, emit, offset or times left)

    def add(self, emits: list[Emit], now: float) -> None:
        for emit in emits:
            self._queue.append((now + emit.delay, emit, 0))

    def take(self, now: float, room: int) -> bytes:
        """Bytes due by ``now``, at most about ``room``."""
        out = bytearray()
        keep: list[tuple[float, Emit, int]] = []
        for due, emit, done in self._queue:
            if due > now or len(out) >= room:
                keep.append((due, emit, done))
                continue
            whole = emit.data + (b"\n" if emit.newline else b"")
            if emit.drip:
                out += whole[done : done + emit.drip]
                if done + emit.drip < len(whole):
                    keep.append((now + emit.every, emit, done + emit.drip))
            else:
                out += whole
                if done + 1 < emit.times:
                    keep.append((now + emit.every, emit, done + 1))
            if emit.drip == 0 and emit.every == 0 and done + 1 < emit.times:
                keep[-1] = (now, emit, done + 1)
        self._queue = keep
        return bytes(out)

    def next_due(self) -> float | None:
        return min((due for due, _, _ in self._queue), default=None)


def run_scenario(
    command: str,
    scenario: str,
    rng: Rng,
    *,
    size: int | None = None,
    timeout: float = 5.0,
    memory_limit: int = 128 << 20,
    until: float | None = None,
    log: Callable[[str, bytes], None] | None = None,
    transport: str = "stdio",
) -> tuple[ClientOutcome, list[Finding]]:
    """Run the client ``command`` once against the hostile ``scenario``, over ``stdio``
    (the client starts the server) or ``http`` (the client is given its URL).

    Raises:
        TargetUnavailable: the client cannot be started.
    """
    server = HostileServer(scenario, rng, size)
    deadline = time.monotonic() + 2 * timeout + 5.0
    if until is not None:
        deadline = min(deadline, until)
    if transport == "http":
        return _run_http(command, server, timeout, memory_limit, deadline)
    with _listener() as (listener, path):
        relay = [sys.executable, str(Path(_relay_module.__file__).resolve()), path]
        argv = [part.replace("{server}", shlex.join(relay)) for part in shlex.split(command)]
        env = {
            **os.environ,
            "MCP_FUZZ_SERVER_COMMAND": shlex.join(relay),
            "MCP_FUZZ_SERVER_ARGV": json.dumps(relay),
            "MCP_FUZZ_CLIENT_TIMEOUT": f"{timeout:g}",
        }
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        except OSError as exc:
            raise TargetUnavailable(f"cannot start {argv[0] if argv else command!r}: {exc}") from exc
        started = time.monotonic()
        try:
            return _watch(proc, listener, server, started, deadline, timeout, memory_limit, log)
        finally:
            _kill(proc)


def _start(command: str, server_ref: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    argv = [part.replace("{server}", server_ref) for part in shlex.split(command)]
    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **env},
        )
    except (OSError, IndexError) as exc:
        raise TargetUnavailable(f"cannot start {command!r}: {exc}") from exc


def _run_http(
    command: str, server: HostileServer, timeout: float, memory_limit: int, deadline: float
) -> tuple[ClientOutcome, list[Finding]]:
    stop = threading.Event()
    with serve_hostile(server, stop) as url:
        env = {"MCP_FUZZ_SERVER_URL": url, "MCP_FUZZ_CLIENT_TIMEOUT": f"{timeout:g}"}
        proc = _start(command, url, env)
        started = time.monotonic()
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)
        output = bytearray()
        base = growth = 0
        try:
            while proc.poll() is None and time.monotonic() < deadline:
                ready, _, _ = select.select([proc.stdout], [], [], 0.1)
                if ready:
                    with contextlib.suppress(BlockingIOError):
                        output += os.read(proc.stdout.fileno(), 1 << 16)
                        del output[:-_OUTPUT_TAIL]
                if server.requests:  # from the session's start
                    rss = sum(rss_of(pid) for pid, _ in session_members(proc.pid))
                    base = base or rss
                    growth = max(growth, rss - base)
            returncode = proc.poll()
            elapsed = time.monotonic() - started
            with contextlib.suppress(BlockingIOError, ValueError, OSError):
                output += os.read(proc.stdout.fileno(), 1 << 16)
        finally:
            stop.set()
            _kill(proc)
    return _judged(server, returncode, elapsed, timeout, growth, output, server.sent, memory_limit)


@contextlib.contextmanager
def _listener() -> Iterator[tuple[socket.socket, str]]:
    with tempfile.TemporaryDirectory(prefix="mcp-fuzz-") as scratch:
        path = str(Path(scratch) / "server.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(1)
        listener.setblocking(False)
        try:
            yield listener, path
        finally:
            listener.close()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    for pid, _ in session_members(proc.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    if proc.stdout is not None:
        proc.stdout.close()


def _watch(
    proc: subprocess.Popen[bytes],
    listener: socket.socket,
    server: HostileServer,
    started: float,
    deadline: float,
    timeout: float,
    memory_limit: int,
    log: Callable[[str, bytes], None] | None,
) -> tuple[ClientOutcome, list[Finding]]:
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(proc.stdout, selectors.EVENT_READ, "output")
    conn: socket.socket | None = None
    lines = LineBuffer(_MAX_CLIENT_LINE)
    pacer = _Pacer()
    pending = bytearray()
    output = bytearray()
    base = 0
    growth = 0
    written = 0
    last_sample = 0.0
    while proc.poll() is None and time.monotonic() < deadline:
        now = time.monotonic()
        if conn is not None and len(pending) < _HIGH_WATER:
            chunk = pacer.take(now, _HIGH_WATER)
            if chunk:
                pending += chunk
                if log is not None:
                    log("send", chunk)
        wants = selectors.EVENT_READ | (selectors.EVENT_WRITE if pending else 0)
        if conn is not None:
            selector.modify(conn, wants, "conn")
        due = pacer.next_due()
        wait = 0.05 if due is None else max(0.0, min(0.05, due - now))
        for key, mask in selector.select(wait):
            if key.data == "accept":
                with contextlib.suppress(BlockingIOError):
                    conn, _ = listener.accept()
                    conn.setblocking(False)
                    selector.unregister(listener)
                    selector.register(conn, selectors.EVENT_READ, "conn")
            elif key.data == "output":
                with contextlib.suppress(BlockingIOError):
                    data = os.read(proc.stdout.fileno(), 1 << 16)
                    if not data:
                        selector.unregister(proc.stdout)
                    output += data
                    del output[:-_OUTPUT_TAIL]
            elif conn is not None and mask & selectors.EVENT_WRITE and pending:
                try:
                    sent = conn.send(pending[: 1 << 20])
                except BlockingIOError:
                    sent = 0
                except OSError:  # the client (its relay) hung up: nothing more reaches it
                    pending.clear()
                    sent = 0
                del pending[:sent]
                written += sent
            if key.data == "conn" and mask & selectors.EVENT_READ and conn is not None:
                try:
                    data = conn.recv(1 << 16)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                received = lines.feed(data) if data else lines.close()
                if not data:
                    selector.unregister(conn)
                    conn.close()
                    conn = None
                for line in received:
                    if log is not None:
                        log("recv", line)
                    pacer.add(server.receive(line), time.monotonic())
        if conn is not None and now - last_sample >= _SAMPLE_EVERY:  # from the session's start
            last_sample = now
            rss = sum(rss_of(pid) for pid, _ in session_members(proc.pid))
            if rss:
                base = base or rss
                growth = max(growth, rss - base)
    returncode = proc.poll()
    elapsed = time.monotonic() - started
    if conn is not None:
        conn.close()
    with contextlib.suppress(BlockingIOError, ValueError, OSError):
        output += os.read(proc.stdout.fileno(), 1 << 16)
    selector.close()
    return _judged(server, returncode, elapsed, timeout, growth, output, written, memory_limit)


def _judged(server: HostileServer, returncode: int | None, elapsed: float, timeout: float, growth: int,
            output: bytes | bytearray, sent: int, memory_limit: int) -> tuple[ClientOutcome, list[Finding]]:
    """What the client under test did in ``server``'s scenario, and the findings about it."""
    outcome = ClientOutcome(
        returncode=returncode,
        elapsed=elapsed,
        timeout=timeout,
        rss_growth=growth,
        output=bytes(output[-_OUTPUT_TAIL:]).decode(errors="replace"),
        after_version=server.after_version,
        lists=server.lists,
        initializes=server.initializes,
        sent=sent,
    )
    return outcome, judge_client(server.scenario.name, outcome, memory_limit)


def transport_fits(http_only: bool, transport: str) -> bool:
    """Whether a scenario runs over ``transport``."""
    return transport == "http" or not http_only


def _verdict(outcome: ClientOutcome, findings: list[Finding]) -> str:
    if findings:
        return ", ".join(sorted({f.rule.removeprefix("client-") for f in findings}))
    return "handled" if outcome.returncode == 0 else f"refused (exit {outcome.returncode})"


class ClientFuzzer:
    """Hostile-server mode against one client program.

    Args:
        command: the client's command line (``{server}`` in it is replaced by the server
            command it must start; the environment says the same).
        options: seed, budget, memory bound (per client), where traces go.
        timeout: the per-request timeout the client is asked to use (its own; the
            fuzzer only tells it).
        scenarios: which scenarios (default: all, in a seeded order).
    """

    def __init__(
        self,
        command: str,
        options: Options,
        *,
        timeout: float = 5.0,
        scenarios: list[str] | None = None,
        transport: str = "stdio",
    ) -> None:
        self.command = command
        self.options = options
        self.timeout = timeout
        self.scenarios = scenarios
        self.stats = Stats()
        self.outcomes: dict[str, str] = {}  # scenario -> what the client did
        self.transport = transport

    @staticmethod
    def scenario_time(timeout: float) -> float:
        """The time one scenario may take with a client whose per-request timeout is
        ``timeout`` (twice that, plus 5 s): a scenario starts only while that much of the
        budget (``BUDGET_USED`` of it) is left."""
        return 2 * timeout + 5.0

    def run(self) -> Report:
        """Every scenario the budget allows; findings shrunk by halving each scenario's size.

        Raises:
            TargetUnavailable: the client cannot be started.
            ValueError: the budget is too short for one scenario (a report of nothing would
                pass for a clean run).
        """
        need = self.scenario_time(self.timeout)
        if self.options.budget * BUDGET_USED < need:
            raise ValueError(f"a budget of {self.options.budget:g} s runs no scenario: each may take "
                             f"{need:g} s (twice the client timeout, plus 5 s)")
        start = time.monotonic()
        end = start + self.options.budget * BUDGET_USED
        rng = Rng(self.options.seed)
        names = list(
            self.scenarios or [n for n, s in SCENARIOS.items() if transport_fits(s.http_only, self.transport)]
        )
        order = rng.fork("order")
        names = (
            [names.pop(order.below(len(names))) for _ in range(len(names))] if not self.scenarios else names
        )
        found: list[ReportedFinding] = []
        for name in names:
            if end - time.monotonic() < need:
                self.stats.covered[name] = 0
                continue
            self.stats.current = name
            log: list[tuple[str, float, bytes]] = []
            t0 = time.monotonic()
            kept = [0]

            def record(
                direction: str,
                data: bytes,
                log: list[tuple[str, float, bytes]] = log,
                t0: float = t0,
                kept: list[int] = kept,
            ) -> None:
                if kept[0] < 1 << 20:  # the trace keeps the first MiB of the exchange
                    log.append((direction, time.monotonic() - t0, data[:4096]))
                    kept[0] += min(len(data), 4096)

            outcome, findings = run_scenario(
                self.command,
                name,
                rng.fork(name),
                timeout=self.timeout,
                memory_limit=self.options.memory_limit,
                until=end,
                log=record,
                transport=self.transport,
            )
            self.stats.cases += 1
            self.stats.requests += sum(1 for d, _, _ in log if d == "recv")
            self.stats.surface[name] = 1
            self.stats.covered[name] = 1
            self.stats.current = f"{name}: {_verdict(outcome, findings)}"
            self.outcomes[name] = _verdict(outcome, findings)
            seen = time.monotonic() - start
            for finding in findings:
                size = self._shrink(name, finding, end)
                found.append(self._reported(finding, name, size, log, seen))
        self.stats.elapsed = time.monotonic() - start
        self.stats.findings = len(found)
        return Report(
            target=self.command,
            transport="client" if self.transport == "stdio" else "client-http",
            version=None,
            seed=self.options.seed,
            duration=self.stats.elapsed,
            stats=self.stats,
            findings=found,
        )

    def _shrink(self, name: str, finding: Finding, end: float) -> int | None:
        """The smallest size (halving) at which the same rule still fires."""
        size = SCENARIOS[name].size or None
        if size is None or finding.rule in ("client-memory",):
            return size
        for _ in range(3):
            if end - time.monotonic() < 2 * self.scenario_time(self.timeout):
                break
            smaller = max(1, size // 2)
            _, again = run_scenario(
                self.command,
                name,
                Rng(self.options.seed).fork(name),
                size=smaller,
                timeout=self.timeout,
                memory_limit=self.options.memory_limit,
                until=end,
                transport=self.transport,
            )
            if not any(f.rule == finding.rule for f in again):
                break
            size = smaller
        return size

    def _reported(
        self, finding: Finding, name: str, size: int | None, log: list[tuple[str, float, bytes]], when: float
    ) -> ReportedFinding:
        out = Path(self.options.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"client-{name}-{finding.rule}.jsonl"
        header = {
            "mode": "client",
            "transport": self.transport,
            "rule": finding.rule,
            "scenario": name,
            "size": size,
            "seed": self.options.seed,
            "timeout": self.timeout,
            "memory_limit": self.options.memory_limit,
            "message": finding.message,
            "spec": RULES[finding.rule].spec,
            "target": self.command,
        }
        body = [
            json.dumps({"dir": d, "t": round(t, 6), "text": data.decode(errors="replace")})
            for d, t, data in log
        ]
        path.write_bytes(dump_trace(header, []) + "".join(line + "\n" for line in body).encode())
        return ReportedFinding(
            rule=finding.rule,
            level=RULES[finding.rule].level,
            method=name,
            message=finding.message,
            spec=RULES[finding.rule].spec,
            trace=str(path),
            steps=size or 1,
            time=round(when, 3),
        )

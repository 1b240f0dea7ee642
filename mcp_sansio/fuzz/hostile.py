"""Hostile-server mode: the fuzzer plays a malicious or broken MCP server, and judges the
client that connects to it.

A client program under test runs one fixed script (``initialize``, ``tools/list``,
``tools/call echo``, then exit; any client's own test program will do). Each
:data:`SCENARIOS` entry answers that script as a well-behaved server would, except for one
hostile turn: invalid UTF-8, a line that never ends, a version no revision has, endless
cursors, a drip of progress, a flood of server requests, wrong ids, duplicate answers,
huge or deep JSON, a slow drip of bytes, non-JSON output. :class:`HostileServer` turns the
client's messages into :class:`Emit` values (bytes, and how to pace them); the runner moves
them. :func:`judge_client` turns what the client did (:class:`ClientOutcome`) into
findings: it crashed, hung past its own timeout, grew its memory without bound, raised an
untyped error, or kept talking after a version it cannot support. ``size`` is each
scenario's one knob (bytes, messages), which the shrinker halves. No I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec

from ..versions import LATEST_VERSION, VERSIONS
from .case import encode
from .rng import Rng
from .rules import Finding
from .wire import decode_json

__all__ = ["SCENARIOS", "ClientOutcome", "Emit", "HostileServer", "Scenario", "judge_client"]


class Emit(msgspec.Struct, frozen=True, kw_only=True):
    """Bytes for the client: ``data`` (a newline follows unless ``newline`` is false),
    written ``drip`` bytes at a time every ``every`` seconds (0: at once), ``times`` times
    (``every`` apart), after ``delay`` seconds."""

    data: bytes
    newline: bool = True
    drip: int = 0
    every: float = 0.0
    times: int = 1
    delay: float = 0.0


class Scenario(msgspec.Struct, frozen=True, kw_only=True):
    """One hostile turn: its ``name``, what it does (``summary``), the default ``size``
    (``0``: none to shrink) and whether a client should stop with an error (``refuse``)
    rather than finish its script."""

    name: str
    summary: str
    size: int = 0
    refuse: bool = False
    http_only: bool = False


SCENARIOS: Final = {
    s.name: s
    for s in (
        Scenario(
            name="invalid-utf8", summary="a notification with invalid UTF-8 before the tools/list answer"
        ),
        Scenario(
            name="unbounded-line",
            summary="a tools/list answer that is one line of `size` bytes and never ends",
            size=384 << 20,
        ),
        Scenario(
            name="unsupported-version",
            summary='initialize answered with protocolVersion "1999-01-01"',
            refuse=True,
        ),
        Scenario(name="endless-cursor", summary="tools/list always has the same nextCursor", size=1000),
        Scenario(name="progress-drip", summary="tools/call never answered; progress every 50 ms", size=2000),
        Scenario(
            name="request-flood", summary="`size` ping requests before the tools/list answer", size=20_000
        ),
        Scenario(name="wrong-id", summary="tools/call answered with another id (and as a string)"),
        Scenario(name="duplicate-answer", summary="tools/list answered twice"),
        Scenario(name="huge-json", summary="a tools/list answer of `size` bytes (valid JSON)", size=48 << 20),
        Scenario(name="deep-json", summary="a tools/list answer nested `size` levels deep", size=100_000),
        Scenario(name="slow-drip", summary="the initialize answer one byte every 20 ms", size=20),
        Scenario(name="not-json", summary="a line of plain text before the initialize answer"),
        Scenario(
            name="session-expiry",
            summary="HTTP: every request after initialize gets 404 (the session expired, again and again)",
            http_only=True,
        ),
    )
}

_ECHO: Final = {
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}
_BAD_VERSION: Final = "1999-01-01"


def _result(rid: object, result: object) -> bytes:
    return encode({"jsonrpc": "2.0", "id": rid, "result": result})


class HostileServer:
    """The server side of one scenario run.

    Args:
        scenario: a :data:`SCENARIOS` name.
        size: the scenario's knob (default: the scenario's own).
        rng: the run's generator (ids and bytes that vary with the seed).
    """

    def __init__(self, scenario: str, rng: Rng, size: int | None = None) -> None:
        self.scenario = SCENARIOS[scenario]
        self.size = self.scenario.size if size is None else size
        self._rng = rng
        self.after_version = 0  # messages the client sent after an unsupported version
        self.lists = 0  # tools/list requests seen
        self.initializes = 0  # initialize requests seen
        self.requests = 0  # HTTP requests seen (HTTP only)
        self.sent = 0  # bytes written (HTTP only; over stdio the runner counts)
        self._refused_version = False

    def receive(self, data: bytes) -> list[Emit]:
        """What to send after the client's message ``data`` (one line)."""
        message = decode_json(data)
        if not isinstance(message, dict):
            return []
        if self._refused_version:
            self.after_version += 1
        method, rid = message.get("method"), message.get("id")
        if not isinstance(method, str) or "id" not in message:
            return []  # a notification, or the client's answer to our request
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "initialize":
            self.initializes += 1
            return self._initialize(rid, params)
        if method == "tools/list":
            self.lists += 1
            return self._list(rid)
        if method == "tools/call":
            return self._call(rid, params)
        if method == "ping":
            return [Emit(data=_result(rid, {}))]
        error = {"code": -32601, "message": f"no method {method}"}
        return [Emit(data=encode({"jsonrpc": "2.0", "id": rid, "error": error}))]

    def _initialize(self, rid: object, params: Mapping[str, object]) -> list[Emit]:
        asked = params.get("protocolVersion")
        version = asked if isinstance(asked, str) and asked in VERSIONS else LATEST_VERSION
        name = self.scenario.name
        if name == "unsupported-version":
            version = _BAD_VERSION
            self._refused_version = True
        answer = _result(
            rid,
            {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"mcp-sansio-hostile-{name}", "version": "1"},
            },
        )
        if name == "slow-drip":
            return [Emit(data=answer, drip=1, every=self.size / 1000)]
        if name == "not-json":
            return [Emit(data=b"hello from a server that forgot stdout is the protocol"), Emit(data=answer)]
        return [Emit(data=answer)]

    def _list(self, rid: object) -> list[Emit]:
        name = self.scenario.name
        page: dict[str, object] = {"tools": [_ECHO]}
        if name == "invalid-utf8":
            bad = bytes([0xFF, 0xFE, 0x80 + self._rng.below(0x40)])
            note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'
            return [Emit(data=note + bad + b'"}}'), Emit(data=_result(rid, page))]
        if name == "unbounded-line":
            head = b'{"jsonrpc":"2.0","id":' + encode(rid) + b',"result":{"tools":[],"fuzz":"'
            chunk = 1 << 20
            return [
                Emit(data=head, newline=False),
                Emit(data=b"a" * chunk, newline=False, times=max(1, self.size // chunk)),
            ]
        if name == "endless-cursor":
            page["nextCursor"] = "fuzz-again"
            return [Emit(data=_result(rid, page))] if self.lists <= self.size else []
        if name == "request-flood":
            floods = [
                Emit(
                    data=b"".join(
                        encode({"jsonrpc": "2.0", "id": f"flood-{i}", "method": "ping"}) + b"\n"
                        for i in range(start, min(start + 1000, self.size))
                    ),
                    newline=False,
                )
                for start in range(0, self.size, 1000)
            ]
            return [*floods, Emit(data=_result(rid, page))]
        if name == "duplicate-answer":
            return [Emit(data=_result(rid, page)), Emit(data=_result(rid, page))]
        if name == "huge-json":
            blob = {**_ECHO, "description": "d" * self.size}
            return [Emit(data=_result(rid, {"tools": [blob]}))]
        if name == "deep-json":
            deep = b"[" * self.size + b"]" * self.size
            return [
                Emit(
                    data=_result(rid, {"tools": [_ECHO], "_meta": {"fuzz": "\x00DEEP\x00"}}).replace(
                        b'"\\u0000DEEP\\u0000"', deep
                    )
                )
            ]
        return [Emit(data=_result(rid, page))]

    def _call(self, rid: object, params: Mapping[str, object]) -> list[Emit]:
        name = self.scenario.name
        arguments = params.get("arguments")
        text = arguments.get("text") if isinstance(arguments, dict) else None
        answer = {"content": [{"type": "text", "text": str(text)}]}
        if name == "progress-drip":
            meta = params.get("_meta")
            token = meta.get("progressToken") if isinstance(meta, dict) else None
            progress: dict[str, object] = {
                "progressToken": token if token is not None else "fuzz",
                "progress": 1,
            }
            note = encode({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
            return [Emit(data=note, every=0.05, times=self.size)]
        if name == "wrong-id":
            other: object = str(rid) if isinstance(rid, int) else 10_000 + self._rng.below(1000)
            return [Emit(data=_result(other, answer)), Emit(data=_result(987_654_321, answer))]
        return [Emit(data=_result(rid, answer))]


class ClientOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What the client did in one scenario.

    Attributes:
        returncode: its exit status (negative: a signal), ``None`` if it was still running
            at the deadline (then killed).
        elapsed: seconds from its start to its exit (or the deadline).
        timeout: the per-request timeout it was told to use.
        rss_growth: how far its resident memory grew over the first sample, in bytes.
        output: the tail of its stdout and stderr.
        after_version: messages it sent after an unsupported version was answered.
        lists: ``tools/list`` requests it sent.
        initializes: ``initialize`` requests it sent.
        sent: bytes the hostile server wrote to it.
    """

    returncode: int | None
    elapsed: float
    timeout: float
    rss_growth: int = 0
    output: str = ""
    after_version: int = 0
    lists: int = 0
    initializes: int = 0
    sent: int = 0


_WEDGES: Final = ("invalid-utf8", "not-json")  # a valid answer follows the bad line
_LINE_EVIDENCE: Final = 8 << 20  # a line limit, if any, is below this


def _crashed(output: str) -> bool:
    """Whether the output ends in an uncaught exception's report (Python or Node), not in a
    report the program printed itself after catching the error."""
    lines = output.rstrip().splitlines()
    if lines and lines[-1].startswith("Node.js v"):
        return True
    marker = output.rfind("Traceback (most recent call last)")
    if marker < 0:
        return False
    after = output[marker:].rstrip().splitlines()[1:]
    return bool(after) and all(line.startswith((" ", "\t")) or not line.strip() for line in after[:-1])


def judge_client(scenario: str, outcome: ClientOutcome, memory_limit: int) -> list[Finding]:
    """Findings about a client's behaviour in ``scenario``."""
    out: list[Finding] = []

    def add(rule: str, message: str) -> None:
        out.append(Finding(rule=rule, method=scenario, message=message))

    tail = (outcome.output.strip().splitlines()[-1:] or [""])[0][:200]
    failed = outcome.returncode is not None and outcome.returncode != 0
    if outcome.returncode is None:
        add(
            "client-hung",
            f"still running {outcome.elapsed:.1f} s in, past its own {outcome.timeout:g} s timeout",
        )
    elif outcome.returncode < 0:
        add("client-crashed", f"killed by signal {-outcome.returncode}: {tail}")
    elif failed and _crashed(outcome.output):
        add("client-crashed", f"exit status {outcome.returncode} with an unhandled exception: {tail}")
    elif failed and scenario in _WEDGES:
        add("client-wedged", f"one bad line stopped the valid answer after it from arriving: {tail}")
    if failed and "ExceptionGroup" in outcome.output:
        add("client-untyped-error", f"the error was an exception group, not one typed error: {tail}")
    unbounded = scenario == "unbounded-line" and outcome.sent >= _LINE_EVIDENCE
    if unbounded and outcome.rss_growth >= outcome.sent // 2:
        add(
            "client-memory",
            f"held {outcome.rss_growth >> 20} MiB growing on one unterminated line ({outcome.sent >> 20} MiB "
            "of it read without refusing it: no line length limit)",
        )
    elif outcome.rss_growth > memory_limit:
        add(
            "client-memory",
            f"resident memory grew by {outcome.rss_growth >> 20} MiB (bound: +{memory_limit >> 20} MiB)",
        )
    if scenario == "unsupported-version" and outcome.after_version:
        add(
            "client-kept-unsupported-version",
            f"{outcome.after_version} message(s) sent after the server answered {_BAD_VERSION!r}",
        )
    if scenario == "session-expiry" and outcome.initializes > 10:
        add(
            "client-reinit-loop", f"{outcome.initializes} initialize requests: each new session expired again"
        )
    if scenario == "endless-cursor" and outcome.lists > 100:
        add("client-endless-pagination", f"{outcome.lists} tools/list requests following one repeated cursor")
    return out

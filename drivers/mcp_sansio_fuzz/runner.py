"""The fuzz loop: open connections, send the planner's cases, judge them, shrink what
fails and write the reproducers.

Everything protocol-shaped is decided by the core (``mcp_sansio.fuzz``): the planner
makes the steps, the oracles judge the records, the shrinker picks what to retry. This
module moves bytes, keeps time, samples memory and counts processes. The same seed gives
the same sequence of inputs; the time budget only decides where it stops.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import msgspec

from mcp_sansio.fuzz.case import Case, CaseStep, Check, Replies
from mcp_sansio.fuzz.latency import Latency
from mcp_sansio.fuzz.oracles import judge
from mcp_sansio.fuzz.peer import answer_id
from mcp_sansio.fuzz.plan import Planner
from mcp_sansio.fuzz.plan_http import http_cases, http_fresh_cases
from mcp_sansio.fuzz.records import Context, HttpAnswer, Received, Record, Sent, TimedOut, id_key, loose_id
from mcp_sansio.fuzz.rng import Rng
from mcp_sansio.fuzz.rules import RULES, Finding
from mcp_sansio.fuzz.run_oracles import judge_children, judge_memory
from mcp_sansio.fuzz.shrink import ddmin
from mcp_sansio.fuzz.surface import LIST_METHODS, Surface
from mcp_sansio.fuzz.trace import dump_trace
from mcp_sansio.fuzz.wire import result_of
from mcp_sansio.urls import parse_url
from mcp_sansio.versions import LATEST_VERSION, MODERN_VERSIONS, rules_for

from .connections import Connection, HttpConnection, StdioConnection, TargetUnavailable
from .execute import execute
from .model import Options, Report, ReportedFinding, Stats, Target, load_schema

__all__ = ["Fuzzer"]

_MAX_HISTORY: Final = 400
_MAX_MEMORY_STEPS: Final = 20_000  # what a memory-growth reproducer may replay
_MAX_MEMORY_BYTES: Final = 64 << 20
_RSS_EVERY: Final = 0.25
_TIMING: Final = frozenset({"no-response", "ping-unanswered"})  # replayed with the spec'd timeouts
_BUDGET_SLACK: Final = 0.04  # of the budget, kept for closing the server and writing the report


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:40] or "run"


class Fuzzer:
    """One fuzzing run against one target.

    Args:
        target: the server.
        options: seed, era, budget and output directory.
        progress: called with the live counters after every case.
    """

    def __init__(
        self, target: Target, options: Options, progress: Callable[[Stats], None] | None = None
    ) -> None:
        self.target = target
        self.options = options
        self.progress = progress
        self.stats = Stats()
        self.findings: dict[tuple[str, str | None, str], ReportedFinding] = {}
        self.unconfirmed: dict[tuple[str, str | None, str], ReportedFinding] = {}
        self.version: str | None = None
        self.schema: dict[str, object] | None = None
        self.surface = Surface()
        self._start = 0.0
        self._end = 0.0
        self._shrinking = 0.0  # seconds spent shrinking so far
        self.latency = Latency()
        self._sent: list[CaseStep] = []  # every step sent on the open connection (memory reproducers)
        self._sent_bytes = 0
        self._samples: list[tuple[float, int]] = []
        self._last_sample = 0.0
        self._conn: Connection | None = None
        self._history: list[CaseStep] = []
        self._ids: set[tuple[str, object]] = set()
        self._tokens: set[tuple[str, object]] = set()
        self._opening: list[CaseStep] = []  # how the open connection was opened: every reproducer's prefix
        self._over_memory = False
        self._gone = False  # the server can no longer be reached: the run ends

    # -- the run ------------------------------------------------------------------
    def run(self) -> Report:
        """Fuzz until the budget is spent; never raises for the server's behaviour.

        Raises:
            TargetUnavailable: the server cannot be started or reached, or never
                completed the opening handshake.
        """
        self._start = time.monotonic()
        self._end = self._start + self.options.budget * (1 - _BUDGET_SLACK)
        rng = Rng(self.options.seed)
        try:
            planner = self._open_main(rng)
            http = self.target.transport == "http"
            other = tuple((k.lower(), v) for k, v in self.options.other_headers.items())
            fresh = planner.fresh_cases()
            fresh += planner.input_cases(self.surface)
            # One round on the open session first (the surface finds most bugs, and a fresh
            # connection costs a process start on stdio), then the fresh cases, then more rounds.
            rounds = 0
            if http:  # over HTTP a fresh connection costs no process: the transport's own probes first
                for case in http_fresh_cases(planner, other):
                    if not self._over():
                        self._fresh(case, planner)
            while not self._over():
                for case in (self._http_cases(planner) if http else []) + planner.cases(self.surface):
                    if self._over():
                        break
                    self._case(case, planner)
                rounds += 1
                for case in fresh if rounds == 1 else []:
                    if self._over():
                        break
                    self._fresh(case, planner)
        finally:
            self._grace()
            self._close_main()
        self._memory()
        self.stats.elapsed = time.monotonic() - self._start
        return Report(
            target=self.target.name,
            transport=self.target.transport,
            version=self.version,
            seed=self.options.seed,
            duration=self.stats.elapsed,
            stats=self.stats,
            findings=sorted(self.findings.values(), key=lambda f: f.time),
            unconfirmed=sorted(self.unconfirmed.values(), key=lambda f: f.time),
        )

    def _http_cases(self, planner: Planner) -> list[Case]:
        auth = any(k.lower() == "authorization" for k in self.target.headers)
        endpoint = parse_url(self.target.url or "http://localhost/").target.split("?")[0]
        return http_cases(planner, self.surface, auth=auth, endpoint=endpoint)

    def _over(self) -> bool:
        return self._gone or time.monotonic() >= self._end

    def _settle(self) -> float:
        """How long to wait at a case's end for answers still due."""
        bound = self.latency.bound()
        return 5.0 if bound is None else min(5.0, bound)

    def _versions(self) -> list[str]:
        era = self.options.era
        if era == "auto":
            return [LATEST_VERSION, *MODERN_VERSIONS]
        if rules_for(era) is None:
            raise TargetUnavailable(f"unknown era {era!r}")
        return [era]

    def _open_main(self, rng: Rng) -> Planner:
        """Connect, open the session in the first version that works, list the surface."""
        problems = []
        for version in self._versions():
            planner = Planner(rng.fork(version), version, ping_timeout=self.options.ping_timeout)
            conn = self.target.connect()
            opening = planner.opening()
            records = execute(conn, opening, self._sample, settle=0.0, until=self._end)
            answer = _result_of(opening[0], records)
            if isinstance(answer, dict):
                negotiated = answer.get("protocolVersion")
                if isinstance(negotiated, str) and negotiated != version and rules_for(negotiated):
                    planner.version = negotiated
                    planner.rules = rules_for(negotiated)  # type: ignore[assignment]  # checked just above
                self._conn = conn
                self.version = planner.version
                self.schema = load_schema(planner.version)
                if isinstance(conn, HttpConnection) and planner.rules.protocol_version_header:
                    conn.protocol_version = planner.version
                self._remember(opening)
                self._opening = list(opening)
                self._sent = list(opening)
                self._judge(Case(name="opening", steps=tuple(opening)), records, initialized=False)
                caps = answer.get("capabilities")
                self.surface.capabilities = caps if isinstance(caps, dict) else {}
                self._discover(planner)
                return planner
            problems.append(f"{version}: {_refusal(opening[0], records, conn.stderr_tail())}")
            conn.close()
        raise TargetUnavailable("the server did not open a session (" + "; ".join(problems) + ")")

    def _discover(self, planner: Planner) -> None:
        """Every page of every list the server offers, as one case per list: a cursor is
        followed once (the oracles flag one that comes back), at most 20 pages."""
        for method in LIST_METHODS:
            if not self.surface.offers(method):
                continue
            followed: set[str] = set()

            def more(
                step: CaseStep, answer: bytes, method: str = method, followed: set[str] = followed
            ) -> list[CaseStep]:
                cursor = self.surface.learn(method, result_of(answer))
                if cursor is None or cursor in followed or len(followed) >= 19:
                    return []
                followed.add(cursor)
                return [msgspec.structs.replace(planner.list_page(method, cursor), follow=True)]

            first = msgspec.structs.replace(planner.list_page(method, None), follow=True)
            self._run_steps(Case(name=f"discover {method}", steps=(first,)), follow=more)
        self.stats.surface = {
            "tools": len(self.surface.tools),
            "resources": len(self.surface.resources),
            "templates": len(self.surface.templates),
            "prompts": len(self.surface.prompts),
        }

    def _context(
        self, initialized: bool = True, earlier: frozenset[tuple[str, object]] = frozenset()
    ) -> Context:
        tools = {str(t.get("name")): t for t in self.surface.tools}
        return Context(
            version=self.version or LATEST_VERSION,
            schema=self.schema,
            tools=tools,
            initialized=initialized,
            earlier_ids=earlier,
            earlier_tokens=frozenset(self._tokens) if earlier else frozenset(),
            stdio=self.target.transport == "stdio",
        )

    def _keep_sent(self, steps: Sequence[CaseStep]) -> None:
        """Keep what was sent on this connection, for a memory-growth reproducer (bounded)."""
        self._sent += steps
        self._sent_bytes += sum(len(s.data) for s in steps)
        while len(self._sent) > _MAX_MEMORY_STEPS or self._sent_bytes > _MAX_MEMORY_BYTES:
            self._sent_bytes -= len(self._sent.pop(len(self._opening)).data)

    def _remember(self, steps: Sequence[CaseStep]) -> None:
        self._history = (self._history + list(steps))[-_MAX_HISTORY:]
        self._ids |= {id_key(s.id) for s in steps if s.id is not None}
        self._tokens |= {id_key(s.progress_token) for s in steps if s.progress_token is not None}

    def _run_steps(
        self, case: Case, follow: Callable[[CaseStep, bytes], list[CaseStep]] | None = None
    ) -> list[Record]:
        conn = self._conn
        assert conn is not None
        self.stats.current = case.name
        earlier = frozenset(self._ids)
        steps = list(case.steps)
        records = execute(
            conn,
            steps,
            self._sample,
            settle=self._settle(),
            follow=follow,
            wait=self.latency.wait,
            until=self._end,
        )
        if len(steps) != len(case.steps):
            case = msgspec.structs.replace(case, steps=tuple(steps))
        if isinstance(conn, HttpConnection):
            conn.cancel_open(time.monotonic())
        self.latency.learn(steps, records)
        self._remember(case.steps)
        self._keep_sent(case.steps)
        self.stats.requests += sum(1 for r in records if isinstance(r, Sent))
        self.stats.cases += 1
        self._judge(case, records, initialized=True, earlier=earlier)
        if self.progress is not None:
            self.stats.elapsed = time.monotonic() - self._start
            self.progress(self.stats)
        return records

    def _case(self, case: Case, planner: Planner) -> None:
        for step in case.steps:
            if step.method and step.method not in ("ping", "notifications/cancelled"):
                key = step.tool or step.method
                self.stats.covered[key] = self.stats.covered.get(key, 0) + 1
        if self._conn is None or not self._conn.alive():
            self._restart(planner)
            if self._gone or self._conn is None:
                return
        records = self._run_steps(case)
        stalled = any(isinstance(r, TimedOut) and case.steps[r.step].check is Check.PING for r in records)
        if stalled and self.target.transport == "stdio":  # a stalled server would stall every later case
            self._restart(planner)
        if self._over_memory:  # judge now, and stop the server before it eats the machine
            self._memory()
            self._over_memory = False
            self._samples = []
            self._restart(planner)

    def _restart(self, planner: Planner) -> None:
        self._close_main()
        if self._over():
            return
        self.stats.restarts += 1
        try:
            conn = self.target.connect()
        except TargetUnavailable:
            self._gone = True
            return
        opening = planner.opening()
        records = execute(conn, opening, settle=0.0, until=self._end)
        if _result_of(opening[0], records) is None:  # it will not come back (an HTTP server died)
            conn.close()
            self._gone = True
            return
        if isinstance(conn, HttpConnection) and planner.rules.protocol_version_header:
            conn.protocol_version = planner.version
        self._conn = conn
        self._history = []
        self._opening = list(opening)
        self._sent, self._sent_bytes = list(opening), sum(len(s.data) for s in opening)
        self._ids = set()
        self._tokens = set()
        self._samples = []
        self._remember(opening)

    def _close_main(self) -> None:
        self._grace()
        if self._conn is not None:
            leftover = self._conn.close()
            self._conn = None
            for finding in judge_children(leftover):
                self._report(finding, list(self._history), None)

    def _grace(self) -> None:
        """Near the end of the budget, a server gets little time to exit."""
        if isinstance(self._conn, StdioConnection):
            self._conn.grace = max(0.2, min(self._conn.grace, self._end - time.monotonic()))

    def _fresh(self, case: Case, planner: Planner) -> None:
        conn = self.target.connect()
        conn.replies = case.replies
        self.stats.current = case.name
        steps = list(case.steps)
        records = execute(
            conn,
            steps,
            follow=planner.follow_up,
            wait=self.latency.wait,
            settle=self._settle(),
            until=self._end,
        )
        if isinstance(conn, StdioConnection):
            conn.grace = max(0.2, min(conn.grace, self._end - time.monotonic()))
        leftover = conn.close()
        self.stats.requests += sum(1 for r in records if isinstance(r, Sent))
        self.stats.cases += 1
        ctx = msgspec.structs.replace(self._context(initialized=False), client_capabilities=case.capabilities)
        for finding in judge(steps, records, ctx):
            self._report(finding, steps, records, case)
        for finding in judge_children(leftover):
            self._report(finding, steps, None, case)

    def _judge(
        self,
        case: Case,
        records: list[Record],
        *,
        initialized: bool,
        earlier: frozenset[tuple[str, object]] = frozenset(),
    ) -> None:
        for finding in judge(case.steps, records, self._context(initialized, earlier)):
            if finding.key() in self.findings:
                self.findings[finding.key()].count += 1
                continue
            prefix = [] if case.fresh else list(self._opening)
            self._report(finding, prefix + list(case.steps), _shift(records, len(prefix)))

    def _sample(self) -> None:
        now = time.monotonic()
        if self._conn is None or now - self._last_sample < _RSS_EVERY:
            return
        self._last_sample = now
        rss = self._conn.rss()
        if rss:
            self._samples.append((now - self._start, rss))
            if rss - self._samples[0][1] > self.options.memory_limit:
                self._over_memory = True

    def _memory(self) -> None:
        for finding in judge_memory(self._samples, self.options.memory_limit):
            self._report(finding, list(self._sent), None)

    # -- findings -----------------------------------------------------------------
    def _report(
        self, finding: Finding, steps: list[CaseStep], records: list[Record] | None, case: Case | None = None
    ) -> None:
        key = finding.key()
        known = self.findings.get(key) or self.unconfirmed.get(key)
        if known is not None:
            known.count += 1
            return
        when = time.monotonic() - self._start
        reproduced: bool | None = True
        if finding.rule not in ("memory-growth", "leftover-process"):
            steps, records, reproduced = self._shrink(finding, steps, records, case)
        rule = RULES[finding.rule]
        path = self._write_trace(finding, steps, records or [], case)
        # A dead server cannot be replayed; a finding seen when the budget left no time to
        # replay it stands as seen (``reproduced`` says it was not replayed).
        confirmed = reproduced is not False or finding.rule == "server-crashed"
        (self.findings if confirmed else self.unconfirmed)[key] = ReportedFinding(
            rule=finding.rule,
            level=rule.level,
            method=finding.method,
            message=finding.message,
            spec=rule.spec,
            trace=path,
            steps=len(steps),
            time=round(when, 3),
            reproduced=reproduced is True,
            cause=finding.cause,
        )
        self.stats.findings = len(self.findings)

    def _shrink(
        self, finding: Finding, steps: list[CaseStep], records: list[Record] | None, case: Case | None
    ) -> tuple[list[CaseStep], list[Record] | None, bool | None]:
        """The smallest reproducer found, its records, and whether it replayed (``None``:
        the budget left no time to try)."""
        replies = case.replies if case is not None else Replies.REFUSE
        ctx = msgspec.structs.replace(
            self._context(initialized=False),
            client_capabilities=case.capabilities if case is not None else {},
        )
        # Each shrink gets a fifth of the budget (at least 3 s, at most 30 s), all of them two
        # fifths: a server with many findings is still fuzzed for the rest.
        budget = self.options.budget
        allowance = min(30.0, max(3.0, budget * 0.2), budget * 0.4 - self._shrinking)
        timing = finding.rule in _TIMING and not finding.conclusive
        if timing:  # silence seen on a learnt wait is confirmed only by a replay with the full one
            allowance = max(allowance, max((s.timeout for s in steps), default=5.0) + 2.0)
        started = time.monotonic()
        deadline = min(started + allowance, self._end)
        if deadline - started < 0.5:
            return steps, records, False if timing else None
        try:
            return self._shrink_until(finding, steps, records, replies, ctx, deadline)
        finally:
            self._shrinking += time.monotonic() - started

    def _shrink_until(
        self,
        finding: Finding,
        steps: list[CaseStep],
        records: list[Record] | None,
        replies: Replies,
        ctx: Context,
        deadline: float,
    ) -> tuple[list[CaseStep], list[Record] | None, bool | None]:
        last: dict[str, list[Record]] = {}

        def fails(candidate: list[CaseStep]) -> bool:
            if not candidate or time.monotonic() > deadline:
                return False
            try:
                conn = self.target.connect()
            except TargetUnavailable:
                return False
            conn.replies = replies
            if isinstance(conn, StdioConnection):  # a replay judges no leftover processes: end it quickly
                conn.grace = max(0.1, min(0.5, deadline - time.monotonic()))
            try:
                got = execute(conn, candidate, settle=1.0, until=deadline)
            finally:
                conn.close()
            ok = any(f.key() == finding.key() for f in judge(candidate, got, ctx))
            if ok:
                last["records"] = got
            elif time.monotonic() >= deadline:
                last["cut"] = []  # the replay ran out of time: no verdict
            return ok

        if not fails(steps):
            timing = finding.rule in _TIMING and not finding.conclusive  # a learnt wait may be short
            return steps, records, None if "cut" in last and not timing else False
        # The last sequence that failed is the one ddmin returns, so ``last`` holds its records.
        small = ddmin(steps, fails, keep=_opening_of(steps), budget=self.options.shrink_tests)
        return small, last.get("records", records), True

    def _write_trace(
        self, finding: Finding, steps: list[CaseStep], records: list[Record], case: Case | None = None
    ) -> str:
        out = Path(self.options.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        number = len(self.findings) + len(self.unconfirmed) + 1
        name = f"{number:02d}-{finding.rule}-{_slug(finding.method or 'run')}.jsonl"
        rule = RULES[finding.rule]
        header = {
            "rule": finding.rule,
            "level": rule.level,
            "method": finding.method,
            "message": finding.message,
            "spec": rule.spec,
            "transport": self.target.transport,
            "target": self.target.name,
            "version": self.version,
            "seed": self.options.seed,
            "replies": (case.replies if case is not None else Replies.REFUSE).value,
            "capabilities": case.capabilities if case is not None else {},
            "cause": finding.cause,
            "memory_limit": self.options.memory_limit,
        }
        usable = (
            records
            if records and max((r.step for r in records if isinstance(r, Sent)), default=-1) < len(steps)
            else []
        )
        path = out / name
        path.write_bytes(dump_trace(header, steps, usable))
        return str(path)


def _shift(records: Sequence[Record], by: int) -> list[Record]:
    """``records`` with their step numbers moved by ``by`` (steps put before the case)."""
    if not by:
        return list(records)
    return [
        msgspec.structs.replace(r, step=r.step + by) if isinstance(r, Sent | HttpAnswer | TimedOut) else r
        for r in records
    ]


def _answer_of(step: CaseStep, records: Sequence[Record]) -> dict[str, object] | None:
    """The message that answered ``step`` in ``records``, if any (an id of the wrong JSON
    type still matches: the oracles blame it, and the run goes on)."""
    if step.id is None:
        return None
    for record in records:
        if not isinstance(record, Received):
            continue
        found, rid = answer_id(record.data)
        if found and (id_key(rid) == id_key(step.id) or loose_id(rid) == loose_id(step.id)):
            message = msgspec.json.decode(record.data)
            return message if isinstance(message, dict) else None
    return None


def _result_of(step: CaseStep, records: Sequence[Record]) -> object:
    """The result that answered ``step`` in ``records``, if any."""
    answer = _answer_of(step, records)
    return None if answer is None else answer.get("result")


def _refusal(step: CaseStep, records: Sequence[Record], stderr: str) -> str:
    """Why the opening ``step`` opened no session: the server's error answer, else the
    end of its stderr, else "no answer"."""
    answer = _answer_of(step, records)
    error = None if answer is None else answer.get("error")
    if isinstance(error, dict):
        code, message = error.get("code"), " ".join(str(error.get("message", "")).split())[:200]
        return f"{step.method} answered error {code}: {message}"
    return stderr.strip()[-300:] or "no answer"


def _opening_of(steps: list[CaseStep]) -> Callable[[CaseStep], bool]:
    """What the shrinker may not remove: the session's opening (the first ``initialize``
    and ``notifications/initialized``). Without it a reproducer could shrink to a request
    that fails for another reason (over HTTP, a session-less ``ping`` is refused)."""
    opening: set[int] = set()
    for method in ("initialize", "notifications/initialized"):
        first = next((step for step in steps if step.method == method), None)
        if first is not None:
            opening.add(id(first))
    return lambda step: id(step) in opening

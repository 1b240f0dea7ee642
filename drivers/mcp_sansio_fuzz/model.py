"""What a fuzz run is given and what it gives back: the target, the options, the report
(findings with their reproducers, live counters), and the bundled revision schemas the
result oracle validates against."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Final

import msgspec

from .connections import Connection, HttpConnection, StdioConnection, TargetUnavailable

__all__ = ["Options", "Report", "ReportedFinding", "Stats", "Target", "load_schema"]

_SCHEMAS: Final = Path(__file__).parent / "schemas"


class Target(msgspec.Struct, frozen=True, kw_only=True):
    """The server under test: a command (stdio) or a URL (Streamable HTTP)."""

    name: str
    argv: tuple[str, ...] = ()
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)

    @classmethod
    def stdio(cls, command: str) -> Target:
        """A target started with a shell-style command line."""
        return cls(name=command, argv=tuple(shlex.split(command)))

    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return "http" if self.url else "stdio"

    def connect(self) -> Connection:
        """A new connection (for stdio: a new server process).

        Raises:
            TargetUnavailable: the command cannot be started, or the URL is not usable.
        """
        if self.url:
            return HttpConnection(self.url, self.headers)
        if not self.argv:
            raise TargetUnavailable("empty command")
        return StdioConnection(self.argv, self.env, self.cwd)


class Options(msgspec.Struct, frozen=True, kw_only=True):
    """How to fuzz: seed, era, time budget, memory bound, where traces go, how many replays
    a shrink may make, how long a liveness ping may take, and (HTTP) the headers of a second
    principal, B, who tries the session of the target's own credentials, A."""

    seed: int = 0
    era: str = "auto"
    budget: float = 60.0
    memory_limit: int = 256 << 20
    out_dir: str = "mcp-sansio-fuzz"
    shrink_tests: int = 16
    ping_timeout: float = 5.0
    other_headers: dict[str, str] = msgspec.field(default_factory=dict)


class ReportedFinding(msgspec.Struct, kw_only=True):
    """A finding as reported: the rule's level and spec sentence, the reproducer's path
    and size, and when it was first seen (seconds into the run)."""

    rule: str
    level: str
    method: str | None
    message: str
    spec: str
    trace: str | None
    steps: int
    time: float
    count: int = 1
    reproduced: bool = True
    cause: str = ""


class Stats(msgspec.Struct, kw_only=True):
    """Live counters for the progress display."""

    requests: int = 0
    cases: int = 0
    findings: int = 0
    restarts: int = 0
    elapsed: float = 0.0
    surface: dict[str, int] = msgspec.field(default_factory=dict)
    covered: dict[str, int] = msgspec.field(default_factory=dict)
    current: str = ""


class Report(msgspec.Struct, kw_only=True):
    """The outcome of a run. ``findings`` replayed from their trace on a fresh server (or
    are facts a replay cannot repeat: a crash, memory, leftover processes); ``unconfirmed``
    ones were seen once but did not happen again in the replay (timing, load, state built
    up over the run): they are listed with their traces, and do not fail the run."""

    target: str
    transport: str
    version: str | None
    seed: int
    duration: float
    stats: Stats
    findings: list[ReportedFinding]
    unconfirmed: list[ReportedFinding] = msgspec.field(default_factory=list)
    error: str | None = None


def load_schema(version: str) -> dict[str, object] | None:
    """The revision's schema document (bundled, descriptions stripped)."""
    path = _SCHEMAS / f"{version}.json"
    if not path.exists():
        return None
    value = json.loads(path.read_text("utf-8"))
    return value if isinstance(value, dict) else None

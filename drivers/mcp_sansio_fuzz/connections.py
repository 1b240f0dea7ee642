"""The I/O half of the fuzzer: one connection to the server under test.

A :class:`StdioConnection` starts the server as a child in its own session (so every
process it starts can be counted, and killed, as a group), writes steps to its stdin
without blocking, splits stdout into lines with the core's ``LineBuffer`` and keeps a
bounded tail of stderr. An :class:`HttpConnection` speaks Streamable HTTP through the
core's ``HttpPool`` (h11) and ``SseParser``, one exchange per step. Both hand the runner
core ``Record`` values; neither judges anything.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import subprocess
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, Protocol

import msgspec

from mcp_sansio.connections import CloseConnection, OpenConnection, SocketFailure, SocketStage, StartTls
from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.framing import LineBuffer
from mcp_sansio.fuzz.case import CaseStep, Expect, Replies
from mcp_sansio.fuzz.peer import reply_for
from mcp_sansio.fuzz.records import HttpAnswer, Received, Record
from mcp_sansio.http11 import (
    ExchangeFailed,
    HttpPool,
    HttpRequest,
    ResponseData,
    ResponseEnded,
    ResponseStarted,
)
from mcp_sansio.sse import SseParser
from mcp_sansio.urls import Url, parse_url
from mcp_sansio_base.failures import socket_failure

__all__ = [
    "Connection",
    "HttpConnection",
    "StdioConnection",
    "TargetUnavailable",
    "rss_of",
    "session_members",
]

MAX_LINE: Final = 64 << 20
STDERR_TAIL: Final = 4096
SEND_TIMEOUT: Final = 5.0
_READ: Final = 1 << 16


class TargetUnavailable(Exception):
    """The server could not be started or reached."""


class Connection(Protocol):
    """One connection to the server under test."""

    replies: Replies

    def send(self, index: int, step: CaseStep, now: float) -> None:
        """Send ``step`` (number ``index`` of the current case)."""

    def poll(self, timeout: float) -> list[Record]:
        """Wait at most ``timeout`` seconds for input; return what arrived."""

    def alive(self) -> bool:
        """Whether the server can still be talked to."""

    def returncode(self) -> int | None:
        """The server's exit status, if it exited."""

    def rss(self) -> int | None:
        """Resident memory of the server's processes in bytes, if measurable."""

    def close(self) -> list[tuple[int, str]]:
        """End the connection (and the server, if we started it); return processes it
        started that outlived it (already killed)."""

    def stderr_tail(self) -> str:
        """The last bytes the server wrote to stderr, for error messages."""


class _Replies:
    """Answers to the server's own requests, some held back (``Replies.LATE``)."""

    def __init__(self) -> None:
        self.replies = Replies.REFUSE
        self._held: list[tuple[float, bytes]] = []

    def _answer(self, data: bytes, now: float) -> None:
        reply = reply_for(data, self.replies)
        if reply is not None:
            self._held.append((now + reply[1], reply[0]))

    def _due(self, now: float) -> list[bytes]:
        due = [data for at, data in self._held if at <= now]
        self._held = [(at, data) for at, data in self._held if at > now]
        return due

    def _wait(self, timeout: float, now: float) -> float:
        """``timeout``, shortened to the next held answer's time."""
        return min([timeout, *(at - now for at, _ in self._held)])


def session_members(sid: int) -> list[tuple[int, str]]:
    """Processes in session ``sid`` (pid and command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                found.append((int(entry.name), cmd))
        except (OSError, ValueError, IndexError):
            continue
    return found


def rss_of(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


class StdioConnection(_Replies):
    """A server started as ``argv`` and spoken to over its stdin and stdout."""

    def __init__(
        self, argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None
    ) -> None:
        super().__init__()
        try:
            self._proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env={**os.environ, **(env or {})},
                cwd=cwd,
            )
        except OSError as exc:
            raise TargetUnavailable(f"cannot start {argv[0]!r}: {exc}") from exc
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            os.set_blocking(stream.fileno(), False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._proc.stdout, selectors.EVENT_READ, "out")
        self._selector.register(self._proc.stderr, selectors.EVENT_READ, "err")
        self._lines = LineBuffer(MAX_LINE)
        self._pending = bytearray()
        self._stderr: deque[bytes] = deque()
        self._stderr_size = 0
        self._eof = False
        self._census: dict[int, str] = {}
        self.grace = 2.0

    def send(self, index: int, step: CaseStep, now: float) -> None:
        """Queue ``step``'s bytes and a newline; written as the server reads."""
        self._pending += step.data + b"\n"
        self._flush()

    def _flush(self) -> None:
        stdin = self._proc.stdin
        if not self._pending or stdin is None or stdin.closed:
            return
        try:
            written = os.write(stdin.fileno(), self._pending[: 1 << 20])
            del self._pending[:written]
        except BlockingIOError:
            pass
        except (BrokenPipeError, OSError):
            self._pending.clear()
        stdin_key = self._selector.get_map().get(stdin.fileno())
        if self._pending and stdin_key is None:
            self._selector.register(stdin, selectors.EVENT_WRITE, "in")
        elif not self._pending and stdin_key is not None:
            self._selector.unregister(stdin)

    def poll(self, timeout: float) -> list[Record]:
        """Read what the server wrote within ``timeout`` seconds; answer its requests."""
        out: list[Record] = []
        now = time.monotonic()
        for reply in self._due(now):
            self._pending += reply + b"\n"
            self._flush()
        if self._eof and not self._pending:
            time.sleep(min(timeout, 0.05))
            return out
        for key, _ in self._selector.select(max(self._wait(timeout, now), 0.0)):
            if key.data == "in":
                self._flush()
            elif key.data == "err":
                self._read_stderr()
            else:
                out += self._read_stdout()
        return out

    def _read_stdout(self) -> list[Record]:
        assert self._proc.stdout is not None
        try:
            chunk = os.read(self._proc.stdout.fileno(), _READ)
        except BlockingIOError:
            return []
        now = time.monotonic()
        lines = self._lines.feed(chunk) if chunk else self._lines.close()
        if not chunk:
            self._eof = True
            self._selector.unregister(self._proc.stdout)
        out: list[Record] = []
        for line in lines:
            out.append(Received(t=now, data=line))
            self._answer(line, now)
        for reply in self._due(now):
            self._pending += reply + b"\n"
            self._flush()
        if self._lines.overflow is not None:
            out.append(Received(t=now, data=b"<a line over %d bytes>" % MAX_LINE))
            self._eof = True
        return out

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        try:
            chunk = os.read(self._proc.stderr.fileno(), _READ)
        except BlockingIOError:
            return
        if not chunk:
            self._selector.unregister(self._proc.stderr)
            return
        self._stderr.append(chunk)
        self._stderr_size += len(chunk)
        while self._stderr_size - len(self._stderr[0]) >= STDERR_TAIL:
            self._stderr_size -= len(self._stderr.popleft())

    def alive(self) -> bool:
        """Whether the process runs and its stdout is open."""
        return self._proc.poll() is None and not self._eof

    def returncode(self) -> int | None:
        """The exit status once the process exited."""
        return self._proc.poll()

    def rss(self) -> int | None:
        """Resident memory of every process in the server's session (a wrapper such as
        ``npx`` runs the real server as a child)."""
        members = session_members(self._proc.pid)
        for pid, cmd in members:
            self._census.setdefault(pid, cmd)
        return sum(rss_of(pid) for pid, _ in members) or None

    def close(self) -> list[tuple[int, str]]:
        """Close stdin, give the server ``grace`` seconds to exit (2 by default), then
        SIGTERM and SIGKILL it; any process of its session still running after it exited is
        a leftover (killed)."""
        for pid, cmd in session_members(self._proc.pid):
            self._census.setdefault(pid, cmd)
        with contextlib.suppress(OSError):
            assert self._proc.stdin is not None
            self._proc.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                with contextlib.suppress(ProcessLookupError):
                    self._proc.send_signal(sig)
            try:
                self._proc.wait(timeout=self.grace if sig is None else min(1.0, max(self.grace, 0.2)))
                break
            except subprocess.TimeoutExpired:
                continue
        time.sleep(0.05)
        leftover = [(pid, cmd) for pid, cmd in session_members(self._proc.pid) if pid != self._proc.pid]
        for pid, _ in leftover:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        self._selector.close()
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()
        return leftover

    def stderr_tail(self) -> str:
        """The last 4 KiB of stderr."""
        return b"".join(self._stderr)[-STDERR_TAIL:].decode(errors="replace")


class _Exchange:
    """One HTTP exchange in flight: which step it carries and how to read its body."""

    def __init__(self, index: int, step: CaseStep) -> None:
        self.index = index
        self.step = step
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = bytearray()
        self.sse: SseParser | None = None


class HttpConnection(_Replies):
    """A Streamable HTTP endpoint, one exchange per step.

    It keeps the ``Mcp-Session-Id`` the server gave, sends ``MCP-Protocol-Version`` once a
    version is set, and answers server requests that arrive on a stream with a POST.
    """

    def __init__(self, url: str, headers: Mapping[str, str] | None = None) -> None:
        try:
            self._url: Url = parse_url(url)
        except (ValueError, LocalProtocolError) as exc:
            raise TargetUnavailable(f"not an http(s) URL: {url!r}: {exc}") from exc
        super().__init__()
        self._extra = dict(headers or {})
        self._pool = HttpPool(max_connections=32)
        self._socks: dict[int, socket.socket] = {}
        self._selector = selectors.DefaultSelector()
        self._exchanges: dict[int, _Exchange] = {}
        self._next = 0
        self.session_id: str | None = None
        self.sessions: list[str] = []  # every session id this connection was given, in order
        self.protocol_version: str | None = None
        self.dead = False
        self._suspect = False
        self.last_error = ""
        self._ready: list[Record] = []  # what arrived while sending, for the next poll

    def send(self, index: int, step: CaseStep, now: float) -> None:
        """Start an exchange for ``step``."""
        headers = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]
        if step.http_method == "GET":
            headers = [("accept", "text/event-stream")]
        if self.protocol_version:
            headers.append(("mcp-protocol-version", self.protocol_version))
        session = self._session_for(step.session)
        if session:
            headers.append(("mcp-session-id", session))
        headers += [(k.lower(), v) for k, v in self._extra.items()]
        names = {name.lower() for name, _ in step.headers}
        # A step's header replaces ours of the same name; an empty one removes it.
        headers = [(k, v) for k, v in headers if k not in names] + [(k, v) for k, v in step.headers if v]
        self._next += 1
        self._exchanges[self._next] = _Exchange(index, step)
        body = step.data if step.http_method == "POST" else b""
        url = self._url if step.path is None else msgspec.structs.replace(self._url, target=step.path)
        self._pool.submit(
            HttpRequest(
                exchange=self._next, method=step.http_method, url=url, headers=tuple(headers), body=body
            ),
            now,
        )
        self._ready += self._pump(now)

    def _session_for(self, name: str) -> str | None:
        """The session id a step names: ``keep`` (the latest), ``none``, ``#N`` (the N-th
        this connection was given) or a literal id."""
        if name == "keep":
            return self.session_id
        if name == "none":
            return None
        if name.startswith("#") and name[1:].isdigit():
            number = int(name[1:])
            return self.sessions[number] if number < len(self.sessions) else None
        return name

    def _pump(self, now: float) -> list[Record]:
        out: list[Record] = []
        while (action := self._pool.next_action()) is not None:
            if isinstance(action, OpenConnection):
                self._open(action, now)
            elif isinstance(action, CloseConnection):
                sock = self._socks.pop(action.connection, None)
                if sock is not None:
                    self._selector.unregister(sock)
                    sock.close()
            elif isinstance(action, StartTls):  # pragma: no cover - no proxy is configured
                failure = SocketFailure(stage=SocketStage.TLS, cause="TLS through a proxy is not supported")
                self._pool.connection_failed(action.connection, failure, now)
        for connection in self._pool.connections_with_data():
            sock = self._socks.get(connection)
            data = self._pool.data_to_send(connection)
            if sock is not None and data:
                sock.settimeout(SEND_TIMEOUT)  # a server that stops reading cannot block the fuzzer
                try:
                    sock.sendall(data)
                except OSError as exc:
                    self._pool.connection_failed(connection, socket_failure(exc, SocketStage.TRANSFER), now)
                sock.setblocking(False)
        while (event := self._pool.next_event()) is not None:
            out += self._event(event, now)
        return out

    def _open(self, action: OpenConnection, now: float) -> None:
        try:
            sock = socket.create_connection((action.host, action.port), timeout=5.0)
            if action.tls:
                import ssl

                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=action.server_hostname)
        except OSError as exc:
            self.dead = True
            self.last_error = f"cannot connect to {action.host}:{action.port}: {exc}"
            self._pool.connection_failed(action.connection, socket_failure(exc, SocketStage.CONNECT), now)
            return
        sock.setblocking(False)
        self._socks[action.connection] = sock
        self._selector.register(sock, selectors.EVENT_READ, action.connection)
        self._pool.connection_made(action.connection, now)

    def _event(self, event: object, now: float) -> list[Record]:
        assert isinstance(event, ResponseStarted | ResponseData | ResponseEnded | ExchangeFailed)
        exchange = self._exchanges.get(event.exchange)
        if exchange is None:
            return []
        if isinstance(event, ResponseStarted):
            exchange.status = event.status
            exchange.headers = {k.lower(): v for k, v in event.headers}
            kind = exchange.headers.get("content-type", "")
            if "text/event-stream" in kind:
                exchange.sse = SseParser()
            session = exchange.headers.get("mcp-session-id", "")
            if session and exchange.step.method == "initialize":
                self.session_id = session
                self.sessions.append(session)
            if exchange.index < 0:
                return []
            return [
                HttpAnswer(
                    step=exchange.index,
                    t=now,
                    status=event.status,
                    content_type=kind,
                    session=session,
                    challenge=exchange.headers.get("www-authenticate", ""),
                )
            ]
        if exchange.step.path is not None:  # not the MCP endpoint (a metadata document)
            if not isinstance(event, ResponseData):
                del self._exchanges[event.exchange]
            return []
        if isinstance(event, ResponseData):
            if exchange.sse is not None:
                return self._messages([e.data for e in exchange.sse.feed(event.data) if e.data], now)
            exchange.body += event.data
            return []
        del self._exchanges[event.exchange]
        if isinstance(event, ExchangeFailed):
            self.last_error = event.message
            self._suspect = True  # the server may have died: alive() will knock
            return []
        if exchange.sse is not None:
            return self._messages([e.data for e in exchange.sse.close() if e.data], now)
        body = bytes(exchange.body).strip()
        challenge = exchange.headers.get("www-authenticate", "")
        if exchange.status in (401, 403) and challenge.lower().startswith("bearer"):
            return []  # RFC 6750 section 3's error body beside a Bearer challenge: no MCP message
        return (
            self._messages([body], now) if (body and exchange.status < 400) or body.startswith(b"{") else []
        )

    def _messages(self, bodies: list[bytes], now: float) -> list[Record]:
        out: list[Record] = []
        for body in bodies:
            out.append(Received(t=now, data=body))
            self._answer(body, now)
        self._release(now)
        return out

    def _release(self, now: float) -> None:
        for reply in self._due(now):
            self.send(-1, CaseStep(data=reply, label="reply to a server request", expect=Expect.NOTHING), now)

    def poll(self, timeout: float) -> list[Record]:
        """Read responses for up to ``timeout`` seconds."""
        now = time.monotonic()
        self._release(now)
        out, self._ready = self._ready + self._pump(now), []
        if out:
            return out
        for key, _ in self._selector.select(max(self._wait(timeout, now), 0.0) if self._socks else 0):
            connection = key.data
            try:
                data = key.fileobj.recv(_READ)  # type: ignore[union-attr]  # always a socket here
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            self._pool.receive_data(connection, data, time.monotonic())
        if not self._socks:
            time.sleep(max(min(self._wait(timeout, now), 0.05), 0.0))
        return out + self._pump(time.monotonic())

    def cancel_open(self, now: float) -> None:
        """Drop every exchange still open (a GET stream, an unanswered POST)."""
        for number in list(self._exchanges):
            self._pool.cancel(number, now)
            self._exchanges.pop(number, None)
        self._pump(now)

    def alive(self) -> bool:
        """Whether the endpoint can still be reached: after an exchange failed, a TCP
        connection is tried, and a refused one means the server is gone."""
        if self._suspect and not self.dead:
            self._suspect = False
            try:
                socket.create_connection((self._url.host, self._url.port), timeout=1.0).close()
            except OSError as exc:
                self.dead = True
                self.last_error = f"cannot connect to {self._url.host}:{self._url.port}: {exc}"
        return not self.dead

    def returncode(self) -> int | None:
        """Unknown: the process is not ours."""
        return None

    def rss(self) -> int | None:
        """Unknown: the process is not ours."""
        return None

    def close(self) -> list[tuple[int, str]]:
        """Close every socket; DELETE is a step, never implicit."""
        self._pool.close()
        for sock in self._socks.values():
            sock.close()
        self._socks.clear()
        self._selector.close()
        return []

    def stderr_tail(self) -> str:
        """What went wrong last on the wire."""
        return self.last_error

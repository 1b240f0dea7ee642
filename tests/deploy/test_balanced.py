"""Handshake-era sessions through a real balancer: HAProxy in round-robin, no stickiness, in
front of 3 ``mcp-sansio serve --http --store redis://...`` processes (and of ``uvicorn
--workers 3`` on the ASGI app), sharing one redis-server. Our client and the official SDK's
client keep one session across every worker; a stream that ends or drops is resumed at
another worker with every event once; a worker killed mid-call costs that call a typed
error, not a hang, and not the session; a worker restarted under live sessions serves them.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_sansio import ClientConfig
from mcp_sansio.errors import RequestError
from mcp_sansio.sse import SseParser
from mcp_sansio.types import ElicitRequestParams, ElicitResult
from mcp_sansio_sync import connect_http

from .cluster import Cluster, serve_cluster, serve_worker, uvicorn_cluster

LEGACY = ClientConfig(protocol="2025-11-25")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with serve_cluster(tmp_path_factory.mktemp("haproxy")) as running:
        yield running


@pytest.fixture(scope="module")
def asgi_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with uvicorn_cluster(tmp_path_factory.mktemp("haproxy-asgi")) as running:
        yield running


def text(result: object) -> str:
    content = getattr(result, "content", None)
    assert content, result
    value: str = content[0].text
    return value


# ---------------------------------------------------------------- sessions on every worker


def test_one_session_of_our_client_is_served_by_every_worker(cluster: Cluster) -> None:
    with connect_http(cluster.url, config=LEGACY) as client:
        pids = {text(client.call_tool("whoami", {})) for _ in range(9)}
        assert text(client.call_tool("add", {"a": 2, "b": 40})) == "42"
    assert pids == {str(w.pid) for w in cluster.workers}


def test_the_uvicorn_workers_serve_one_session_of_our_client(asgi_cluster: Cluster) -> None:
    with connect_http(asgi_cluster.url, config=LEGACY) as client:
        for _ in range(9):
            assert text(client.call_tool("whoami", {})).isdigit()
        progress: list[float] = []
        result = client.call_tool("count", {"n": 4, "delay": 0.05, "poll": True},
                                  on_progress=lambda p, total, message: progress.append(p))
        assert text(result).startswith("counted 4")
        assert progress == [1, 2, 3, 4]


SDK_SCRIPT = """
import anyio, sys
from mcp import Client

async def main():
    async with Client(sys.argv[1], mode="legacy") as client:
        pids = [(await client.call_tool("whoami", {})).content[0].text for _ in range(9)]
        added = (await client.call_tool("add", {"a": 20, "b": 22})).content[0].text
        counted = (await client.call_tool("count", {"n": 4, "delay": 0.05, "poll": True})).content[0].text
        print(client.protocol_version, len(set(pids)), added, counted.split(" at ")[0].replace(" ", "-"))

anyio.run(main)
"""


@pytest.mark.parametrize("which", ["serve", "uvicorn"])
def test_the_official_sdk_client_keeps_its_session_across_workers(which: str, cluster: Cluster,
                                                                   asgi_cluster: Cluster) -> None:
    target = cluster if which == "serve" else asgi_cluster
    done = subprocess.run([sys.executable, "-c", SDK_SCRIPT, target.url], capture_output=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    version, workers, added, counted = done.stdout.decode().split()
    assert (version, added, counted) == ("2025-11-25", "42", "counted-4")
    if which == "serve":
        assert workers == "3"


def test_a_polled_stream_is_resumed_at_another_worker_with_every_event_once(cluster: Cluster) -> None:
    with connect_http(cluster.url, config=LEGACY) as client:
        for _ in range(3):
            progress: list[tuple[float, str | None]] = []

            def seen(p: float, total: float | None, message: str | None, into: list[tuple[float, str | None]]
                     = progress) -> None:
                into.append((p, message))

            result = client.call_tool("count", {"n": 5, "delay": 0.1, "poll": True}, on_progress=seen)
            assert text(result).startswith("counted 5")
            assert [p for p, _ in progress] == [1, 2, 3, 4, 5]
            assert len({m for _, m in progress}) == 1  # one worker ran it; others relayed it


def name_ada(params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


@pytest.mark.parametrize("which", ["serve", "uvicorn"])
def test_answers_posted_to_any_worker_reach_the_waiting_handler(which: str, cluster: Cluster,
                                                                asgi_cluster: Cluster) -> None:
    target = cluster if which == "serve" else asgi_cluster
    with connect_http(target.url, config=LEGACY, on_elicitation=name_ada) as client:
        for _ in range(6):  # round-robin: most answers go to another worker than the asking one
            assert text(client.call_tool("ask", {}, timeout=20)) == "hello Ada"


@pytest.mark.parametrize("driver", ["anyio", "trio", "sync"])
def test_every_driver_serves_a_session_across_workers(driver: str, tmp_path: Path) -> None:
    with serve_cluster(tmp_path, driver=driver) as running, \
            connect_http(running.url, config=LEGACY, on_elicitation=name_ada) as client:
        pids = {text(client.call_tool("whoami", {})) for _ in range(6)}
        assert pids == {str(w.pid) for w in running.workers}
        progress: list[float] = []
        delay = 0.0 if driver == "sync" else 0.05  # (the blocking driver's handlers await no sleep)
        result = client.call_tool("count", {"n": 3, "delay": delay, "poll": True},
                                  on_progress=lambda p, total, message: progress.append(p))
        assert text(result).startswith("counted 3") and progress == [1, 2, 3]
        for _ in range(3):
            assert text(client.call_tool("ask", {}, timeout=20)) == "hello Ada"


# ---------------------------------------------------------------- a stream that drops


class Raw:
    """A handshake-era session spoken by hand, one connection per request (the balancer's)."""

    def __init__(self, url: str) -> None:
        self.port = int(url.split(":")[2].split("/", maxsplit=1)[0])
        answer, _ = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        self.session = answer.getheader("mcp-session-id") or ""
        answer.read()
        note, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert note.status == 202
        note.read()

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def post(self, body: object) -> tuple[http.client.HTTPResponse, http.client.HTTPConnection]:
        conn = self.connection()
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if getattr(self, "session", ""):
            headers["mcp-session-id"] = self.session
        conn.request("POST", "/mcp", json.dumps(body), headers)
        return conn.getresponse(), conn

    def resume(self, last: str) -> tuple[http.client.HTTPResponse, http.client.HTTPConnection]:
        conn = self.connection()
        conn.request("GET", "/mcp", headers={"accept": "text/event-stream", "mcp-session-id": self.session,
                                             "last-event-id": last})
        return conn.getresponse(), conn


def read_events(answer: http.client.HTTPResponse, parser: SseParser, until: int) -> list[dict[str, object]]:
    """Read SSE messages until ``until`` of them came, or the stream ended."""
    out: list[dict[str, object]] = []
    while len(out) < until:
        chunk = answer.read1(65536)
        if not chunk:
            break
        out += [json.loads(e.data) for e in parser.feed(chunk) if e.data]
    return out


def test_a_dropped_stream_is_resumed_at_another_worker_with_every_event_once(cluster: Cluster) -> None:
    raw = Raw(cluster.url)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "count", "arguments": {"n": 8, "delay": 0.2}, "_meta": {"progressToken": "p"}}}
    answer, conn = raw.post(call)
    assert answer.getheader("content-type") == "text/event-stream"
    producer = answer.getheader("x-served-by")
    parser = SseParser()
    seen = read_events(answer, parser, 2)
    conn.close()  # the client's connection drops mid-call
    for _ in range(6):  # round-robin: the next request goes elsewhere; make sure of it
        answer, conn = raw.resume(parser.last_event_id)
        assert answer.status == 200
        if answer.getheader("x-served-by") != producer:
            break
        conn.close()
    assert answer.getheader("x-served-by") != producer
    seen += read_events(answer, parser, 100)
    conn.close()
    progress = [m["params"]["progress"] for m in seen if m.get("method") == "notifications/progress"]  # type: ignore[index]
    assert progress == [1, 2, 3, 4, 5, 6, 7, 8]
    assert seen[-1]["id"] == 2 and "counted 8" in json.dumps(seen[-1])


# ---------------------------------------------------------------- a worker killed, a worker restarted


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[Cluster]:
    with serve_cluster(tmp_path) as running:
        yield running


@pytest.fixture(params=["serve", "uvicorn"])
def killable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    make = serve_cluster if request.param == "serve" else uvicorn_cluster
    with make(tmp_path) as running:
        yield running


def test_a_worker_killed_mid_call_costs_the_call_a_typed_error_not_the_session(killable: Cluster) -> None:
    own_cluster = killable
    with connect_http(own_cluster.url, config=LEGACY) as client:
        assert text(client.call_tool("add", {"a": 1, "b": 1})) == "2"
        killed: list[int] = []

        def kill_the_worker(progress: float, total: float | None, message: str | None) -> None:
            if not killed and message:
                killed.append(int(message))
                os.kill(int(message), signal.SIGKILL)

        started = time.monotonic()
        with pytest.raises(RequestError) as failure:  # its stream, resumed elsewhere, answers for it
            client.call_tool("count", {"n": 600, "delay": 0.05}, timeout=60.0, on_progress=kill_the_worker)
        waited = time.monotonic() - started
        assert killed and failure.value.code == -32603 and "stopped" in failure.value.message
        assert waited < 20.0  # the heartbeat's 5 s, a reconnection or two: well within the call's 60 s
        pids = {text(client.call_tool("whoami", {})) for _ in range(6)}  # the session lives on
        assert str(killed[0]) not in pids
        if len(own_cluster.workers) == 3:  # mcp-sansio serve: the two left (uvicorn respawns one)
            own_cluster.worker_of(killed[0]).proc.wait()
            assert len(pids) == 2


def test_a_worker_restarted_under_a_live_session_serves_it(own_cluster: Cluster) -> None:
    with connect_http(own_cluster.url, config=LEGACY) as client:
        before = {text(client.call_tool("whoami", {})) for _ in range(6)}
        assert len(before) == 3
        old = own_cluster.workers[0]
        old.stop()
        new = serve_worker(own_cluster.store, port=old.port)
        own_cluster.workers[0] = new
        new.wait_ready()
        deadline = time.monotonic() + 30
        pids: set[str] = set()
        while str(new.pid) not in pids and time.monotonic() < deadline:  # until HAProxy sees it up
            pids.add(text(client.call_tool("whoami", {})))
        assert str(new.pid) in pids and str(old.pid) not in pids
        progress: list[float] = []
        result = client.call_tool("count", {"n": 3, "delay": 0.05, "poll": True},
                                  on_progress=lambda p, total, message: progress.append(p))
        assert progress == [1, 2, 3], text(result)

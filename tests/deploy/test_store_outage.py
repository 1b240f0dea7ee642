"""The store misbehaving under real ``mcp-sansio serve --http --store`` workers (asyncio,
trio, the blocking driver) and the ASGI app under uvicorn, over a real redis-server that is
killed, restarted, stopped (SIGSTOP), filled to its ``maxmemory``, or asked for ids no
stream holds: every request gets a typed answer (a 503 that names the session store, and
never its address), the worker neither spins nor stalls every client behind one store
call, says so once in its log, and serves again once the store answers.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from .cluster import Proc, redis_server, serve_worker, uvicorn_workers

KINDS = ["asyncio", "trio", "sync", "asgi"]
UNAVAILABLE = b"Service Unavailable: the session store did not answer; try again\n"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "outage", "version": "1"}}}


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


def post(port: int, body: object, session: str | None = None, timeout: float = 30.0) -> Answer:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if session is not None:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    try:
        conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
        response = conn.getresponse()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        conn.close()


def get(port: int, session: str, last_event_id: str) -> Answer:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30.0)
    try:
        conn.request("GET", "/mcp", headers={
            "accept": "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25",
            "last-event-id": last_event_id})
        response = conn.getresponse()
        return Answer(response.status, {}, response.read())
    finally:
        conn.close()


def call(name: str, arguments: dict[str, Any], rid: int = 1, progress: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if progress:
        params["_meta"] = {"progressToken": "p"}  # progress: the answer is an SSE stream
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def open_session(port: int) -> str:
    answer = post(port, INIT)
    assert answer.status == 200, answer.body
    session = answer.headers["mcp-session-id"]
    assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session).status == 202
    return session


def served(port: int, session: str, timeout: float = 30.0) -> Answer:
    """The first answer to ``whoami`` that is not a 503 (the store is coming back)."""
    deadline = time.monotonic() + timeout
    while True:
        answer = post(port, call("whoami", {}), session)
        if answer.status != 503 or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of ``pid`` and its children (uvicorn's worker)."""
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    total = 0.0
    for each in [pid, *map(int, found.stdout.split())]:
        with contextlib.suppress(OSError), open(f"/proc/{each}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


@contextlib.contextmanager
def worker(store: str, kind: str) -> Iterator[Proc]:
    """One worker of ``deployed_app`` on ``store``: ``mcp-sansio serve`` on a driver, or uvicorn."""
    if kind == "asgi":
        proc = uvicorn_workers(store, workers=1)
    else:
        proc = serve_worker(store, driver=kind, options=["--threads", "2"])
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


def log_lines(proc: Proc, words: str) -> list[str]:
    return [line for line in proc.text().splitlines() if words in line]


@pytest.mark.parametrize("kind", KINDS)
def test_a_killed_store_costs_503s_naming_it_no_spinning_worker_and_its_restart_serves_again(
        kind: str, tmp_path: Path) -> None:
    data = ["--dir", str(tmp_path)]  # (where SAVE writes the dump a restart loads)
    store_proc = redis_server(options=data)
    store = f"redis://127.0.0.1:{store_proc.port}/0"
    try:
        with worker(store, kind) as proc:
            session = open_session(proc.port)
            redis.Redis(port=store_proc.port).save()  # the session, kept for the restart

            conn = http.client.HTTPConnection("127.0.0.1", proc.port, timeout=60)
            conn.request("POST", "/mcp", body=json.dumps(call("steps", {"n": 30, "delay": 0.1}, 2, True)),
                         headers={"content-type": "application/json", "mcp-session-id": session,
                                  "accept": "application/json, text/event-stream",
                                  "mcp-protocol-version": "2025-11-25"})
            stream = conn.getresponse()
            while b"notifications/progress" not in stream.readline():
                pass  # the call runs (its worker follows the session's inbox in the store)
            store_proc.kill()
            spent = cpu_seconds(proc.pid)

            during = [post(proc.port, call("whoami", {}, 3 + i), session) for i in range(5)]
            rest = stream.read()  # the call ends all the same, its events without ids
            conn.close()
            assert b'"id":2,"result"' in rest and b"stepped 30" in rest
            # about 2.5 s of the call ran with the store gone; a relay spinning against a
            # refused connection burns all of it (1-3 CPU seconds), a paced one ~0.05
            assert cpu_seconds(proc.pid) - spent < 0.5
            assert [(a.status, a.body, a.headers.get("retry-after")) for a in during] == [
                (503, UNAVAILABLE, "1")] * 5

            store_proc = redis_server(store_proc.port, data)  # restarted with its data
            assert served(proc.port, session).status == 200, "the session lives on"
            assert len(log_lines(proc, "session store at")) == 2, proc.text()
            (failed,) = log_lines(proc, "failed")
            (back,) = log_lines(proc, "answers again")
            assert str(store_proc.port) in failed and str(store_proc.port) in back

            store_proc.kill()
            store_proc = redis_server(store_proc.port)  # restarted empty: the session is gone
            answer = served(proc.port, session)
            assert answer.status == 404 and b"Session not found" in answer.body
            assert post(proc.port, call("whoami", {}), open_session(proc.port)).status == 200
    finally:
        store_proc.stop()


@pytest.mark.parametrize("kind", KINDS)
def test_a_stalled_store_costs_a_worker_one_timeout_not_one_per_request(kind: str) -> None:
    store_proc = redis_server()
    store = f"redis://127.0.0.1:{store_proc.port}/0"
    try:
        with worker(store, kind) as proc:
            session = open_session(proc.port)
            os.kill(store_proc.pid, signal.SIGSTOP)  # connects succeed; nothing is answered
            answers: list[Answer] = []
            started = time.monotonic()

            def ask(i: int) -> None:
                answers.append(post(proc.port, call("whoami", {}, 10 + i), session))

            threads = [threading.Thread(target=ask, args=(i,)) for i in range(16)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            took = time.monotonic() - started
            assert [a.status for a in answers] == [503] * 16
            # one store call at a time on the loop: 16 of them waiting 0.5 s each took 8 s
            assert took < 5.0, f"16 requests took {took:.1f} s"
            assert {a.body for a in answers} == {UNAVAILABLE}
            os.kill(store_proc.pid, signal.SIGCONT)
            assert served(proc.port, session).status == 200
    finally:
        os.kill(store_proc.pid, signal.SIGCONT)
        store_proc.stop()


def test_a_session_opened_while_its_store_refuses_writes_is_served_and_shared_once_it_can() -> None:
    store_proc = redis_server()
    store = f"redis://127.0.0.1:{store_proc.port}/0"
    raw = redis.Redis(port=store_proc.port)
    try:
        with worker(store, "asyncio") as one, worker(store, "asyncio") as two:
            raw.set("filler", b"x" * 2_000_000)
            raw.config_set("maxmemory-policy", "noeviction")
            raw.config_set("maxmemory", "1mb")  # full: every write is refused (OOM)
            session = open_session(one.port)  # served here, though the store could not keep it
            assert post(one.port, call("whoami", {}), session).status == 200
            assert post(two.port, call("whoami", {}), session).status == 404  # (not in the store)
            raw.config_set("maxmemory", "0")
            assert post(one.port, call("whoami", {}), session).status == 200  # ... which keeps it now
            answer = post(two.port, call("whoami", {}), session)
            assert answer.status == 200 and str(two.pid).encode() in answer.body
    finally:
        raw.close()
        store_proc.stop()


def test_last_event_ids_no_redis_stream_can_hold_are_unknown_not_a_store_failure() -> None:
    store_proc = redis_server()
    store = f"redis://127.0.0.1:{store_proc.port}/0"
    try:
        with worker(store, "asyncio") as proc:
            session = open_session(proc.port)
            streamed = post(proc.port, call("steps", {"n": 1, "delay": 0}, 2, True), session)
            first = streamed.body.split(b"\n")[0].removeprefix(b"id: ").decode()
            stream = first.partition(".")[0]
            nines = "9" * 30
            for forged in (f"{stream}.{nines}-0", f"{stream}.1-{nines}", f"{stream}.18446744073709551616-0"):
                answer = get(proc.port, session, forged)
                assert (answer.status, answer.body) == (404, b"Not Found: unknown Last-Event-ID\n"), forged
            assert get(proc.port, session, first).status == 200  # (its own id resumes)
            assert post(proc.port, call("whoami", {}), session).status == 200
            assert not log_lines(proc, "session store")
    finally:
        store_proc.stop()


def test_the_store_password_shows_in_no_error_log_or_answer(tmp_path: Path) -> None:
    secret = "AbC/dEf-s3cr3t"
    for url in (f"redis://alice:{secret}@127.0.0.1:1/0",  # an unencoded "/": redis-py reads a port
                f"http://alice:{secret}@127.0.0.1:1/0",
                f"redis://alice:{secret.replace('/', '%2F')}@127.0.0.1:1/0?timeout=soon"):
        done = subprocess.run([sys.executable, "-m", "mcp_sansio_cli", "serve", str(Path(__file__).parent /
                               "deployed_app.py"), "--http", "0", "--store", url],
                              capture_output=True, timeout=60, check=False)
        assert done.returncode != 0 and b"--store" in done.stderr, done.stderr
        assert b"s3cr3t" not in done.stdout + done.stderr and b"AbC" not in done.stderr, done.stderr

    store_proc = redis_server(options=["--requirepass", "the-right-one"])
    store = f"redis://:{secret.replace('/', '%2F')}@127.0.0.1:{store_proc.port}/0"
    try:
        with worker(store, "asyncio") as proc:
            refused = post(proc.port, call("whoami", {}), "a-session-to-look-up")
            assert (refused.status, refused.body) == (503, UNAVAILABLE)
            (failed,) = log_lines(proc, "session store at")
            assert f":***@127.0.0.1:{store_proc.port}" in failed and "s3cr3t" not in proc.text(), failed
    finally:
        store_proc.stop()


def _resumed_across_a_store_restart(kind: str, tmp_path: Path, keep: bool) -> dict[str, Any]:
    """The answer a client gets by resuming, at a second worker, a call's stream (run by a
    ``kind`` worker) while the store is killed and restarted, with the stream so far
    (``keep``) or empty, once the call ended reaching nobody and no store."""
    options = ["--dir", str(tmp_path)] if keep else []
    store_proc = redis_server(options=options)
    store = f"redis://127.0.0.1:{store_proc.port}/0"
    done = tmp_path / "done"
    try:
        with worker(store, kind) as runs, worker(store, "asyncio") as relays:
            session = open_session(runs.port)
            first = post(runs.port, call("count", {"n": 2, "delay": 1.0, "poll": True, "done": str(done)}, 2,
                                         True), session)  # its stream ends after the first progress
            last_id = [line for line in first.body.decode().splitlines() if line.startswith("id: ")][-1][4:]
            if keep:
                redis.Redis(port=store_proc.port).save()  # the stream so far, kept for the restart

            conn = http.client.HTTPConnection("127.0.0.1", relays.port, timeout=30)
            conn.request("GET", "/mcp", headers={
                "accept": "text/event-stream", "mcp-session-id": session,
                "mcp-protocol-version": "2025-11-25", "last-event-id": last_id})
            resumed = conn.getresponse()  # the other worker follows the stream in the store
            assert resumed.status == 200
            store_proc.kill()  # the rest of the call, its answer too, reaches nobody and no store
            deadline = time.monotonic() + 30
            while not done.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            store_proc = redis_server(store_proc.port, options)  # back, with its data or empty
            rest = resumed.read()  # (a read timeout of 30 s: before, it waited for ever)
            conn.close()
            answer: dict[str, Any] = json.loads(rest.decode().rstrip().rpartition("data: ")[2])
            return answer
    finally:
        store_proc.stop()


def test_a_stream_relayed_from_another_worker_that_the_store_lost_ends_with_an_error_not_a_hang(
        tmp_path: Path) -> None:
    answer = _resumed_across_a_store_restart("asyncio", tmp_path, keep=False)
    # (the store restarted in time for the call's answer: it is relayed)
    assert answer["id"] == 2 and ("result" in answer or answer["error"] == {
        "code": -32603, "message": "the session store lost this request's stream"}), answer


@pytest.mark.parametrize("kind", ["asyncio", "trio", "asgi"])  # (count is async: not on the blocking driver)
def test_the_answer_of_a_broken_stream_the_store_could_not_keep_is_kept_once_it_can(
        kind: str, tmp_path: Path) -> None:
    answer = _resumed_across_a_store_restart(kind, tmp_path, keep=True)
    text = answer["result"]["content"][0]["text"]
    assert answer["id"] == 2 and text.startswith("counted 2 at "), answer


@pytest.mark.parametrize("kind", ["asyncio", "trio", "asgi"])  # (job is async: not on the blocking driver)
def test_a_task_that_ended_while_the_store_was_down_is_reported_ended_at_every_worker_once_it_is_back(
        kind: str, tmp_path: Path) -> None:
    from .test_balanced_tasks import call as stateless

    store_proc = redis_server(options=["--dir", str(tmp_path)])
    store = f"redis://127.0.0.1:{store_proc.port}/0"
    done = tmp_path / "done"
    try:
        with worker(store, kind) as runs, worker(store, "asyncio") as other:
            created, _ = stateless(runs.port, "tools/call", {
                "name": "job", "arguments": {"seconds": 1.0, "done": str(done)}, "task": {"ttl": 120_000}})
            task_id = created["result"]["taskId"]
            redis.Redis(port=store_proc.port).save()  # the task, working, kept for the restart
            store_proc.kill()  # its end reaches no store
            deadline = time.monotonic() + 30
            while not done.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            store_proc = redis_server(store_proc.port, ["--dir", str(tmp_path)])  # back, with its data
            deadline = time.monotonic() + 30
            while True:  # (before: working at every other worker until its TTL, its worker alive)
                try:
                    task, _ = stateless(other.port, "tasks/get", {"taskId": task_id})
                except json.JSONDecodeError:  # a 503 while the store comes back
                    task = {}
                status = task.get("result", {}).get("status")
                if status not in ("working", None) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert status == "completed", task
            assert task["result"]["result"]["content"][0]["text"].startswith("done at "), task
    finally:
        store_proc.stop()

"""A deployment on loopback for the tests: a redis-server, worker processes, and HAProxy in
front of them (round-robin, no stickiness), each on an ephemeral port, all stopped at the end.

``redis-server`` and ``haproxy`` come from the system's packages (``scripts/dev setup``
installs them where it can); :func:`require` fails loudly when they are missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Final

if __name__ == "__main__":  # run as a script (the README's recipe): find the tests' helpers
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from peer_servers import free_port, stop_process

HERE: Final = Path(__file__).parent
APP: Final = str(HERE / "deployed_app.py")
SECRET: Final = "a-deployment-secret-of-32-bytes!"


def require(*tools: str) -> None:
    """Fail the test when a system tool it needs is missing."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} not on PATH: run scripts/dev setup (as root it installs "
                           "them with apt-get: apt-get install -y haproxy redis-server)")


def _port_open(port: int) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Proc:
    """One child process, its output kept in a temporary file."""

    def __init__(self, args: Sequence[str], port: int, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        self.args = list(args)
        self.port = port
        self.output: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115  (closed by stop())
        self.proc = subprocess.Popen(self.args, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=self.output, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not _port_open(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{' '.join(self.args)} did not listen on {self.port}:\n{self.text()}")
            time.sleep(0.05)

    def text(self) -> str:
        self.output.seek(0)
        return self.output.read().decode(errors="replace")

    def kill(self) -> None:
        """SIGKILL the whole process group (uvicorn's workers too) and reap it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5.0)
            except subprocess.TimeoutExpired:
                self.kill()
        stop_process(self.proc)
        self.output.close()


def redis_server(port: int | None = None, options: Sequence[str] = ()) -> Proc:
    """A fresh redis-server on loopback (``port``: that one, as a restart takes its old port)."""
    require("redis-server")
    port = port or free_port()
    proc = Proc(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", *options], port)
    proc.wait_ready()
    return proc


def worker_env(store: str) -> dict[str, str]:
    env = dict(os.environ)
    env["MCP_SANSIO_SECRET"] = SECRET
    env["MCP_SANSIO_STORE"] = store
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    return env


def serve_worker(store: str, port: int | None = None, driver: str = "asyncio", app: str = APP,
                 options: Sequence[str] = ()) -> Proc:
    port = port or free_port()
    args = [sys.executable, "-m", "mcp_sansio_cli", "serve", app, "--http", str(port), "--store", store,
            "--driver", driver, *options]
    return Proc(args, port, worker_env(store))


def uvicorn_workers(store: str, workers: int = 3) -> Proc:
    """``uvicorn deployed_app:asgi`` (``workers`` 1: one process, no supervisor)."""
    port = free_port()
    args = [sys.executable, "-m", "uvicorn", "deployed_app:asgi", "--host", "127.0.0.1", "--port", str(port),
            "--workers", str(workers), "--log-level", "warning", "--no-access-log"]
    return Proc(args, port, worker_env(store), cwd=HERE)


HAPROXY_CONFIG: Final = """\
global
    maxconn 512

defaults
    mode http
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 2s
    timeout check 2s
    # a new server connection per request: round-robin applies to every request
    option http-server-close
    # a refused connection (a killed worker) is retried on another server
    option redispatch
    retries 3

frontend mcp
    bind 127.0.0.1:{port}
    default_backend workers

backend workers
    balance roundrobin
    http-response set-header X-Served-By %s
{servers}
"""


def haproxy(ports: Sequence[int], directory: Path) -> Proc:
    require("haproxy")
    port = free_port()
    servers = "\n".join(f"    server w{i} 127.0.0.1:{p} check inter 300ms fall 2 rise 1"
                        for i, p in enumerate(ports))
    config = directory / "haproxy.cfg"
    config.write_text(HAPROXY_CONFIG.format(port=port, servers=servers))
    proc = Proc(["haproxy", "-db", "-f", str(config)], port)
    proc.wait_ready()
    return proc


class Cluster:
    """A balancer in front of workers sharing one Redis; ``url`` is the balancer's MCP endpoint."""

    def __init__(self, redis: Proc, workers: list[Proc], balancer: Proc) -> None:
        self.redis = redis
        self.workers = workers
        self.balancer = balancer
        self.store = f"redis://127.0.0.1:{redis.port}/0"
        self.url = f"http://127.0.0.1:{balancer.port}/mcp"

    def worker_of(self, pid: int) -> Proc:
        return next(w for w in self.workers if w.pid == pid)

    def wait_up(self, timeout: float = 60.0) -> None:
        """Wait until HAProxy's checks see the workers up: a worker answers (405: a GET
        without a session) rather than HAProxy (503), several times in a row."""
        import http.client

        deadline = time.monotonic() + timeout
        answered = 0
        while answered < 2 * len(self.workers):
            conn = http.client.HTTPConnection("127.0.0.1", self.balancer.port, timeout=10)
            try:
                conn.request("GET", "/mcp", headers={"accept": "text/event-stream"})
                status = conn.getresponse().status
            except OSError:
                status = 0
            finally:
                conn.close()
            answered = answered + 1 if status == 405 else 0
            if time.monotonic() > deadline:
                raise RuntimeError(f"HAProxy sees no worker up (last status {status})")
            if not answered:
                time.sleep(0.1)


@contextlib.contextmanager
def serve_cluster(directory: Path, workers: int = 3, driver: str = "asyncio", app: str = APP
                  ) -> Iterator[Cluster]:
    """3 ``mcp-sansio serve --http --store`` workers of ``app`` behind HAProxy, over a fresh Redis."""
    redis = redis_server()
    store = f"redis://127.0.0.1:{redis.port}/0"
    procs: list[Proc] = []
    balancer = None
    try:
        procs = [serve_worker(store, driver=driver, app=app) for _ in range(workers)]
        for proc in procs:
            proc.wait_ready()
        balancer = haproxy([p.port for p in procs], directory)
        cluster = Cluster(redis, procs, balancer)
        cluster.wait_up()
        yield cluster
    finally:
        for proc in [*([balancer] if balancer else []), *procs, redis]:
            proc.stop()


@contextlib.contextmanager
def uvicorn_cluster(directory: Path, workers: int = 3) -> Iterator[Cluster]:
    """``uvicorn deployed_app:asgi --workers 3`` behind HAProxy, over a fresh Redis."""
    redis = redis_server()
    store = f"redis://127.0.0.1:{redis.port}/0"
    balancer = None
    server = uvicorn_workers(store, workers)
    try:
        server.wait_ready()
        balancer = haproxy([server.port], directory)
        cluster = Cluster(redis, [server], balancer)
        cluster.wait_up()
        yield cluster
    finally:
        for proc in [*([balancer] if balancer else []), server, redis]:
            proc.stop()


def main() -> None:
    """``python tests/deploy/cluster.py APP.py``: run APP behind HAProxy (3 workers, one Redis)
    until stdin closes or SIGTERM; the balancer's URL is the first line printed."""
    import signal as signals

    app = sys.argv[1] if len(sys.argv) > 1 else APP
    signals.signal(signals.SIGTERM, lambda *_: sys.exit(0))
    with tempfile.TemporaryDirectory() as directory, serve_cluster(Path(directory), app=app) as running:
        print(running.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()

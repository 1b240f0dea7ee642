"""How every HTTP driver opens, shares and closes its sockets, whatever the body of its block does."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import anyio
import pytest
from peer_servers import free_port, running_http_server, sdk_server

import mcp_sansio_anyio
import mcp_sansio_sync
from mcp_sansio import ClientConfig
from mcp_sansio.retry import RetryPolicy
from mcp_sansio_asyncio import AsyncClient

from .driver_adapter import CONCURRENT_DRIVERS, Driver, text_of, until

pytestmark = pytest.mark.anyio

QUICK = ClientConfig(protocol="2025-11-25", request_timeout=5.0, initialize_timeout=5.0,
                     retry=RetryPolicy(initial_delay=0.05, max_delay=0.2, max_attempts=2))


@contextlib.contextmanager
def hostile(mode: str, log: Path, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """Run ``hostile_http.py`` in ``mode``, logging its requests to ``log``; yield its URL."""
    port = free_port()
    command, args = sdk_server("hostile_http", mode, str(port))
    with running_http_server(command, args, {**os.environ, "HOSTILE_LOG": str(log), **(env or {})},
                             port, "/mcp") as url:
        yield url


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM files)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def logged(log: Path, key: str, value: str) -> list[dict[str, object]]:
    """The requests the hostile server logged whose ``key`` is ``value``."""
    entries = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [entry for entry in entries if entry[key] == value]


def open_fds() -> set[str]:
    """This process's open file descriptors."""
    return set(os.listdir("/proc/self/fd"))


async def test_an_abandoned_call_is_cancelled_on_the_server_and_the_session_goes_on(
    driver: Driver, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    with hostile("stall", log) as url:
        async with driver.connect_http(url, config=QUICK) as client:
            with driver.cancel_after(0.3):
                await client.call_tool("poke")
                pytest.fail("the stalled call returned")
            await until(client, lambda: bool(logged(log, "rpc", "notifications/cancelled")))
            await client.ping()
    [cancel] = logged(log, "rpc", "notifications/cancelled")
    assert isinstance(cancel["params"], dict) and cancel["params"]["reason"] == "cancelled by the caller"


async def test_leaving_the_block_ends_the_session_however_it_ends(driver: Driver, tmp_path: Path) -> None:
    log = tmp_path / "log"
    with hostile("stall", log) as url:
        with pytest.raises(LookupError, match="from the body"):
            async with driver.connect_http(url, config=QUICK):
                raise LookupError("from the body")
        with driver.cancel_after(0.3):
            async with driver.connect_http(url, config=QUICK) as client:
                await client.call_tool("poke")
            pytest.fail("the stalled call returned")
    deleted = [entry["headers"] for entry in logged(log, "method", "DELETE")]
    assert [h["mcp-session-id"] for h in deleted] == ["session-1", "session-2"]


async def test_no_socket_is_left_behind_however_the_block_ends(driver: Driver, tmp_path: Path) -> None:
    with hostile("stall", tmp_path / "log") as url:
        async with driver.connect_http(url, config=QUICK) as client:
            await client.ping()
        before = open_fds()  # after a first connection: the loop's lazily made resources exist
        async with driver.connect_http(url, config=QUICK) as client:
            await client.ping()
            assert len(open_fds()) > len(before)
        with pytest.raises(LookupError):
            async with driver.connect_http(url, config=QUICK) as client:
                raise LookupError
        with driver.cancel_after(0.3):
            async with driver.connect_http(url, config=QUICK) as client:
                await client.call_tool("poke")
        assert open_fds() == before


@pytest.mark.parametrize("driver", CONCURRENT_DRIVERS, indirect=True)
async def test_concurrent_calls_share_the_pool_and_match_answers(driver: Driver, tmp_path: Path) -> None:
    answers: list[str] = []

    async def poke() -> None:
        answers.append(text_of(await client.call_tool("poke")))

    log = tmp_path / "log"
    with hostile("plain", log) as url:
        async with driver.connect_http(url, config=QUICK) as client, anyio.create_task_group() as group:
            for _ in range(24):
                group.start_soon(poke)
    assert answers == ["ok"] * 24
    assert len(logged(log, "rpc", "tools/call")) == 24


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_large_messages_cross_intact_both_ways(
    driver: Driver, scheme: str, certificate: tuple[Path, Path], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cert, key = certificate
    env = {"HOSTILE_TLS_CERT": str(cert), "HOSTILE_TLS_KEY": str(key)} if scheme == "https" else {}
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the default context trusts it
    text = "0123456789abcdef" * (128 * 1024)  # 2 MiB: many socket writes, reads and TLS records
    with hostile("plain", tmp_path / "log", env) as url:
        async with driver.connect_http(url.replace("http://", f"{scheme}://", 1), config=QUICK) as client:
            assert text_of(await client.call_tool("poke", {"text": text})) == text
            assert text_of(await client.call_tool("poke")) == "ok"


def test_the_anyio_and_blocking_drivers_offer_the_http_and_websocket_clients() -> None:
    def public(cls: type) -> set[str]:
        return {name for klass in cls.__mro__ if klass.__module__.startswith("mcp_sansio_")
                for name in vars(klass) if not name.startswith("_")}

    oauth = {"token", "authorize", "receive_authorization_redirect"}
    extra = {"HttpConnection": {"transport", "session_id"} | oauth,
             "WebSocketConnection": {"url", "subprotocol"}}
    for kind, properties in extra.items():
        assert public(getattr(mcp_sansio_anyio, kind)) == public(AsyncClient) | properties | {"aclose"}
        blocking = public(mcp_sansio_sync.Client) | {"close", "poll"}  # poll: it reads only when asked
        assert public(getattr(mcp_sansio_sync, kind)) == blocking | properties


def test_stdio_only_programs_never_load_the_http_stack() -> None:
    script = (
        "import sys, mcp_sansio_sync; loaded = {'h11', 'wsproto', 'ssl'} & set(sys.modules); "
        "import mcp_sansio_anyio; loaded |= {'h11', 'wsproto'} & set(sys.modules); print(sorted(loaded))"
    )
    done = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "[]"


def test_the_blocking_driver_never_loads_an_event_loop_even_with_oauth() -> None:
    script = ("import sys; from mcp_sansio_sync import OAuth, FileTokenStore, connect_http; "
              "print(sorted({'asyncio', 'anyio', 'trio'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "[]"

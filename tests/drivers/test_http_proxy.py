"""Every driver through an HTTP CONNECT proxy (``tests/connect_proxy.py``) to real servers.

The servers are reached as ``mcp.test``, a name that does not resolve: only the proxy,
which maps it to 127.0.0.1, can reach them, so a passing call proves the traffic went
through the tunnel. The SDK server runs over plain HTTP and over HTTPS with a
self-signed certificate made here; the WebSocket server (SDK 1.x) over plain ``ws``.
Proxies come from the environment (the drivers' default) or from ``proxy=``.
"""

from __future__ import annotations

import base64
import datetime
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from connect_proxy import ConnectProxy
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from peer_servers import SERVERS_DIR, free_port, running_http_server, sdk_server

from mcp_sansio import ClientConfig, ConnectionClosed, ProxyError
from mcp_sansio.retry import RetryPolicy

from .driver_adapter import Driver, text_of
from .test_http_websocket import MCP1_PYTHON

pytestmark = [pytest.mark.anyio, pytest.mark.peer]

NAME = "mcp.test"  # does not resolve
HOSTS = {NAME: "127.0.0.1"}
PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                   "no_proxy", "NO_PROXY")
QUICK = ClientConfig(request_timeout=20.0, initialize_timeout=20.0, retry=RetryPolicy(max_attempts=0))


class Certificate(NamedTuple):
    cert: Path
    key: Path


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Certificate:
    """A self-signed certificate for ``mcp.test``."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NAME)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(NAME)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    paths = Certificate(folder / "cert.pem", folder / "key.pem")
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
    return paths


def _sdk(port: int, *extra: str) -> Iterator[str]:
    command, args = sdk_server("sdk_server", "--transport", "streamable-http", "--port", str(port),
                               "--allow-host", f"{NAME}:{port}", *extra)
    with running_http_server(command, args, None, port, "/mcp"):
        yield f"{NAME}:{port}/mcp"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """``http://mcp.test:PORT/mcp``: the SDK server over plain HTTP."""
    for where in _sdk(free_port()):
        yield f"http://{where}"


@pytest.fixture(scope="module")
def https_url(certificate: Certificate) -> Iterator[str]:
    """``https://mcp.test:PORT/mcp``: the SDK server over HTTPS."""
    for where in _sdk(free_port(), "--certfile", str(certificate.cert), "--keyfile", str(certificate.key)):
        yield f"https://{where}"


@pytest.fixture
def trusting(certificate: Certificate) -> ssl.SSLContext:
    """A client context that trusts only the test certificate."""
    return ssl.create_default_context(cafile=str(certificate.cert))


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy variable from the machine running the tests."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


async def test_a_plain_http_server_is_reached_through_the_proxy_of_the_environment(
    driver: Driver, http_url: str, environ: pytest.MonkeyPatch
) -> None:
    with ConnectProxy(hosts=HOSTS) as proxy:
        environ.setenv("HTTP_PROXY", proxy.url)
        async with driver.connect_http(http_url, config=QUICK) as client:
            assert text_of(await client.call_tool("echo", {"message": "via proxy"})) == "via proxy"
            assert text_of(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
    assert proxy.tunnels >= 1
    assert set(proxy.targets) == {http_url.split("/")[2]}


async def test_an_https_server_is_reached_through_a_tunnel_with_proxy_credentials(
    driver: Driver, https_url: str, trusting: ssl.SSLContext, environ: pytest.MonkeyPatch
) -> None:
    with ConnectProxy(hosts=HOSTS, credentials="ann:s3cr3t") as proxy:
        environ.setenv("HTTPS_PROXY", "http://wrong:proxy@127.0.0.1:9")  # the explicit proxy wins
        explicit = proxy.url.replace("http://", "http://ann:s3cr3t@")
        async with driver.connect_http(https_url, config=QUICK, proxy=explicit,
                                       ssl_context=trusting) as client:
            assert text_of(await client.call_tool("echo", {"message": "in a tunnel"})) == "in a tunnel"
            assert client.server_info.name == "mcp-sansio-sdk-test-server"
    assert proxy.tunnels >= 1
    basic = "Basic " + base64.b64encode(b"ann:s3cr3t").decode()
    assert set(proxy.authorizations) == {basic}


async def test_a_proxy_wanting_credentials_fails_the_connect_with_a_proxy_error(
    driver: Driver, https_url: str, trusting: ssl.SSLContext, environ: pytest.MonkeyPatch
) -> None:
    with ConnectProxy(hosts=HOSTS, credentials="ann:s3cr3t") as proxy:
        environ.setenv("HTTPS_PROXY", proxy.url.replace("http://", "http://ann:not-it@"))
        with pytest.raises(ProxyError) as caught:
            async with driver.connect_http(https_url, config=QUICK, ssl_context=trusting):
                pass
    assert caught.value.status == 407
    assert "407" in str(caught.value) and proxy.url.removeprefix("http://") in str(caught.value)
    assert "not-it" not in str(caught.value) and "not-it" not in repr(caught.value)
    assert proxy.tunnels == 0 and len(proxy.targets) == 1  # not retried


async def test_a_proxy_that_cannot_reach_the_server_fails_with_its_status(
    driver: Driver, environ: pytest.MonkeyPatch
) -> None:
    # mcp.test does not resolve for the proxy either.
    with ConnectProxy() as proxy, pytest.raises(ProxyError, match="HTTP 502") as caught:
        async with driver.connect_http(f"http://{NAME}:9/mcp", config=QUICK, proxy=proxy.url):
            pass
    assert caught.value.status == 502


async def test_no_proxy_and_loopback_targets_bypass_the_proxy(
    driver: Driver, http_url: str, environ: pytest.MonkeyPatch
) -> None:
    with ConnectProxy(refuse=502) as proxy:
        environ.setenv("http_proxy", proxy.url)
        environ.setenv("no_proxy", "example.org, .test")
        # Direct, so the name does not resolve (through the proxy: a ProxyError, 502).
        with pytest.raises(ConnectionClosed):
            async with driver.connect_http(http_url, config=QUICK):
                pass
        environ.delenv("no_proxy")
        loopback = http_url.replace(NAME, "127.0.0.1")  # never through a proxy from the environment
        async with driver.connect_http(loopback, config=QUICK) as client:
            await client.ping()
    assert proxy.targets == []


async def test_a_websocket_goes_through_the_same_tunnel(driver: Driver, environ: pytest.MonkeyPatch) -> None:
    if not MCP1_PYTHON.is_file():
        pytest.fail(f"{MCP1_PYTHON} is missing: run `scripts/dev setup`", pytrace=False)
    port = free_port()
    args = [str(SERVERS_DIR / "ws_server.py"), "--port", str(port)]
    with running_http_server(str(MCP1_PYTHON), args, None, port, "/ws"), ConnectProxy(hosts=HOSTS) as proxy:
        environ.setenv("http_proxy", proxy.url)
        async with driver.connect_websocket(f"ws://{NAME}:{port}/ws", config=QUICK) as client:
            assert text_of(await client.call_tool("echo", {"message": "ws"})) == "ws"
    assert proxy.tunnels == 1 and proxy.targets == [f"{NAME}:{port}"]


def test_the_name_used_here_does_not_resolve() -> None:
    """What makes the tests above prove anything."""
    with pytest.raises(OSError):
        socket.getaddrinfo(NAME, 80)

"""``connect_http(url, auth=OAuth(...))`` on every driver against the official SDK's
OAuth-protected server (``sdk_oauth_server.py``), through the real loopback redirect; and
the token stores and keys it uses.

The user's browser is played by :class:`Browser` in a thread of its own (a real browser is
a process of its own): it fetches the authorization URL from the server, which approves
at once, and follows the redirect to the connection's loopback listener, which the
driver serves on its own loop (the blocking driver's selector included) meanwhile.
"""

from __future__ import annotations

import http.client
import json
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from peer_servers import free_port, running_http_server, sdk_server

from mcp_sansio import ClientConfig
from mcp_sansio.auth import b64url
from mcp_sansio.errors import LocalProtocolError, Unauthorized
from mcp_sansio_oauth import FileTokenStore, MemoryTokenStore, OAuth, StoredToken, es256_key

from .driver_adapter import Driver, text_of, until

pytestmark = pytest.mark.peer

CONFIG = ClientConfig(request_timeout=20.0, initialize_timeout=20.0)


class Browser:
    """Plays the user's browser: GET the authorization URL, follow its redirect home."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.pages: list[str] = []
        self._errors: list[BaseException] = []
        self._threads: list[threading.Thread] = []

    def __call__(self, url: str) -> None:
        self.opened.append(url)
        thread = threading.Thread(target=self._visit, args=(url,), name="browser")
        self._threads.append(thread)
        thread.start()

    def _visit(self, url: str) -> None:
        try:
            status, location, _ = get(url)
            assert status == 302, status
            status, _, page = get(location)
            assert status == 200, status
            self.pages.append(page)
        except BaseException as exc:  # reported by close(), in the test's thread
            self._errors.append(exc)

    def close(self) -> None:
        """Wait for every visit to end; fail with the first that went wrong."""
        for thread in self._threads:
            thread.join(30.0)
        assert not any(thread.is_alive() for thread in self._threads), "a browser visit hung"
        if self._errors:
            raise self._errors[0]


def get(url: str) -> tuple[int, str, str]:
    """GET ``url`` without following redirects: status, ``Location`` and body."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
        response = connection.getresponse()
        return response.status, response.getheader("location") or "", response.read().decode()
    finally:
        connection.close()


@pytest.fixture
def browser() -> Iterator[Browser]:
    """The user's browser; every visit it made has ended, successfully, after the test."""
    played = Browser()
    yield played
    played.close()


@pytest.fixture(scope="module")
def short_lived_url() -> Iterator[str]:
    """The SDK server, listing public clients (so the client registers as one); 2 s tokens."""
    port = free_port()
    command, args = sdk_server("sdk_oauth_server", "--port", str(port), "--token-lifetime", "2",
                               "--public-clients")
    with running_http_server(command, args, None, port, "/mcp") as url:
        yield url


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    """The SDK server as it comes: confidential clients only; tokens for an hour."""
    port = free_port()
    command, args = sdk_server("sdk_oauth_server", "--port", str(port))
    with running_http_server(command, args, None, port, "/mcp") as url:
        yield url


async def whoami(driver: Driver, url: str, auth: OAuth) -> str:
    async with driver.connect_http(url, config=CONFIG, auth=auth) as client:
        return text_of(await client.call_tool("whoami", {}))


@pytest.mark.anyio
async def test_browser_flow_through_the_loopback_redirect(driver: Driver, short_lived_url: str,
                                                          browser: Browser, tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens")
    answer = await whoami(driver, short_lived_url, OAuth(open_browser=browser, store=store))
    browser.close()
    client_id, scopes = answer.split(" ", 1)
    assert scopes == "mcp:tools"
    assert client_id not in {"", "anonymous"}
    assert len(browser.opened) == 1
    [page] = browser.pages
    assert "Authorization received." in page
    path = store.path(short_lived_url)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    saved = store.load(short_lived_url)
    assert saved is not None and saved.token_type == "Bearer" and saved.refresh_token


@pytest.mark.anyio
async def test_stored_token_needs_no_browser(driver: Driver, sdk_url: str, browser: Browser) -> None:
    store = MemoryTokenStore()
    first = await whoami(driver, sdk_url, OAuth(open_browser=browser, store=store))
    again = await whoami(driver, sdk_url, OAuth(open_browser=browser, store=store))
    assert first == again
    assert len(browser.opened) == 1


@pytest.mark.anyio
async def test_token_is_refreshed_before_it_expires(driver: Driver, short_lived_url: str,
                                                    browser: Browser) -> None:
    store = MemoryTokenStore()
    auth = OAuth(open_browser=browser, store=store)
    async with driver.connect_http(short_lived_url, config=CONFIG, auth=auth) as client:
        first = text_of(await client.call_tool("whoami", {}))
        before = store.load(short_lived_url)
        assert before is not None
        # The 2 s token is renewed (and stored) about 1 s in; the blocking driver does that
        # while a call waits, so pings run until then.
        await until(client, lambda: store.load(short_lived_url) != before)
        second = text_of(await client.call_tool("whoami", {}))
    after = store.load(short_lived_url)
    assert after is not None and after.access_token != before.access_token
    assert after.refresh_token != before.refresh_token  # rotated
    assert first == second
    assert len(browser.opened) == 1


@pytest.mark.anyio
async def test_step_up_asks_again_for_the_scopes_held_and_challenged(driver: Driver, sdk_url: str,
                                                                     browser: Browser) -> None:
    async with driver.connect_http(sdk_url, config=CONFIG, auth=OAuth(open_browser=browser)) as client:
        before = text_of(await client.call_tool("whoami", {}))
        assert text_of(await client.call_tool("admin", {})) == "admin"  # refused once, then stepped up
        after = text_of(await client.call_tool("whoami", {}))
        token = client.token
    assert before.split(" ", 1)[1] == "mcp:tools"
    assert sorted(after.split(" ", 1)[1].split()) == ["mcp:admin", "mcp:tools"]
    assert before.split(" ", 1)[0] == after.split(" ", 1)[0]  # the same registered client
    assert token is not None and set(token.scopes) == {"mcp:admin", "mcp:tools"}
    asked = [parse_qs(urlsplit(url).query)["scope"] for url in browser.opened]
    assert asked == [["mcp:tools"], ["mcp:tools mcp:admin"]]


@pytest.mark.anyio
async def test_confidential_client_registered_by_the_sdk(driver: Driver, sdk_url: str,
                                                         browser: Browser) -> None:
    answer = await whoami(driver, sdk_url, OAuth(open_browser=browser))
    assert answer.endswith(" mcp:tools")


@pytest.mark.anyio
async def test_authorize_refuses_while_a_token_is_held(driver: Driver, sdk_url: str,
                                                      browser: Browser) -> None:
    async with driver.connect_http(sdk_url, config=CONFIG, auth=OAuth(open_browser=browser)) as client:
        assert client.token is not None  # the handshake was authorized
        with pytest.raises(LocalProtocolError):
            await client.authorize()
        await client.ping()


@pytest.mark.anyio
async def test_a_failing_browser_opener_fails_the_connection(driver: Driver, sdk_url: str) -> None:
    def broken(url: str) -> None:
        raise OSError("no display")

    with pytest.raises(Unauthorized, match="cancelled"):
        async with driver.connect_http(sdk_url, config=CONFIG, auth=OAuth(open_browser=broken)):
            pass


@pytest.mark.anyio
async def test_unauthorized_without_oauth(driver: Driver, sdk_url: str) -> None:
    with pytest.raises(Unauthorized):
        async with driver.connect_http(sdk_url, config=CONFIG):
            pass


# ------------------------------------------------------------------ no server needed


def stored(issuer: str, access: str = "a") -> StoredToken:
    return StoredToken(access_token=access, token_type="Bearer", expires_at=None, scopes=("s",),
                       refresh_token=None, issuer=issuer)


def test_file_store_keeps_the_latest_token_per_server(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path)
    store.save("https://a.example/mcp", stored("https://as1", "one"))
    store.save("https://a.example/mcp", stored("https://as2", "two"))
    store.save("https://b.example/mcp", stored("https://as1", "three"))
    assert store.load("https://a.example/mcp") == stored("https://as2", "two")
    document = json.loads(store.path("https://a.example/mcp").read_text())
    assert set(document["tokens"]) == {"https://as1", "https://as2"}
    store.delete("https://a.example/mcp")
    store.delete("https://a.example/mcp")  # twice is fine
    assert store.load("https://a.example/mcp") is None
    assert store.load("https://b.example/mcp") == stored("https://as1", "three")


def test_file_store_ignores_damaged_files(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path)
    store.path("https://a.example/mcp").write_text("not json")
    store.path("https://a.example/mcp").chmod(0o600)
    assert store.load("https://a.example/mcp") is None


def test_stored_token_repr_hides_the_secrets() -> None:
    token = StoredToken(access_token="at-secret", token_type="Bearer", expires_at=None, scopes=("s",),
                        refresh_token="rt-secret", issuer="https://as")
    assert "secret" not in repr(token) and "https://as" in repr(token)


def test_es256_key_signs_verifiably() -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    key = es256_key(pem.decode(), kid="k")
    signature = key.sign(b"input")
    assert len(signature) == 64
    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    private.public_key().verify(encode_dss_signature(r, s), b"input", ec.ECDSA(hashes.SHA256()))
    numbers = private.public_key().public_numbers()
    assert key.public_jwk["x"] == b64url(numbers.x.to_bytes(32, "big"))
    assert (key.alg, key.kid) == ("ES256", "k")


def test_es256_key_refuses_other_curves() -> None:
    pem = ec.generate_private_key(ec.SECP384R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    with pytest.raises(LocalProtocolError):
        es256_key(pem)


def test_every_driver_exports_the_same_oauth_settings() -> None:
    import mcp_sansio_anyio
    import mcp_sansio_asyncio
    import mcp_sansio_sync

    for package in (mcp_sansio_asyncio, mcp_sansio_anyio, mcp_sansio_sync):
        assert (package.OAuth, package.MemoryTokenStore, package.FileTokenStore) == (
            OAuth, MemoryTokenStore, FileTokenStore)


def test_cli_login_status_logout(short_lived_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str], browser: Browser) -> None:
    from mcp_sansio_cli.main import main

    def open_url(url: str) -> bool:
        browser(url)
        return True

    monkeypatch.setattr("webbrowser.open", open_url)
    where = ["--url", short_lived_url, "--token-dir", str(tmp_path)]
    assert main(["auth", "login", *where]) == 0
    assert capsys.readouterr().out.startswith(f"Logged in to {short_lived_url}: issuer http://127.0.0.1:")
    assert len(browser.opened) == 1
    assert main(["auth", "status", "--json", *where]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["scopes"], status["refreshable"]) == (["mcp:tools"], True)
    assert main(["auth", "logout", *where]) == 0
    assert main(["auth", "status", *where]) == 1
    assert capsys.readouterr().out.endswith(f"Not logged in to {short_lived_url}.\n")

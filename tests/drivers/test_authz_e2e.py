"""Server-side authorization end to end, with a real authorization server nobody here wrote.

oidc-provider (npm, ``tests/peers/oauth_server.mjs``) issues JWT access tokens per resource
indicator (RFC 8707; it has no default resource, so a client that names none fails). Our
server (``tests/servers/authz_e2e_app.py``) checks them with ``JwtVerifier``: through
``mcp-sansio serve --auth-jwks ...`` on every server driver (asyncio, anyio, trio, blocking),
and as ASGI under uvicorn; one more server checks opaque tokens by introspection
(``--auth-introspect``). It is met by our own client's OAuth (client credentials, basic and
post; authorization code with PKCE through the real loopback redirect; dynamic registration;
step-up on 403 ``insufficient_scope``; renewal by refresh token and by repeating the grant),
each server driver by one client driver so that every driver of both sides takes part; by
the official SDK's client (``OAuthClientProvider``: discovery, dynamic registration, PKCE,
step-up, in both protocol eras); and by raw requests carrying bad tokens, which must each get the right status
and ``WWW-Authenticate``.

The user's browser is :class:`Browser`: it follows every redirect with a cookie jar, as a
browser does, from the authorization URL through oidc-provider's (automatic) login and
consent to the client's loopback redirect URI.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import hmac
import http.client
import http.cookiejar
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Final

import pytest
from peer_servers import (
    PeerStartError,
    free_port,
    node_binary,
    peers_dir,
    sdk_server,
    stop_process,
)

import mcp_sansio_sync
from mcp_sansio import ClientConfig
from mcp_sansio.auth import ClientCredentials, ClientCredentialsGrant
from mcp_sansio.errors import Unauthorized
from mcp_sansio_oauth import OAuth

from .driver_adapter import Driver, text_of, until

pytestmark = [pytest.mark.peer, pytest.mark.anyio]

TESTS: Final = Path(__file__).resolve().parent.parent
CONFIG: Final = ClientConfig(request_timeout=20.0, initialize_timeout=20.0)
HANDSHAKE: Final = ClientConfig(protocol="2025-11-25", request_timeout=20.0, initialize_timeout=20.0)
SERVERS: Final = ["asyncio", "anyio", "trio", "sync", "asgi"]
CLIENT_DRIVERS: Final = {"asyncio": "asyncio", "anyio": "anyio-asyncio", "trio": "anyio-trio", "sync": "sync",
                         "asgi": "asyncio"}
CC_CLIENT: Final = ClientCredentials(client_id="cc-client", client_secret="cc-secret")


# ---------------------------------------------------------------- peers


@contextlib.contextmanager
def running_together(commands: dict[str, tuple[list[str], dict[str, str] | None, int]],
                     timeout: float = 120.0) -> Iterator[None]:
    """Start every ``name: (argv, env, port)`` at once (their imports overlap), and wait until
    each accepts TCP on its port; stop them all afterwards.

    Raises:
        PeerStartError: one exited, or did not open its port in time (with its output).
    """
    with contextlib.ExitStack() as stack:
        started: dict[str, tuple[subprocess.Popen[bytes], IO[bytes], int]] = {}
        for name, (argv, env, port) in commands.items():
            log: IO[bytes] = stack.enter_context(tempfile.TemporaryFile())
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT)
            stack.callback(stop_process, proc)
            started[name] = (proc, log, port)
        deadline = time.monotonic() + timeout
        while started:
            for name, (proc, log, port) in list(started.items()):
                if accepts(port):
                    del started[name]
                elif proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise PeerStartError(f"{name} ({' '.join(commands[name][0])}) did not start; output:\n"
                                         f"{log.read().decode(errors='replace')}")
            time.sleep(0.05)
        yield


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def make_opaque(issuer: str, resource: str) -> None:
    """From now on, the authorization server's tokens for ``resource`` are opaque."""
    body = json.dumps({"resource": resource}).encode()
    headers = {"content-type": "application/json"}
    urllib.request.urlopen(urllib.request.Request(f"{issuer}/test/opaque", data=body, headers=headers),
                           timeout=10).close()


@dataclasses.dataclass(frozen=True)
class Peers:
    """The authorization server, our servers and the SDK's client, all started at once."""

    issuer: str
    urls: dict[str, str]
    sdk: subprocess.Popen[bytes]
    sdk_stderr: IO[bytes]


@pytest.fixture(scope="module")
def peers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peers]:
    """oidc-provider (it has no default resource: a client that names none gets
    ``invalid_target``); our protected server: ``mcp-sansio serve --auth-*`` on each driver,
    as ASGI under uvicorn (protected by ``authz_e2e_app.py`` itself), and, as
    ``"introspection"``, with ``--auth-introspect`` (it asks the authorization server about
    each token, RFC 7662; the tokens for it are opaque); and the official SDK's client
    (``sdk_oauth_client.py``), which waits for their URLs. Started together, their imports
    overlap."""
    home = tmp_path_factory.mktemp("oauth-server")
    (home / "node_modules").symlink_to(peers_dir() / "node_modules")
    shutil.copy(TESTS / "peers" / "oauth_server.mjs", home)
    as_port = free_port()
    issuer = f"http://127.0.0.1:{as_port}"
    commands: dict[str, tuple[list[str], dict[str, str] | None, int]] = {
        "oidc-provider": ([node_binary(), str(home / "oauth_server.mjs"), str(as_port), "urn:no-default"],
                          None, as_port),
    }
    app = str(TESTS / "servers" / "authz_e2e_app.py")
    urls = {}
    for name in [*SERVERS, "introspection"]:
        port = free_port()
        urls[name] = resource = f"http://127.0.0.1:{port}/mcp"
        serve = [sys.executable, "-m", "mcp_sansio_cli", "serve", app, "--http", str(port),
                 "--auth-issuer", issuer, "--auth-audience", resource, "--auth-scope", "mcp:tools"]
        if name == "asgi":
            app_argv = sdk_server("authz_e2e_app", "--port", str(port), "--issuer", issuer)
            commands[name] = ([app_argv[0], *app_argv[1]], None, port)
        elif name == "introspection":
            env = {**os.environ, "MCP_SANSIO_INTROSPECTION_SECRET": "rs-secret"}
            commands[name] = ([*serve, "--auth-introspect", f"{issuer}/token/introspection",
                               "--auth-client-id", "rs-client"], env, port)
        else:
            commands[name] = ([*serve, "--driver", name, "--auth-jwks", f"{issuer}/jwks"], None, port)
    command, args = sdk_server("sdk_oauth_client")
    with tempfile.TemporaryFile() as sdk_stderr:
        sdk = subprocess.Popen([command, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=sdk_stderr)
        try:
            with running_together(commands):
                make_opaque(issuer, urls["introspection"])
                yield Peers(issuer, urls, sdk, sdk_stderr)
        finally:
            with contextlib.suppress(OSError, ValueError):
                sdk.communicate(timeout=10)  # no URLs (the SDK test did not run): it exits
            stop_process(sdk)


@pytest.fixture(scope="module")
def issuer(peers: Peers) -> str:
    """The authorization server's issuer URL."""
    return peers.issuer


@pytest.fixture(scope="module")
def servers(peers: Peers) -> dict[str, str]:
    """Our servers' endpoint URLs, by driver (and ``"introspection"``)."""
    return peers.urls


def test_the_authorization_server_serves_rfc_8414_metadata_too(issuer: str) -> None:
    # So no alias is needed: our client and the SDK's find it at either well-known path.
    for path in ("oauth-authorization-server", "openid-configuration"):
        with urllib.request.urlopen(f"{issuer}/.well-known/{path}", timeout=10) as answer:
            document = json.load(answer)
        assert document["issuer"] == issuer
        assert "S256" in document["code_challenge_methods_supported"]


@pytest.fixture(scope="module", params=SERVERS)
def server_driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def driver(server_driver: str) -> Driver:
    """Our client, on the client driver paired with the server's: each client driver and each
    server driver meet (five pairings, not twenty; the waits of a full matrix add up)."""
    return Driver(CLIENT_DRIVERS[server_driver])


@pytest.fixture(scope="module")
def server(server_driver: str, servers: dict[str, str]) -> str:
    """The endpoint URL of our protected server on ``server_driver``."""
    return servers[server_driver]


@pytest.fixture(scope="module")
def introspected(servers: dict[str, str]) -> str:
    """The endpoint URL of our server that introspects opaque tokens."""
    return servers["introspection"]


# ---------------------------------------------------------------- the user's browser


class Browser:
    """Plays the user's browser in a thread of its own: follows redirects, keeping cookies,
    from the authorization URL to the page the client's loopback listener serves."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.pages: list[str] = []
        self._errors: list[BaseException] = []
        self._threads: list[threading.Thread] = []
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def __call__(self, url: str) -> None:
        self.opened.append(url)
        thread = threading.Thread(target=self._visit, args=(url,), name="browser")
        self._threads.append(thread)
        thread.start()

    def _visit(self, url: str) -> None:
        try:
            with self._opener.open(url, timeout=15) as page:
                self.pages.append(page.read().decode())
        except BaseException as exc:  # reported by close(), in the test's thread
            self._errors.append(exc)

    def close(self) -> None:
        """Wait for every visit to end; fail with the first that went wrong."""
        for thread in self._threads:
            thread.join(30.0)
        assert not any(thread.is_alive() for thread in self._threads), "a browser visit hung"
        if self._errors:
            raise self._errors[0]


@pytest.fixture
def browser() -> Iterator[Browser]:
    played = Browser()
    yield played
    played.close()


def asked_scopes(browser: Browser) -> list[str]:
    """The scopes of each authorization request (our client adds ``offline_access``, which
    the authorization server lists, to each)."""
    return [urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["scope"][0] for url in browser.opened]


# ---------------------------------------------------------------- our client


async def test_our_client_with_client_credentials(driver: Driver, server: str) -> None:
    auth = OAuth(grant=ClientCredentialsGrant(), client=CC_CLIENT)
    async with driver.connect_http(server, config=CONFIG, auth=auth) as client:
        assert text_of(await client.call_tool("whoami", {})) == "cc-client cc-client mcp:tools"
        assert [tool.name for tool in await client.list_tools()] == ["whoami", "admin"]


async def test_our_client_with_client_credentials_steps_up_without_a_browser(driver: Driver,
                                                                             server: str) -> None:
    auth = OAuth(grant=ClientCredentialsGrant(), client=CC_CLIENT)
    async with driver.connect_http(server, config=CONFIG, auth=auth) as client:
        assert text_of(await client.call_tool("whoami", {})) == "cc-client cc-client mcp:tools"
        assert text_of(await client.call_tool("admin", {})) == "admin"  # 403, then a new grant
        token = client.token
    assert token is not None and set(token.scopes) == {"mcp:tools", "mcp:admin"}


async def test_our_client_authenticates_with_client_secret_post(driver: Driver, server: str) -> None:
    client_auth = ClientCredentials(client_id="cc-post", client_secret="cc-post-secret",
                                    token_endpoint_auth_method="client_secret_post")
    auth = OAuth(grant=ClientCredentialsGrant(), client=client_auth)
    async with driver.connect_http(server, config=CONFIG, auth=auth) as client:
        assert text_of(await client.call_tool("whoami", {})) == "cc-post cc-post mcp:tools"


async def test_our_client_encodes_an_odd_client_id_and_secret_for_http_basic(driver: Driver,
                                                                              server: str) -> None:
    # RFC 6749 section 2.3.1: both are form-encoded before they are joined by a colon.
    odd = ClientCredentials(client_id="odd:client id", client_secret="p@ss:w/rd+%= ~")
    async with driver.connect_http(server, config=CONFIG, auth=OAuth(grant=ClientCredentialsGrant(),
                                                                      client=odd)) as client:
        assert text_of(await client.call_tool("whoami", {})) == "odd:client id odd:client id mcp:tools"


async def test_our_client_renews_a_client_credentials_token_before_it_expires(driver: Driver,
                                                                              server: str) -> None:
    # The authorization server's tokens for this client live 1 s (and come with no refresh
    # token, as client credentials do): the grant is repeated, for the scopes asked before.
    auth = OAuth(grant=ClientCredentialsGrant(),
                 client=ClientCredentials(client_id="short-lived", client_secret="short-secret"))
    async with driver.connect_http(server, config=CONFIG, auth=auth) as client:
        assert text_of(await client.call_tool("whoami", {})) == "short-lived short-lived mcp:tools"
        first = client.token
        assert first is not None and first.refresh_token is None
        await until(client, lambda: client.token is not None and client.token.serial > first.serial)
        assert text_of(await client.call_tool("whoami", {})) == "short-lived short-lived mcp:tools"
        second = client.token
    assert second is not None and second.access_token != first.access_token
    assert second.scopes == ("mcp:tools",)


async def test_our_client_with_pkce_steps_up_for_a_tool_needing_more_scope(
        driver: Driver, server: str, browser: Browser) -> None:
    auth = OAuth(open_browser=browser, client=ClientCredentials(client_id="public-client"))
    async with driver.connect_http(server, config=CONFIG, auth=auth) as client:
        assert text_of(await client.call_tool("whoami", {})) == "test-user public-client mcp:tools"
        assert text_of(await client.call_tool("admin", {})) == "admin"  # 403, then re-authorized
        assert text_of(await client.call_tool("whoami", {})) == "test-user public-client mcp:admin mcp:tools"
    browser.close()
    assert asked_scopes(browser) == ["mcp:tools offline_access", "mcp:tools offline_access mcp:admin"]
    assert all("Authorization received." in page for page in browser.pages)


async def test_our_client_renews_its_browser_token_with_the_refresh_token(
        driver: Driver, server: str, browser: Browser) -> None:
    # short-public's access tokens live 1 s. The refresh token comes only because our client
    # sends prompt=consent with offline_access (OpenID Connect Core section 11).
    auth = OAuth(open_browser=browser, client=ClientCredentials(client_id="short-public"))
    async with driver.connect_http(server, config=CONFIG, auth=auth) as client:
        assert text_of(await client.call_tool("whoami", {})) == "test-user short-public mcp:tools"
        first = client.token
        assert first is not None and first.refresh_token is not None
        await until(client, lambda: client.token is not None and client.token.serial > first.serial)
        assert text_of(await client.call_tool("whoami", {})) == "test-user short-public mcp:tools"
    assert len(browser.opened) == 1  # renewed without the user
    assert parse_qs_one(browser.opened[0])["prompt"] == "consent"


def parse_qs_one(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).items()}


async def test_our_client_registers_itself_and_keeps_its_session_across_the_step_up(
        driver: Driver, server: str, browser: Browser) -> None:
    async with driver.connect_http(server, config=HANDSHAKE, auth=OAuth(open_browser=browser)) as client:
        session = client.session_id
        who = text_of(await client.call_tool("whoami", {})).split()
        assert text_of(await client.call_tool("admin", {})) == "admin"
        assert client.session_id == session  # the same user's stronger token reaches its session
    assert who[0] == "test-user" and who[1] not in {"public-client", "None"}  # a registered client


# ---------------------------------------------------------------- the official SDK's client


@pytest.fixture(scope="module")
def sdk_saw(peers: Peers) -> dict[str, dict[str, object]]:
    """What the official SDK's client saw at each server (it meets them all at once), by URL."""
    urls = [peers.urls[name] for name in SERVERS]
    try:
        out, _ = peers.sdk.communicate(input=" ".join(urls).encode(), timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("the SDK client did not finish within 90 s")
    peers.sdk_stderr.seek(0)
    assert peers.sdk.returncode == 0, peers.sdk_stderr.read().decode(errors="replace")[-3000:]
    seen: dict[str, dict[str, object]] = json.loads(out)
    return seen


def test_the_official_sdk_client_registers_signs_in_and_steps_up(sdk_saw: dict[str, dict[str, object]],
                                                                  server: str) -> None:
    seen = sdk_saw[server]
    assert "error" not in seen, seen["error"]
    registered, preregistered = seen["registered"], seen["preregistered"]
    assert isinstance(registered, dict) and isinstance(preregistered, dict)
    assert registered["client_id"] not in {None, "public-client"}  # dynamic registration
    assert registered["errors"] == [False]
    assert registered["texts"] == [f"test-user {registered['client_id']} mcp:tools"]
    assert registered["asked"] == ["mcp:tools offline_access"]
    assert preregistered["errors"] == [False, False, False]
    assert preregistered["texts"] == ["test-user public-client mcp:tools", "admin",
                                      "test-user public-client mcp:admin mcp:tools"]
    assert preregistered["asked"] == ["mcp:tools offline_access", "mcp:tools offline_access mcp:admin"]
    assert preregistered["version"] == "2026-07-28"
    legacy = seen["legacy"]  # the handshake era, with a session
    assert isinstance(legacy, dict)
    assert (legacy["version"], legacy["errors"]) == ("2025-11-25", [False, False, False])
    assert legacy["texts"] == preregistered["texts"]


# ---------------------------------------------------------------- refusals


def token_for(issuer: str, resource: str, *, client: str = "cc-client", secret: str = "cc-secret",
              scope: str = "mcp:tools") -> dict[str, object]:
    """A client-credentials token from the authorization server, for ``resource``."""
    form = {"grant_type": "client_credentials", "scope": scope, "resource": resource}
    headers = {}
    if client == "cc-post":  # client_secret_post
        form |= {"client_id": client, "client_secret": secret}
    else:
        headers["authorization"] = "Basic " + base64.b64encode(f"{client}:{secret}".encode()).decode()
    request = urllib.request.Request(f"{issuer}/token", data=urllib.parse.urlencode(form).encode(),
                                     headers=headers)
    with urllib.request.urlopen(request, timeout=10) as answer:
        token: dict[str, object] = json.load(answer)
    return token


def minted(issuer: str, claims: dict[str, object], *, key: str = "provider",
           header: dict[str, object] | None = None) -> str:
    """A token the authorization server's test route signs with its own key (or a foreign one)."""
    body = json.dumps({"claims": claims, "key": key, "header": header or {}}).encode()
    request = urllib.request.Request(f"{issuer}/test/mint", data=body,
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        token: str = json.load(answer)["token"]
    return token


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def claims_of(token: str) -> dict[str, object]:
    claims: dict[str, object] = json.loads(unb64(token.split(".")[1]))
    return claims


def post(url: str, token: str | None, body: dict[str, object], *,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """POST a JSON-RPC message to ``url``: status, headers (lower-case names), body."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=15)
    sent = {"content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25", **(headers or {})}
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    try:
        connection.request("POST", parts.path, json.dumps(body).encode(), sent)
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


INITIALIZE: Final[dict[str, object]] = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "1"}},
}


def challenge(headers: dict[str, str]) -> dict[str, str]:
    """The ``WWW-Authenticate: Bearer`` parameters."""
    value = headers["www-authenticate"]
    assert value.startswith("Bearer "), value
    return {k: v.replace('\\"', '"') for k, v in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', value)}


def metadata_url(server: str) -> str:
    parts = urllib.parse.urlsplit(server)
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"


def test_protected_resource_metadata_names_the_authorization_server(server: str, issuer: str) -> None:
    with urllib.request.urlopen(metadata_url(server), timeout=10) as answer:
        document = json.load(answer)
    assert document["resource"] == server
    assert document["authorization_servers"] == [issuer]
    assert set(document["scopes_supported"]) == {"mcp:tools", "mcp:admin"}


def test_the_metadata_is_served_at_the_root_well_known_path_too(server: str, issuer: str) -> None:
    origin = server.rsplit("/", 1)[0]
    with urllib.request.urlopen(f"{origin}/.well-known/oauth-protected-resource", timeout=10) as answer:
        assert json.load(answer)["authorization_servers"] == [issuer]


def test_a_request_without_a_token_is_told_where_to_get_one(server: str) -> None:
    status, headers, _ = post(server, None, INITIALIZE)
    assert status == 401
    assert challenge(headers) == {"resource_metadata": metadata_url(server), "scope": "mcp:tools"}


def refused(server: str, token: str) -> dict[str, str]:
    status, headers, body = post(server, token, INITIALIZE)
    assert status == 401, body
    params = challenge(headers)
    assert params["error"] == "invalid_token"
    assert params["resource_metadata"] == metadata_url(server)
    assert token not in json.dumps([headers, body.decode()])  # never echoed
    return params


def valid_claims(issuer: str, server: str) -> dict[str, object]:
    now = int(time.time())
    return {"iss": issuer, "sub": "mallory", "aud": server, "client_id": "cc-client", "scope": "mcp:tools",
            "iat": now, "exp": now + 600}


def test_a_good_token_opens_a_session(server: str, issuer: str) -> None:
    token = str(token_for(issuer, server)["access_token"])
    status, headers, body = post(server, token, INITIALIZE)
    assert status == 200, body
    assert headers.get("mcp-session-id")
    # A token the test route signs with the provider's key is as good: the refusals below
    # are refused for what they change, not for being minted.
    status, _, body = post(server, minted(issuer, valid_claims(issuer, server)), INITIALIZE)
    assert status == 200, body
    several = minted(issuer, {**valid_claims(issuer, server), "aud": ["https://elsewhere.example/", server]})
    assert post(server, several, INITIALIZE)[0] == 200  # one of its audiences is us


def test_a_token_for_another_resource_is_refused(server: str, issuer: str) -> None:
    other = server.rsplit("/", 1)[0] + "/other-mcp"
    token = token_for(issuer, other)
    assert claims_of(str(token["access_token"]))["aud"] == other
    assert "another resource" in refused(server, str(token["access_token"]))["error_description"]


def test_a_token_with_the_wrong_audience_is_refused(server: str, issuer: str) -> None:
    origin = server.rsplit("/", 1)[0]  # the server's origin, not its resource URI
    for audience in (origin, "https://elsewhere.example/mcp", [origin, "https://elsewhere.example/"]):
        token = minted(issuer, {**valid_claims(issuer, server), "aud": audience})
        assert "another resource" in refused(server, token)["error_description"]


def test_an_expired_token_is_refused(server: str, issuer: str) -> None:
    # Signed by the authorization server's key: its own tokens live 1 s at the shortest,
    # and the verifier allows 30 s of clock skew past exp.
    now = int(time.time())
    for expired in (now - 3600, now - 60):
        token = minted(issuer, {**valid_claims(issuer, server), "iat": expired - 600, "exp": expired})
        assert "expired" in refused(server, token)["error_description"]


def test_a_token_with_a_bad_signature_is_refused(server: str, issuer: str) -> None:
    header, payload, signature = str(token_for(issuer, server)["access_token"]).split(".")
    raw = bytearray(unb64(signature))
    raw[len(raw) // 2] ^= 0x01
    assert "signature" in refused(server, f"{header}.{payload}.{b64(bytes(raw))}")["error_description"]
    # The signature of a real token over claims changed to grant more.
    more = b64(json.dumps({**claims_of(f"{header}.{payload}.x"), "scope": "mcp:tools mcp:admin"}).encode())
    assert "signature" in refused(server, f"{header}.{more}.{signature}")["error_description"]


def test_a_token_signed_by_an_unknown_key_is_refused(server: str, issuer: str) -> None:
    token = minted(issuer, valid_claims(issuer, server), key="foreign")
    assert json.loads(unb64(token.split(".")[0]))["kid"] == "not-in-any-jwks"
    assert "unknown key" in refused(server, token)["error_description"]
    # The foreign key under the provider's own kid: a bad signature.
    token = minted(issuer, valid_claims(issuer, server), key="foreign", header={"kid": "as-key-1"})
    assert "signature" in refused(server, token)["error_description"]


def jwks_fetches(issuer: str) -> int:
    with urllib.request.urlopen(f"{issuer}/test/jwks-fetches", timeout=10) as answer:
        count: int = json.load(answer)["fetches"]
    return count


def test_unknown_kids_do_not_make_the_server_fetch_the_key_set_each_time(server: str, issuer: str) -> None:
    status, _, _ = post(server, minted(issuer, valid_claims(issuer, server)), INITIALIZE)
    assert status == 200  # the key set is known
    before = jwks_fetches(issuer)
    for n in range(8):
        token = minted(issuer, {**valid_claims(issuer, server), "jti": str(n)}, key="foreign",
                       header={"kid": f"rotated-{n}"})
        assert "unknown key" in refused(server, token)["error_description"]
    assert jwks_fetches(issuer) - before <= 1  # one early refetch, then rate-limited


def test_a_token_not_yet_valid_or_without_an_expiry_is_refused(server: str, issuer: str) -> None:
    claims = valid_claims(issuer, server)
    early = minted(issuer, {**claims, "nbf": int(time.time()) + 3600})
    assert "not valid yet" in refused(server, early)["error_description"]
    endless = minted(issuer, {k: v for k, v in claims.items() if k != "exp"})
    assert refused(server, endless)["error_description"] == "the access token is invalid"


def test_an_oversized_token_is_refused_and_the_server_stays_up(server: str, issuer: str) -> None:
    # Every driver bounds the request head (32 KiB), the ASGI app too (uvicorn reads it, the
    # app refuses it before the token verifier sees it)
    assert post(server, "a" * 60_000, INITIALIZE)[0] == 431
    assert post(server, minted(issuer, valid_claims(issuer, server)), INITIALIZE)[0] == 200


def test_an_unsigned_token_is_refused(server: str, issuer: str) -> None:
    payload = b64(json.dumps(valid_claims(issuer, server)).encode())
    for alg in ("none", "None", "NONE"):
        header = b64(json.dumps({"alg": alg, "typ": "at+jwt", "kid": "as-key-1"}).encode())
        assert "algorithm" in refused(server, f"{header}.{payload}.")["error_description"]


def test_a_token_signed_with_the_public_key_as_an_hmac_secret_is_refused(server: str, issuer: str) -> None:
    with urllib.request.urlopen(f"{issuer}/jwks", timeout=10) as answer:
        jwk = json.load(answer)["keys"][0]
    header = b64(json.dumps({"alg": "HS256", "typ": "at+jwt", "kid": jwk["kid"]}).encode())
    payload = b64(json.dumps(valid_claims(issuer, server)).encode())
    for secret in (json.dumps(jwk).encode(), unb64(jwk["n"])):
        signature = b64(hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest())
        assert "algorithm" in refused(server, f"{header}.{payload}.{signature}")["error_description"]


def test_a_token_from_another_issuer_is_refused(server: str, issuer: str) -> None:
    token = minted(issuer, {**valid_claims(issuer, server), "iss": "http://127.0.0.1:1"})
    assert "another authorization server" in refused(server, token)["error_description"]


def test_a_token_in_the_query_string_or_the_body_is_not_taken(server: str, issuer: str) -> None:
    token = str(token_for(issuer, server)["access_token"])
    query = urllib.parse.urlencode({"access_token": token})
    status, headers, _ = post(f"{server}?{query}", None, {**INITIALIZE, "access_token": token})
    assert status == 401
    assert "error" not in challenge(headers)  # no token was seen at all


def test_an_opaque_or_malformed_token_is_refused(server: str) -> None:
    assert "malformed" in refused(server, "opaque-token-the-server-cannot-read")["error_description"]
    assert "malformed" in refused(server, "a.b.c")["error_description"]
    status, headers, _ = post(server, "not a token", INITIALIZE)
    assert (status, challenge(headers)["error"]) == (400, "invalid_request")


async def test_a_token_lacking_a_tools_scope_gets_403_insufficient_scope(driver: Driver, server: str,
                                                                         issuer: str) -> None:
    token = str(token_for(issuer, server)["access_token"])
    headers = {"Authorization": f"Bearer {token}"}
    async with driver.connect_http(server, config=CONFIG, headers=headers) as client:
        assert text_of(await client.call_tool("whoami", {})) == "cc-client cc-client mcp:tools"
        with pytest.raises(Unauthorized) as refusal:
            await client.call_tool("admin", {})
    assert refusal.value.status == 403
    params = refusal.value.params
    assert (params["error"], params["scope"]) == ("insufficient_scope", "mcp:tools mcp:admin")
    assert params["resource_metadata"] == metadata_url(server)


def test_another_principals_token_does_not_reach_a_session(server: str, issuer: str) -> None:
    mine = str(token_for(issuer, server)["access_token"])
    theirs = str(token_for(issuer, server, client="cc-post", secret="cc-post-secret")["access_token"])
    status, headers, _ = post(server, mine, INITIALIZE)
    assert status == 200
    session = {"mcp-session-id": headers["mcp-session-id"]}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert post(server, theirs, ping, headers=session)[0] == 404
    assert post(server, mine, ping, headers=session)[0] == 200
    assert delete(server, theirs, session) == 404  # nor can they end it
    assert post(server, mine, ping, headers=session)[0] == 200
    assert delete(server, mine, session) in {200, 204}


def delete(url: str, token: str, headers: dict[str, str]) -> int:
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=15)
    try:
        connection.request("DELETE", parts.path, headers={**headers, "authorization": f"Bearer {token}",
                                                          "mcp-protocol-version": "2025-11-25"})
        answer = connection.getresponse()
        answer.read()
        return answer.status
    finally:
        connection.close()


def test_a_token_without_the_servers_required_scope_gets_403(server: str, issuer: str) -> None:
    token = str(token_for(issuer, server, scope="mcp:admin")["access_token"])
    status, headers, _ = post(server, token, INITIALIZE)
    assert status == 403
    params = challenge(headers)
    assert params["error"] == "insufficient_scope"
    assert "mcp:tools" in params["scope"].split()


def test_the_bearer_scheme_is_case_insensitive(server: str, issuer: str) -> None:
    token = str(token_for(issuer, server)["access_token"])
    status, _, body = post(server, None, INITIALIZE, headers={"authorization": f"bEaReR {token}"})
    assert status == 200, body


# ---------------------------------------------------------------- introspection


def text_of_sync(result: object) -> str:
    return str(result.content[0].text)  # type: ignore[attr-defined]


def test_introspected_opaque_tokens_work_with_our_client_and_its_step_up(introspected: str) -> None:
    auth = OAuth(grant=ClientCredentialsGrant(), client=CC_CLIENT)
    with mcp_sansio_sync.connect_http(introspected, config=CONFIG, auth=auth) as client:
        # oidc-provider's introspection names no subject for a client's own token.
        assert text_of_sync(client.call_tool("whoami", {})) == "None cc-client mcp:tools"
        token = client.token
        assert token is not None and token.access_token.count(".") == 0  # opaque
        assert text_of_sync(client.call_tool("admin", {})) == "admin"


def test_introspection_refuses_foreign_inactive_and_structured_tokens(introspected: str, issuer: str) -> None:
    other = introspected.rsplit("/", 1)[0] + "/other-mcp"
    foreign = str(token_for(issuer, other)["access_token"])  # a JWT: other is no opaque resource
    # oidc-provider will not introspect a JWT (400 unsupported_token_type): refused, not a 503.
    assert "not active" in refused(introspected, foreign)["error_description"]
    assert "not active" in refused(introspected, "no-such-token-anywhere")["error_description"]
    mine = str(token_for(issuer, introspected)["access_token"])
    assert post(introspected, mine, INITIALIZE)[0] == 200
    make_opaque(issuer, other)
    theirs = str(token_for(issuer, other)["access_token"])  # active, for the other resource
    assert theirs.count(".") == 0
    assert "another resource" in refused(introspected, theirs)["error_description"]


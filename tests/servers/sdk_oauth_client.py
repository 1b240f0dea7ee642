"""The official SDK's client with its OAuth (``OAuthClientProvider``: discovery, dynamic
registration, authorization code with PKCE, step-up) against a protected server, for the
end-to-end authorization tests. ``python sdk_oauth_client.py`` reads server URLs from
stdin (so the SDK is imported once for many servers), meets them all at once, connecting
twice to each, and prints one JSON object: what the connections saw (or the error), by
URL. First the SDK registers itself (dynamic client registration) and calls ``whoami``;
then, as the pre-registered public client ``public-client``, it calls ``whoami``,
``admin`` (403 ``insufficient_scope``: a step-up) and ``whoami`` again, in the current
protocol era and again in the handshake era (with a session). (Registered by
itself, the SDK asks for the scope of its first challenge only, and oidc-provider, which
holds a client to its registered scope, refuses its step-up.)

The user's browser is played by :class:`Browser`: it follows the authorization server's
redirects (keeping its cookies) and stops at the redirect URI, whose query the callback
handler hands to the SDK, as a loopback listener would.
"""

from __future__ import annotations

import http.cookiejar
import json
import sys
import traceback
import urllib.error
import urllib.parse
import urllib.request

import anyio
import anyio.to_thread
import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT_URI = "http://127.0.0.1:9/callback"  # never served: the browser stops before it


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class _Stop(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # every redirect is followed by hand, to stop at the redirect URI


class Browser:
    def __init__(self) -> None:
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
            _Stop())
        self.visits: list[str] = []
        self._landed: list[dict[str, list[str]]] = []

    def _visit(self, url: str) -> None:
        self.visits.append(url)
        for _ in range(10):
            if url.startswith(REDIRECT_URI):
                self._landed.append(urllib.parse.parse_qs(urllib.parse.urlsplit(url).query))
                return
            try:
                with self._opener.open(url, timeout=10) as page:
                    raise RuntimeError(f"the authorization server showed a page ({page.status}) at {url}")
            except urllib.error.HTTPError as answer:
                location = answer.headers.get("location")
                if answer.code not in (302, 303) or not location:
                    raise RuntimeError(f"{answer.code} at {url}: {answer.read()[:500]!r}") from None
                url = urllib.parse.urljoin(url, location)
        raise RuntimeError("too many redirects")

    async def redirect(self, url: str) -> None:
        await anyio.to_thread.run_sync(self._visit, url)

    async def callback(self) -> AuthorizationCodeResult:
        query = self._landed.pop()
        one = {name: values[0] for name, values in query.items()}
        if "code" not in one:
            raise RuntimeError(f"the authorization server refused: {one}")
        return AuthorizationCodeResult(code=one["code"], state=one.get("state"), iss=one.get("iss"))


async def run(url: str, client_id: str | None, tools: list[str], *,
              legacy: bool = False) -> dict[str, object]:
    browser = Browser()
    storage = MemoryStorage()
    metadata = OAuthClientMetadata(client_name="sdk-e2e", redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
                                   grant_types=["authorization_code", "refresh_token"],
                                   response_types=["code"])
    if client_id is not None:
        storage.client = OAuthClientInformationFull(client_id=client_id, token_endpoint_auth_method="none",
                                                    **metadata.model_dump(exclude={"token_endpoint_auth_method"}))
    provider = OAuthClientProvider(url, metadata, storage, redirect_handler=browser.redirect,
                                   callback_handler=browser.callback)
    async with httpx2.AsyncClient(auth=provider, timeout=30.0) as http_client, \
            Client(streamable_http_client(url, http_client=http_client),
                   mode="legacy" if legacy else "auto") as client:
        results = [await client.call_tool(tool, {}) for tool in tools]
        version = client.protocol_version
    scopes = [urllib.parse.parse_qs(urllib.parse.urlsplit(v).query)["scope"][0] for v in browser.visits]
    return {"texts": [getattr(r.content[0], "text", None) for r in results],
            "errors": [r.is_error for r in results], "asked": scopes,
            "client_id": storage.client.client_id if storage.client else None, "version": version}


async def meet(url: str, seen: dict[str, object]) -> None:
    try:
        registered = await run(url, None, ["whoami"])
        preregistered = await run(url, "public-client", ["whoami", "admin", "whoami"])
        legacy = await run(url, "public-client", ["whoami", "admin", "whoami"], legacy=True)
        seen[url] = {"registered": registered, "preregistered": preregistered, "legacy": legacy}
    except Exception:  # reported to the test, which fails with it
        seen[url] = {"error": traceback.format_exc()[-3000:]}


async def main() -> None:
    seen: dict[str, object] = {}
    async with anyio.create_task_group() as group:
        for url in sys.stdin.read().split():
            group.start_soon(meet, url, seen)
    print(json.dumps(seen))


if __name__ == "__main__":
    anyio.run(main)

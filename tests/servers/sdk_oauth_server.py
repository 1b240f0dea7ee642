"""An official-SDK (``mcp`` 2.3) MCP server protected by ``mcp.server.auth``, which is also
its own authorization server (dynamic registration, PKCE, refresh tokens, RFC 8707).

Its ``/authorize`` approves at once: it redirects straight to the client's
``redirect_uri`` with a code, so a test can play the browser with two GETs. The tool
``whoami`` answers with the client id and scopes of the token it was called with; the
tool ``admin`` needs the scope ``mcp:admin`` besides ``mcp:tools``: called without it,
the server answers 403 ``insufficient_scope`` naming both (the MCP authorization spec's
scope challenge; the SDK's bearer middleware checks one scope set for the whole
endpoint, so a small ASGI gate in front of it does this), and a client steps up.

With ``--public-clients`` its metadata also lists ``none`` among the token endpoint
auth methods (the SDK's token endpoint accepts public clients but lists only
``client_secret_post`` and ``client_secret_basic``).

Usage: ``python sdk_oauth_server.py --port N [--token-lifetime S] [--public-clients]``;
listens on 127.0.0.1, MCP at ``/mcp``.
"""

from __future__ import annotations

import argparse
import json
import secrets
import time
from typing import Any, Final

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SCOPES: Final = ["mcp:tools"]
ADMIN: Final = "mcp:admin"  # what the admin tool needs besides SCOPES


class MemoryProvider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """Every client, code and token in dictionaries; authorization needs no user."""

    def __init__(self, token_lifetime: int) -> None:
        self.token_lifetime = token_lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or SCOPES, expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri, resource=params.resource,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        del self.codes[authorization_code.code]
        code = authorization_code
        return self._issue(code.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        del self.refresh[refresh_token.token]
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.access.get(token)
        if access is None or (access.expires_at is not None and access.expires_at < time.time()):
            return None
        return access

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(16)}", f"rt-{secrets.token_urlsafe(16)}"
        expires = int(time.time()) + self.token_lifetime
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=expires, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=self.token_lifetime,
                          refresh_token=refresh, scope=" ".join(scopes))


def build(port: int, provider: MemoryProvider) -> MCPServer:
    """The server on ``port``, its clients and tokens kept by ``provider``."""
    origin = f"http://127.0.0.1:{port}"
    # Registered clients may ask for ADMIN too; the resource lists (and asks for) SCOPES only.
    everything = [*SCOPES, ADMIN]
    server: MCPServer = MCPServer(
        "sdk-oauth", auth_server_provider=provider,
        auth=AuthSettings(issuer_url=AnyHttpUrl(origin), resource_server_url=AnyHttpUrl(f"{origin}/mcp"),
                          required_scopes=SCOPES,
                          validate_token_resource=True,
                          client_registration_options=ClientRegistrationOptions(
                              enabled=True, valid_scopes=everything, default_scopes=everything)))

    @server.tool()
    def whoami() -> str:
        """The client id and scopes of the caller's token."""
        token = get_access_token()
        return "anonymous" if token is None else f"{token.client_id} {' '.join(token.scopes)}"

    @server.tool()
    def admin() -> str:
        """Only for tokens with ``mcp:admin`` (the gate in front refuses the others)."""
        return "admin"

    return server


class StepUpGate:
    """Answers a ``tools/call`` of ``admin`` with a bearer token lacking ``mcp:admin`` with
    403 ``insufficient_scope`` and the scopes to ask for; passes everything else on."""

    def __init__(self, app: ASGIApp, provider: MemoryProvider, resource_url: str) -> None:
        self.app = app
        self.provider = provider
        self.metadata_url = str(build_resource_metadata_url(AnyHttpUrl(resource_url)))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
            await self.app(scope, receive, send)
            return
        received: list[Message] = []
        body = b""
        while True:
            message = await receive()
            received.append(message)
            body += message.get("body", b"")
            if message["type"] != "http.request" or not message.get("more_body"):
                break

        async def replay() -> Message:
            return received.pop(0) if received else await receive()

        if _calls_admin(body) and await self._lacks_admin(scope):
            challenge = (f'Bearer error="insufficient_scope", scope="{" ".join([*SCOPES, ADMIN])}", '
                         f'resource_metadata="{self.metadata_url}"')
            payload = json.dumps({"error": "insufficient_scope"}).encode()
            await send({"type": "http.response.start", "status": 403, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                (b"www-authenticate", challenge.encode())]})
            await send({"type": "http.response.body", "body": payload})
            return
        await self.app(scope, replay, send)

    async def _lacks_admin(self, scope: Scope) -> bool:
        """A valid bearer token without ``mcp:admin`` (no token: the SDK answers 401)."""
        headers = dict(scope["headers"])
        scheme, _, credential = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        token = await self.provider.load_access_token(credential) if scheme.lower() == "bearer" else None
        return token is not None and ADMIN not in token.scopes


def _calls_admin(body: bytes) -> bool:
    try:
        message = json.loads(body)
    except ValueError:
        return False
    if not isinstance(message, dict):
        return False
    params = message.get("params")
    return (message.get("method") == "tools/call" and isinstance(params, dict)
            and params.get("name") == "admin")


class PublicClients:
    """Adds ``none`` to the authorization server metadata's token endpoint auth methods."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/.well-known/oauth-authorization-server":
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        body = bytearray()

        async def collect(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            else:
                body.extend(message.get("body", b""))

        await self.app(scope, receive, collect)
        document = json.loads(body)
        document["token_endpoint_auth_methods_supported"] = [
            "none", *document.get("token_endpoint_auth_methods_supported", [])]
        patched = json.dumps(document).encode()
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        await send({**start, "headers": [*headers, (b"content-length", str(len(patched)).encode())]})
        await send({"type": "http.response.body", "body": patched})


def main() -> None:
    """Serve until stopped."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token-lifetime", type=int, default=3600)
    parser.add_argument("--public-clients", action="store_true", help="list 'none' in the metadata")
    options = parser.parse_args()
    provider = MemoryProvider(options.token_lifetime)
    app: ASGIApp = build(options.port, provider).streamable_http_app(host="127.0.0.1")
    app = StepUpGate(app, provider, f"http://127.0.0.1:{options.port}/mcp")
    if options.public_clients:
        app = PublicClients(app)
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning")


if __name__ == "__main__":
    main()

"""An official-SDK (``mcp`` 2.3) MCP server protected by ``mcp.server.auth``, which is also
its own authorization server (dynamic registration, PKCE, refresh tokens, RFC 8707).

Its ``/authorize`` approves at once: it redirects straight to the client's
``redirect_uri`` with a code, so a test can play the browser with two GETs. One tool,
``whoami``, answers with the client id and scopes of the token it was called with.

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
from typing import Any

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
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SCOPES = ["mcp:tools"]


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


def build(port: int, token_lifetime: int) -> MCPServer:
    """The server on ``port``; tokens live ``token_lifetime`` seconds."""
    origin = f"http://127.0.0.1:{port}"
    server: MCPServer = MCPServer(
        "sdk-oauth", auth_server_provider=MemoryProvider(token_lifetime),
        auth=AuthSettings(issuer_url=AnyHttpUrl(origin), resource_server_url=AnyHttpUrl(f"{origin}/mcp"),
                          required_scopes=SCOPES,
                          validate_token_resource=True,
                          client_registration_options=ClientRegistrationOptions(
                              enabled=True, valid_scopes=SCOPES, default_scopes=SCOPES)))

    @server.tool()
    def whoami() -> str:
        """The client id and scopes of the caller's token."""
        token = get_access_token()
        return "anonymous" if token is None else f"{token.client_id} {' '.join(token.scopes)}"

    return server


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
    app: ASGIApp = build(options.port, options.token_lifetime).streamable_http_app(host="127.0.0.1")
    if options.public_clients:
        app = PublicClients(app)
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning")


if __name__ == "__main__":
    main()

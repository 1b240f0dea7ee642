"""An authorization server and protected MCP server for the tests of
:class:`~mcp_sansio.http_auth.AuthorizingHttpClient` (this module holds no tests).

:class:`OAuthMock` sits on a :class:`~http_helpers.ScriptedHttpServer` and answers every
OAuth request at once, the way the conformance mocks do (protected resource metadata,
authorization server metadata, registration, an authorization endpoint that redirects
straight back, a token endpoint); the MCP requests are left to the test. The layout is
that of ``core.test_auth_support``: MCP at ``localhost:3000/mcp``, the AS at ``localhost:4000``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit

import msgspec
from core.test_auth_support import AS, MCP, REDIRECT_URI, as_metadata, prm, token
from http_helpers import ReceivedRequest, ScriptedHttpServer, init_result

from mcp_sansio import LATEST_VERSION, ClientConfig
from mcp_sansio.auth import AuthorizationCodeGrant, OAuthConfig
from mcp_sansio.http_auth import AuthorizingHttpClient

__all__ = [
    "AS",
    "CHALLENGE",
    "MCP",
    "REDIRECT_URI",
    "OAuthMock",
    "auth_client",
    "form",
    "init_result",
    "redirect_back",
]

CHALLENGE: Final = {"WWW-Authenticate": 'Bearer resource_metadata="http://localhost:3000/.well-known/'
                                        'oauth-protected-resource/mcp"'}
"""The MCP server's 401 challenge, naming its protected resource metadata."""

_AS_AUTHORITY: Final = AS.removeprefix("http://")


def auth_client(*, oauth: OAuthConfig | None = None, **kwargs: Any) -> AuthorizingHttpClient:
    """A headless (unless told) client of ``MCP`` in the handshake era, with fixed entropy."""
    config = kwargs.pop("config", None) or ClientConfig()
    if config.protocol == "auto":
        config = msgspec.structs.replace(config, protocol=LATEST_VERSION)
    kwargs.setdefault("headless", True)
    kwargs.setdefault("entropy", bytes(range(32)))
    return AuthorizingHttpClient(
        MCP, oauth or OAuthConfig(grant=AuthorizationCodeGrant(redirect_uri=REDIRECT_URI)),
        clock_offset=1_700_000_000.0, config=config, **kwargs)


def form(request: ReceivedRequest) -> dict[str, str]:
    """A form-encoded body as a dict."""
    return dict(parse_qsl(request.body.decode()))


class OAuthMock:
    """Answers the OAuth requests on ``server`` as they come; hands back the MCP ones.

    Attributes:
        oauth: every OAuth request answered, in order.
        tokens: the token responses to give, in order (then ``test-token-<n>``).
    """

    def __init__(self, server: ScriptedHttpServer, *, metadata: dict[str, object] | None = None) -> None:
        self.server = server
        self.metadata = as_metadata() if metadata is None else metadata
        self.oauth: list[ReceivedRequest] = []
        self.tokens: Iterator[dict[str, object]] = iter(())
        self.token_status = 200
        self.issued = 0

    def serve(self, *, now: float) -> list[ReceivedRequest]:
        """Pump, answering OAuth requests until none is left; the MCP requests that came."""
        mcp: list[ReceivedRequest] = []
        while fresh := self.server.pump(now=now):
            for request in fresh:
                if self._is_oauth(request):
                    self.oauth.append(request)
                    self._answer(request, now)
                else:
                    mcp.append(request)
        return mcp

    def paths(self) -> list[str]:
        """``METHOD path`` of each OAuth request answered."""
        return [f"{r.method} {r.target.partition('?')[0]}" for r in self.oauth]

    def _is_oauth(self, request: ReceivedRequest) -> bool:
        return request.header("host") == _AS_AUTHORITY or request.target.startswith("/.well-known/")

    def _answer(self, request: ReceivedRequest, now: float) -> None:
        path, _, query = request.target.partition("?")
        server = self.server
        if path.startswith("/.well-known/oauth-protected-resource"):
            server.reply_json(request, json.dumps(prm()).encode(), now=now)
        elif path == "/.well-known/oauth-authorization-server":
            server.reply_json(request, json.dumps(self.metadata).encode(), now=now)
        elif path == "/register":
            server.reply_json(request, b'{"client_id": "test-client-id"}', status=201, now=now)
        elif path == "/authorize":
            params = dict(parse_qsl(query))
            location = f"{params['redirect_uri']}?{urlencode({'code': 'c-1', 'state': params['state']})}"
            server.reply(request, 302, now=now, headers={"Location": location})
        elif path == "/token":
            if self.token_status != 200:
                server.reply_json(request, b'{"error": "invalid_grant"}', status=self.token_status, now=now)
                return
            self.issued += 1
            document = next(self.tokens, None) or token(f"test-token-{self.issued}")
            server.reply_json(request, json.dumps(document).encode(), now=now)
        else:
            server.reply(request, 404, now=now)


def redirect_back(authorization_url: str, *, code: str = "c-1") -> str:
    """The URL the authorization server sends the browser to, for ``authorization_url``."""
    params = dict(parse_qsl(urlsplit(authorization_url).query))
    return f"{params['redirect_uri']}?{urlencode({'code': code, 'state': params['state']})}"

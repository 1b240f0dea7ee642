"""Who the client is at an authorization server, in the MCP spec's order of preference.

Pre-registered credentials for that server first, then a Client ID Metadata Document URL
where the server supports those, then dynamic client registration (RFC 7591) with
exactly the redirect URI the flow will use.
"""

from __future__ import annotations

from typing import Final

from mcp_sansio.errors import RemoteProtocolError
from mcp_sansio.urls import is_loopback, parse_url

from .config import ClientCredentials
from .discovery import AuthorizationServer
from .metadata import RegistrationResponse, decode, describe_refusal, quote_text
from .requests import ClientAuth, json_post
from .steps import AuthFailure, Failed, HttpRequestPlan, HttpResponse

__all__ = ["preregistered", "registered_client", "registration_method", "registration_request"]

# What we can register with: no key to publish, so no private_key_jwt; public first.
_REGISTRABLE: Final = ("none", "client_secret_basic", "client_secret_post")


def preregistered(credentials: ClientCredentials | None, server: AuthorizationServer) -> ClientAuth | None:
    """``credentials`` as a :class:`ClientAuth`, if they exist and are not bound elsewhere."""
    if credentials is None or credentials.issuer not in {None, server.lookup, server.issuer}:
        return None
    return ClientAuth(client_id=credentials.client_id, method=_auth_method(credentials, server),
                      secret=credentials.client_secret, key=credentials.signing_key,
                      issuer=credentials.issuer)


def _auth_method(credentials: ClientCredentials, server: AuthorizationServer) -> str:
    """The configured method, else the one the credentials allow and the server lists."""
    if credentials.token_endpoint_auth_method is not None:
        return credentials.token_endpoint_auth_method
    if credentials.signing_key is not None:
        return "private_key_jwt"
    if credentials.client_secret is None:
        return "none"
    metadata = server.metadata
    supported = metadata.token_endpoint_auth_methods_supported if metadata is not None else None
    if supported is not None and "client_secret_basic" not in supported and "client_secret_post" in supported:
        return "client_secret_post"
    return "client_secret_basic"


def registration_method(server: AuthorizationServer) -> str | None:
    """The ``token_endpoint_auth_method`` to register with (RFC 8414's default when unlisted)."""
    metadata = server.metadata
    listed = metadata.token_endpoint_auth_methods_supported if metadata is not None else None
    supported = listed or ("client_secret_basic",)
    return next((method for method in _REGISTRABLE if method in supported), None)


def registration_request(
    server: AuthorizationServer, *, redirect_uri: str, client_name: str, method: str
) -> HttpRequestPlan:
    """The RFC 7591 registration POST: a ``native`` application for a loopback redirect URI."""
    assert server.registration_endpoint is not None  # the caller checked
    native = is_loopback(parse_url(redirect_uri))
    return json_post(server.registration_endpoint, {
        "client_name": client_name, "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "token_endpoint_auth_method": method, "application_type": "native" if native else "web"})


def registered_client(
    response: HttpResponse, *, server: AuthorizationServer, method: str, max_bytes: int
) -> ClientAuth | Failed:
    """The client a registration response describes, bound to ``server``.

    Args:
        response: the answer to :func:`registration_request`.
        server: where we registered.
        method: the method we asked for; the answer's own ``token_endpoint_auth_method`` wins,
            and an answer with neither method nor secret is a public client (``none``).
        max_bytes: the largest body accepted.

    Returns:
        The client, or why it is unusable.
    """
    if not 200 <= response.status < 300:
        refusal = describe_refusal(response.status, response.body, max_bytes=max_bytes)
        return Failed(reason=AuthFailure.REGISTRATION_FAILED, message=f"registration refused, {refusal}")
    try:
        registered = decode(RegistrationResponse, response.body, max_bytes=max_bytes)
    except RemoteProtocolError as exc:
        return Failed(reason=AuthFailure.REGISTRATION_FAILED, message=str(exc))
    # An answer naming no method registered what we asked for, or a public client if it
    # issued no secret.
    method = registered.token_endpoint_auth_method or (method if registered.client_secret else "none")
    if method not in _REGISTRABLE or (method != "none" and registered.client_secret is None):
        return Failed(reason=AuthFailure.REGISTRATION_FAILED,
                      message=f"registered with an unusable method {quote_text(method)}")
    return ClientAuth(client_id=registered.client_id, method=method, secret=registered.client_secret,
                      issuer=server.lookup)

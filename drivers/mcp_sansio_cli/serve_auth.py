"""The ``--auth-*`` options of ``mcp-sansio serve``: protect the served app with OAuth bearer
tokens (the MCP authorization spec, resource-server side).

``--auth-jwks URL --auth-issuer ISS --auth-audience AUD`` verifies JWT access tokens with
the issuer's key set; ``--auth-introspect URL --auth-client-id ID`` asks its RFC 7662
endpoint instead (the client secret comes from the environment variable
``MCP_SANSIO_INTROSPECTION_SECRET``, never the command line, which other users can read).
``--auth-scope`` (repeatable) names scopes every request needs, ``--auth-server`` the
authorization servers the metadata names (default: the issuer), ``--auth-resource`` the
canonical resource URI (default: the audience).
"""

from __future__ import annotations

import argparse
import os
from typing import Final

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.server import AuthSettings, TokenVerifier
from mcp_sansio.server.authz import resource_metadata_url

__all__ = ["INTROSPECTION_SECRET_ENV", "AuthOptionError", "add_auth_arguments", "auth_settings",
           "resource_metadata_url"]

INTROSPECTION_SECRET_ENV: Final = "MCP_SANSIO_INTROSPECTION_SECRET"


class AuthOptionError(Exception):
    """The ``--auth-*`` options do not make a protection; the message says why."""


def add_auth_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``--auth-*`` options to the ``serve`` parser."""
    group = parser.add_argument_group("authorization (HTTP and WebSocket: OAuth bearer tokens)")
    group.add_argument("--auth-jwks", metavar="URL", help="verify JWT access tokens with the key set at URL")
    group.add_argument("--auth-introspect", metavar="URL",
                       help=f"verify tokens at this RFC 7662 endpoint (secret: ${INTROSPECTION_SECRET_ENV})")
    group.add_argument("--auth-client-id", metavar="ID", help="this server's client id for --auth-introspect")
    group.add_argument("--auth-issuer", metavar="ISS", help="the issuer tokens must come from (iss)")
    group.add_argument("--auth-audience", metavar="AUD",
                       help="the audience tokens must name: this server's canonical URI (RFC 8707)")
    group.add_argument("--auth-resource", metavar="URL",
                       help="the resource URI in the protected resource metadata (default: the audience)")
    group.add_argument("--auth-server", metavar="URL", action="append", default=[],
                       help="an authorization server named in the metadata (repeatable; default: the issuer)")
    group.add_argument("--auth-scope", metavar="SCOPE", action="append", default=[],
                       help="a scope every request needs (repeatable)")


def auth_settings(args: argparse.Namespace) -> AuthSettings | None:
    """The protection the options ask for, or ``None`` when none is asked for.

    Raises:
        AuthOptionError: an option is missing or malformed.
    """
    if args.auth_jwks is None and args.auth_introspect is None:
        extra = [name for name in ("issuer", "audience", "resource", "client_id")
                 if getattr(args, f"auth_{name}") is not None] + (["scope"] if args.auth_scope else [])
        if extra or args.auth_server:
            raise AuthOptionError("--auth-* options need --auth-jwks or --auth-introspect")
        return None
    if args.auth_jwks is not None and args.auth_introspect is not None:
        raise AuthOptionError("give --auth-jwks or --auth-introspect, not both")
    if args.http is None and args.websocket is None:
        raise AuthOptionError("authorization protects --http or --websocket (stdio is never protected)")
    if args.auth_audience is None:
        raise AuthOptionError("--auth-audience is needed: the canonical URI of this server (RFC 8707)")
    resource = args.auth_resource or args.auth_audience
    servers = tuple(args.auth_server) or ((args.auth_issuer,) if args.auth_issuer else ())
    if not servers:
        raise AuthOptionError("name the authorization server: --auth-issuer or --auth-server")
    verifier = _verifier(args)
    try:
        return AuthSettings(resource=resource, authorization_servers=servers, verifier=verifier,
                            required_scopes=tuple(args.auth_scope))
    except LocalProtocolError as exc:
        raise AuthOptionError(str(exc)) from None


def _verifier(args: argparse.Namespace) -> TokenVerifier:
    from mcp_sansio_authz import IntrospectionVerifier, JwtVerifier

    try:
        if args.auth_jwks is not None:
            if args.auth_issuer is None:
                raise AuthOptionError("--auth-jwks needs --auth-issuer (the iss tokens must carry)")
            return JwtVerifier(jwks_url=args.auth_jwks, issuer=args.auth_issuer, audience=args.auth_audience)
        secret = os.environ.get(INTROSPECTION_SECRET_ENV)
        if args.auth_client_id is None or secret is None:
            raise AuthOptionError(f"--auth-introspect needs --auth-client-id and ${INTROSPECTION_SECRET_ENV}")
        return IntrospectionVerifier(endpoint=args.auth_introspect, client_id=args.auth_client_id,
                                     client_secret=secret, audience=args.auth_audience,
                                     issuer=args.auth_issuer)
    except ValueError as exc:
        raise AuthOptionError(str(exc)) from None

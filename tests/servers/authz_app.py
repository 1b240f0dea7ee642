"""The server the authorization tests protect: served by ``mcp-sansio serve --auth-*`` with
every driver, or run as a script under uvicorn as ASGI (``AsgiApp`` takes ``app.auth``).

Tools: ``whoami`` (the principal's subject and scopes), ``write`` (needs the scope
``files:write`` besides the server's ``mcp``).
"""

from __future__ import annotations

import argparse

from mcp_sansio import Context, MCPServer
from mcp_sansio_asgi import AsgiApp

app = MCPServer("authz-test-server", version="1.0.0")


@app.tool()
def whoami(ctx: Context) -> str:
    """Who the access token speaks for."""
    principal = ctx.principal
    return "nobody" if principal is None else f"{principal.subject} {' '.join(principal.scopes)}"


@app.tool(scopes=["files:write"])
def write(ctx: Context) -> str:
    """Something that needs files:write."""
    return "written"


if __name__ == "__main__":
    import uvicorn

    from mcp_sansio.server import AuthSettings
    from mcp_sansio_authz import JwtVerifier

    parser = argparse.ArgumentParser()
    for option in ("--port", "--jwks", "--issuer", "--audience"):
        parser.add_argument(option, required=True)
    args = parser.parse_args()
    verifier = JwtVerifier(jwks_url=args.jwks, issuer=args.issuer, audience=args.audience)
    app.auth = AuthSettings(resource=args.audience, authorization_servers=(args.issuer,), verifier=verifier,
                            required_scopes=("mcp",))
    uvicorn.run(AsgiApp(app), host="127.0.0.1", port=int(args.port), log_level="warning")

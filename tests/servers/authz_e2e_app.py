"""The protected server of the end-to-end authorization tests (``tests/drivers/test_authz_e2e.py``).

``mcp-sansio serve authz_e2e_app.py --http PORT --auth-jwks ... --auth-issuer ...
--auth-audience ... --auth-scope mcp:tools`` protects ``app`` from the command line. Run as a
script, it protects itself as those options would and runs as ASGI under uvicorn:
``python authz_e2e_app.py --port P --issuer http://127.0.0.1:AS``.

Tools: ``whoami`` (the caller's subject, client and scopes) needs the server's required scope
``mcp:tools``; ``admin`` needs ``mcp:admin`` as well (a step-up). Plain functions only, so the
blocking driver runs them too.
"""

from __future__ import annotations

import argparse

from mcp_sansio import Context, MCPServer
from mcp_sansio.server import AuthSettings
from mcp_sansio_asgi import AsgiApp

REQUIRED_SCOPES = ("mcp:tools",)

app = MCPServer("authz-e2e", version="1.0.0")


@app.tool()
def whoami(ctx: Context) -> str:
    """Who the token speaks for: ``subject client_id scope scope...``."""
    principal = ctx.principal
    if principal is None:
        return "anonymous"
    return " ".join([str(principal.subject), str(principal.client_id), *sorted(principal.scopes)])


@app.tool(scopes=["mcp:admin"])
def admin() -> str:
    """Only for tokens with ``mcp:admin``."""
    return "admin"


def protect(issuer: str, resource: str) -> AuthSettings:
    """The settings the command line's ``--auth-*`` flags would give: JWTs by the issuer's JWKS."""
    from mcp_sansio_authz import JwtVerifier

    verifier = JwtVerifier(jwks_url=f"{issuer}/jwks", issuer=issuer, audience=resource)
    return AuthSettings(resource=resource, authorization_servers=(issuer,), verifier=verifier,
                        required_scopes=REQUIRED_SCOPES)


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--issuer", required=True)
    args = parser.parse_args()
    app.auth = protect(args.issuer, f"http://127.0.0.1:{args.port}/mcp")
    uvicorn.run(AsgiApp(app), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()

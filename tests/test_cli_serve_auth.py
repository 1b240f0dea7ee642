"""``mcp-sansio serve --auth-*``: the options become ``AuthSettings`` with the right verifier,
and the ones that cannot make a protection are refused with a message (exit 2). The
protected server itself is tested on every driver in ``tests/drivers/test_serve_authz.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcp_sansio.server import AuthSettings
from mcp_sansio_authz import IntrospectionVerifier, JwtVerifier
from mcp_sansio_cli.main import build_parser
from mcp_sansio_cli.serve_auth import INTROSPECTION_SECRET_ENV, AuthOptionError, auth_settings

JWKS = ["--auth-jwks", "https://as.example.com/jwks", "--auth-issuer", "https://as.example.com"]
AUD = ["--auth-audience", "https://mcp.example.com/mcp"]


def settings(*args: str) -> AuthSettings | None:
    return auth_settings(build_parser().parse_args(["serve", "app.py", "--http", "8000", *args]))


def test_jwks_options_make_settings_with_a_jwt_verifier() -> None:
    made = settings(*JWKS, *AUD, "--auth-scope", "mcp", "--auth-scope", "files:read")
    assert made is not None
    assert made.resource == "https://mcp.example.com/mcp"
    assert made.authorization_servers == ("https://as.example.com",)
    assert made.required_scopes == ("mcp", "files:read")
    verifier = made.verifier
    assert isinstance(verifier, JwtVerifier) and verifier.audience == ("https://mcp.example.com/mcp",)


def test_auth_servers_and_resource_can_differ_from_issuer_and_audience() -> None:
    made = settings(*JWKS, "--auth-audience", "api://mcp", "--auth-resource", "https://mcp.example.com/mcp",
                    "--auth-server", "https://a.example", "--auth-server", "https://b.example")
    assert made is not None
    assert made.resource == "https://mcp.example.com/mcp"
    assert made.authorization_servers == ("https://a.example", "https://b.example")


def test_introspection_takes_its_secret_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["--auth-introspect", "https://as.example.com/introspect", "--auth-client-id", "rs",
            "--auth-issuer", "https://as.example.com", *AUD]
    with pytest.raises(AuthOptionError, match=INTROSPECTION_SECRET_ENV):
        settings(*args)
    monkeypatch.setenv(INTROSPECTION_SECRET_ENV, "s3cret")
    made = settings(*args)
    assert made is not None
    assert isinstance(made.verifier, IntrospectionVerifier)


def test_no_auth_options_no_protection() -> None:
    assert settings() is None


@pytest.mark.parametrize(("args", "message"), [
    (["--auth-scope", "mcp"], "need --auth-jwks or --auth-introspect"),
    ([*JWKS], "--auth-audience is needed"),
    (["--auth-jwks", "https://as.example.com/jwks", *AUD], "--auth-issuer or --auth-server"),
    (["--auth-jwks", "https://as.example.com/jwks", "--auth-server", "https://a", *AUD],
     "needs --auth-issuer"),
    ([*JWKS, "--auth-introspect", "https://x/i", *AUD], "not both"),
    ([*JWKS, "--auth-audience", "not-a-uri"], "resource must be an absolute"),
    (["--auth-jwks", "file:///etc/passwd", "--auth-issuer", "https://as.example.com", *AUD], "http"),
    ([*JWKS, *AUD, "--auth-scope", 'a"b'], "no valid OAuth scope"),
])
def test_options_that_make_no_protection_are_refused(args: list[str], message: str) -> None:
    with pytest.raises(AuthOptionError, match=message):
        settings(*args)


def test_stdio_cannot_be_protected_and_the_cli_says_so(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text("from mcp_sansio import MCPServer\napp = MCPServer('a')\n")
    done = subprocess.run([sys.executable, "-m", "mcp_sansio_cli", "serve", str(app), *JWKS, *AUD],
                          capture_output=True, timeout=30, check=False)
    assert done.returncode == 2
    assert b"stdio is never protected" in done.stderr


def test_the_cli_says_at_startup_that_tokens_are_required(tmp_path: Path) -> None:
    from peer_servers import free_port, stop_process

    app = tmp_path / "app.py"
    app.write_text("from mcp_sansio import MCPServer\napp = MCPServer('a')\n")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mcp_sansio_cli", "serve", str(app), "--http", str(port),
                             *JWKS, "--auth-audience", f"http://127.0.0.1:{port}/mcp"],
                            stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
    finally:
        stop_process(proc)
    assert line.strip() == ("mcp-sansio serve: bearer tokens required "
                            f"(resource http://127.0.0.1:{port}/mcp, "
                            "authorization servers https://as.example.com; metadata at "
                            f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp)")

"""``mcp-sansio auth login|logout|status --url URL``: OAuth tokens kept for MCP servers.

``login`` signs in through the browser (the redirect comes back to a listener on
127.0.0.1) and keeps the token in ``~/.config/mcp-sansio/tokens`` (files readable only
by the user); ``logout`` forgets it; ``status`` says what is kept. The work is done by
``connect_http(url, auth=OAuth(...))``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.urls import parse_url
from mcp_sansio_oauth import FileTokenStore, OAuth, StoredToken

from .args import EXIT_FAILURE, CliError, UsageError, output_options
from .output import print_json

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``auth`` with its ``login``, ``logout`` and ``status`` subcommands to ``sub``."""
    auth = sub.add_parser("auth", help="OAuth sign-in for an MCP server: login, logout, status")
    actions = auth.add_subparsers(dest="auth_action", required=True)
    where = argparse.ArgumentParser(add_help=False, parents=[output_options()])
    where.add_argument("--url", required=True, help="the MCP server URL")
    where.add_argument("--token-dir", metavar="DIR", help="where tokens are kept "
                       "(default ~/.config/mcp-sansio/tokens)")
    login = actions.add_parser("login", parents=[where], help="sign in through the browser")
    login.add_argument("--port", type=int, default=0, help="loopback port of the redirect (default: any)")
    login.add_argument("--client-name", default="mcp-sansio", help="the name registered with the server")
    login.add_argument("--no-browser", action="store_true", help="print the URL instead of opening it")
    actions.add_parser("logout", parents=[where], help="forget the kept token")
    actions.add_parser("status", parents=[where], help="show the kept token (exit 1 if none)")


def run(args: argparse.Namespace) -> int:
    """Run the ``auth`` subcommand; return the exit status.

    Raises:
        UsageError: the URL is not an http(s) URL (status 2).
        McpSansioError: signing in failed, or the token directory is unsafe (``UnsafeTokenStore``).
    """
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    try:
        url = str(parse_url(args.url))
    except LocalProtocolError as exc:
        raise UsageError(f"invalid --url: {exc}") from exc
    store = FileTokenStore(args.token_dir)
    if args.auth_action == "logout":
        store.delete(url)
        print(f"Logged out of {url}.")
        return 0
    if args.auth_action == "status":
        kept = store.load(url)
        if kept is None:
            print(f"Not logged in to {url}.")
            return EXIT_FAILURE
        _describe(url, kept, args.json)
        return 0
    return await _login(url, store, args)


async def _login(url: str, store: FileTokenStore, args: argparse.Namespace) -> int:
    from mcp_sansio_asyncio.http import connect_http  # loads h11 and ssl: only when asked for

    store.delete(url)  # a fresh sign-in, not the token kept from before
    opener = _print_url if args.no_browser else None
    auth = OAuth(store=store, redirect_port=args.port, client_name=args.client_name, open_browser=opener)
    async with connect_http(url, auth=auth) as client:
        if client.token is None:  # the server let us in without asking: sign in anyway
            await client.authorize()
    kept = store.load(url)
    if kept is None:
        raise CliError(f"{url} issued no token")
    _describe(url, kept, args.json)
    return 0


def _print_url(url: str) -> None:
    sys.stderr.write(f"Open this URL to sign in:\n  {url}\n")


def _describe(url: str, kept: StoredToken, as_json: bool) -> None:
    remaining = None if kept.expires_at is None else kept.expires_at - time.time()
    if as_json:
        print_json({"url": url, "issuer": kept.issuer, "token_type": kept.token_type,
                    "scopes": list(kept.scopes), "expires_in": remaining,
                    "refreshable": kept.refresh_token is not None})
        return
    expiry = ("no expiry given" if remaining is None
              else "expired" if remaining <= 0 else f"expires in {int(remaining)} s")
    scopes = " ".join(kept.scopes) or "(none)"
    refresh = ", refreshable" if kept.refresh_token is not None else ""
    print(f"Logged in to {url}: issuer {kept.issuer}, scopes {scopes}, {expiry}{refresh}.")

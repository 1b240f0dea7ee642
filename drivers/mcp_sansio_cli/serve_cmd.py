"""``mcp-sansio serve FILE.py[:NAME]``: run the ``MCPServer`` a user's file defines.

Over stdio by default; ``--http PORT`` serves Streamable HTTP on 127.0.0.1 (DNS-rebinding
protection on), ``--websocket PORT`` a WebSocket endpoint. ``NAME`` is the variable
holding the server (default ``app``); ``-m MODULE[:NAME]`` imports a module instead of a
file. ``--store redis://HOST:PORT/DB`` keeps sessions and stream events in Redis/Valkey so
that several processes serve one deployment; they share the secret from
``$MCP_SANSIO_SECRET`` or ``--secret-file``. Two functions wire it into the CLI:
:func:`add_parser` and :func:`run`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import importlib.util
import logging
import os
import sys
from pathlib import Path
from typing import Any, Final

import anyio

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.server import MCPServer
from mcp_sansio.server.http import HttpConfig
from mcp_sansio.server.http_headers import LOOPBACK_HOSTS, check_origins
from mcp_sansio.server.websocket import WebSocketConfig
from mcp_sansio_base.serving import STORE_ENV, environment_secret, is_loopback, open_shared

from .serve_auth import AuthOptionError, add_auth_arguments, auth_settings, resource_metadata_url

__all__ = ["ServeError", "add_parser", "load_app", "run"]

_EXIT_FAILURE: Final = 1
_EXIT_USAGE: Final = 2
DRIVERS: Final = ("asyncio", "anyio", "trio", "sync")


class ServeError(Exception):
    """The server to run cannot be loaded; the message says why."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``serve`` command to an ``add_subparsers()`` result; the parser it made."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve", help="run the MCPServer a Python file defines (stdio, or --http PORT)",
        description="Run an MCPServer: FILE.py[:NAME] (NAME defaults to app), or -m MODULE[:NAME].",
    )
    parser.add_argument("target", nargs="?", help="FILE.py[:NAME]")
    parser.add_argument("-m", dest="module", metavar="MODULE[:NAME]",
                        help="import a module instead of a file")
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument("--http", type=_port, metavar="PORT", help="serve Streamable HTTP at /mcp on PORT")
    transport.add_argument("--websocket", type=_port, metavar="PORT",
                           help="serve WebSocket (subprotocol mcp) on PORT")
    parser.add_argument("--host", default="127.0.0.1", help="the address to bind with --http or --websocket")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="an origin (https://app.example.com) whose web pages may call the server "
                             "(repeatable; default: none but the server's own on loopback)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                        help="a name the Host header may carry (repeatable; default: the loopback names "
                             "on a loopback bind, any name otherwise)")
    parser.add_argument("--driver", choices=DRIVERS, default="asyncio",
                        help="the driver that runs it (trio: the anyio driver on trio; sync: no event loop)")
    parser.add_argument("--store", metavar="URL",
                        help="with --http: keep sessions and stream events in Redis/Valkey (redis://HOST:PORT/DB,"
                             " rediss://, valkey://): any process behind a balancer serves any session "
                             "(default: $MCP_SANSIO_STORE, the place for a URL with a password: every local "
                             "user reads a command line)")
    parser.add_argument("--secret-file", metavar="PATH",
                        help="read the secret every process shares from PATH (default: $MCP_SANSIO_SECRET,"
                             " else random)")
    parser.add_argument("--threads", type=_count, metavar="N", default=None,
                        help="run at most N plain def handlers at once, each in a worker thread "
                             "(default: 40; 0 with --driver sync, which then runs them inline)")
    parser.add_argument("--mask-error-details", action="store_true",
                        help="send clients a generic message for a handler's exception and log its traceback "
                             "(a ToolError's message is still sent)")
    add_auth_arguments(parser)
    return parser


def _count(text: str) -> int:
    """A number of threads (0 or more)."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of threads (0 or more)")
    return int(text)


def _port(text: str) -> int:
    """A TCP port number (0: any free one)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 to 65535)")
    return port


def load_app(target: str | None, module: str | None = None) -> MCPServer:
    """The ``MCPServer`` named by ``FILE.py[:NAME]`` or ``MODULE[:NAME]``.

    Raises:
        ServeError: neither or both given, the file or module cannot be loaded, or the name
            is missing or no ``MCPServer``.
    """
    if (target is None) == (module is None):
        raise ServeError("give FILE.py[:NAME] or -m MODULE[:NAME]")
    spec = target if target is not None else module
    assert spec is not None  # checked above
    location, _, name = spec.partition(":") if not _windows_drive(spec) else (spec, "", "")
    name = name or "app"
    namespace = _load_file(location) if target is not None else _load_module(location)
    if not hasattr(namespace, name):
        raise ServeError(f"{location} defines no {name!r} (name the server: {location}:NAME)")
    app = getattr(namespace, name)
    if not isinstance(app, MCPServer):
        raise ServeError(f"{spec}: {name!r} is {type(app).__name__}, not an MCPServer")
    return app


def _windows_drive(spec: str) -> bool:
    return len(spec) > 1 and spec[1] == ":" and spec[0].isalpha() and os.name == "nt"


def _load_file(location: str) -> Any:
    path = Path(location)
    if not path.is_file():
        raise ServeError(f"{location}: no such file")
    import_name = f"_mcp_sansio_served_{path.stem}"
    spec = importlib.util.spec_from_file_location(import_name, path)
    if spec is None or spec.loader is None:
        raise ServeError(f"{location}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[import_name] = module  # dataclasses and typing look modules up by name
    sys.path.insert(0, str(path.resolve().parent))  # its sibling imports work as when run directly
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ServeError(f"{location}: {type(exc).__name__}: {exc}") from exc
    return module


def _load_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise ServeError(f"{name}: {type(exc).__name__}: {exc}") from exc


def _secret(path: str | None) -> bytes | None:
    """The secret in ``path`` (surrounding whitespace dropped), else ``$MCP_SANSIO_SECRET``'s,
    else ``None`` (the driver then draws one for this process), checked before anything starts.

    Raises:
        ServeError: the file cannot be read, or the secret is empty or shorter than 16 bytes.
    """
    if path is None:
        try:
            return environment_secret()
        except ValueError as exc:
            raise ServeError(str(exc)) from exc
    try:
        secret = Path(path).read_bytes().strip()
    except OSError as exc:
        raise ServeError(f"--secret-file: {exc}") from exc
    if len(secret) < 16:
        raise ServeError(f"--secret-file: {path} holds {len(secret)} bytes; the secret needs at least 16")
    return secret


def _bind_options(args: argparse.Namespace) -> dict[str, Any]:
    """``allowed_hosts``/``allowed_origins`` from ``--allow-host``/``--allow-origin`` and the
    bind address (loopback: the loopback names as ``Host``, plus any named).

    Raises:
        LocalProtocolError: an ``--allow-origin`` that is no origin.
    """
    origins = tuple(args.allow_origin)
    check_origins(origins)
    hosts: tuple[str, ...] | None = tuple(args.allow_host) or None
    if is_loopback(args.host):
        hosts = (*LOOPBACK_HOSTS, *(hosts or ()))
    return {"allowed_hosts": hosts, "allowed_origins": origins}


def run(args: argparse.Namespace) -> int:
    """Run ``serve`` with parsed ``args``; the exit status (0 when stdin closed or on Ctrl-C,
    1 when the address cannot be bound, 2 when there is no server to run)."""
    try:
        secret = _secret(args.secret_file)  # first: an app module may build an AsgiApp, which reads it too
        app = load_app(args.target, args.module)
        auth = auth_settings(args)
    except (ServeError, AuthOptionError) as exc:
        print(f"mcp-sansio serve: error: {exc}", file=sys.stderr)
        return _EXIT_USAGE
    if args.mask_error_details:
        app.mask_error_details = True
        logging.basicConfig(stream=sys.stderr, format="mcp-sansio serve: %(levelname)s %(name)s: %(message)s")
    if auth is not None:
        app.auth = auth
        print(f"mcp-sansio serve: bearer tokens required (resource {auth.resource}, authorization servers "
              f"{', '.join(auth.authorization_servers)}; metadata at {resource_metadata_url(auth)})",
              file=sys.stderr, flush=True)
    module = {"asyncio": "mcp_sansio_asyncio", "anyio": "mcp_sansio_anyio", "trio": "mcp_sansio_anyio",
              "sync": "mcp_sansio_sync"}[args.driver]
    serve = importlib.import_module(f"{module}.serve")
    try:
        options = _bind_options(args)
    except LocalProtocolError as exc:
        print(f"mcp-sansio serve: error: {exc}", file=sys.stderr)
        return _EXIT_USAGE
    if args.store is not None and args.http is None:
        print("mcp-sansio serve: error: --store needs --http", file=sys.stderr)
        return _EXIT_USAGE
    threads: dict[str, Any] = {} if args.threads is None else {"handler_threads": args.threads}
    if args.http is not None:
        def listening(port: int) -> None:
            print(f"mcp-sansio serve: Streamable HTTP at http://{_authority(args.host, port)}/mcp",
                  file=sys.stderr, flush=True)
        url = args.store if args.store is not None else os.environ.get(STORE_ENV) or None
        try:
            store = None if url is None else open_shared(url)
        except (ValueError, ImportError) as exc:
            print(f"mcp-sansio serve: error: --store: {exc}", file=sys.stderr)
            return _EXIT_USAGE
        call = functools.partial(serve.serve_http, app, host=args.host, port=args.http, ready=listening,
                                 config=HttpConfig(**options), secret=secret, store=store, **threads)
    elif args.websocket is not None:
        def listening_ws(port: int) -> None:
            print(f"mcp-sansio serve: WebSocket at ws://{_authority(args.host, port)}/", file=sys.stderr,
                  flush=True)
        call = functools.partial(serve.serve_websocket, app, host=args.host, port=args.websocket,
                                 ready=listening_ws, config=WebSocketConfig(**options), secret=secret,
                                 **threads)
    else:
        call = functools.partial(serve.serve_stdio, app, secret=secret, **threads)
    try:
        if args.driver == "sync":
            call()
        elif args.driver == "asyncio":
            asyncio.run(call())
        else:
            anyio.run(call, backend=args.driver if args.driver == "trio" else "asyncio")
    except KeyboardInterrupt:
        return 0
    except OSError as exc:  # the port is taken, the address cannot be bound
        print(f"mcp-sansio serve: error: {exc}", file=sys.stderr)
        return _EXIT_FAILURE
    except BaseExceptionGroup as group:  # trio's nurseries wrap both
        if group.subgroup(KeyboardInterrupt) is not None:
            return 0
        bind = group.subgroup(OSError)
        if bind is None:
            raise
        print(f"mcp-sansio serve: error: {bind.exceptions[0]}", file=sys.stderr)
        return _EXIT_FAILURE
    return 0


def _authority(host: str, port: int) -> str:
    """``host:port`` as a URL writes it: an IPv6 address in brackets (``[::1]:8000``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

"""What every ``mcp-sansio`` command shares: its errors, exit statuses and common options.

The bottom of the CLI's modules (``main`` > ``direct`` > ``host``, ``auth_cmd`` > ``output``,
``args``): it imports none of them. A command module offers ``add_parser(subparsers)`` (or
``add_parsers``) and ``run(args) -> int``; ``main`` registers it in one line.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from typing import Final

from mcp_sansio import LocalProtocolError
from mcp_sansio.urls import parse_url

__all__ = [
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "CliError",
    "UsageError",
    "config_options",
    "json_object",
    "output_options",
    "request_options",
    "server_command",
    "string_arguments",
    "target_options",
]

EXIT_FAILURE: Final = 1
"""Something failed: a server, a request, a tool that reported an error."""
EXIT_USAGE: Final = 2
"""The command line is wrong (argparse's status too); nothing was started."""
EXIT_INTERRUPTED: Final = 130
_EXCERPT: Final = 30  # characters shown each side of a JSON error


class CliError(Exception):
    """A failure to report as one line (the message), then ``details`` indented, with ``status``."""

    def __init__(self, message: str, *, status: int = EXIT_FAILURE, details: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.details = details


class UsageError(CliError):
    """The command line cannot work as given (exit status 2); nothing was started."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status=EXIT_USAGE)


def output_options() -> argparse.ArgumentParser:
    """The parent parser of ``--json``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def request_options() -> argparse.ArgumentParser:
    """The parent parser of ``--timeout``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--timeout", type=_seconds, help="seconds per request (default 60)")
    return parser


def target_options() -> argparse.ArgumentParser:
    """The parent parser of ``--stdio CMD`` and ``--url URL``, one or the other."""
    parser = argparse.ArgumentParser(add_help=False)
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--stdio", metavar="CMD", help='a server command line, e.g. "python server.py"')
    target.add_argument("--url", type=_server_url,
                        help="a server URL (Streamable HTTP, falling back to HTTP+SSE)")
    return parser


def _seconds(raw: str) -> float:
    """``--timeout``: a positive, finite number of seconds (argparse reports it, status 2)."""
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {raw!r}")
    return value


def _server_url(raw: str) -> str:
    """``--url``: an absolute http(s) URL, checked before anything starts (status 2)."""
    try:
        parse_url(raw)
    except LocalProtocolError as exc:
        raise argparse.ArgumentTypeError(f"{exc} ({raw!r}; e.g. http://127.0.0.1:8000/mcp)") from exc
    return raw


def config_options() -> argparse.ArgumentParser:
    """The parent parser of ``--config FILE``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--config", metavar="FILE", action="append", default=[],
                        help="also read this configuration file (any known format); repeatable")
    return parser


def json_object(raw: str, option: str = "--args") -> dict[str, object]:
    """``raw`` as a JSON object, checked before anything starts.

    Raises:
        UsageError: it is not JSON (saying where, with the text around it), or not an object.
    """
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        start = max(exc.pos - _EXCERPT, 0)
        near = raw[start:exc.pos + _EXCERPT]
        raise UsageError(f"{option} is not valid JSON: {exc.msg} at character {exc.pos + 1}, "
                         f"near {near!r} (in {_cut(raw)!r})") from exc
    except RecursionError as exc:
        raise UsageError(f"{option} is nested too deeply") from exc
    if not isinstance(value, dict):
        raise UsageError(f"{option} must be a JSON object ({{\"name\": value, ...}}), not {_cut(raw)!r}")
    return value


def string_arguments(arguments: dict[str, object], option: str = "--args") -> dict[str, str]:
    """Prompt arguments: every value must be a string.

    Raises:
        UsageError: naming the first argument that is not.
    """
    for key, value in arguments.items():
        if not isinstance(value, str):
            raise UsageError(f"{option}: prompt arguments are strings, but {key!r} is {json.dumps(value)}")
    return {key: str(value) for key, value in arguments.items()}


def server_command(spec: str | None) -> tuple[str, list[str]]:
    """The program and arguments of ``--stdio`` (the bundled demo server when ``None``).

    Raises:
        UsageError: the command line cannot be split, or is empty.
    """
    if spec is None:
        return sys.executable, ["-m", "mcp_sansio_cli.demo_server"]
    try:
        argv = shlex.split(spec)
    except ValueError as exc:
        raise UsageError(f"cannot parse --stdio: {exc}") from exc
    if not argv:
        raise UsageError("--stdio needs a command")
    return argv[0], argv[1:]


def _cut(text: str, size: int = 200) -> str:
    return text if len(text) <= size else text[:size] + "..."

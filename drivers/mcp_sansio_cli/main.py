"""The ``mcp-sansio`` command line: a demo, one server (``inspect``, ``call``, ``prompt``), the
configured servers (``servers``, ``tools``, ``prompts``, ``resources``) and OAuth sign-in.

With no arguments it starts the bundled demo server and shows what a new user wants to
see. Every failure is one line on stderr (details indented below it) and a non-zero exit
status, never a traceback: 1 when something failed, 2 when the command line cannot work
(nothing was started), 130 when interrupted.

The modules form a line, each importing only those after it: ``main`` > ``direct`` >
``host`` > ``auth_cmd`` > ``output``, ``args``. A command module offers
``add_parser(subparsers)`` or ``add_parsers(subparsers)``, and ``run(args) -> int``;
wiring one in is one line of :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Final

from mcp_sansio import McpSansioError

from . import auth_cmd, direct, fuzz_cmd, host, serve_cmd
from .args import EXIT_FAILURE, EXIT_INTERRUPTED, CliError
from .output import report_error

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS: Final[tuple[ModuleType, ...]] = (direct, host, auth_cmd, serve_cmd, fuzz_cmd)
"""The command modules, in the order ``--help`` lists their commands."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command of :data:`COMMANDS`; each parsed command carries its ``run``."""
    parser = argparse.ArgumentParser(
        prog="mcp-sansio",
        description="Talk to MCP servers. With no command, run the bundled demo server.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        _register(sub, module)
    parser.set_defaults(command=None, run=direct.run, stdio=None, url=None, json=False, timeout=None)
    return parser


def _register(sub: argparse._SubParsersAction[argparse.ArgumentParser], module: ModuleType) -> None:
    """Let ``module`` add its commands, and make ``module.run`` run those that set no ``run``."""
    before = set(sub.choices)
    add = getattr(module, "add_parsers", None) or module.add_parser
    add(sub)
    for name in set(sub.choices) - before:
        parser = sub.choices[name]
        if parser.get_default("run") is None:
            parser.set_defaults(run=module.run)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mcp-sansio``; returns (and exits with) the status."""
    args = build_parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:
        status = EXIT_INTERRUPTED
    except BrokenPipeError:  # stdout's reader left (`| head`): stop quietly, as `cat` does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = EXIT_FAILURE
    except CliError as exc:
        report_error(str(exc), exc.details)
        status = exc.status
    except McpSansioError as exc:
        report_error(str(exc))
        status = EXIT_FAILURE
    if argv is None:
        sys.exit(status)
    return status

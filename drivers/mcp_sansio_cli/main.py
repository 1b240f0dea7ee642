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
import contextlib
import errno
import logging
import os
import select
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Final

from mcp_sansio import McpSansioError

from . import auth_cmd, direct, fuzz_cmd, host, serve_cmd
from .args import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, CliError
from .output import ShownFormatter, report_error

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
    """Entry point of ``mcp-sansio``; returns (and exits with) the status.

    Output that nobody reads ends the command quietly with status 1, as ``cat`` does: the
    reader may leave while a command writes (a pipe closed by ``| head``, a terminal gone)
    or before the last flush of a buffered stdout, so both are covered, and stdout then
    points at ``os.devnull`` so that the interpreter's own flush at exit finds nothing to
    complain about.
    """
    try:
        status = _run(argv)
        sys.stdout.flush()  # a buffered stdout meets a closed pipe here, not at exit
    except OSError as exc:
        if not isinstance(exc, BrokenPipeError) and exc.errno != errno.EIO:  # EIO: a terminal that closed
            raise
        if _stdout_gone():
            _silence_stdout()
        else:  # some other pipe broke (stderr's, say): a driver should have said so in its own words
            with contextlib.suppress(OSError):
                report_error(str(exc))
        status = EXIT_FAILURE
    if argv is None:
        sys.exit(status)
    return status


def _run(argv: Sequence[str] | None) -> int:
    root = logging.getLogger()
    if not root.handlers:  # warnings on stderr as Python would write them, but escaped
        handler = logging.StreamHandler()
        handler.setFormatter(ShownFormatter())
        handler.setLevel(logging.WARNING)
        root.addHandler(handler)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, or argparse refused the command line (its message is out)
        return EXIT_USAGE if exc.code not in (0, None) else 0
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:
        status = EXIT_INTERRUPTED
    except CliError as exc:
        report_error(str(exc), exc.details)
        status = exc.status
    except McpSansioError as exc:
        report_error(str(exc))
        status = EXIT_FAILURE
    return status


def _stdout_gone() -> bool:
    """Whether nobody reads stdout any more (the broken pipe was not some other one)."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # already pointed elsewhere, or closed
        return True
    if not hasattr(select, "poll"):  # Windows: no way to ask; trust the error
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in poller.poll(0))


def _silence_stdout() -> None:
    """Point stdout's descriptor at ``os.devnull``: what is still buffered goes nowhere, quietly."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)

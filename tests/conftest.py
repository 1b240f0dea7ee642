"""Shared fixtures: no test may leave a child process behind; anyio runs on both backends."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis's per-example deadline and its too-slow health check measure how busy the
# machine is, not the code: on a loaded 2-core CI box they fail correct properties.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

# How long a test's children get, after it ends, to exit and be reaped by their owner.
CHILD_REAP_GRACE = 2.0


def _children_by_parent() -> dict[int, list[tuple[int, str]]]:
    """Map each parent pid to its children's ``(pid, state)``, read from /proc."""
    tree: dict[int, list[tuple[int, str]]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdecimal():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # it exited while we looked
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        tree.setdefault(int(ppid), []).append((int(entry.name), state))
    return tree


def descendants(pid: int) -> dict[int, str]:
    """Return every live or zombie descendant of ``pid`` with its /proc state letter."""
    tree = _children_by_parent()
    found: dict[int, str] = {}
    pending = [pid]
    while pending:
        for child, state in tree.get(pending.pop(), []):
            found[child] = state
            pending.append(child)
    return found


def _describe(pid: int, state: str) -> str:
    proc = Path("/proc") / str(pid)
    try:
        # A zombie has no command line left, only its name.
        command = proc.joinpath("cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        command = command or f"[{proc.joinpath('comm').read_text().strip()}]"
    except (OSError, UnicodeDecodeError):
        command = "?"
    return f"pid {pid} ({'zombie' if state == 'Z' else 'alive'}): {command}"


def _kill_and_reap(pids: dict[int, str]) -> None:
    """SIGKILL ``pids`` and reap those that are our own children."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in pids:
        # ChildProcessError: a grandchild, or already reaped by its owner.
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


@pytest.fixture(autouse=True)
def no_leftover_child_processes() -> Iterator[None]:
    """Fail a test that leaves a child process (or an unreaped zombie) behind.

    Processes that existed before the test (from wider-scoped fixtures) are not its
    fault. The leftovers are killed, so one failure does not cascade into the next.
    """
    me = os.getpid()
    before = set(descendants(me))
    yield
    deadline = time.monotonic() + CHILD_REAP_GRACE
    while True:
        left = {pid: st for pid, st in descendants(me).items() if pid not in before}
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    if left:
        report = "\n  ".join(_describe(pid, state) for pid, state in left.items())
        _kill_and_reap(left)
        pytest.fail(f"the test left child processes behind:\n  {report}", pytrace=False)


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every ``@pytest.mark.anyio`` test on asyncio and on trio.

    Stated here, not left to anyio's default, so a missing trio fails loudly
    instead of silently shrinking the matrix.
    """
    backend: str = request.param
    return backend

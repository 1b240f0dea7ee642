"""The oracles over a whole fuzz run rather than one case: the tool list, the server's
memory, the processes it left behind.

State held: none; each function judges samples the runner took (a ``tools/list``, resident
memory over time, the server's children after it exited) and returns
:class:`~.rules.Finding` values. They live apart from the per-case judge (:mod:`.oracles`),
which holds the indexes of one case's records (and applies :func:`judge_tools` to each
listing it sees).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from .rules import Finding
from .schemacheck import schema_problems

__all__ = ["judge_children", "judge_memory", "judge_tools"]

_TOOL_NAME: Final = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def judge_tools(tools: Sequence[Mapping[str, object]]) -> list[Finding]:
    """Findings about a ``tools/list``: input and output schemas that are not well-formed
    JSON Schema, names outside the spec's advice, names used twice."""
    found: list[Finding] = []
    seen: set[object] = set()
    for tool in tools:
        name = tool.get("name")
        for key in ("inputSchema", "outputSchema"):
            if key in tool:
                problems = schema_problems(tool[key])
                if problems:
                    found.append(
                        Finding(
                            rule="tool-input-schema",
                            method="tools/list",
                            message=(
                                f"tool {name!r}: {key} is not a valid JSON Schema: {'; '.join(problems[:3])}"
                            ),
                        )
                    )
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            found.append(
                Finding(
                    rule="tool-name",
                    method="tools/list",
                    message=(f"tool name {name!r} is not 1-128 characters of A-Z a-z 0-9 _ - ."),
                )
            )
        if name in seen:
            found.append(
                Finding(rule="tool-name", method="tools/list", message=f"tool name {name!r} is used twice")
            )
        seen.add(name if isinstance(name, str) else repr(name))
    return found


def judge_memory(samples: Sequence[tuple[float, int]], limit: int) -> list[Finding]:
    """A finding when resident memory (``(t, bytes)`` samples of the server process)
    grew by more than ``limit`` bytes over its first sample."""
    if len(samples) < 2:
        return []
    start = samples[0][1]
    peak_t, peak = max(samples, key=lambda s: s[1])
    if peak - start <= limit:
        return []
    return [
        Finding(
            rule="memory-growth",
            method=None,
            message=(
                f"resident memory grew from {start >> 20} MiB to {peak >> 20} MiB "
                f"in {peak_t - samples[0][0]:.1f} s (bound: +{limit >> 20} MiB)"
            ),
        )
    ]


def judge_children(leftover: Sequence[tuple[int, str]]) -> list[Finding]:
    """A finding when processes the server started (``(pid, command line)``) were still
    running after it exited."""
    if not leftover:
        return []
    names = ", ".join(f"{pid} {cmd[:60]!r}" for pid, cmd in leftover[:5])
    return [
        Finding(
            rule="leftover-process",
            method=None,
            message=(f"{len(leftover)} process(es) the server started outlived it: {names}"),
        )
    ]

"""Model-facing tool names ``mcp__<server>__<tool>``, and routing them back.

Prompts are named the same way (``mcp__<server>__<prompt>``, the seed client's prompt
commands), in a table of their own (``ToolNamer.build(..., kind="prompt")``).

Models accept tool names matching ``^[A-Za-z0-9_-]{1,64}$``. Server and tool names are
normalised (any other character becomes ``_``) and a name that would exceed 64
characters is shortened: the server part to at most 16 characters when the tool needs
the room, the tool part to what is left, then ``_`` and 8 hex digits of a SHA-256 of the
original pair. Names are a function of the whole set, never of its order:

1. Every pair gets its *preferred* name: the plain one, or the shortened one if too long.
2. Pairs whose preferred name is unique keep it.
3. In a group sharing a preferred name (``a.b`` and ``a_b``; ``("a", "b__c")`` and
   ``("a__b", "c")``), the pair that needed no normalisation or shortening keeps it
   (ties broken by sorting the pairs); the rest get hashed names, re-salted until free.

So a name changes only when a colliding pair joins or leaves the set. Routing never
parses names (``__`` may occur inside a server name): it looks them up. Before any server
has listed its tools, :func:`servers_for` says which servers a name may belong to, so a
host starts only those.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Final

from mcp_sansio.errors import LocalProtocolError, McpSansioError

__all__ = [
    "MAX_TOOL_NAME_LENGTH",
    "ToolNamer",
    "ToolNames",
    "UnknownName",
    "UnknownPromptName",
    "UnknownToolName",
    "normalize_name",
    "servers_for",
]

MAX_TOOL_NAME_LENGTH: Final = 64
"""The longest tool name model APIs accept."""

_PREFIX: Final = "mcp__"
_SEPARATOR: Final = "__"
_HASH_DIGITS: Final = 8
_MIN_SERVER_PART: Final = 16
_INVALID: Final = re.compile(r"[^A-Za-z0-9_-]")
_ROOM: Final = MAX_TOOL_NAME_LENGTH - len(_PREFIX) - len(_SEPARATOR) - 1 - _HASH_DIGITS
"""Characters left for the server and tool parts of a hashed name."""


class UnknownName(McpSansioError, KeyError):
    """A model name, or a (server, item) pair, that a table does not contain."""

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownToolName(UnknownName):
    """A model-facing tool name, or a (server, tool) pair, that the table does not contain."""


class UnknownPromptName(UnknownName):
    """A model-facing prompt name, or a (server, prompt) pair, that the table does not contain."""


_UNKNOWN: Final[dict[str, type[UnknownName]]] = {"tool": UnknownToolName, "prompt": UnknownPromptName}


def normalize_name(name: str) -> str:
    """Replace every character outside ``[A-Za-z0-9_-]`` with ``_``."""
    return _INVALID.sub("_", name)


def _digest(server: str, tool: str, salt: int) -> str:
    data = f"{server}\0{tool}\0{salt}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:_HASH_DIGITS]


def _hashed_name(server: str, tool: str, salt: int) -> str:
    server_part = normalize_name(server)
    tool_part = normalize_name(tool)
    server_room = min(len(server_part), max(_ROOM - len(tool_part), _MIN_SERVER_PART))
    tool_room = _ROOM - server_room
    return (
        f"{_PREFIX}{server_part[:server_room]}{_SEPARATOR}{tool_part[:tool_room]}"
        f"_{_digest(server, tool, salt)}"
    )


def _preferred(server: str, tool: str) -> tuple[str, bool]:
    """Return the pair's preferred name and whether it is exactly ``mcp__server__tool``."""
    plain = f"{_PREFIX}{normalize_name(server)}{_SEPARATOR}{normalize_name(tool)}"
    if len(plain) > MAX_TOOL_NAME_LENGTH:
        return _hashed_name(server, tool, 0), False
    return plain, plain == f"{_PREFIX}{server}{_SEPARATOR}{tool}"


class ToolNames:
    """A bidirectional table of model-facing names, built by :meth:`ToolNamer.build`.

    Attributes:
        kind: what the table names, ``"tool"`` or ``"prompt"`` (its errors say so).
    """

    __slots__ = ("_by_pair", "_routes", "kind")

    def __init__(self, routes: Mapping[str, tuple[str, str]], kind: str = "tool") -> None:
        self._routes = dict(sorted(routes.items()))
        self._by_pair = {pair: name for name, pair in self._routes.items()}
        self.kind = kind

    def model_name(self, server: str, tool: str) -> str:
        """Return the name the model sees for ``tool`` of ``server``.

        Raises:
            UnknownToolName, UnknownPromptName: the pair was not in the set the table was
                built from (by the table's kind).
        """
        try:
            return self._by_pair[server, tool]
        except KeyError:
            raise _UNKNOWN[self.kind](f"no {self.kind} {tool!r} on server {server!r}") from None

    def route(self, model_name: str) -> tuple[str, str]:
        """Return the ``(server, tool)`` pair a model-facing name stands for.

        Raises:
            UnknownToolName, UnknownPromptName: nothing has that name (the model made it up,
                or it is stale).
        """
        try:
            return self._routes[model_name]
        except KeyError:
            raise _UNKNOWN[self.kind](f"no {self.kind} is named {model_name!r}") from None

    def __iter__(self) -> Iterator[str]:
        """Iterate over the model-facing names, sorted."""
        return iter(self._routes)

    def __len__(self) -> int:
        return len(self._routes)


class ToolNamer:
    """Builds :class:`ToolNames` tables by the rules in the module docstring."""

    @classmethod
    def build(cls, servers: Mapping[str, Sequence[str]], *, kind: str = "tool") -> ToolNames:
        """Name every tool (or prompt) of every server.

        Args:
            servers: tool names by server name; duplicates are ignored.
            kind: ``"tool"`` or ``"prompt"``: what the names stand for.

        Returns:
            The table; the same set of pairs always gives the same names.

        Raises:
            LocalProtocolError: ``kind`` is neither.
        """
        if kind not in _UNKNOWN:
            raise LocalProtocolError(f"kind must be 'tool' or 'prompt', not {kind!r}")
        pairs = sorted({(server, tool) for server, tools in servers.items() for tool in tools})
        groups: defaultdict[str, list[tuple[bool, str, str]]] = defaultdict(list)
        for server, tool in pairs:
            name, exact = _preferred(server, tool)
            groups[name].append((not exact, server, tool))
        routes: dict[str, tuple[str, str]] = {}
        losers: list[tuple[str, str]] = []
        for name, members in groups.items():
            winner = min(members)
            routes[name] = winner[1:]
            losers += [member[1:] for member in members if member != winner]
        for server, tool in sorted(losers):
            salt = 1
            while (name := _hashed_name(server, tool, salt)) in routes:
                salt += 1
            routes[name] = (server, tool)
        return ToolNames(routes, kind)


def servers_for(model_name: str, servers: Sequence[str]) -> list[str]:
    """The servers of ``servers`` whose tools or prompts may have ``model_name``, before
    any has listed them.

    A name begins with ``mcp__``, then its server's normalised name and ``__`` when that
    name has at most 16 characters, else at least its first 16 (see the module
    docstring): no server is left out, and servers sharing those 16 are all in.
    """
    return [server for server in servers if model_name.startswith(_server_prefix(normalize_name(server)))]


def _server_prefix(server_part: str) -> str:
    if len(server_part) <= _MIN_SERVER_PART:
        return _PREFIX + server_part + _SEPARATOR
    return _PREFIX + server_part[:_MIN_SERVER_PART]

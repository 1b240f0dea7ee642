"""Recognise and read the MCP configuration files of other hosts, as well as our own.

======================  ================================  =====================  ========
Format                  Typical file                      Servers at             Scope
======================  ================================  =====================  ========
``MCP_JSON``            ``.mcp.json`` (Claude Code)       ``mcpServers``         PROJECT
``CLAUDE_DESKTOP``      ``claude_desktop_config.json``    ``mcpServers``         USER
``CLAUDE_CODE``         ``~/.claude.json``                ``mcpServers``         USER
                                                          ``projects[<dir>]``    LOCAL
``CURSOR``              ``.cursor/mcp.json``              ``mcpServers``         PROJECT
``VSCODE``              ``.vscode/mcp.json`` (JSONC)      ``servers``, inputs    PROJECT
======================  ================================  =====================  ========

The scope column is the default; a caller may impose one (``--config FILE``, a user-wide
``~/.cursor/mcp.json``). Every servers object may sit beside ``disabledMcpServers``,
``disabledMcpjsonServers`` and ``enabledMcpjsonServers`` name lists.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from pathlib import PurePath
from typing import Final

import msgspec

from mcp_sansio.hostconfig.model import ConfigError, Scope, ScopeDocument
from mcp_sansio.hostconfig.parse import decode_json, parse_section

__all__ = ["ConfigFile", "ConfigFormat", "InputPrompt", "read_config_file"]


class ConfigFormat(enum.Enum):
    """Which host's file layout a configuration file follows."""

    MCP_JSON = "mcp.json"
    CLAUDE_DESKTOP = "claude-desktop"
    CLAUDE_CODE = "claude-code"
    CURSOR = "cursor"
    VSCODE = "vscode"


_BY_NAME: Final[Mapping[tuple[str, str], ConfigFormat]] = {
    ("", "claude_desktop_config.json"): ConfigFormat.CLAUDE_DESKTOP,
    ("", ".claude.json"): ConfigFormat.CLAUDE_CODE,
    (".vscode", "mcp.json"): ConfigFormat.VSCODE,
    (".cursor", "mcp.json"): ConfigFormat.CURSOR,
    ("", ".mcp.json"): ConfigFormat.MCP_JSON,
}
"""Recognised ``(parent directory, file name)`` pairs; ``""`` matches any parent."""

_SERVER_KEYS: Final = ("mcpServers", "servers")
"""Where a file may hold servers; a file with neither (nor a project section) defines none."""

_SCOPES: Final[Mapping[ConfigFormat, Scope]] = {
    ConfigFormat.MCP_JSON: Scope.PROJECT,
    ConfigFormat.CLAUDE_DESKTOP: Scope.USER,
    ConfigFormat.CLAUDE_CODE: Scope.USER,
    ConfigFormat.CURSOR: Scope.PROJECT,
    ConfigFormat.VSCODE: Scope.PROJECT,
}


class InputPrompt(msgspec.Struct, frozen=True, kw_only=True):
    """A VS Code ``inputs`` entry: a value the host must ask the user for.

    ``${input:<id>}`` placeholders stay unexpanded until the host passes the answers to
    ``expand_server(..., inputs=...)``.

    Attributes:
        id: the input's id, as used in ``${input:<id>}``.
        type: VS Code's input type, usually ``"promptString"``.
        description: the prompt to show.
        password: whether to hide what the user types.
        default: a suggested answer.
    """

    id: str
    type: str = "promptString"
    description: str = ""
    password: bool = False
    default: str | None = None


class ConfigFile(msgspec.Struct, frozen=True, kw_only=True):
    """One configuration file, read.

    Attributes:
        path: the name the caller gave.
        format: the layout it was read as.
        documents: its scope documents; two for ``~/.claude.json`` with a matching project.
        inputs: VS Code input prompts, in file order.
        warnings: what is odd about it, for the host to show (a file with no servers
            object at all, naming the keys it has).
    """

    path: str
    format: ConfigFormat
    documents: tuple[ScopeDocument, ...]
    inputs: tuple[InputPrompt, ...] = ()
    warnings: tuple[str, ...] = ()


def _sniff_by_name(path_name: str) -> ConfigFormat | None:
    parts = re.split(r"[\\/]", path_name)
    parent = parts[-2] if len(parts) > 1 else ""
    return _BY_NAME.get((parent, parts[-1])) or _BY_NAME.get(("", parts[-1]))


def _sniff_by_content(root: Mapping[str, object]) -> ConfigFormat:
    if "projects" in root:
        return ConfigFormat.CLAUDE_CODE
    if "servers" in root and "mcpServers" not in root:
        return ConfigFormat.VSCODE
    return ConfigFormat.MCP_JSON


def _read_inputs(root: Mapping[str, object], file: str) -> tuple[InputPrompt, ...]:
    try:
        return msgspec.convert(root.get("inputs", []), tuple[InputPrompt, ...])
    except (msgspec.ValidationError, UnicodeEncodeError) as exc:  # a key with a lone surrogate
        raise ConfigError(f"malformed: {exc}", file=file, field="inputs") from exc


def _project_section(
    root: Mapping[str, object], project: PurePath, file: str
) -> tuple[str, Mapping[str, object]] | None:
    projects = root.get("projects", {})
    if not isinstance(projects, dict):
        raise ConfigError("must be an object keyed by project directory", file=file, field="projects")
    wanted = str(project).rstrip("/\\")
    for key, section in projects.items():
        if key.rstrip("/\\") == wanted:
            if not isinstance(section, dict):
                raise ConfigError("must be an object", file=file, field=f"projects.{key}")
            return key, section
    return None


def read_config_file(
    path_name: str,
    text: str,
    *,
    scope: Scope | None = None,
    project: PurePath | None = None,
) -> ConfigFile:
    """Recognise a file's format, by its name and then its content, and read it.

    Args:
        path_name: the file's path; its last two components pick the format when they
            are one of the names in the module table. Any other name is sniffed by content:
            a ``projects`` key means ``CLAUDE_CODE``, ``servers`` without ``mcpServers``
            means ``VSCODE``, anything else ``MCP_JSON``.
        text: the file's contents.
        scope: impose this scope on every document instead of the format's default.
        project: the project directory whose ``projects[...]`` section of
            ``~/.claude.json`` is read (a trailing separator is ignored); without it only
            the user section is.

    Returns:
        The file with its documents, each with ``source`` set to ``path_name`` (the
        project section's to ``path_name#projects[<dir>]``).

    Raises:
        ConfigError: the file is not JSON, is not an object, or has a malformed entry.
    """
    by_name = _sniff_by_name(path_name)
    root = decode_json(text, file=path_name, jsonc=by_name is ConfigFormat.VSCODE)
    if not isinstance(root, dict):
        raise ConfigError("the top level must be a JSON object", file=path_name)
    fmt = by_name or _sniff_by_content(root)
    servers_key = "servers" if fmt is ConfigFormat.VSCODE else "mcpServers"
    documents = [
        parse_section(
            root,
            servers_key=servers_key,
            scope=_SCOPES[fmt] if scope is None else scope,
            file=path_name,
            source=path_name,
        )
    ]
    if fmt is ConfigFormat.CLAUDE_CODE and project is not None:
        found = _project_section(root, project, path_name)
        if found is not None:
            key, section = found
            documents.append(
                parse_section(
                    section,
                    servers_key="mcpServers",
                    scope=Scope.LOCAL if scope is None else scope,
                    file=path_name,
                    source=f"{path_name}#projects[{key}]",
                )
            )
    inputs = _read_inputs(root, path_name) if fmt is ConfigFormat.VSCODE else ()
    warnings: tuple[str, ...] = ()
    if not any(key in root for key in _SERVER_KEYS) and len(documents) == 1:
        keys = ", ".join(repr(key) for key in sorted(root)) if root else "none"
        warnings = (f"{path_name}: no 'mcpServers' (or 'servers') object, so no servers are defined "
                    f"there; its top-level keys: {keys}",)
    return ConfigFile(path=path_name, format=fmt, documents=tuple(documents), inputs=inputs,
                      warnings=warnings)

"""Validate the ``mcpServers`` JSON shape into :class:`ScopeDocument` objects.

An entry is ``{"type", "command", "args", "env", "cwd", "url", "headers", "timeout",
"shellPrefix", "disabled"}``. ``type`` is inferred when absent (``command`` means stdio,
``url`` means http) and ``"streamable-http"``/``"streamableHttp"`` mean http.
``shellPrefix`` (a command line, split as a POSIX shell does, or a list of words) wraps a
stdio server's command; beside the servers map it wraps every stdio server of the
document that has none of its own. Unknown fields, and fields the entry's transport does
not use, are ignored so files shared with other hosts still load. An entry with only
``"disabled"`` (no ``type``, ``command`` or ``url``) toggles a server defined in another
document. Every problem raises :class:`ConfigError` naming the file, the server and the
field.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Mapping
from typing import Final

from mcp_sansio.hostconfig.model import (
    ConfigError,
    HttpServerConfig,
    Scope,
    ScopeDocument,
    ServerConfig,
    StdioServerConfig,
    Transport,
)

__all__ = ["decode_json", "parse_section"]

_TYPES: Final[Mapping[str, Transport | None]] = {
    "stdio": None,
    "http": Transport.HTTP,
    "streamable-http": Transport.HTTP,
    "streamableHttp": Transport.HTTP,
    "sse": Transport.SSE,
    "ws": Transport.WS,
}
"""Accepted ``type`` values; ``None`` stands for stdio."""

_DISABLED_LISTS: Final = ("disabledMcpServers", "disabledMcpjsonServers")
_ENABLED_LISTS: Final = ("enabledMcpjsonServers",)

_JSON_STRING: Final = r'"[^"\\]*(?:\\.[^"\\]*)*\\?(?:"|\Z)'
"""A JSON string, or an unclosed one to the end (so no quote is scanned from twice)."""
_JSONC_COMMENT: Final = re.compile(_JSON_STRING + r"|//[^\n]*|/\*.*?(?:\*/|\Z)", re.DOTALL)
"""Strings (kept), line comments, and block comments (to the end if never closed)."""
_JSONC_TRAILING_COMMA: Final = re.compile(_JSON_STRING + r"|,(?=\s*[}\]])", re.DOTALL)


def _closed_block(token: str) -> bool:
    return len(token) >= 4 and token.endswith("*/")


def _blank_comment(match: re.Match[str]) -> str:
    token = match.group()
    if token.startswith('"') or (token.startswith("/*") and not _closed_block(token)):
        return token  # an unclosed comment stays, so the JSON error points at it
    return re.sub(r"[^\n]", " ", token)


def _blank_comma(match: re.Match[str]) -> str:
    return match.group() if match.group() != "," else " "


def _strip_jsonc(text: str) -> str:
    """Blank out ``//``/``/* */`` comments and trailing commas, keeping every offset."""
    return _JSONC_TRAILING_COMMA.sub(_blank_comma, _JSONC_COMMENT.sub(_blank_comment, text))


def decode_json(text: str, *, file: str, jsonc: bool = False) -> object:
    """Parse ``text`` as JSON (or JSONC: comments and trailing commas, as VS Code allows).

    This uses the standard library's parser rather than msgspec for its line and column.

    Args:
        text: the file's contents.
        file: the file's name, for error messages.
        jsonc: accept comments and trailing commas.

    Returns:
        The decoded value (dicts, lists, strings, numbers, booleans, ``None``).

    Raises:
        ConfigError: the text is not valid JSON; ``line`` and ``column`` locate syntax errors.
    """
    try:
        return json.loads(_strip_jsonc(text) if jsonc else text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc.msg}", file=file, line=exc.lineno, column=exc.colno) from exc
    except (RecursionError, ValueError) as exc:  # nesting too deep; an int over 4300 digits
        raise ConfigError(f"invalid JSON: {exc}", file=file) from exc


class _Entry:
    """Typed accessors for one raw entry, raising errors that name the field."""

    def __init__(self, file: str, name: str | None, raw: Mapping[str, object]) -> None:
        self.file = file
        self.name = name
        self.raw = raw

    def error(self, message: str, field: str | None = None) -> ConfigError:
        return ConfigError(message, file=self.file, server=self.name, field=field)

    def string(self, field: str) -> str | None:
        value = self.raw.get(field)
        if value is None or isinstance(value, str):
            return value
        raise self.error(f"must be a string, not {_json_type(value)}", field)

    def strings(self, field: str) -> tuple[str, ...]:
        value = self.raw.get(field, [])
        if not isinstance(value, list):
            raise self.error(f"must be a list of strings, not {_json_type(value)}", field)
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise self.error(f"must be a string, not {_json_type(item)}", f"{field}[{index}]")
        return tuple(value)

    def string_map(self, field: str) -> dict[str, str]:
        value = self.raw.get(field, {})
        if not isinstance(value, dict):
            raise self.error(f"must be an object of strings, not {_json_type(value)}", field)
        for key, item in value.items():
            if not isinstance(item, str):
                raise self.error(f"must be a string, not {_json_type(item)}", f"{field}.{key}")
        return dict(value)

    def words(self, field: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        """A command line given as one string (split like a shell) or a list of strings."""
        value = self.raw.get(field)
        if value is None:
            return default
        if isinstance(value, list):
            return self.strings(field)
        if not isinstance(value, str):
            raise self.error(f"must be a command line or a list of strings, not {_json_type(value)}", field)
        try:
            return tuple(shlex.split(value))
        except ValueError as exc:
            raise self.error(f"cannot be split into words: {exc}", field) from exc

    def timeout(self) -> float | None:
        value = self.raw.get("timeout")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"must be a number of seconds, not {_json_type(value)}", "timeout")
        if not (math.isfinite(value) and value > 0):
            raise self.error(f"must be a positive number of seconds, not {value}", "timeout")
        return float(value)


def _json_type(value: object) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "a boolean"
        case int() | float():
            return "a number"
        case str():
            return "a string"
        case list():
            return "a list"
        case _:
            return "an object"


def _parse_entry(entry: _Entry, shell_prefix: tuple[str, ...]) -> tuple[ServerConfig | None, bool | None]:
    """Return the entry's definition (``None`` for a bare toggle) and its ``disabled`` flag;
    ``shell_prefix`` is the document's, for a stdio entry without one."""
    disabled = entry.raw.get("disabled")
    if disabled is not None and not isinstance(disabled, bool):
        raise entry.error(f"must be true or false, not {_json_type(disabled)}", "disabled")
    kind = entry.string("type")
    command = entry.string("command")
    url = entry.string("url")
    if kind is None and command is None and url is None:
        if disabled is None:
            raise entry.error("needs a 'command' (stdio) or a 'url' (http, sse, ws)")
        return None, disabled
    if command is not None and url is not None:
        raise entry.error("has both 'command' and 'url'; a server is local or remote", "url")
    if kind is None:
        transport = None if command is not None else Transport.HTTP
    elif kind in _TYPES:
        transport = _TYPES[kind]
    else:
        raise entry.error(f"unknown type {kind!r}; expected one of {sorted(_TYPES)}", "type")
    if transport is None:
        if command is None:
            raise entry.error("a stdio server needs a 'command'", "command")
        config: ServerConfig = StdioServerConfig(
            command=command,
            args=entry.strings("args"),
            env=entry.string_map("env"),
            cwd=entry.string("cwd"),
            timeout=entry.timeout(),
            shell_prefix=entry.words("shellPrefix", shell_prefix),
        )
    elif url is None:
        raise entry.error(f"a {transport.value} server needs a 'url'", "url")
    else:
        config = HttpServerConfig(
            url=url,
            transport=transport,
            headers=entry.string_map("headers"),
            timeout=entry.timeout(),
        )
    return config, disabled


def _name_list(section: Mapping[str, object], key: str, file: str) -> set[str]:
    value = section.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError("must be a list of server names", file=file, field=key)
    return set(value)


def parse_section(
    section: Mapping[str, object], *, servers_key: str, scope: Scope, file: str, source: str
) -> ScopeDocument:
    """Validate one object holding a servers map (and optional enable/disable lists).

    Args:
        section: the decoded object, e.g. a file's root or a ``projects[path]`` object.
        servers_key: where the servers map is (``"mcpServers"``, or ``"servers"`` for VS Code).
        scope: the scope of the resulting document.
        file: the file name, for errors.
        source: the provenance recorded in the document.

    Returns:
        The document; a missing servers map gives one with no servers.

    Raises:
        ConfigError: the servers map, an entry, a name list or ``shellPrefix`` is malformed.
    """
    raw_servers = section.get(servers_key, {})
    if not isinstance(raw_servers, dict):
        raise ConfigError("must be an object keyed by server name", file=file, field=servers_key)
    servers: dict[str, ServerConfig] = {}
    disabled: set[str] = set()
    enabled: set[str] = set()
    for key in _DISABLED_LISTS:
        disabled |= _name_list(section, key, file)
    for key in _ENABLED_LISTS:
        enabled |= _name_list(section, key, file)
    shell_prefix = _Entry(file, None, section).words("shellPrefix")
    for name, raw in raw_servers.items():
        if not name:
            raise ConfigError("a server name must not be empty", file=file, field=servers_key)
        if not isinstance(raw, dict):
            raise ConfigError(f"must be an object, not {_json_type(raw)}", file=file, server=name)
        config, flag = _parse_entry(_Entry(file, name, raw), shell_prefix)
        if config is not None:
            servers[name] = config
        if flag:
            disabled.add(name)
        elif flag is not None and config is None:
            enabled.add(name)
    return ScopeDocument(
        scope=scope,
        source=source,
        servers=servers,
        disabled=frozenset(disabled),
        enabled=frozenset(enabled),
    )

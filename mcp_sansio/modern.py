"""The stateless 2026-07-28 protocol: per-request ``_meta``, ``server/discover``, MRTR.

Modern revisions have no ``initialize`` handshake: every request carries the protocol
version, the client's capabilities and identity in ``_meta``; ``server/discover`` tells
the server's versions and capabilities; a server needing input answers with
``resultType: "input_required"`` and the client retries with ``inputResponses``
(multi round-trip requests). This module holds the data and pure helpers of that era;
the session (``session.py``) and the HTTP transport consult it. See
``docs/specification/2026-07-28`` (changelog, versioning, transports, MRTR).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Final

import msgspec
from msgspec import Raw

from .types import ServerCapabilities
from .types._base import WireStruct

__all__ = [
    "HEADER_MISMATCH",
    "MISSING_CLIENT_CAPABILITY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "DiscoverResult",
    "InputRequest",
    "ResultHead",
    "encode_header_value",
    "mcp_param_headers",
    "request_meta",
    "standard_headers",
    "tool_header_paths",
]

HEADER_MISMATCH: Final = -32020
MISSING_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022

PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"

_MAX_SAFE_INT: Final = 2**53 - 1
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_SENTINEL_START: Final = "=?base64?"
_SENTINEL_END: Final = "?="
_PRIMITIVES: Final = ("string", "integer", "boolean")  # "number" is not allowed
# Keywords an x-mcp-header annotation must not sit under (STREAMABLE HTTP "Schema Extension").
_NOT_STATIC: Final = frozenset({
    "items", "prefixItems", "additionalProperties", "patternProperties", "oneOf", "anyOf",
    "allOf", "not", "if", "then", "else", "$ref", "$defs", "definitions", "dependentSchemas",
    "contains", "unevaluatedProperties", "unevaluatedItems", "propertyNames",
})


class DiscoverResult(WireStruct, kw_only=True, omit_defaults=True):
    """The answer to ``server/discover``.

    Decoding is lenient (only ``supportedVersions`` is needed); unset fields are left
    out when encoding, so a fully set instance is what the schema asks for.
    """

    supported_versions: list[str]
    capabilities: ServerCapabilities = msgspec.field(default_factory=ServerCapabilities)
    result_type: str | None = None
    instructions: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")
    ttl_ms: int | None = None
    cache_scope: str | None = None


class ResultHead(WireStruct, kw_only=True, omit_defaults=True):
    """The era-specific fields of any modern result, decoded before the payload.

    A missing ``resultType`` means ``"complete"`` (a result from an older server).
    """

    result_type: str | None = None
    input_requests: dict[str, Raw] | None = None
    request_state: str | None = None


class InputRequest(msgspec.Struct, kw_only=True):
    """One entry of ``inputRequests``: a server->client request carried in a result."""

    method: str
    params: Raw = msgspec.field(default_factory=lambda: Raw(b"{}"))


def request_meta(version: str, capabilities: object, client_info: object,
                 log_level: str | None) -> dict[str, object]:
    """The ``_meta`` every modern request carries."""
    meta: dict[str, object] = {
        PROTOCOL_VERSION_KEY: version,
        CLIENT_CAPABILITIES_KEY: capabilities,
        CLIENT_INFO_KEY: client_info,
    }
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    return meta


def encode_header_value(value: str) -> str:
    """A header-safe form of ``value``: as is, or ``=?base64?...?=`` (the spec's rule)."""
    plain = (
        value == value.strip(" \t")
        and all(0x20 <= ord(c) <= 0x7E or c == "\t" for c in value)
        and not (value.startswith(_SENTINEL_START) and value.endswith(_SENTINEL_END))
    )
    if plain:
        return value
    return _SENTINEL_START + base64.b64encode(value.encode("utf-8", "surrogatepass")).decode() + _SENTINEL_END


def standard_headers(method: str, params: Mapping[str, object] | None) -> list[tuple[str, str]]:
    """``Mcp-Method`` and, for named requests, ``Mcp-Name`` (both header-safe: a method
    outside the spec's names could otherwise smuggle a line break into the request)."""
    headers = [("mcp-method", encode_header_value(method))]
    if params is not None and method in ("tools/call", "prompts/get", "resources/read"):
        name = params.get("uri" if method == "resources/read" else "name")
        if isinstance(name, str):
            headers.append(("mcp-name", encode_header_value(name)))
    return headers


def tool_header_paths(input_schema: Mapping[str, object]) -> dict[tuple[str, ...], str]:
    """The ``x-mcp-header`` annotations of a tool: property path -> header name.

    Raises:
        ValueError: an annotation breaks a rule (empty or not a token, duplicate, on a
            non-primitive or ``number`` property, or not statically reachable); the
            message says which, so the caller can name the tool.
    """
    found: dict[tuple[str, ...], str] = {}
    seen: set[str] = set()

    def walk(schema: object, path: tuple[str, ...], static: bool) -> None:
        if not isinstance(schema, Mapping):
            return
        if "x-mcp-header" in schema:
            name = schema["x-mcp-header"]
            where = ".".join(path) or "the schema root"
            if not static:
                raise ValueError(f"x-mcp-header on {where} is not reachable through properties alone")
            if not isinstance(name, str) or not _TOKEN.fullmatch(name):
                raise ValueError(f"x-mcp-header {name!r} on {where} is not an HTTP token")
            if name.lower() in seen:
                raise ValueError(f"x-mcp-header {name!r} is used twice")
            kind = schema.get("type")
            if not _header_type(kind):
                raise ValueError(f"x-mcp-header on {where} needs a string, integer or boolean, not {kind!r}")
            seen.add(name.lower())
            found[path] = name
        for key, value in schema.items():
            if key == "properties" and isinstance(value, Mapping):
                for prop, sub in value.items():
                    walk(sub, (*path, str(prop)), static)
            elif key in _NOT_STATIC:
                for sub in _subschemas(value):
                    walk(sub, path, False)

    walk(input_schema, (), True)
    return found


def _header_type(kind: object) -> bool:
    """A ``type`` a header can carry: a primitive, or primitives and ``"null"`` (a null
    value leaves the header out)."""
    kinds = kind if isinstance(kind, list) else [kind]
    return all(k in _PRIMITIVES or k == "null" for k in kinds) and any(k in _PRIMITIVES for k in kinds)


def _subschemas(value: object) -> list[object]:
    if isinstance(value, Mapping):
        return [value, *value.values()]  # a schema itself, or a map of schemas ($defs)
    return list(value) if isinstance(value, list) else [value]


def mcp_param_headers(paths: Mapping[tuple[str, ...], str],
                      arguments: Mapping[str, object] | None) -> list[tuple[str, str]]:
    """``Mcp-Param-*`` headers for a call's arguments (a missing or null value: no header)."""
    headers: list[tuple[str, str]] = []
    for path, name in paths.items():
        value: object = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int) and -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
            text = str(value)
        elif isinstance(value, str):
            text = value
        else:
            continue  # the server validates types; a header we cannot form is left out
        headers.append((f"mcp-param-{name.lower()}", encode_header_value(text)))
    return headers

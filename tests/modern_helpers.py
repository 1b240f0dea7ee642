"""Helpers for the stateless 2026-07-28 era: discover answers, a client past the probe, the
``_meta`` every request carries, a later (fictional) modern revision, and the schema.

Time is a plain float moved by hand and nothing here does I/O (STYLE.md section 10).
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any, Final

import jsonschema  # type: ignore[import-untyped]  # types-jsonschema is not a dev dependency
import msgspec
import pytest
from helpers import ScriptedServer, drain_events

from mcp_sansio import ClientConfig, InitializeCompleted, StdioClient, versions
from mcp_sansio import config as config_module
from mcp_sansio.types import ClientCapabilities, RootsCapability

__all__ = [
    "CAPABILITIES",
    "CAPABILITIES_JSON",
    "CLIENT_INFO",
    "LATER",
    "MODERN",
    "MODERN_SERVER",
    "SERVER_INFO",
    "Json",
    "add_later_modern_version",
    "discover_result",
    "modern_client",
    "modern_meta",
    "schema_errors",
]

Json = dict[str, Any]

MODERN: Final = "2026-07-28"
LATER: Final = "2099-12-31"
"""A fictional stateless revision, preferred over :data:`MODERN` once registered."""

CAPABILITIES: Final = ClientCapabilities(roots=RootsCapability(), sampling={}, elicitation={})
"""What the client of :func:`modern_client` declares: every input request is served."""
CAPABILITIES_JSON: Final[Json] = {"roots": {}, "sampling": {}, "elicitation": {}}
CLIENT_INFO: Final[Json] = {"name": "mcp-sansio", "version": "0.1.0"}
SERVER_INFO: Final[Json] = {"name": "scripted", "version": "1.0"}

MODERN_SERVER: Final = ScriptedServer(version=MODERN)
"""Writes the server's lines; declares every feature (``helpers.SERVER_CAPABILITIES``)."""

_SPEC_DIR = Path(os.environ.get("MCP_SPEC_DIR", Path(__file__).resolve().parent / "spec"))


def discover_result(
    request_id: int = 1, *, versions: tuple[str, ...] = (MODERN,), capabilities: Json | None = None,
    instructions: str | None = None, server_info: object = SERVER_INFO,
) -> bytes:
    """A ``DiscoverResult`` line as the spec's example has it (``server_info`` ``None``:
    no ``_meta`` at all)."""
    result: Json = {
        "resultType": "complete",
        "supportedVersions": list(versions),
        "capabilities": MODERN_SERVER.capabilities if capabilities is None else capabilities,
        "ttlMs": 0,
        "cacheScope": "public",
    }
    if server_info is not None:
        result["_meta"] = {"io.modelcontextprotocol/serverInfo": server_info}
    if instructions is not None:
        result["instructions"] = instructions
    return MODERN_SERVER.result(request_id, result)


def modern_meta(*, version: str = MODERN, capabilities: Json = CAPABILITIES_JSON,
                log_level: str | None = None, progress_token: int | None = None) -> Json:
    """The ``_meta`` a modern request carries, as it goes on the wire."""
    meta: Json = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    }
    if log_level is not None:
        meta["io.modelcontextprotocol/logLevel"] = log_level
    if progress_token is not None:
        meta["progressToken"] = progress_token
    return meta


def modern_client(
    *, capabilities: ClientCapabilities | None = CAPABILITIES, server_capabilities: Json | None = None,
    **config: Any,
) -> StdioClient:
    """A :class:`StdioClient` that probed and adopted 2026-07-28 at ``now=0.0``, queues
    drained; the next request id is 2."""
    client = StdioClient(ClientConfig(**config), capabilities)
    client.start(now=0.0)
    client.receive_data(discover_result(capabilities=server_capabilities), 0.0)
    events = drain_events(client)
    if len(events) != 1 or not isinstance(events[0], InitializeCompleted) or client.era != "modern":
        raise AssertionError(f"the probe did not complete in the modern era: {events}")
    client.data_to_send()
    return client


def add_later_modern_version(monkeypatch: pytest.MonkeyPatch) -> str:
    """Register :data:`LATER` as a known stateless revision for one test; returns it.

    Only one modern revision exists, so retries towards "another mutual version" need a
    second one: its row copies 2026-07-28's.
    """
    row = versions.VERSIONS[MODERN]
    monkeypatch.setitem(versions.VERSIONS, LATER, msgspec.structs.replace(row, version=LATER))
    monkeypatch.setattr(config_module, "MODERN_VERSIONS", (LATER, *versions.MODERN_VERSIONS))
    return LATER


@cache
def _document() -> Json:
    document: Json = json.loads((_SPEC_DIR / MODERN / "schema.json").read_text("utf-8"))
    return document


@cache
def _validator(definition: str) -> Any:
    document = _document()
    if definition not in document["$defs"]:
        raise KeyError(f"the {MODERN} schema defines no {definition}")
    return jsonschema.validators.validator_for(document)({**document, "$ref": f"#/$defs/{definition}"})


def schema_errors(instance: object, definition: str) -> list[str]:
    """Why ``instance`` is not a valid ``definition`` of the 2026-07-28 schema (empty: it is)."""
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in _validator(definition).iter_errors(instance)]

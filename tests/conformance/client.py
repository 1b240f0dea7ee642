"""The conformance-suite client: ``python tests/conformance/client.py <server-url>``.

The official MCP conformance suite runs this once per scenario, naming it in
``MCP_CONFORMANCE_SCENARIO``; the server URL is the last argument. It uses only the
public API of mcp-sansio through the asyncio driver, and exits non-zero on failure.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Mapping

import msgspec

from mcp_sansio import ClientConfig, McpSansioError, RequestError, SkillError
from mcp_sansio.auth import (
    ClientCredentials,
    ClientCredentialsGrant,
    IdJagGrant,
    JwtBearerGrant,
)
from mcp_sansio.skills import EXTENSION as SKILLS
from mcp_sansio.types import ElicitRequestParams, ElicitResult, Tool
from mcp_sansio_asyncio import AsyncClient, connect_http
from mcp_sansio_oauth import OAuth, es256_key

log = logging.getLogger("conformance")


def _default_for(schema: Mapping[str, object]) -> object:
    """A value for one property: its default, else a plausible value of its type."""
    if "default" in schema:
        return schema["default"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = schema.get("type")
    defaults = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}
    return defaults.get(kind if isinstance(kind, str) else "")


def _arguments_for(tool: Tool) -> dict[str, object]:
    """Arguments satisfying the tool's required properties (numbers for add_numbers)."""
    props = tool.input_schema.get("properties")
    required = tool.input_schema.get("required")
    if not isinstance(props, dict) or not isinstance(required, list):
        return {}
    args: dict[str, object] = {}
    for name in required:
        prop = props.get(name)
        if not isinstance(prop, dict):
            continue
        value = _default_for(prop)
        if prop.get("type") in ("number", "integer") and value == 0:
            value = 5 if not args else 3
        args[name] = value
    return args


async def _elicit(params: ElicitRequestParams) -> ElicitResult:
    """Accept a form, filling every field with its schema default."""
    schema = params.requested_schema or {}
    props = schema.get("properties")
    content: dict[str, object] = {}
    if isinstance(props, dict):
        for name, prop in props.items():
            if isinstance(prop, dict):
                value = _default_for(prop)
                if value is not None:
                    content[name] = value
    return ElicitResult(action="accept", content=content)


async def run(url: str, scenario: str) -> None:
    """Connect, list the tools, and exercise the scenario's tools."""
    config = ClientConfig(client_name="mcp-sansio-conformance", request_timeout=20.0)
    auth = _oauth_for(scenario, _context()) if scenario.startswith("auth/") else None
    async with connect_http(url, config=config, on_elicitation=_elicit, auth=auth) as client:
        if SKILLS in (client.server_capabilities.extensions or {}):
            await _use_skills(client, load=scenario.startswith("sep-2640-client-verify-"))
        tools = await client.list_tools() if client.server_capabilities.tools is not None else []
        by_name = {tool.name: tool for tool in tools}
        if scenario == "json-schema-2020-12-preservation" and "json_schema_echo" in by_name:
            focal = by_name.get("json_schema_2020_12_tool")
            schema = focal.input_schema if focal is not None else {}
            await client.call_tool("json_schema_echo", {"schema": schema})
            return
        if scenario == "initialize":
            return
        planned = _planned_calls()
        calls = planned if planned is not None else [(t.name, _arguments_for(t)) for t in tools]
        for name, arguments in calls:
            try:
                result = await client.call_tool(name, arguments)
            except RequestError as exc:  # a scenario's tool may refuse; the next still runs
                log.info("%s -> error %s", name, exc)
                continue
            log.info("%s -> %s", name, msgspec.json.encode(result)[:200])


async def _use_skills(client: AsyncClient, *, load: bool) -> None:
    """A host's use of the Skills extension: list the skills (reading none of their files)
    and, when the model asks for them (``load``), load each and read its other files; a
    skill that fails verification is dropped, and nothing more of it is read."""
    for entry in await client.list_skills():
        log.info("skill %s: %s", entry.uri, entry.frontmatter.get("description"))
        if not load:
            continue
        try:
            skill = await client.load_skill(entry)
            for file in entry.resources if isinstance(entry.resources, list) else []:
                if file.uri != entry.uri:
                    await client.read_skill_file(skill, file.uri)
        except SkillError as exc:
            log.info("skill %s refused: %s: %s", entry.uri, type(exc).__name__, exc)


# The Client ID Metadata Document URL the suite expects (it never fetches it).
_CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def _context() -> dict[str, object]:
    """``MCP_CONFORMANCE_CONTEXT`` as a dict (empty when unset)."""
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    context = msgspec.json.decode(raw) if raw else {}
    return context if isinstance(context, dict) else {}


def _oauth_for(scenario: str, context: Mapping[str, object]) -> OAuth:
    """The OAuth settings of one auth scenario, headless (the mocks redirect at once)."""
    def text(key: str) -> str:
        return str(context[key])

    if "client-credentials" in scenario:
        key = es256_key(text("private_key_pem")) if "jwt" in scenario else None
        secret = None if key is not None else text("client_secret")
        client = ClientCredentials(client_id=text("client_id"), client_secret=secret, signing_key=key)
        return OAuth(headless=True, grant=ClientCredentialsGrant(), client=client)
    if "cross-app-access" in scenario or "enterprise-managed" in scenario:
        grant = IdJagGrant(idp_token_endpoint=text("idp_token_endpoint"), id_token=text("idp_id_token"),
                           idp_client_id=text("idp_client_id"))
        client = ClientCredentials(client_id=text("client_id"), client_secret=text("client_secret"))
        return OAuth(headless=True, grant=grant, client=client)
    if "wif" in scenario:
        return OAuth(headless=True, grant=JwtBearerGrant(assertion=text("valid_jwt")),
                     client=ClientCredentials(client_id=text("client_id")))
    if "pre-registration" in scenario:
        issuer = context.get("issuer")
        client = ClientCredentials(client_id=text("client_id"), client_secret=text("client_secret"),
                                   issuer=str(issuer) if issuer is not None else None)
        return OAuth(headless=True, client=client, client_metadata_url=_CLIENT_METADATA_URL)
    dpop = es256_key() if "dpop" in scenario else None
    return OAuth(headless=True, client_metadata_url=_CLIENT_METADATA_URL, dpop_key=dpop)


def _planned_calls() -> list[tuple[str, dict[str, object]]] | None:
    """The tool calls a scenario prescribes in ``MCP_CONFORMANCE_CONTEXT`` (``toolCalls``)."""
    context = _context()
    calls = context.get("toolCalls")
    if not isinstance(calls, list):
        return None
    return [(str(c.get("name")), dict(c.get("arguments") or {})) for c in calls if isinstance(c, dict)]


def main() -> int:
    """Entry point; the URL is the last argument."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    if len(sys.argv) < 2:
        sys.stderr.write("usage: client.py <server-url>\n")
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    try:
        asyncio.run(run(sys.argv[-1], scenario))
    except McpSansioError as exc:
        sys.stderr.write(f"conformance client: {type(exc).__name__}: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

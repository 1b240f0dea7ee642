"""The Skills extension (SEP-2640) server side: entries, digests, skills/list and skills/get."""

from __future__ import annotations

from typing import Any

import pytest
from pair import Pair
from server_helpers import handshake, modern_request, request, send, server_for, take

from mcp_sansio import ClientConfig, LocalProtocolError, ResponseReceived
from mcp_sansio.server import TASKS_EXTENSION, MCPServer
from mcp_sansio.skills import EXTENSION, ListSkillsResult, check_entry, digest_of, load_skill
from mcp_sansio.types import ReadResourceResult
from mcp_sansio.versions import VERSIONS

SKILL_MD = "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n# How to\nUse the script.\n"


def _app(**extra: Any) -> MCPServer:
    app = MCPServer("s")
    app.add_skill({"SKILL.md": SKILL_MD, "references/FORMS.md": "# Forms\n", "assets/logo.bin": b"\xff\x00"},
                  **extra)
    return app


def test_a_skill_entry_lists_every_file_with_digest_and_size() -> None:
    entry = _app().registry.skills["skill://pdf-forms/SKILL.md"]
    assert entry.frontmatter == {"name": "pdf-forms", "description": "Fill PDF forms."}
    assert isinstance(entry.resources, list)
    assert [(r.uri, r.size) for r in entry.resources] == [
        ("skill://pdf-forms/SKILL.md", len(SKILL_MD)), ("skill://pdf-forms/references/FORMS.md", 8),
        ("skill://pdf-forms/assets/logo.bin", 2)]
    assert entry.resources[2].digest == digest_of(b"\xff\x00")
    check_entry(entry, max_files=512, max_bytes=1 << 20)  # what a host checks before loading


def test_a_nested_path_ends_in_the_name() -> None:
    entry = _app(path="tools/office/pdf-forms").registry.skills["skill://tools/office/pdf-forms/SKILL.md"]
    assert entry.uri.startswith("skill://tools/office/")


@pytest.mark.parametrize(("files", "path", "message"), [
    ({"README.md": "x"}, None, "needs a SKILL.md"),
    ({"SKILL.md": "no frontmatter"}, None, "frontmatter"),
    ({"SKILL.md": b"\xff"}, None, "SKILL.md"),
    ({"SKILL.md": "---\nname: x\n---\n"}, None, "name and description"),
    ({"SKILL.md": SKILL_MD}, "other", "must end in its name"),
    ({"SKILL.md": SKILL_MD, "../escape": "x"}, None, "not inside the skill"),
    ({"SKILL.md": SKILL_MD, "/abs": "x"}, None, "not inside the skill"),
])
def test_files_that_make_no_valid_skill_are_refused(
    files: dict[str, Any], path: str | None, message: str
) -> None:
    with pytest.raises(LocalProtocolError, match=message):
        MCPServer("s").add_skill(files, path=path)


def test_the_extension_is_declared_in_both_eras_and_tasks_only_in_the_stateless_one() -> None:
    app = _app()
    app.add_tool(lambda: "", name="t", task_support="optional")
    assert app.capabilities(VERSIONS["2025-11-25"]).extensions == {EXTENSION: {}}
    assert app.capabilities(VERSIONS["2026-07-28"]).extensions == {EXTENSION: {}, TASKS_EXTENSION: {}}


def test_skill_md_is_listed_with_the_frontmatter_and_the_other_files_are_not() -> None:
    server = server_for(_app())
    handshake(server)
    send(server, request(1, "resources/list"))
    assert take(server)[0]["result"]["resources"] == [{
        "uri": "skill://pdf-forms/SKILL.md", "name": "pdf-forms", "description": "Fill PDF forms.",
        "mimeType": "text/markdown", "size": len(SKILL_MD)}]


def test_every_file_is_readable_text_or_blob() -> None:
    server = server_for(_app())
    handshake(server)
    send(server, request(1, "resources/read", {"uri": "skill://pdf-forms/references/FORMS.md"}),
         request(2, "resources/read", {"uri": "skill://pdf-forms/assets/logo.bin"}))
    text, blob = (m["result"]["contents"][0] for m in take(server))
    assert text == {"uri": "skill://pdf-forms/references/FORMS.md", "mimeType": "text/markdown",
                    "text": "# Forms\n"}
    assert blob == {"uri": "skill://pdf-forms/assets/logo.bin", "mimeType": "application/octet-stream",
                    "blob": "/wA="}


def test_skills_list_and_get_in_the_stateless_era_carry_caching_hints() -> None:
    server = server_for(_app(), list_ttl_ms=1000)
    send(server, modern_request(1, "skills/list"), modern_request(2, "skills/get",
                                                                  {"uri": "skill://pdf-forms/SKILL.md"}))
    listed, got = (m["result"] for m in take(server))
    assert [s["uri"] for s in listed["skills"]] == ["skill://pdf-forms/SKILL.md"] and listed["ttlMs"] == 1000
    assert got["skill"]["uri"] == "skill://pdf-forms/SKILL.md" and got["cacheScope"] == "public"


def test_a_bad_skills_cursor_is_refused() -> None:
    server = server_for(_app(), page_size=1)
    handshake(server)
    send(server, request(1, "skills/list", {"cursor": "bogus"}))
    assert take(server)[0]["error"]["code"] == -32602


def test_skills_list_pages_whole_entries() -> None:
    app = _app()
    app.add_skill({"SKILL.md": "---\nname: other\ndescription: d\n---\n"})
    server = server_for(app, page_size=1)
    handshake(server)
    send(server, request(1, "skills/list"))
    first = take(server)[0]["result"]
    send(server, request(2, "skills/list", {"cursor": first["nextCursor"]}))
    assert [s["uri"] for s in take(server)[0]["result"]["skills"]] == ["skill://other/SKILL.md"]


def test_an_unknown_skill_is_invalid_params() -> None:
    server = server_for(_app())
    handshake(server)
    send(server, request(1, "skills/get", {"uri": "skill://nope/SKILL.md"}))
    assert take(server)[0]["error"] == {"code": -32602, "message": "Unknown skill: skill://nope/SKILL.md",
                                        "data": {"uri": "skill://nope/SKILL.md"}}


@pytest.mark.parametrize("method", ["skills/list", "skills/get"])
def test_a_server_without_skills_has_no_skills_methods(method: str) -> None:
    server = server_for(MCPServer("s"))
    handshake(server)
    send(server, request(1, method, {"uri": "x"}))
    assert take(server)[0]["error"]["code"] == -32601


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
def test_a_client_loads_and_verifies_a_served_skill(protocol: str) -> None:
    pair = Pair(_app(), config=ClientConfig(protocol=protocol))
    pair.start()
    listed = pair.client.list_skills(now=0.0)
    read = pair.client.read_resource("skill://pdf-forms/SKILL.md", now=0.0)
    pair.settle()
    results = {e.request_id: e.result for e in pair.take_client_events() if isinstance(e, ResponseReceived)}
    skills_result = results[listed]
    read_result = results[read]
    assert isinstance(skills_result, ListSkillsResult) and isinstance(read_result, ReadResourceResult)
    [entry] = skills_result.skills
    loaded = load_skill(entry, read_result, max_bytes=1 << 20)
    assert loaded.content == SKILL_MD

"""The Skills extension (SEP-2640): entries, verification of what is read, and the session's
``skills/list`` / ``skills/get`` in both eras.

The pure checks get entries and ``resources/read`` results built here; the session tests
feed a scripted server's lines. Time is a float moved by hand.
"""

from __future__ import annotations

import base64
import hashlib

import msgspec
import pytest
from helpers import ScriptedServer, drain_events, ready_client, take_messages
from hypothesis import given
from hypothesis import strategies as st
from modern_helpers import modern_client, modern_meta, schema_errors

from mcp_sansio import (
    InvalidSkillEntry,
    LocalProtocolError,
    ResponseReceived,
    SkillDigestMismatch,
    SkillFileNotListed,
    SkillFrontmatterMismatch,
    SkillSizeMismatch,
    SkillVerificationError,
)
from mcp_sansio.skills import (
    EXTENSION,
    GetSkillResult,
    ListSkillsResult,
    Skill,
    SkillResource,
    check_entry,
    digest_of,
    load_skill,
    parse_frontmatter,
)
from mcp_sansio.types import ClientCapabilities, ReadResourceResult, ResourceContents

SKILL_MD = "skill://pdf-processing/SKILL.md"
FORMS = "skill://pdf-processing/references/FORMS.md"
BODY = ("---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\n"
        "Skill body.\n")
FORMS_BODY = "Supporting content.\n"
FRONTMATTER: dict[str, object] = {
    "name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents",
}
LIMITS = {"max_files": 512, "max_bytes": 16 * 1024 * 1024}
SKILLS_CAPABILITIES: dict[str, object] = {"resources": {}, "extensions": {EXTENSION: {}}}


def _file(uri: str, text: str) -> SkillResource:
    data = text.encode()
    return SkillResource(uri=uri, digest="sha256:" + hashlib.sha256(data).hexdigest(), size=len(data))


def _entry(**changes: object) -> Skill:
    entry = Skill(uri=SKILL_MD, frontmatter=dict(FRONTMATTER),
                  resources=[_file(SKILL_MD, BODY), _file(FORMS, FORMS_BODY)])
    return msgspec.structs.replace(entry, **changes)


def _read(uri: str, text: str) -> ReadResourceResult:
    return ReadResourceResult(contents=[ResourceContents(uri=uri, mime_type="text/markdown", text=text)])


# ------------------------------------------------------------------ entries


def test_digest_is_sha256_of_the_raw_bytes_in_lowercase_hex() -> None:
    assert digest_of(b"abc") == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_a_complete_entry_may_be_loaded() -> None:
    check_entry(_entry(), **LIMITS)


def test_a_dynamic_entry_may_be_loaded() -> None:
    check_entry(_entry(resources="dynamic"), **LIMITS)


@pytest.mark.parametrize(("changes", "why"), [
    ({"uri": "skill://pdf-processing/README.md"}, "not the URI of a SKILL.md"),
    ({"uri": "skill:///SKILL.md"}, "not the URI of a SKILL.md"),
    ({"uri": "pdf-processing/SKILL.md"}, "not the URI of a SKILL.md"),
    ({"frontmatter": {"name": "pdf-processing"}}, "string name and description"),
    ({"frontmatter": {"name": 7, "description": "d"}}, "string name and description"),
    ({"frontmatter": {"name": "other", "description": "d"}}, "does not end in its name 'other'"),
    ({"resources": None}, "a list of files or 'dynamic'"),
    ({"resources": "static"}, "a list of files or 'dynamic'"),
    ({"resources": [_file(FORMS, FORMS_BODY)]}, "do not list SKILL.md"),
    ({"resources": [_file(SKILL_MD, BODY), _file(SKILL_MD, BODY)]}, "listed twice"),
    ({"resources": [_file(SKILL_MD, BODY), _file("skill://other/x.md", "")]}, "not in the skill"),
    ({"resources": [_file("skill://pdf-processing-2/SKILL.md", BODY)]}, "not in the skill"),
    ({"resources": [SkillResource(uri=SKILL_MD, digest="sha256:ABC", size=3)]}, "malformed digest"),
    ({"resources": [SkillResource(uri=SKILL_MD, digest=digest_of(b""), size=-1)]}, "malformed"),
])
def test_a_malformed_entry_is_refused_before_any_read(changes: dict[str, object], why: str) -> None:
    with pytest.raises(InvalidSkillEntry, match=why) as caught:
        check_entry(_entry(**changes), **LIMITS)
    assert caught.value.uri == changes.get("uri", SKILL_MD)


def test_a_nested_skill_path_ends_in_the_name() -> None:
    uri = "skill://acme/billing/refunds/SKILL.md"
    check_entry(Skill(uri=uri, frontmatter={"name": "refunds", "description": "d"},
                      resources=[_file(uri, "x")]), **LIMITS)


def test_the_limits_are_checked_from_the_entry_alone() -> None:
    check_entry(_entry(), max_files=2, max_bytes=len(BODY) + len(FORMS_BODY))
    with pytest.raises(InvalidSkillEntry, match="2 files, more than the 1 allowed"):
        check_entry(_entry(), max_files=1, max_bytes=LIMITS["max_bytes"])
    with pytest.raises(InvalidSkillEntry, match="more than the 10 allowed"):
        check_entry(_entry(), max_files=2, max_bytes=10)


def test_entries_decode_leniently_so_one_bad_entry_does_not_sink_a_listing() -> None:
    raw = {"skills": [{"uri": SKILL_MD, "frontmatter": FRONTMATTER, "resources": "dynamic"},
                      {"uri": "skill://x/SKILL.md"}],
           "ttlMs": 5, "cacheScope": "public"}
    listing = msgspec.json.decode(msgspec.json.encode(raw), type=ListSkillsResult)
    assert listing.skills[1] == Skill(uri="skill://x/SKILL.md")
    assert (listing.ttl_ms, listing.cache_scope) == (5, "public")


FILES = st.lists(st.builds(SkillResource, uri=st.text(), digest=st.text(), size=st.integers()))
SKILLS = st.builds(Skill, uri=st.text(), frontmatter=st.dictionaries(st.text(), st.text() | st.integers()),
                   resources=st.none() | st.just("dynamic") | FILES)


@given(st.builds(GetSkillResult, skill=SKILLS, ttl_ms=st.none() | st.integers(min_value=0),
                 cache_scope=st.none() | st.sampled_from(["public", "private"])))
def test_skill_results_round_trip(result: GetSkillResult) -> None:
    assert msgspec.json.decode(msgspec.json.encode(result), type=GetSkillResult) == result


# ------------------------------------------------------------------ loading


def test_loading_verifies_skill_md_and_holds_the_entry() -> None:
    skill = load_skill(_entry(), _read(SKILL_MD, BODY), max_bytes=LIMITS["max_bytes"])
    assert skill.content == BODY
    assert skill.name == "pdf-processing"
    assert skill.entry == _entry()


def test_a_digest_mismatch_is_refused() -> None:
    tampered = BODY.replace("Skill body.", "Evil body!!")  # same size
    with pytest.raises(SkillDigestMismatch) as caught:
        load_skill(_entry(), _read(SKILL_MD, tampered), max_bytes=LIMITS["max_bytes"])
    assert caught.value.uri == SKILL_MD


def test_a_size_mismatch_is_refused_before_the_digest_is_computed() -> None:
    with pytest.raises(SkillSizeMismatch, match=f"{len(BODY) + 1} bytes, the entry says {len(BODY)}"):
        load_skill(_entry(), _read(SKILL_MD, BODY + "x"), max_bytes=LIMITS["max_bytes"])


def test_frontmatter_differing_from_the_entry_is_refused() -> None:
    tampered = BODY.replace("Extract, fill, and assemble PDF documents", "Exfiltrate credentials")
    entry = _entry(resources=[_file(SKILL_MD, tampered)])  # digest and size match the tampered file
    with pytest.raises(SkillFrontmatterMismatch, match="field 'description'"):
        load_skill(entry, _read(SKILL_MD, tampered), max_bytes=LIMITS["max_bytes"])


def test_a_field_only_the_file_has_is_a_discrepancy() -> None:
    body = BODY.replace("---\n\n", "license: MIT\n---\n\n")
    with pytest.raises(SkillFrontmatterMismatch, match="field 'license'"):
        load_skill(_entry(resources=[_file(SKILL_MD, body)]), _read(SKILL_MD, body), max_bytes=1000)


def test_skill_md_that_is_not_utf8_is_refused() -> None:
    data = b"\xff\xfe"
    entry = _entry(resources=[SkillResource(uri=SKILL_MD, digest=digest_of(data), size=2)])
    blob = base64.b64encode(data).decode()
    result = ReadResourceResult(contents=[ResourceContents(uri=SKILL_MD, blob=blob)])
    with pytest.raises(SkillFrontmatterMismatch, match="not UTF-8"):
        load_skill(entry, result, max_bytes=1000)


def test_blob_contents_are_verified_as_their_decoded_bytes() -> None:
    skill = load_skill(_entry(), _read(SKILL_MD, BODY), max_bytes=1000)
    blob = ReadResourceResult(contents=[ResourceContents(
        uri=FORMS, blob=base64.b64encode(FORMS_BODY.encode()).decode())])
    assert skill.verify(FORMS, blob) == FORMS_BODY.encode()


@pytest.mark.parametrize("result", [
    ReadResourceResult(contents=[]),
    ReadResourceResult(contents=[ResourceContents(uri=FORMS, text="a"),
                                 ResourceContents(uri=FORMS, text="b")]),
    ReadResourceResult(contents=[ResourceContents(uri="skill://pdf-processing/other.md", text="a")]),
    ReadResourceResult(contents=[ResourceContents(uri=FORMS)]),
    ReadResourceResult(contents=[ResourceContents(uri=FORMS, blob="not base64!")]),
    ReadResourceResult(contents=[ResourceContents(uri=FORMS, text="\ud800")]),
])
def test_a_read_without_one_usable_content_fails_verification(result: ReadResourceResult) -> None:
    skill = load_skill(_entry(), _read(SKILL_MD, BODY), max_bytes=1000)
    with pytest.raises(SkillVerificationError) as caught:
        skill.verify(FORMS, result)
    assert type(caught.value) is SkillVerificationError
    assert caught.value.uri == FORMS


def test_supporting_files_are_verified_against_the_held_entry() -> None:
    skill = load_skill(_entry(), _read(SKILL_MD, BODY), max_bytes=1000)
    assert skill.verify(FORMS, _read(FORMS, FORMS_BODY)) == FORMS_BODY.encode()
    with pytest.raises(SkillDigestMismatch):
        skill.verify(FORMS, _read(FORMS, FORMS_BODY.upper()))


@pytest.mark.parametrize(("path", "uri"), [
    ("references/FORMS.md", FORMS),
    ("./references/../references//FORMS.md", FORMS),
    (FORMS, FORMS),
    ("SKILL.md", SKILL_MD),
])
def test_paths_resolve_against_the_skill_root(path: str, uri: str) -> None:
    skill = load_skill(_entry(), _read(SKILL_MD, BODY), max_bytes=1000)
    assert skill.resolve(path) == uri


@pytest.mark.parametrize("path", [
    "references/NEW.md", "../other/SKILL.md", "skill://other/SKILL.md", "", "references",
])
def test_a_file_the_entry_does_not_list_is_refused(path: str) -> None:
    skill = load_skill(_entry(), _read(SKILL_MD, BODY), max_bytes=1000)
    with pytest.raises(SkillFileNotListed):
        skill.resolve(path)


def test_a_dynamic_skill_reads_any_file_of_its_directory_within_the_size_limit() -> None:
    entry = _entry(resources="dynamic")
    skill = load_skill(entry, _read(SKILL_MD, BODY), max_bytes=len(BODY) + 5)
    assert skill.resolve("generated/today.md") == "skill://pdf-processing/generated/today.md"
    with pytest.raises(SkillFileNotListed):
        skill.resolve("skill://elsewhere/a.md")
    assert skill.verify(FORMS, _read(FORMS, "12345")) == b"12345"
    with pytest.raises(InvalidSkillEntry, match="exceed the size limit"):
        skill.verify(FORMS, _read(FORMS, "1"))


def test_a_dynamic_skill_md_still_has_its_frontmatter_verified() -> None:
    with pytest.raises(SkillFrontmatterMismatch):
        load_skill(_entry(resources="dynamic"), _read(SKILL_MD, "no frontmatter\n"), max_bytes=1000)


# ------------------------------------------------------------------ frontmatter


def test_frontmatter_is_the_yaml_between_the_first_two_rule_lines() -> None:
    text = ("\ufeff---\r\nname: x\r\ndescription: >\r\n  folded\r\n  text\r\nmetadata:\r\n"
            "  version: '2.1'\r\n  updated: 2024-01-02\r\nn: 1.0\r\n---\r\nbody\n---\n")
    assert parse_frontmatter(text) == {
        "name": "x", "description": "folded text\n", "n": 1.0,
        "metadata": {"version": "2.1", "updated": "2024-01-02"},
    }


@pytest.mark.parametrize(("text", "why"), [
    ("name: x\n", "does not begin with YAML frontmatter"),
    ("---\nname: x\n", "does not begin with YAML frontmatter"),
    ("body\n---\nname: x\n---\n", "does not begin with YAML frontmatter"),
    ("---\nname: [x\n---\n", "unreadable frontmatter"),
    ("---\na: &a [1]\nb: *a\n---\n", "aliases are not allowed"),
    ("---\n- x\n---\n", "not a mapping of names"),
    ("---\n1: x\n---\n", "not a mapping of names"),
])
def test_frontmatter_that_cannot_be_read_is_a_mismatch(text: str, why: str) -> None:
    with pytest.raises(SkillFrontmatterMismatch, match=why):
        parse_frontmatter(text, uri=SKILL_MD)


@pytest.mark.parametrize(("expected", "found", "same"), [
    ({"n": 1}, {"n": 1.0}, True),
    ({"flag": True}, {"flag": 1}, False),
    ({"flag": 1}, {"flag": True}, False),
    ({"tags": ["a", "b"]}, {"tags": ["a", "b"]}, True),
    ({"tags": ["a", "b"]}, {"tags": ["a"]}, False),
    ({"m": {"k": "v"}}, {"m": {"k": "v"}}, True),
    ({"m": {"k": "v"}}, {"m": {"k": "w"}}, False),
    ({"m": {"k": "v"}}, {"m": ["k"]}, False),
    ({"v": None}, {"v": None}, True),
    ({"v": "1"}, {"v": 1}, False),
])
def test_frontmatter_fields_compare_as_json_values(expected: dict[str, object], found: dict[str, object],
                                                  same: bool) -> None:
    fields = {**FRONTMATTER, **expected}
    body = "---\n" + msgspec.json.encode({**FRONTMATTER, **found}).decode() + "\n---\n"
    entry = Skill(uri=SKILL_MD, frontmatter=fields, resources=[_file(SKILL_MD, body)])
    if same:
        load_skill(entry, _read(SKILL_MD, body), max_bytes=1000)
    else:
        with pytest.raises(SkillFrontmatterMismatch):
            load_skill(entry, _read(SKILL_MD, body), max_bytes=1000)


# ------------------------------------------------------------------ the session

SKILLS_SERVER = ScriptedServer(capabilities=SKILLS_CAPABILITIES)
LISTING = {"skills": [{"uri": SKILL_MD, "frontmatter": FRONTMATTER, "resources": "dynamic"}],
           "ttlMs": 1000, "cacheScope": "public"}


def test_skills_are_listed_only_when_the_server_declares_the_extension() -> None:
    client = ready_client()
    with pytest.raises(LocalProtocolError, match=r"extensions\.io\.modelcontextprotocol/skills"):
        client.list_skills(now=1.0)
    with pytest.raises(LocalProtocolError, match="skills/get"):
        client.get_skill(SKILL_MD, now=1.0)
    assert take_messages(client) == []


def test_skills_list_follows_pages_and_reads_no_file() -> None:
    client = ready_client(server=SKILLS_SERVER)
    rid = client.list_skills(now=1.0)
    assert take_messages(client) == [{"jsonrpc": "2.0", "id": rid, "method": "skills/list",
                                      "params": {"_meta": {"progressToken": rid}}}]
    client.receive_data(SKILLS_SERVER.result(rid, {**LISTING, "nextCursor": "c"}), 2.0)
    [page] = take_messages(client)
    assert page["method"] == "skills/list" and page["params"]["cursor"] == "c"
    client.receive_data(SKILLS_SERVER.result(page["id"], LISTING), 2.5)
    [event] = drain_events(client)
    assert isinstance(event, ResponseReceived) and isinstance(event.result, ListSkillsResult)
    assert [skill.uri for skill in event.result.skills] == [SKILL_MD, SKILL_MD]
    assert take_messages(client) == []  # nothing was read


def test_skills_get_names_the_skill_by_uri() -> None:
    client = ready_client(server=SKILLS_SERVER)
    rid = client.get_skill(SKILL_MD, now=1.0)
    assert take_messages(client) == [{"jsonrpc": "2.0", "id": rid, "method": "skills/get",
                                      "params": {"uri": SKILL_MD, "_meta": {"progressToken": rid}}}]
    client.receive_data(SKILLS_SERVER.result(rid, {"skill": LISTING["skills"][0], "ttlMs": 0,  # type: ignore[index]
                                                   "cacheScope": "private"}), 2.0)
    [event] = drain_events(client)
    assert isinstance(event, ResponseReceived)
    skill = Skill(uri=SKILL_MD, frontmatter=FRONTMATTER, resources="dynamic")
    assert event.result == GetSkillResult(skill=skill, ttl_ms=0, cache_scope="private")


def test_skills_work_in_the_stateless_era_and_the_client_declares_the_extension() -> None:
    capabilities: dict[str, object] = {"extensions": {EXTENSION: {}}}
    client = modern_client(server_capabilities=SKILLS_CAPABILITIES,
                           capabilities=ClientCapabilities(extensions={EXTENSION: {}}))
    rid = client.get_skill(SKILL_MD, now=1.0)
    [message] = take_messages(client)
    assert message["params"] == {"uri": SKILL_MD,
                                 "_meta": modern_meta(capabilities=capabilities, progress_token=rid)}
    assert schema_errors(message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
                         "ClientCapabilities") == []

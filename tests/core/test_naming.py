"""Model-facing tool names: valid, bounded, collision-free, order-independent, routable."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.errors import LocalProtocolError, McpSansioError
from mcp_sansio.naming import (
    MAX_TOOL_NAME_LENGTH,
    ToolNamer,
    UnknownPromptName,
    UnknownToolName,
    normalize_name,
    servers_for,
)

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_plain_names_are_joined_with_double_underscores() -> None:
    names = ToolNamer.build({"github": ["create_issue", "list-prs"]})
    assert list(names) == ["mcp__github__create_issue", "mcp__github__list-prs"]


def test_invalid_characters_become_underscores() -> None:
    names = ToolNamer.build({"my server.v2": ["files/read"]})
    assert names.model_name("my server.v2", "files/read") == "mcp__my_server_v2__files_read"


def test_normalize_name_keeps_letters_digits_underscore_and_hyphen() -> None:
    assert normalize_name("a-Z_9 é.") == "a-Z_9___"


def test_long_name_is_cut_to_64_with_a_stable_hash_suffix() -> None:
    tool = "t" * 80
    name = ToolNamer.build({"server": [tool]}).model_name("server", tool)
    assert len(name) == MAX_TOOL_NAME_LENGTH
    assert re.fullmatch(r"mcp__server__t{42}_[0-9a-f]{8}", name)
    assert ToolNamer.build({"server": [tool, "other"]}).model_name("server", tool) == name


def test_long_server_name_leaves_room_for_the_tool() -> None:
    name = ToolNamer.build({"s" * 100: ["read_file"]}).model_name("s" * 100, "read_file")
    assert re.fullmatch(r"mcp__s{39}__read_file_[0-9a-f]{8}", name)


def test_long_server_and_tool_keep_16_server_characters() -> None:
    name = ToolNamer.build({"s" * 100: ["t" * 100]}).model_name("s" * 100, "t" * 100)
    assert re.fullmatch(r"mcp__s{16}__t{32}_[0-9a-f]{8}", name)


def test_normalisation_collision_keeps_the_exact_name_and_hashes_the_other() -> None:
    names = ToolNamer.build({"srv": ["a.b", "a_b"]})
    assert names.model_name("srv", "a_b") == "mcp__srv__a_b"
    assert re.fullmatch(r"mcp__srv__a_b_[0-9a-f]{8}", names.model_name("srv", "a.b"))


def test_separator_collision_between_servers_is_resolved() -> None:
    names = ToolNamer.build({"a": ["b__c"], "a__b": ["c"]})
    assert names.model_name("a", "b__c") == "mcp__a__b__c"
    assert names.model_name("a__b", "c") != "mcp__a__b__c"
    assert names.route(names.model_name("a__b", "c")) == ("a__b", "c")


def test_hashed_name_that_is_taken_is_re_salted() -> None:
    first = ToolNamer.build({"srv": ["a.b", "a_b"]})
    taken = first.model_name("srv", "a.b").removeprefix("mcp__srv__")
    names = ToolNamer.build({"srv": ["a.b", "a_b", taken]})
    assert names.model_name("srv", taken) == f"mcp__srv__{taken}"
    assert len({names.model_name("srv", tool) for tool in ("a.b", "a_b", taken)}) == 3


def test_duplicate_tools_are_named_once() -> None:
    assert len(ToolNamer.build({"s": ["t", "t"]})) == 1


def test_route_maps_back_to_server_and_tool() -> None:
    assert ToolNamer.build({"my server": ["x"]}).route("mcp__my_server__x") == ("my server", "x")


def test_route_of_unknown_name_raises_a_typed_key_error() -> None:
    with pytest.raises(UnknownToolName, match=r"^no tool is named 'mcp__nope__x'$") as caught:
        ToolNamer.build({}).route("mcp__nope__x")
    assert isinstance(caught.value, KeyError)
    assert isinstance(caught.value, McpSansioError)


def test_model_name_of_unknown_pair_raises() -> None:
    with pytest.raises(UnknownToolName, match="no tool 'x' on server 's'"):
        ToolNamer.build({"s": ["y"]}).model_name("s", "x")


_names = st.text(max_size=70) | st.sampled_from(["a", "a.b", "a_b", "a__b", "b__c", "c", ""])
_servers = st.dictionaries(_names, st.lists(_names, max_size=6), max_size=5)


@given(_servers)
def test_names_are_valid_unique_and_route_back(servers: dict[str, list[str]]) -> None:
    names = ToolNamer.build(servers)
    pairs = {(server, tool) for server, tools in servers.items() for tool in tools}
    model_names = {names.model_name(server, tool) for server, tool in pairs}
    assert len(model_names) == len(pairs) == len(names)
    assert all(VALID.match(name) for name in model_names)
    assert all(names.route(names.model_name(server, tool)) == (server, tool) for server, tool in pairs)


@given(_servers, st.randoms(use_true_random=False))
def test_names_do_not_depend_on_order(servers: dict[str, list[str]], rng: random.Random) -> None:
    shuffled_servers = list(servers.items())
    rng.shuffle(shuffled_servers)
    shuffled = {server: rng.sample(tools, len(tools)) for server, tools in shuffled_servers}
    first, second = ToolNamer.build(servers), ToolNamer.build(shuffled)
    assert [(name, first.route(name)) for name in first] == [(name, second.route(name)) for name in second]


@given(_servers)
def test_every_name_is_found_among_the_servers_it_may_belong_to(servers: dict[str, list[str]]) -> None:
    names = ToolNamer.build(servers)
    for name in names:
        server, _ = names.route(name)
        assert server in servers_for(name, list(servers))


def test_servers_for_picks_the_server_a_plain_name_starts_with() -> None:
    servers = ["demo", "demo2", "my server", "s" * 40]
    assert servers_for("mcp__demo__echo", servers) == ["demo"]
    assert servers_for("mcp__my_server__x", servers) == ["my server"]
    assert servers_for("mcp__" + "s" * 16 + "__t_0123abcd", servers) == ["s" * 40]
    assert servers_for("mcp__other__echo", servers) == []
    assert servers_for("echo", servers) == []


def test_prompt_tables_name_and_refuse_prompts() -> None:
    names = ToolNamer.build({"s": ["greet"]}, kind="prompt")
    assert names.kind == "prompt" and names.route("mcp__s__greet") == ("s", "greet")
    with pytest.raises(UnknownPromptName, match=r"^no prompt is named 'mcp__s__x'$"):
        names.route("mcp__s__x")
    with pytest.raises(UnknownPromptName, match="no prompt 'x' on server 's'"):
        names.model_name("s", "x")


def test_a_table_of_anything_else_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="kind must be 'tool' or 'prompt'"):
        ToolNamer.build({}, kind="resource")

"""Validation of ``mcpServers`` entries into typed server definitions."""

from __future__ import annotations

import json

import pytest

from mcp_sansio.errors import McpSansioError
from mcp_sansio.hostconfig import (
    ConfigError,
    HttpServerConfig,
    ScopeDocument,
    ServerConfig,
    StdioServerConfig,
    Transport,
    read_config_file,
)


def document(servers: object, **extra: object) -> ScopeDocument:
    text = json.dumps({"mcpServers": servers, **extra})
    (only,) = read_config_file("/p/.mcp.json", text).documents
    return only


def server(entry: object) -> ServerConfig:
    return document({"s": entry}).servers["s"]


def config_error(servers: object, **extra: object) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        document(servers, **extra)
    return caught.value


def test_command_entry_is_stdio_with_every_field() -> None:
    entry = {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}, "cwd": "/w", "timeout": 5}
    assert server(entry) == StdioServerConfig(
        command="npx", args=("-y", "pkg"), env={"K": "v"}, cwd="/w", timeout=5.0
    )


def test_url_entry_without_type_is_streamable_http() -> None:
    assert server({"url": "https://x/mcp", "headers": {"A": "b"}}) == HttpServerConfig(
        url="https://x/mcp", headers={"A": "b"}
    )


@pytest.mark.parametrize(
    ("kind", "transport"),
    [
        ("http", Transport.HTTP),
        ("streamable-http", Transport.HTTP),
        ("streamableHttp", Transport.HTTP),
        ("sse", Transport.SSE),
        ("ws", Transport.WS),
    ],
)
def test_type_names_select_the_remote_transport(kind: str, transport: Transport) -> None:
    assert server({"type": kind, "url": "u"}) == HttpServerConfig(url="u", transport=transport)


def test_explicit_stdio_type_is_accepted() -> None:
    assert server({"type": "stdio", "command": "c"}) == StdioServerConfig(command="c")


def test_unknown_fields_and_other_transports_fields_are_ignored() -> None:
    assert server({"command": "c", "headers": 3, "autoApprove": []}) == StdioServerConfig(command="c")


def test_error_names_file_server_and_field() -> None:
    error = config_error({"s": {"command": "c", "args": ["a", "b", 3]}})
    assert (error.file, error.server, error.field) == ("/p/.mcp.json", "s", "args[2]")
    assert str(error) == "/p/.mcp.json: server 's': field 'args[2]': must be a string, not a number"
    assert isinstance(error, McpSansioError)


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        ({"command": 1}, "command", "must be a string, not a number"),
        ({"command": "c", "args": "a b"}, "args", "must be a list of strings, not a string"),
        ({"command": "c", "env": []}, "env", "must be an object of strings, not a list"),
        ({"command": "c", "env": {"K": None}}, "env.K", "must be a string, not null"),
        ({"url": "u", "headers": {"H": {}}}, "headers.H", "must be a string, not an object"),
        ({"command": "c", "timeout": "5"}, "timeout", "must be a number of seconds, not a string"),
        ({"command": "c", "timeout": True}, "timeout", "not a boolean"),
        ({"command": "c", "timeout": 0}, "timeout", "must be a positive number of seconds, not 0"),
        ({"command": "c", "disabled": "yes"}, "disabled", "must be true or false, not a string"),
        ({"type": 2, "url": "u"}, "type", "must be a string, not a number"),
    ],
)
def test_wrong_field_types_are_rejected(entry: object, field: str, message: str) -> None:
    error = config_error({"s": entry})
    assert error.field == field
    assert message in str(error)


def test_infinite_timeout_is_rejected() -> None:
    text = '{"mcpServers": {"s": {"command": "c", "timeout": Infinity}}}'
    with pytest.raises(ConfigError, match="positive number of seconds, not inf"):
        read_config_file(".mcp.json", text)


def test_entry_without_command_or_url_is_rejected() -> None:
    error = config_error({"s": {"args": []}})
    assert (error.server, error.field) == ("s", None)
    assert "needs a 'command' (stdio) or a 'url'" in str(error)


def test_entry_with_command_and_url_is_rejected() -> None:
    assert "has both 'command' and 'url'" in str(config_error({"s": {"command": "c", "url": "u"}}))


def test_unknown_type_is_rejected() -> None:
    error = config_error({"s": {"type": "grpc", "url": "u"}})
    assert error.field == "type"
    assert "unknown type 'grpc'" in str(error)


def test_stdio_type_without_command_is_rejected() -> None:
    assert config_error({"s": {"type": "stdio", "url": "u"}}).field == "command"


def test_remote_type_without_url_is_rejected() -> None:
    error = config_error({"s": {"type": "sse"}})
    assert (error.field, "a sse server needs a 'url'" in str(error)) == ("url", True)


def test_entry_that_is_not_an_object_is_rejected() -> None:
    error = config_error({"s": ["npx"]})
    assert (error.server, "must be an object, not a list" in str(error)) == ("s", True)


def test_empty_server_name_is_rejected() -> None:
    assert config_error({"": {"command": "c"}}).field == "mcpServers"


def test_servers_map_that_is_not_an_object_is_rejected() -> None:
    assert config_error([]).field == "mcpServers"


def test_missing_servers_map_gives_an_empty_document() -> None:
    (only,) = read_config_file(".mcp.json", "{}").documents
    assert (only.servers, only.disabled, only.enabled) == ({}, frozenset(), frozenset())


def test_disabled_entry_is_defined_and_listed_as_disabled() -> None:
    doc = document({"s": {"command": "c", "disabled": True}})
    assert (list(doc.servers), doc.disabled) == (["s"], frozenset({"s"}))


def test_entry_with_only_disabled_true_is_a_toggle_without_definition() -> None:
    doc = document({"s": {"disabled": True}})
    assert (doc.servers, doc.disabled, doc.enabled) == ({}, frozenset({"s"}), frozenset())


def test_entry_with_only_disabled_false_re_enables() -> None:
    doc = document({"s": {"disabled": False}})
    assert (doc.servers, doc.disabled, doc.enabled) == ({}, frozenset(), frozenset({"s"}))


def test_full_entry_with_disabled_false_is_just_a_definition() -> None:
    doc = document({"s": {"command": "c", "disabled": False}})
    assert (list(doc.servers), doc.disabled, doc.enabled) == (["s"], frozenset(), frozenset())


def test_name_lists_beside_the_servers_are_read() -> None:
    doc = document(
        {},
        disabledMcpServers=["a"],
        disabledMcpjsonServers=["b"],
        enabledMcpjsonServers=["c"],
    )
    assert (doc.disabled, doc.enabled) == (frozenset({"a", "b"}), frozenset({"c"}))


def test_name_list_of_non_strings_is_rejected() -> None:
    assert config_error({}, disabledMcpServers=[1]).field == "disabledMcpServers"


def test_bad_json_reports_line_and_column() -> None:
    with pytest.raises(ConfigError) as caught:
        read_config_file("/p/.mcp.json", '{\n  "mcpServers": {,}\n}')
    assert (caught.value.line, caught.value.column) == (2, 18)
    assert str(caught.value).startswith("/p/.mcp.json:2:18: invalid JSON: Expecting")


def test_json_nested_too_deep_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="invalid JSON"):
        read_config_file(".mcp.json", "[" * 100_000)


def test_top_level_that_is_not_an_object_is_rejected() -> None:
    with pytest.raises(ConfigError, match="the top level must be a JSON object"):
        read_config_file(".mcp.json", "[]")


# ------------------------------------------------------------- shellPrefix


@pytest.mark.parametrize("prefix", ["bwrap --ro-bind / / --", ["bwrap", "--ro-bind", "/", "/", "--"]])
def test_shell_prefix_is_a_command_line_or_a_list_of_words(prefix: object) -> None:
    config = server({"command": "node", "args": ["s.js"], "shellPrefix": prefix})
    assert isinstance(config, StdioServerConfig)
    assert config.shell_prefix == ("bwrap", "--ro-bind", "/", "/", "--")


def test_shell_prefix_is_split_as_a_shell_splits_it() -> None:
    config = server({"command": "node", "shellPrefix": "'/opt/my sandbox/run' --net=none"})
    assert isinstance(config, StdioServerConfig)
    assert config.shell_prefix == ("/opt/my sandbox/run", "--net=none")


def test_top_level_shell_prefix_wraps_stdio_servers_without_their_own() -> None:
    found = document({"a": {"command": "a"}, "b": {"command": "b", "shellPrefix": "own"},
                      "r": {"url": "https://r.example/mcp"}}, shellPrefix="bun run").servers
    assert [getattr(found[name], "shell_prefix", None) for name in ("a", "b", "r")] == [
        ("bun", "run"), ("own",), None]


@pytest.mark.parametrize(
    ("entry", "extra", "where", "message"),
    [({"command": "a", "shellPrefix": "'unclosed"}, {}, ("s", "shellPrefix"), "cannot be split into words"),
     ({"command": "a", "shellPrefix": 3}, {}, ("s", "shellPrefix"), "must be a command line or a list"),
     ({"command": "a", "shellPrefix": ["ok", 1]}, {}, ("s", "shellPrefix[1]"), "must be a string"),
     ({"command": "a"}, {"shellPrefix": "'x"}, (None, "shellPrefix"), "cannot be split into words")],
)
def test_malformed_shell_prefix_is_rejected(entry: object, extra: dict[str, object],
                                            where: tuple[str | None, str], message: str) -> None:
    error = config_error({"s": entry}, **extra)
    assert (error.server, error.field) == where
    assert message in str(error) and error.file == "/p/.mcp.json"


def test_wrapped_puts_the_outer_then_the_own_prefix_before_the_command() -> None:
    config = StdioServerConfig(command="node", args=("s.js",), shell_prefix=("bun", "run"))
    assert config.wrapped(("sandbox", "--")) == StdioServerConfig(
        command="sandbox", args=("--", "bun", "run", "node", "s.js"))
    assert StdioServerConfig(command="node").wrapped() == StdioServerConfig(command="node")

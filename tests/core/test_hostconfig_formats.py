"""Reading other hosts' configuration files, and recognising which one a file is."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import pytest

from mcp_sansio.hostconfig import (
    ConfigError,
    ConfigFormat,
    ExpansionProblem,
    HttpServerConfig,
    InputPrompt,
    Scope,
    StdioServerConfig,
    Transport,
    expand_server,
    read_config_file,
)

STDIO = {"command": "npx", "args": ["srv"]}
CLAUDE_JSON = json.dumps(
    {
        "numStartups": 3,
        "mcpServers": {"everywhere": STDIO},
        "projects": {
            "/home/u/proj": {
                "mcpServers": {"mine": {"type": "http", "url": "http://127.0.0.1:9/mcp"}},
                "disabledMcpjsonServers": ["shared"],
                "enabledMcpjsonServers": ["other"],
            },
            "/home/u/elsewhere": {"mcpServers": {"not-this": STDIO}},
        },
    }
)
VSCODE_JSON = """{
  // VS Code allows comments
  "inputs": [
    {"type": "promptString", "id": "api-key", "description": "API key", "password": true},
  ],
  "servers": {
    /* a remote one */
    "gh": {"type": "http", "url": "https://api.example/mcp",
           "headers": {"Authorization": "Bearer ${input:api-key}"}},
    "local": {"type": "stdio", "command": "node", "args": ["s.js", "// not a comment"]},
  },
}"""


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        (
            "/home/u/Library/Application Support/Claude/claude_desktop_config.json",
            ConfigFormat.CLAUDE_DESKTOP,
        ),
        ("C:\\Users\\u\\AppData\\Roaming\\Claude\\claude_desktop_config.json", ConfigFormat.CLAUDE_DESKTOP),
        ("/home/u/.claude.json", ConfigFormat.CLAUDE_CODE),
        ("/p/.mcp.json", ConfigFormat.MCP_JSON),
        ("/p/.cursor/mcp.json", ConfigFormat.CURSOR),
        ("mcp.json", ConfigFormat.MCP_JSON),
        ("/etc/servers.json", ConfigFormat.MCP_JSON),
    ],
)
def test_format_is_recognised_by_file_name(path: str, fmt: ConfigFormat) -> None:
    assert read_config_file(path, '{"mcpServers": {}}').format is fmt


def test_unknown_name_with_projects_key_is_claude_code() -> None:
    assert read_config_file("backup.json", CLAUDE_JSON).format is ConfigFormat.CLAUDE_CODE


def test_unknown_name_with_servers_key_is_vscode() -> None:
    text = '{"servers": {"s": {"command": "c"}}}'
    assert read_config_file("x.json", text).format is ConfigFormat.VSCODE


def test_claude_desktop_servers_are_user_scope() -> None:
    text = json.dumps({"mcpServers": {"fs": STDIO}, "globalShortcut": "Ctrl+Space"})
    (only,) = read_config_file("claude_desktop_config.json", text).documents
    assert (only.scope, only.servers) == (
        Scope.USER,
        {"fs": StdioServerConfig(command="npx", args=("srv",))},
    )


def test_project_mcp_json_is_project_scope() -> None:
    (only,) = read_config_file("/p/.mcp.json", '{"mcpServers": {}}').documents
    assert (only.scope, only.source) == (Scope.PROJECT, "/p/.mcp.json")


def test_cursor_file_is_project_scope_with_optional_type() -> None:
    text = json.dumps({"mcpServers": {"remote": {"url": "https://x/sse", "type": "sse"}}})
    (only,) = read_config_file("/p/.cursor/mcp.json", text).documents
    assert (only.scope, only.servers["remote"]) == (
        Scope.PROJECT,
        HttpServerConfig(url="https://x/sse", transport=Transport.SSE),
    )


def test_claude_json_top_level_is_user_and_project_section_is_local() -> None:
    file = read_config_file("/home/u/.claude.json", CLAUDE_JSON, project=PurePosixPath("/home/u/proj"))
    user, local = file.documents
    assert (user.scope, user.source, list(user.servers)) == (
        Scope.USER,
        "/home/u/.claude.json",
        ["everywhere"],
    )
    assert (local.scope, local.source, list(local.servers)) == (
        Scope.LOCAL,
        "/home/u/.claude.json#projects[/home/u/proj]",
        ["mine"],
    )
    assert (local.disabled, local.enabled) == (frozenset({"shared"}), frozenset({"other"}))


def test_claude_json_project_key_matches_despite_trailing_slash() -> None:
    text = json.dumps({"projects": {"/p/": {"mcpServers": {"s": STDIO}}}})
    file = read_config_file(".claude.json", text, project=PurePosixPath("/p"))
    assert list(file.documents[1].servers) == ["s"]


def test_claude_json_without_matching_project_has_only_the_user_document() -> None:
    file = read_config_file(".claude.json", CLAUDE_JSON, project=PurePosixPath("/nowhere"))
    assert [d.scope for d in file.documents] == [Scope.USER]


def test_claude_json_without_project_reads_only_the_user_document() -> None:
    assert len(read_config_file(".claude.json", CLAUDE_JSON).documents) == 1


def test_claude_json_malformed_projects_are_rejected() -> None:
    with pytest.raises(ConfigError) as caught:
        read_config_file(".claude.json", '{"projects": []}', project=PurePosixPath("/p"))
    assert caught.value.field == "projects"


def test_claude_json_malformed_project_section_is_rejected() -> None:
    with pytest.raises(ConfigError) as caught:
        read_config_file(".claude.json", '{"projects": {"/p": 1}}', project=PurePosixPath("/p"))
    assert caught.value.field == "projects./p"


def test_imposed_scope_applies_to_every_document() -> None:
    file = read_config_file(
        ".claude.json", CLAUDE_JSON, scope=Scope.PLUGIN, project=PurePosixPath("/home/u/proj")
    )
    assert [d.scope for d in file.documents] == [Scope.PLUGIN, Scope.PLUGIN]


def test_vscode_file_allows_comments_and_trailing_commas() -> None:
    file = read_config_file("/p/.vscode/mcp.json", VSCODE_JSON)
    (only,) = file.documents
    assert (file.format, only.scope) == (ConfigFormat.VSCODE, Scope.PROJECT)
    assert only.servers["local"] == StdioServerConfig(command="node", args=("s.js", "// not a comment"))


def test_vscode_inputs_are_read_for_the_host_to_prompt() -> None:
    file = read_config_file("/p/.vscode/mcp.json", VSCODE_JSON)
    assert file.inputs == (InputPrompt(id="api-key", description="API key", password=True),)


def test_vscode_input_placeholder_is_kept_and_reported_on_expansion() -> None:
    (only,) = read_config_file("/p/.vscode/mcp.json", VSCODE_JSON).documents
    expanded, warnings = expand_server("gh", only.servers["gh"], {})
    assert isinstance(expanded, HttpServerConfig)
    assert expanded.headers == {"Authorization": "Bearer ${input:api-key}"}
    assert [(w.problem, w.field, w.variable) for w in warnings] == [
        (ExpansionProblem.INPUT_REQUIRED, "headers.Authorization", "api-key")
    ]


def test_vscode_malformed_inputs_are_rejected() -> None:
    with pytest.raises(ConfigError) as caught:
        read_config_file("/p/.vscode/mcp.json", '{"inputs": [{"id": 3}]}')
    assert caught.value.field == "inputs"


def test_vscode_unterminated_comment_is_a_json_error_at_its_position() -> None:
    with pytest.raises(ConfigError) as caught:
        read_config_file("/p/.vscode/mcp.json", '{"servers": {}} /* oops')
    assert (caught.value.line, caught.value.column) == (1, 17)


def test_comments_are_not_allowed_outside_vscode_files() -> None:
    with pytest.raises(ConfigError, match="invalid JSON"):
        read_config_file("/p/.mcp.json", '{"mcpServers": {}} // no')


def test_vscode_input_with_a_lone_surrogate_key_is_rejected() -> None:
    with pytest.raises(ConfigError) as caught:
        read_config_file("/p/.vscode/mcp.json", '{"inputs": [{"id": "k", "\\udcae": 1}]}')
    assert caught.value.field == "inputs"


def test_a_file_with_no_servers_object_is_warned_about_naming_its_keys() -> None:
    file = read_config_file("/p/settings.json", json.dumps({"theme": "dark", "mcp_servers": {}}))
    assert file.warnings == ("/p/settings.json: no 'mcpServers' (or 'servers') object, so no servers are "
                             "defined there; its top-level keys: 'mcp_servers', 'theme'",)
    assert read_config_file("/p/empty.json", "{}").warnings[0].endswith("its top-level keys: none")


@pytest.mark.parametrize("root", [{"mcpServers": {}}, {"servers": {}}])
def test_a_file_with_a_servers_object_has_no_warning(root: dict[str, object]) -> None:
    assert read_config_file("/p/mcp.json", json.dumps(root)).warnings == ()


def test_a_claude_json_with_servers_only_in_its_project_has_no_warning() -> None:
    text = json.dumps({"projects": {"/p": {"mcpServers": {"s": STDIO}}}, "numStartups": 3})
    assert read_config_file(".claude.json", text, project=PurePosixPath("/p")).warnings == ()

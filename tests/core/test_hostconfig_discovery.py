"""Where configuration files are looked for, and loading them through a reader."""

from __future__ import annotations

import json
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

import pytest

from mcp_sansio.hostconfig import (
    ConfigError,
    ConfigFormat,
    Scope,
    ServerState,
    load_config_files,
    load_documents,
    local_config_path,
    merge_scopes,
    project_config_paths,
    user_config_paths,
)

HOME = PurePosixPath("/home/u")
CWD = PurePosixPath("/home/u/proj/sub")


def servers(*names: str, **extra: object) -> str:
    return json.dumps({"mcpServers": {name: {"command": name} for name in names}, **extra})


def test_project_paths_run_from_root_to_cwd() -> None:
    assert project_config_paths(PurePosixPath("/a/b")) == [
        PurePosixPath("/.mcp.json"),
        PurePosixPath("/a/.mcp.json"),
        PurePosixPath("/a/b/.mcp.json"),
    ]


def test_project_paths_keep_the_windows_flavour() -> None:
    assert project_config_paths(PureWindowsPath("C:/w")) == [
        PureWindowsPath("C:/.mcp.json"),
        PureWindowsPath("C:/w/.mcp.json"),
    ]


def test_local_path_is_beside_the_project_file() -> None:
    assert local_config_path(PurePosixPath("/p")) == PurePosixPath("/p/.mcp.local.json")


def test_user_paths_default_to_dot_config_after_etc_xdg() -> None:
    assert user_config_paths(HOME, {}) == [
        PurePosixPath("/etc/xdg/mcp-sansio/mcp.json"),
        PurePosixPath("/home/u/.config/mcp-sansio/mcp.json"),
    ]


def test_user_paths_honour_xdg_variables_most_important_last() -> None:
    env = {"XDG_CONFIG_HOME": "/cfg", "XDG_CONFIG_DIRS": "/first:relative:/second"}
    assert user_config_paths(HOME, env) == [
        PurePosixPath("/second/mcp-sansio/mcp.json"),
        PurePosixPath("/first/mcp-sansio/mcp.json"),
        PurePosixPath("/cfg/mcp-sansio/mcp.json"),
    ]


def test_relative_xdg_config_home_is_ignored() -> None:
    paths = user_config_paths(HOME, {"XDG_CONFIG_HOME": "cfg", "XDG_CONFIG_DIRS": ""})
    assert paths == [PurePosixPath("/home/u/.config/mcp-sansio/mcp.json")]


def test_load_documents_orders_user_then_project_and_local_per_directory() -> None:
    files: dict[PurePath, str] = {
        PurePosixPath("/home/u/.config/mcp-sansio/mcp.json"): servers("u"),
        PurePosixPath("/home/u/.mcp.json"): servers("far"),
        PurePosixPath("/home/u/proj/.mcp.local.json"): servers("private"),
        PurePosixPath("/home/u/proj/sub/.mcp.json"): servers("near"),
    }
    documents = load_documents(files.get, CWD, HOME, {})
    assert [(d.scope, d.source, list(d.servers)) for d in documents] == [
        (Scope.USER, "/home/u/.config/mcp-sansio/mcp.json", ["u"]),
        (Scope.PROJECT, "/home/u/.mcp.json", ["far"]),
        (Scope.LOCAL, "/home/u/proj/.mcp.local.json", ["private"]),
        (Scope.PROJECT, "/home/u/proj/sub/.mcp.json", ["near"]),
    ]


def test_closer_project_file_wins_when_merged() -> None:
    files: dict[PurePath, str] = {
        PurePosixPath("/home/u/.mcp.json"): json.dumps({"mcpServers": {"s": {"command": "far"}}}),
        PurePosixPath("/home/u/proj/.mcp.json"): json.dumps({"mcpServers": {"s": {"command": "near"}}}),
    }
    merged = merge_scopes(load_documents(files.get, CWD, HOME, {}))
    assert merged.entries["s"].source == "/home/u/proj/.mcp.json"


def test_explicit_config_files_come_last_at_local_scope() -> None:
    desktop = PurePosixPath("/x/claude_desktop_config.json")
    files: dict[PurePath, str] = {
        PurePosixPath("/home/u/proj/.mcp.local.json"): servers("s"),
        desktop: servers("s"),
    }
    loaded = load_config_files(files.get, CWD, HOME, {}, configs=[desktop])
    assert [(f.format, f.documents[0].scope) for f in loaded] == [
        (ConfigFormat.MCP_JSON, Scope.LOCAL),
        (ConfigFormat.CLAUDE_DESKTOP, Scope.LOCAL),
    ]
    assert merge_scopes(load_documents(files.get, CWD, HOME, {}, configs=[desktop])).entries[
        "s"
    ].source == str(desktop)


def test_explicit_claude_json_reads_the_cwd_project_section() -> None:
    claude = PurePosixPath("/home/u/.claude.json")
    section = {"mcpServers": {"s": {"command": "s"}}, "disabledMcpjsonServers": ["t"]}
    text = json.dumps({"projects": {str(CWD): section}})
    files: dict[PurePath, str] = {claude: text, PurePosixPath("/home/u/proj/.mcp.json"): servers("t")}
    merged = merge_scopes(load_documents(files.get, CWD, HOME, {}, configs=[claude]))
    assert {name: e.state for name, e in merged.entries.items()} == {
        "s": ServerState.ENABLED,
        "t": ServerState.DISABLED,
    }


def test_missing_explicit_config_file_is_an_error() -> None:
    no_files: dict[PurePath, str] = {}
    with pytest.raises(ConfigError, match=r"^/nope\.json: no such file$"):
        load_documents(no_files.get, CWD, HOME, {}, configs=[PurePosixPath("/nope.json")])


def test_malformed_discovered_file_names_its_path() -> None:
    files: dict[PurePath, str] = {PurePosixPath("/home/u/proj/.mcp.json"): "{"}
    with pytest.raises(ConfigError) as caught:
        load_documents(files.get, CWD, HOME, {})
    assert caught.value.file == "/home/u/proj/.mcp.json"


def test_load_documents_with_a_reader_over_a_real_tree(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "proj"
    (project / "sub").mkdir(parents=True)
    (home / ".config" / "mcp-sansio").mkdir(parents=True)
    (home / ".config" / "mcp-sansio" / "mcp.json").write_text(servers("s", "user-only"))
    (project / ".mcp.json").write_text(servers("s"))
    (project / ".mcp.local.json").write_text(json.dumps({"mcpServers": {"s": {"disabled": True}}}))

    def read(path: PurePath) -> str | None:
        try:
            return Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    env = {"XDG_CONFIG_DIRS": str(tmp_path / "no-such-dir")}
    merged = merge_scopes(load_documents(read, project / "sub", home, env))
    assert {name: (e.scope, e.state) for name, e in merged.entries.items()} == {
        "s": (Scope.PROJECT, ServerState.DISABLED),
        "user-only": (Scope.USER, ServerState.ENABLED),
    }
    assert merged.entries["s"].state_source == str(project / ".mcp.local.json")

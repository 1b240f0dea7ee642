"""``mcp-sansio servers``, ``tools`` and ``call`` on configured servers: the console script,
run as a subprocess.

Each test gets a temporary HOME (with Claude Desktop's and Claude Code's files) and a
project directory holding ``.mcp.json``; every server is the bundled demo server, but for
``broken``, which cannot start (so a listing of every server exits with status 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

DEMO = {"command": sys.executable, "args": ["-m", "mcp_sansio_cli.demo_server"]}
SCRIPT = str(Path(sys.executable).with_name("mcp-sansio"))


class Workspace(NamedTuple):
    home: Path
    project: Path


class Run(NamedTuple):
    status: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """Stdout, decoded."""
        return json.loads(self.stdout)

    def result(self) -> Any:
        """The wire result without its ``_meta`` (in the stateless era the server names itself there)."""
        value = self.json()
        value.pop("_meta", None)
        return value


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """``demo`` and ``broken`` in the project, ``desk`` in Claude Desktop, ``code`` in Claude Code."""
    home, project = tmp_path / "home", tmp_path / "project"
    broken = {"command": "/nonexistent/srv"}
    write_json(project / ".mcp.json", {"mcpServers": {"demo": DEMO, "broken": broken}})
    write_json(home / ".config" / "Claude" / "claude_desktop_config.json", {"mcpServers": {"desk": DEMO}})
    write_json(home / ".claude.json", {"projects": {str(project): {"mcpServers": {"code": DEMO}}}})
    return Workspace(home, project)


def cli(workspace: Workspace, *args: str) -> Run:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("XDG_", "MCP_"))}
    done = subprocess.run([SCRIPT, *args], cwd=workspace.project,
                          env={**env, "HOME": str(workspace.home)}, capture_output=True, text=True,
                          timeout=60, check=False)
    return Run(done.returncode, done.stdout, done.stderr)


def test_servers_lists_scope_file_state_and_tool_count(workspace: Workspace) -> None:
    run = cli(workspace, "servers", "--json")
    assert run.status == 1, run.stderr  # broken failed
    rows = {row["name"]: row for row in run.json()}
    summary = {name: (row["scope"], row["source"], row["transport"], row["state"], row["tools"])
               for name, row in rows.items()}
    project_file = str(workspace.project / ".mcp.json")
    assert summary == {
        "broken": ("project", project_file, "stdio", "failed", 0),
        "code": ("local", f"{workspace.home / '.claude.json'}#projects[{workspace.project}]", "stdio",
                 "connected", 3),
        "demo": ("project", project_file, "stdio", "connected", 3),
        "desk": ("user", str(workspace.home / ".config" / "Claude" / "claude_desktop_config.json"), "stdio",
                 "connected", 3),
    }
    assert "No such file" in rows["broken"]["error"]
    progress = [line for line in run.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 4 and progress[-1].startswith("[4/4] ")


def test_tools_lists_every_tool_under_its_model_facing_name(workspace: Workspace) -> None:
    run = cli(workspace, "tools", "--json")
    assert run.status == 1, run.stderr  # broken failed
    tools = run.json()
    assert isinstance(tools, list)
    servers, names = ("code", "demo", "desk"), ("echo", "add", "long_task")
    expected = {f"mcp__{server}__{name}" for server in servers for name in names}
    assert {tool["name"] for tool in tools} == expected
    add = {"name": "mcp__desk__add", "server": "desk", "tool": "add", "description": "Add two numbers."}
    assert add in tools


def test_tools_of_named_servers_only(workspace: Workspace) -> None:
    run = cli(workspace, "tools", "demo", "--json")
    assert run.status == 0, run.stderr
    assert {tool["server"] for tool in run.json()} == {"demo"}


def test_call_routes_a_model_facing_name_and_prints_the_wire_result(workspace: Workspace) -> None:
    run = cli(workspace, "call", "mcp__desk__echo", "--args", '{"message": "hi"}', "--json")
    assert run.status == 0, run.stderr
    assert run.result() == {"content": [{"type": "text", "text": "hi"}]}


def test_an_unknown_tool_fails_with_one_line(workspace: Workspace) -> None:
    run = cli(workspace, "call", "mcp__demo__nope", "--json")
    assert (run.status, run.stdout) == (1, "")
    assert run.stderr.splitlines()[-1] == (
        "mcp-sansio: error: no tool is named 'mcp__demo__nope'; `mcp-sansio tools` lists the tools")


def test_a_named_server_that_fails_fails_the_command(workspace: Workspace) -> None:
    run = cli(workspace, "servers", "broken", "--json")
    assert run.status == 1
    assert [row["state"] for row in run.json()] == ["failed"]
    last = run.stderr.splitlines()[-1]
    assert last.startswith("mcp-sansio: error: server 'broken' failed: cannot start '/nonexistent/srv'")


def test_an_unknown_server_name_fails_the_command(workspace: Workspace) -> None:
    run = cli(workspace, "servers", "nope")
    assert run.status == 1
    assert run.stderr == "mcp-sansio: error: no server is named 'nope' in the configuration\n"


def test_config_adds_a_file_of_another_format(workspace: Workspace, tmp_path: Path) -> None:
    vscode = tmp_path / "elsewhere" / ".vscode" / "mcp.json"
    vscode.parent.mkdir(parents=True)
    vscode.write_text(f'{{"servers": {{"vs": {json.dumps(DEMO)}}}, // VS Code allows comments\n}}')
    run = cli(workspace, "servers", "vs", "--config", str(vscode), "--json")
    assert run.status == 0, run.stderr
    [row] = run.json()
    assert (row["name"], row["scope"], row["source"]) == ("vs", "local", str(vscode))
    assert row["state"] == "connected"


def test_a_missing_config_file_is_a_command_line_error_in_one_line(workspace: Workspace) -> None:
    # Status 2 as the README gives any command line that cannot work (nothing was started).
    for command in (["servers"], ["tools"], ["inspect", "vs"], ["call", "mcp__vs__echo"]):
        run = cli(workspace, *command, "--config", "/nonexistent/mcp.json")
        assert run.status == 2
        assert run.stderr == "mcp-sansio: error: --config /nonexistent/mcp.json: no such file\n"


def test_the_stdio_form_of_call_still_works(workspace: Workspace) -> None:
    command = f"{sys.executable} -m mcp_sansio_cli.demo_server"
    run = cli(workspace, "call", "echo", "--stdio", command, "--args", '{"message": "old"}', "--json")
    assert run.status == 0, run.stderr
    assert run.result() == {"content": [{"type": "text", "text": "old"}]}

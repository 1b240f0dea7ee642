"""The ``mcp-sansio`` console script as a new user runs it, in a terminal 80 columns wide:
real servers (the reference everything server, the official SDK's, the demo, a hostile
one, one that cannot start), each command's output and exit status.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from peer_servers import everything_stdio, free_port, running_http_server, sdk_server

pytestmark = pytest.mark.peer

SCRIPT = str(Path(sys.executable).with_name("mcp-sansio"))
DEMO = {"command": sys.executable, "args": ["-m", "mcp_sansio_cli.demo_server"]}
BROKEN = {"command": "/nonexistent/srv"}
DEMO_SPEC = f"{sys.executable} -m mcp_sansio_cli.demo_server"


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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose ``.mcp.json`` has ``everything``, ``demo`` and ``broken``; an empty HOME."""
    command, args = everything_stdio()
    servers = {"everything": {"command": command, "args": args}, "demo": DEMO, "broken": BROKEN}
    (tmp_path / "project").mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "project" / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return tmp_path / "project"


def cli(project: Path, *args: str, env: dict[str, str] | None = None) -> Run:
    """Run the console script in ``project``, 80 columns wide, with its own HOME."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith(("XDG_", "MCP_"))}
    done = subprocess.run([SCRIPT, *args], cwd=project, capture_output=True, text=True, timeout=90,
                          env={**clean, "HOME": str(project.parent / "home"), "COLUMNS": "80", **(env or {})},
                          check=False)
    return Run(done.returncode, done.stdout, done.stderr)


def marker_server(mark: Path) -> dict[str, object]:
    """The demo server, started through a shell that first creates ``mark``."""
    script = f'touch "{mark}"; exec "{sys.executable}" -m mcp_sansio_cli.demo_server'
    return {"command": "sh", "args": ["-c", script]}


# ------------------------------------------------------------------ listings


def test_tool_names_are_never_cut_at_80_columns_and_descriptions_wrap(project: Path) -> None:
    run = cli(project, "tools", "everything")
    assert run.status == 0, run.stderr
    names = [tool["name"] for tool in cli(project, "tools", "everything", "--json").json()]
    assert len(names) >= 13 and "mcp__everything__trigger-long-running-operation" in names
    lines = run.stdout.splitlines()
    assert all(any(line.split()[:1] == [name] for line in lines) for name in names)
    assert max(map(len, lines)) <= 80
    assert "…" not in run.stdout


def test_servers_show_errors_below_the_table_and_exit_1_when_one_failed(project: Path) -> None:
    run = cli(project, "servers")
    assert run.status == 1
    table = run.stdout.splitlines()
    assert table[0] == "Servers (3)"
    assert any(re.match(r"everything +project +connected +1[0-9] +stdio +/", line) for line in table)
    assert max(map(len, table)) <= 80
    errors = [line for line in run.stderr.splitlines() if line.startswith("mcp-sansio: error:")]
    assert errors == ["mcp-sansio: error: server 'broken' failed: cannot start '/nonexistent/srv': "
                      "No such file or directory"]
    assert "/nonexistent" not in run.stdout


def test_listings_exit_0_when_every_server_they_cover_connected(project: Path) -> None:
    assert cli(project, "servers", "demo", "everything").status == 0
    assert cli(project, "tools", "demo").status == 0
    assert cli(project, "tools").status == 1  # broken is among them


def test_prompts_lists_every_prompt_named_like_the_tools(project: Path) -> None:
    run = cli(project, "prompts", "demo", "everything", "--json")
    assert run.status == 0, run.stderr
    prompts = {row["name"]: row for row in run.json()}
    assert prompts["mcp__demo__greeting"]["arguments"] == ["name"]
    assert prompts["mcp__everything__simple-prompt"]["description"] == "A prompt with no arguments"
    human = cli(project, "prompts", "everything").stdout
    assert re.search(r"^mcp__everything__args-prompt +A prompt with two arguments", human, re.MULTILINE)


def test_prompt_gets_one_by_its_name(project: Path) -> None:
    run = cli(project, "prompt", "mcp__demo__greeting", "--args", '{"name": "Ada"}')
    assert (run.status, run.stdout) == (0, "Say hello to someone.\nuser: Say hello to Ada.\n"), run.stderr
    run = cli(project, "prompt", "mcp__everything__resource-prompt",
              "--args", '{"resourceType": "Text", "resourceId": "1"}')
    assert "user: [resource demo://resource/dynamic/text/1, text/plain, " in run.stdout


def test_prompt_arguments_must_be_strings(project: Path) -> None:
    run = cli(project, "prompt", "mcp__demo__greeting", "--args", '{"name": 3}')
    assert (run.status, run.stderr) == (2, "mcp-sansio: error: --args: prompt arguments are strings, "
                                           "but 'name' is 3\n")


def test_resources_lists_resources_and_templates_with_their_server(project: Path) -> None:
    run = cli(project, "resources", "demo", "everything", "--json")
    assert run.status == 0, run.stderr
    found = {(row["server"], row["kind"], row["uri"]) for row in run.json()}
    assert ("demo", "resource", "demo://readme") in found
    assert any(server == "everything" and kind == "template" for server, kind, _ in found)


def test_a_config_file_without_servers_is_warned_about(project: Path, tmp_path: Path) -> None:
    odd = tmp_path / "settings.json"
    odd.write_text(json.dumps({"theme": "dark", "mcp_servers": {"x": DEMO}}))
    run = cli(project, "servers", "demo", "--config", str(odd))
    assert run.status == 0, run.stderr
    assert (f"mcp-sansio: warning: {odd}: no 'mcpServers' (or 'servers') object, so no servers are defined "
            f"there; its top-level keys: 'mcp_servers', 'theme'") in run.stderr


def test_servers_show_the_shell_prefix(project: Path) -> None:
    run = cli(project, "servers", "demo", env={"MCP_SANSIO_SHELL_PREFIX": "env MCP_X=1"})
    assert run.status == 0, run.stderr
    assert "demo starts behind: env MCP_X=1" in run.stdout
    row = cli(project, "servers", "demo", "--json", env={"MCP_SANSIO_SHELL_PREFIX": "env MCP_X=1"}).json()
    assert row[0]["shell_prefix"] == "env MCP_X=1"


# ---------------------------------------------------------------------- call


def test_call_prints_an_image_as_type_mime_and_size(project: Path) -> None:
    run = cli(project, "call", "mcp__everything__get-tiny-image")
    assert run.status == 0, run.stderr
    assert re.search(r"^\[image image/png, \d+ bytes\]$", run.stdout, re.MULTILINE)
    assert max(map(len, run.stdout.splitlines())) < 100  # no base64


def test_call_prints_structured_content_once_and_pretty(project: Path) -> None:
    run = cli(project, "call", "mcp__everything__get-structured-content", "--args", '{"location": "Chicago"}')
    assert run.status == 0, run.stderr
    assert run.stdout.count('"temperature"') == 1
    assert run.stdout.startswith("{\n  ")


def test_call_prints_an_embedded_resource_as_uri_mime_and_size(project: Path) -> None:
    run = cli(project, "call", "mcp__everything__get-resource-reference",
              "--args", '{"resourceType": "Text", "resourceId": 2}')
    assert run.status == 0, run.stderr
    assert re.search(r"^\[resource demo://resource/dynamic/text/2, text/plain, \d+ bytes\]$", run.stdout,
                     re.MULTILINE)
    assert "EmbeddedResource" not in run.stdout


def test_call_on_a_server_that_failed_says_so_and_why(project: Path) -> None:
    run = cli(project, "call", "mcp__broken__echo")
    assert (run.status, run.stdout) == (1, "")
    assert run.stderr == ("mcp-sansio: error: tool 'mcp__broken__echo': server 'broken' failed: "
                          "cannot start '/nonexistent/srv': No such file or directory\n")


def test_call_starts_only_the_server_its_name_routes_to(project: Path, tmp_path: Path) -> None:
    mark = tmp_path / "other-started"
    config = tmp_path / "more.json"
    config.write_text(json.dumps({"mcpServers": {"other": marker_server(mark)}}))
    run = cli(project, "call", "mcp__demo__echo", "--args", '{"message": "hi"}', "--config", str(config))
    assert (run.status, run.stdout) == (0, "hi\n"), run.stderr
    assert not mark.exists()


def test_bad_args_json_is_refused_before_anything_starts(project: Path, tmp_path: Path) -> None:
    mark = tmp_path / "started"
    config = tmp_path / "more.json"
    config.write_text(json.dumps({"mcpServers": {"other": marker_server(mark)}}))
    run = cli(project, "call", "mcp__other__echo", "--args", '{"message": "hi"', "--config", str(config))
    assert run.status == 2
    assert run.stderr == ("mcp-sansio: error: --args is not valid JSON: Expecting ',' delimiter at "
                          "character 17, near '{\"message\": \"hi\"' (in '{\"message\": \"hi\"')\n")
    assert not mark.exists()
    run = cli(project, "call", "mcp__other__echo", "--args", "[1, 2]", "--config", str(config))
    assert (run.status, run.stderr) == (2, "mcp-sansio: error: --args must be a JSON object "
                                           "({\"name\": value, ...}), not '[1, 2]'\n")


@pytest.mark.parametrize(("option", "value", "says"), [
    ("--url", "not-a-url", "argument --url: invalid URL: the URL has no scheme ('not-a-url'"),
    ("--url", "ftp://host/mcp", "argument --url: invalid URL: the scheme must be http or https, not 'ftp'"),
    ("--timeout", "-1", "argument --timeout: must be a positive number of seconds, not '-1'"),
    ("--timeout", "soon", "argument --timeout: must be a positive number of seconds, not 'soon'"),
])
def test_a_bad_url_or_timeout_is_a_command_line_error_before_anything_starts(
        project: Path, tmp_path: Path, option: str, value: str, says: str) -> None:
    mark = tmp_path / "started"
    target = [] if option == "--url" else ["--stdio", f"sh -c 'touch {mark}; exec {DEMO_SPEC}'"]
    for command in (["inspect"], ["call", "echo"], ["prompt", "greeting"], ["read", "demo://readme"]):
        run = cli(project, *command, *target, option, value)
        assert run.status == 2, run
        assert says in run.stderr.splitlines()[-1]
    assert not mark.exists()


def test_auth_with_a_bad_url_is_a_command_line_error(project: Path) -> None:
    for action in ("login", "logout", "status"):
        run = cli(project, "auth", action, "--url", "not-a-url")
        assert run.status == 2
        assert run.stderr == "mcp-sansio: error: invalid --url: invalid URL: the URL has no scheme\n"


@pytest.mark.parametrize("target", [("echo", "--stdio", DEMO_SPEC), ("mcp__demo__echo",)])
def test_a_tool_that_reported_an_error_also_says_so_in_one_line_on_stderr(
        project: Path, target: tuple[str, ...]) -> None:
    # The result went to stdout alone: redirected, the call failed (status 1) without a word.
    run = cli(project, "call", *target, "--args", "{}")
    assert run.status == 1
    assert run.stdout == "Invalid arguments for tool echo: Object missing required field `message`\n"
    assert run.stderr.splitlines()[-1] == (
        f"mcp-sansio: error: tool {target[0]!r} reported an error: Invalid arguments for tool echo: Object "
        "missing required field `message`")


def test_call_without_a_target_says_how_to_give_one(project: Path) -> None:
    run = cli(project, "call", "echo")
    assert run.status == 2
    assert run.stderr == (
        "mcp-sansio: error: call echo: say which server: --stdio CMD or --url URL for one server, or the "
        "mcp__<server>__<tool> name of a configured server's tool (`mcp-sansio tools` lists them)\n")


def test_call_of_a_model_name_with_no_server_configured_says_how(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "empty").mkdir()
    run = cli(tmp_path / "empty", "call", "mcp__demo__echo")
    assert run.status == 2
    assert "no MCP servers are configured" in run.stderr and "--stdio CMD or --url URL" in run.stderr


def test_stdio_and_url_together_are_refused(project: Path) -> None:
    run = cli(project, "call", "echo", "--stdio", "python server.py", "--url", "http://127.0.0.1:9/mcp")
    assert run.status == 2
    assert run.stderr.splitlines()[-1] == (
        "mcp-sansio call: error: argument --url: not allowed with argument --stdio")


def test_call_through_stdio_keeps_working(project: Path) -> None:
    spec = f"{sys.executable} -m mcp_sansio_cli.demo_server"
    run = cli(project, "call", "add", "--stdio", spec, "--args", '{"a": 2, "b": 3}', "--json")
    assert run.status == 0, run.stderr
    assert run.result() == {"content": [{"type": "text", "text": "5.0"}]}


def test_a_banner_on_stdout_gives_one_warning_quoting_its_first_line(project: Path) -> None:
    command, args = sdk_server("hostile", "banner")
    run = cli(project, "call", "poke", "--stdio", " ".join([command, *args]))
    assert (run.status, run.stdout) == (0, "ok\n"), run.stderr
    discarded = [line for line in run.stderr.splitlines() if line.startswith("discarded")]
    assert discarded[0].startswith("discarded a message from the server (not-json): not JSON")
    assert "it read 'hostile MCP server 1.0 starting'" in discarded[0]
    assert re.fullmatch(r"discarded \d+ messages from the server in all \(not-json: \d+\)", discarded[-1])
    assert len(discarded) == 2


# ------------------------------------------------------------------- inspect


def test_inspect_without_a_target_says_so(project: Path) -> None:
    run = cli(project, "inspect")
    assert run.status == 2
    assert run.stderr.startswith(
        "mcp-sansio: error: inspect needs a server: the SERVER name of a configured one")


def test_inspect_a_configured_server_by_name(project: Path, tmp_path: Path) -> None:
    config = tmp_path / "more.json"
    config.write_text(json.dumps({"mcpServers": {"extra": DEMO}}))
    run = cli(project, "inspect", "extra", "--config", str(config))
    assert run.status == 0, run.stderr
    assert run.stdout.startswith("mcp-sansio demo server 0.1.0 (protocol ")
    assert "\nInstructions: A demo server: try the long_task tool to watch progress.\n" in run.stdout
    assert re.search(r"^long_task +Work for a while", run.stdout, re.MULTILINE)
    everything = cli(project, "inspect", "everything")
    assert everything.status == 0, everything.stderr
    assert re.search(r"^Tools \(1[0-9]\)$", everything.stdout, re.MULTILINE)
    failed = cli(project, "inspect", "broken")
    assert failed.status == 1 and "server 'broken' failed" in failed.stderr


def _stdout_nobody_reads(kind: str) -> int:
    """A descriptor for a child's stdout whose reader is already gone (so no write can win a race)."""
    if kind == "pty":  # a terminal that closed: writes fail with EIO, and stdout is line-buffered
        reader, writer = os.openpty()
    else:
        reader, writer = os.pipe()
    os.close(reader)
    return writer


@pytest.mark.parametrize("kind", ["pipe", "pty"])
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "PYTHONUNBUFFERED"])
def test_output_nobody_reads_ends_quietly(project: Path, kind: str, unbuffered: bool) -> None:
    # Python buffers stdout by what it is (a pipe: blocks, a terminal: lines) and by PYTHONUNBUFFERED,
    # so the closed pipe is met by a write during the command or by the last flush: the same either way.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    stdout = _stdout_nobody_reads(kind)
    try:
        command = [SCRIPT, "inspect", "--stdio", f"{sys.executable} -m mcp_sansio_cli.demo_server"]
        child = subprocess.run(command, cwd=project, stdout=stdout, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, env=env, timeout=90, check=False)
    finally:
        os.close(stdout)
    assert (child.returncode, child.stderr) == (1, b"")


def test_inspect_takes_a_name_or_a_target_not_both(project: Path) -> None:
    run = cli(project, "inspect", "demo", "--stdio", "python server.py")
    assert (run.status, run.stderr) == (2, "mcp-sansio: error: inspect takes a SERVER name or --stdio/--url, "
                                           "not both\n")


def test_call_with_timing_prints_where_the_time_went_on_stderr(project: Path) -> None:
    server = f"{sys.executable} -m mcp_sansio_cli.demo_server"
    run = cli(project, "call", "add", "--args", '{"a": 1, "b": 2}', "--stdio", server, "--timing", "--json")
    assert run.status == 0, run.stderr
    assert run.result()["content"][0]["text"] == "3.0"  # stdout is still the result alone
    (line,) = [line for line in run.stderr.splitlines() if line.startswith("timing (ms): ")]
    phases = dict(part.rsplit(" ", 1) for part in line.removeprefix("timing (ms): ").split(" | "))
    assert list(phases) == ["connect+handshake", "tools/call add", "close", "total"]
    assert all(float(ms) >= 0 for ms in phases.values())
    assert float(phases["total"]) >= float(phases["tools/call add"])

    configured = cli(project, "call", "mcp__demo__add", "--args", '{"a": 1, "b": 2}', "--timing")
    assert configured.status == 0, configured.stderr
    assert "timing (ms): start servers, tools/call mcp__demo__add, close " in configured.stderr


# ------------------------------------------------------------- read, inspect's listings


def hostile_spec(mode: str) -> str:
    """``--stdio`` for the hostile server in ``mode``."""
    command, args = sdk_server("hostile", mode)
    return " ".join([command, *args])


def test_inspect_shows_the_resource_templates(project: Path) -> None:
    run = cli(project, "inspect", "everything")
    assert run.status == 0, run.stderr
    pattern = r"^Resource templates \(2\)\nuri template +name\ndemo://resource/dynamic/text/\{resourceId\} +D"
    assert re.search(pattern, run.stdout, re.MULTILINE), run.stdout
    listed = cli(project, "inspect", "everything", "--json").json()
    assert {t["uriTemplate"] for t in listed["resource_templates"]} >= {"demo://resource/dynamic/blob/{resourceId}"}


def test_inspect_shows_what_it_listed_then_the_listing_that_failed(project: Path) -> None:
    run = cli(project, "inspect", "--stdio", hostile_spec("escapes"))
    assert run.status == 1
    for title in ("Tools (2)", "Resources (1)", "Resource templates (1)"):
        assert f"\n{title}\n" in run.stdout
    assert "Prompts" not in run.stdout
    assert run.stderr.startswith("mcp-sansio: error: listing the prompts failed: prompts broke ")
    listed = cli(project, "inspect", "--stdio", hostile_spec("escapes"), "--json")
    assert listed.status == 1 and listed.json()["prompts"] is None
    assert listed.json()["errors"]["prompts"].startswith("prompts broke")


def test_read_prints_text_as_it_is_and_blobs_by_type_and_size(project: Path) -> None:
    run = cli(project, "read", "demo://readme", "demo")
    readme = ("mcp-sansio demo server\n\n"
              "A pure state machine on one side, a thin asyncio driver on the other.\n")
    assert (run.status, run.stdout) == (0, readme), run.stderr
    blob = cli(project, "read", "demo://resource/dynamic/blob/1", "everything")
    # the blob is "Resource 1: This is a base64 blob created at <h:mm:ss AM>": 55 or 56 bytes
    # by the hour of the clock the server read
    assert blob.status == 0 and re.fullmatch(r"\[blob text/plain, 5[56] bytes\]\n", blob.stdout), blob.stderr
    raw = cli(project, "read", "demo://resource/dynamic/blob/1", "everything", "--json").result()
    assert raw["contents"][0]["uri"] == "demo://resource/dynamic/blob/1" and "blob" in raw["contents"][0]
    direct = cli(project, "read", "demo://readme", "--stdio", DEMO_SPEC)
    assert direct.stdout == run.stdout


def test_read_needs_a_server(project: Path) -> None:
    run = cli(project, "read", "demo://readme")
    assert run.status == 2 and run.stderr.startswith("mcp-sansio: error: read needs a server")


# ------------------------------------------------------------------ call: progress and logs

LONG_TASK = ("call", "long_task", "--args", '{"steps": 3, "interval": 0.01}')


@pytest.mark.parametrize("target", [("--stdio", DEMO_SPEC), ()],
                         ids=["stdio", "configured"])
def test_call_shows_progress_on_a_pipe_only_when_verbose(project: Path, target: tuple[str, ...]) -> None:
    name = ("long_task",) if target else ("mcp__demo__long_task",)
    args = (*LONG_TASK[:1], *name, *LONG_TASK[2:], *target)
    quiet = cli(project, *args)
    assert (quiet.status, quiet.stdout, quiet.stderr) == (0, "finished 3 steps\n", "")
    verbose = cli(project, *args, "--verbose")
    assert verbose.status == 0
    assert verbose.stderr.splitlines() == [f"[{'#' * n}{'-' * (20 - n)}] {step}/3 step {step} of 3"
                                           for step, n in ((1, 7), (2, 13), (3, 20))]


def test_call_draws_a_live_progress_line_on_a_terminal_and_clears_it(project: Path) -> None:
    reader, writer = os.openpty()
    try:
        child = subprocess.run([SCRIPT, *LONG_TASK, "--stdio", DEMO_SPEC], cwd=project,
                               stdout=subprocess.PIPE, stderr=writer, timeout=90, check=False)
        os.close(writer)
        shown = b""
        while chunk := _read_pty(reader):
            shown += chunk
    finally:
        os.close(reader)
    assert (child.returncode, child.stdout) == (0, b"finished 3 steps\n")
    assert shown.startswith(b"\r[#######-------------] 1/3 step 1 of 3\x1b[K")
    assert b"\r[####################] 3/3 step 3 of 3\x1b[K" in shown and shown.endswith(b"\r\x1b[K")


def _read_pty(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the terminal's other side is closed and drained
        return b""


def test_call_shows_the_servers_log_messages_on_stderr(project: Path) -> None:
    run = cli(project, "call", "poke", "--stdio", hostile_spec("escapes"))
    assert run.status == 0
    [line] = run.stderr.splitlines()
    assert line.startswith(r"error logger \x1b[2J\x1b]0;owned\x07 X\0\x9b31m\u202e fake row: log \x1b[2J")


def test_a_refused_elicitation_over_http_is_one_clean_line(project: Path) -> None:
    port = free_port()
    command, args = sdk_server("sdk_server", "--transport", "streamable-http", "--port", str(port))
    with running_http_server(command, args, None, port, "/mcp") as url:
        run = cli(project, "call", "elicit", "--url", url)
    assert (run.status, run.stdout) == (1, "")
    assert run.stderr == ("mcp-sansio: error: Client did not declare the form elicitation capability "
                          "required by resolver '__main__:_ask_contact' (JSON-RPC error -32021)\n")


# --------------------------------------------------------- what a hostile server supplies

RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize("command", [
    ("inspect", "--stdio", "{spec}"), ("inspect", "--stdio", "{spec}", "--json"),
    ("call", "poke", "--stdio", "{spec}"), ("call", "poke", "--stdio", "{spec}", "--json"),
    ("call", "poke", "--stdio", "{spec}", "--args", '{"x": "fail"}'),
    ("read", "file:///a", "--stdio", "{spec}"), ("read", "file:///a", "--stdio", "{spec}", "--json"),
    ("inspect", "hostile"), ("tools", "hostile"), ("resources", "hostile"), ("prompts", "hostile"),
    ("servers", "hostile"), ("call", "mcp__hostile__poke"),
])
def test_no_control_character_a_server_supplies_reaches_the_terminal(
    project: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    spec = hostile_spec("escapes")
    config = tmp_path / "hostile.json"
    server_command, server_args = sdk_server("hostile", "escapes")
    servers = {"hostile": {"command": server_command, "args": server_args}}
    config.write_text(json.dumps({"mcpServers": servers}))
    args = [spec if part == "{spec}" else part for part in command]
    run = cli(project, *args, *([] if "--stdio" in args else ["--config", str(config)]))
    assert run.status in (0, 1), run.stderr
    for stream in (run.stdout, run.stderr):
        assert not RAW_CONTROL.search(stream), stream
    if command[0] != "servers":  # which shows nothing the server wrote
        assert "\\x1b[2J" in run.stdout + run.stderr or "\\u001b[2J" in run.stdout
    if command[0] in ("tools", "resources"):  # a newline in a name or URI does not fake a row
        assert "\nfake  row" not in run.stdout and "\nfake row" not in run.stdout

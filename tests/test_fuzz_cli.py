"""``mcp-sansio fuzz`` and ``replay`` end to end against the planted-bug servers in
``tests/fuzz_servers`` (each bug must be found within a short budget, with a reproducer
that ``replay`` confirms), plus exit statuses and report formats."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import pytest
from peer_servers import free_port

ROOT = Path(__file__).resolve().parents[1]
PLANTED = ROOT / "tests" / "fuzz_servers" / "planted.py"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_sansio_cli", *args],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def server(bug: str) -> str:
    return f"{sys.executable} {PLANTED} {bug}"


@pytest.mark.parametrize(
    ("bug", "rule", "method"),
    [
        ("deep", "server-crashed", "tools/call"),
        ("code", "method-not-found-code", "fuzz/unknown"),
        ("cancel", "ping-unanswered", "ping"),
        ("leak", "memory-growth", None),
        ("child", "leftover-process", None),
    ],
)
def test_planted_bug_is_found_and_replays(bug: str, rule: str, method: str | None, tmp_path: Path) -> None:
    done = cli(
        "fuzz",
        "--stdio",
        server(bug),
        "--budget",
        "8s",
        "--seed",
        "1",
        "--json",
        "--out",
        "traces",
        "--memory-limit",
        "64",
        "--ping-timeout",
        "1",
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    found = {(f["rule"], f["method"]): f for f in report["findings"]}
    assert (rule, method) in found, report["findings"]
    finding = found[rule, method]
    assert {"rule", "method", "message", "spec", "trace"} <= finding.keys()
    assert Path(tmp_path / finding["trace"]).exists()
    if rule not in ("memory-growth", "leftover-process"):
        assert finding["steps"] <= 6
    if rule != "leftover-process":  # a memory-growth trace replays too, sampling memory
        again = cli("replay", finding["trace"], "--stdio", server(bug), cwd=tmp_path)
        assert again.returncode == 1, again.stdout + again.stderr
        assert "still fails" in again.stdout
        fixed = cli("replay", finding["trace"], "--stdio", server("none"), cwd=tmp_path)
        assert fixed.returncode == 0, fixed.stdout
        assert "no longer fails" in fixed.stdout


def fuzz_json(bug: str, tmp_path: Path, budget: str = "4s", *extra: str) -> dict[str, object]:
    args = ("--budget", budget, "--json", "--out", "traces", *extra)
    done = cli("fuzz", "--stdio", server(bug), *args, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert isinstance(report, dict)
    return report


def keys(report: dict[str, object]) -> dict[tuple[str, str | None, str], dict[str, object]]:
    findings = report["findings"]
    assert isinstance(findings, list)
    return {(f["rule"], f["method"], f["cause"]): f for f in findings}


@pytest.mark.parametrize(
    ("bug", "rule", "method"),
    [
        ("badversion", "unknown-version", "initialize"),
        ("unlisted", "unknown-tool-accepted", "tools/call"),
        ("cursor", "cursor-loop", "tools/list"),
        ("cycle", "cursor-loop", "tools/list"),
        ("drop", "no-response", "fuzz/unknown"),
    ],
)
def test_round_two_misses_are_found_and_replay(bug: str, rule: str, method: str, tmp_path: Path) -> None:
    # Silence is confirmed by a replay that waits the full timeout: ``drop`` needs the time.
    found = keys(fuzz_json(bug, tmp_path, "12s" if bug == "drop" else "4s"))
    assert (rule, method, "") in found, found
    trace = str(found[rule, method, ""]["trace"])
    again = cli("replay", trace, "--stdio", server(bug), cwd=tmp_path)
    assert again.returncode == 1, again.stdout + again.stderr
    fixed = cli("replay", trace, "--stdio", server("none"), cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout


def test_two_causes_under_one_rule_are_reported_apart(tmp_path: Path) -> None:
    found = keys(fuzz_json("twobugs", tmp_path, "5s"))
    assert ("unknown-response-id", "notifications/cancelled", "answered-notification") in found, found
    assert ("unknown-response-id", "ping", "id-type") in found, found


def test_wrong_ids_do_not_burn_the_budget_on_timeouts(tmp_path: Path) -> None:
    report = fuzz_json("wrongid", tmp_path, "8s")
    found = keys(report)
    assert ("unknown-response-id", "ping", "id-type") in found, found
    assert not [k for k in found if k[0] in ("no-response", "ping-unanswered")], found
    clean = fuzz_json("none", tmp_path, "8s")
    stats, twin = report["stats"], clean["stats"]
    assert isinstance(stats, dict) and isinstance(twin, dict)
    # Waiting out a timeout per wrongly numbered answer ran about 1 case in 100 of its twin's.
    assert stats["cases"] * 10 >= twin["cases"], (stats, twin)


@pytest.mark.parametrize("budget", [10.0])
def test_the_budget_is_kept_within_5_percent(budget: float, tmp_path: Path) -> None:
    # ``drop`` leaves requests unanswered (so every case waits) and gives a finding to shrink.
    started = time.monotonic()
    cli("fuzz", "--help", cwd=tmp_path)
    startup = time.monotonic() - started  # the interpreter's start and exit on this machine, now
    started = time.monotonic()
    report = fuzz_json("drop", tmp_path, f"{budget}s")
    wall = time.monotonic() - started
    assert isinstance(report["duration"], float)
    assert report["duration"] <= budget * 1.05, report["duration"]
    assert wall <= budget * 1.05 + startup + 1.0, (wall, startup)


def test_the_findings_table_fits_80_columns_without_cutting_rules(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_sansio_cli", "fuzz", "--stdio", server("twobugs"), "--budget", "4s"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "80", "TERM": "dumb"},
    )
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    rows = [line for line in lines if line.startswith("│")]
    assert rows and all(len(line) <= 80 for line in rows)
    assert any("│ unknown-response-id │" in line for line in rows), done.stdout
    replays = [line for line in lines if line.startswith("  replay: ")]
    assert replays
    for line in replays:
        argv = shlex.split(line.removeprefix("  replay: "))
        assert argv[:2] == ["mcp-sansio", "replay"] and argv[3:] == ["--stdio", server("twobugs")]
        assert Path(tmp_path / argv[2]).exists()


def test_exit_2_still_writes_the_reason_and_ci_files(tmp_path: Path) -> None:
    for command in ("/nonexistent/server", f"{sys.executable} -c 'import time; time.sleep(60)'"):
        done = cli(
            "fuzz", "--stdio", command, "--budget", "2s", "--json", "--junit", "j.xml", "--sarif", "s.json",
            cwd=tmp_path,
        )
        assert done.returncode == 2, done.stdout + done.stderr
        report = json.loads(done.stdout)
        assert report["error"] and report["findings"] == []
        suite = ElementTree.parse(tmp_path / "j.xml").getroot()
        assert suite.get("errors") == "1"
        error = suite.find("testcase/error")
        assert error is not None and error.get("message") == report["error"]
        invocation = json.loads((tmp_path / "s.json").read_text())["runs"][0]["invocations"][0]
        assert invocation["executionSuccessful"] is False
        (tmp_path / "j.xml").unlink()
        (tmp_path / "s.json").unlink()


def test_a_clean_server_exits_0_with_reports(tmp_path: Path) -> None:
    done = cli(
        "fuzz",
        "--stdio",
        server("none"),
        "--budget",
        "3s",
        "--json",
        "--junit",
        "j.xml",
        "--sarif",
        "s.json",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["findings"] == []
    assert report["stats"]["requests"] > 100
    assert "no findings" in (tmp_path / "j.xml").read_text()
    assert json.loads((tmp_path / "s.json").read_text())["runs"][0]["results"] == []


def test_findings_go_to_junit_and_sarif(tmp_path: Path) -> None:
    done = cli(
        "fuzz",
        "--stdio",
        server("code"),
        "--budget",
        "2s",
        "--junit",
        "j.xml",
        "--sarif",
        "s.json",
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "method-not-found-code" in done.stdout
    assert '<failure type="method-not-found-code"' in (tmp_path / "j.xml").read_text()
    suite = ElementTree.parse(tmp_path / "j.xml").getroot()
    assert suite.tag == "testsuite" and suite.get("failures") == "1"
    results = json.loads((tmp_path / "s.json").read_text())["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["method-not-found-code"]


def test_the_same_seed_sends_the_same_inputs(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        cli("fuzz", "--stdio", server("code"), "--budget", "2s", "--seed", "9", "--out", name, cwd=tmp_path)
        runs.append(next((tmp_path / name).glob("*.jsonl")).read_text().splitlines()[1])
    assert json.loads(runs[0])["msg"] == json.loads(runs[1])["msg"]


def test_an_unstartable_server_exits_2(tmp_path: Path) -> None:
    done = cli("fuzz", "--stdio", "/nonexistent/server", "--budget", "2s", cwd=tmp_path)
    assert done.returncode == 2
    assert "cannot start" in done.stderr
    silent = cli("fuzz", "--stdio", f"{sys.executable} -c pass", "--budget", "2s", cwd=tmp_path)
    assert silent.returncode == 2
    assert "did not open a session" in silent.stderr
    assert cli("fuzz", cwd=tmp_path).returncode == 2
    assert cli("fuzz", "unconfigured-name", cwd=tmp_path).returncode == 2


def test_an_era_the_server_does_not_speak_is_refused_with_its_answer(tmp_path: Path) -> None:
    # It quoted the server's stderr instead ("Starting default (STDIO) server..." for the
    # reference server), which says nothing about why.
    done = cli("fuzz", "--stdio", server("none"), "--era", "2026-07-28", "--budget", "5s", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == ("mcp-sansio: error: the server did not open a session (2026-07-28: "
                           "server/discover answered error -32601: no method server/discover)\n")


def test_a_configured_server_is_fuzzed_by_name(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"planted": {"command": sys.executable, "args": [str(PLANTED), "code"]}}})
    )
    done = cli("fuzz", "planted", "--budget", "2s", "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["target"] == "planted"


PLANTED_HTTP = ROOT / "tests" / "fuzz_servers" / "planted_http.py"


@contextlib.contextmanager
def http_server(bug: str, mode: str = "") -> Iterator[str]:
    """The planted server over Streamable HTTP on a free loopback port (``mode`` ``auth``:
    it wants ``Bearer token-a`` or ``Bearer token-b``)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(PLANTED_HTTP), bug, str(port), *([mode] if mode else [])])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.1):
                break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize(
    ("bug", "rule", "method", "replays"),
    [
        ("deep", "server-crashed", "tools/call", False),
        ("code", "method-not-found-code", "fuzz/unknown", True),
        ("cancel", "ping-unanswered", "ping", False),
        ("version", "http-status", "ping", True),
        ("session", "session-reuse", "ping", True),
    ],
)
def test_planted_bug_is_found_over_http(
    bug: str, rule: str, method: str, replays: bool, tmp_path: Path
) -> None:
    with http_server(bug) as url:
        done = cli("fuzz", "--url", url, "--budget", "4s", "--json", "--ping-timeout", "1", cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        found = {(f["rule"], f["method"]): f for f in json.loads(done.stdout)["findings"]}
        assert (rule, method) in found, found
        if replays:
            trace = found[rule, method]["trace"]
            assert cli("replay", trace, "--url", url, cwd=tmp_path).returncode == 1
    if replays:
        with http_server("none") as url:
            assert cli("replay", trace, "--url", url, cwd=tmp_path).returncode == 0


def test_a_clean_http_server_has_no_findings(tmp_path: Path) -> None:
    with http_server("none") as url:
        done = cli("fuzz", "--url", url, "--budget", "3s", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["transport"] == "http"


def test_an_unreachable_url_exits_2(tmp_path: Path) -> None:
    port = free_port()
    done = cli("fuzz", "--url", f"http://127.0.0.1:{port}/mcp", "--budget", "2s", cwd=tmp_path)
    assert done.returncode == 2
    assert "did not open a session" in done.stderr
    assert cli("fuzz", "--url", "ftp://example", cwd=tmp_path).returncode == 2


TOKENS = ("--header", "Authorization: Bearer token-a", "--other-header", "Authorization: Bearer token-b")


@pytest.mark.parametrize(
    ("bug", "mode", "rule", "cause"),
    [
        ("origin", "", "origin-not-validated", "request"),
        ("origin", "", "origin-not-validated", "delete"),
        ("sessionid", "", "session-id", "predictable"),
        ("anytoken", "auth", "auth-status", ""),
        ("nometa", "auth", "auth-discovery", ""),
        ("shared", "auth", "session-not-bound", ""),
    ],
)
def test_transport_defects_are_found_over_http(
    bug: str, mode: str, rule: str, cause: str, tmp_path: Path
) -> None:
    extra = TOKENS if mode else ()
    with http_server(bug, mode) as url:
        done = cli("fuzz", "--url", url, "--budget", "3s", "--json", *extra, cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        report = json.loads(done.stdout)
        found = {(f["rule"], f["cause"]): f for f in report["findings"]}
        assert (rule, cause) in found, report["findings"]
        assert found[rule, cause]["time"] < 1.5  # the transport's probes come first
        assert found[rule, cause]["spec"].startswith(("MCP 2025-11-25", "MCP 2025-06-18"))
        trace = found[rule, cause]["trace"]
        replay = ("--header", "Authorization: Bearer token-a") if mode else ()
        assert cli("replay", trace, "--url", url, *replay, cwd=tmp_path).returncode == 1
    with http_server("none", mode) as url:
        assert cli("replay", trace, "--url", url, *replay, cwd=tmp_path).returncode == 0


def test_a_clean_server_with_authorization_has_no_findings(tmp_path: Path) -> None:
    with http_server("none", "auth") as url:
        done = cli("fuzz", "--url", url, "--budget", "3s", "--json", *TOKENS, cwd=tmp_path)
    assert done.returncode == 0, done.stdout

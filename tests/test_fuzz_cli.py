"""``mcp-sansio fuzz`` and ``replay`` end to end against the planted-bug servers in
``tests/fuzz_servers`` (each bug must be found within a short budget, with a reproducer
that ``replay`` confirms), plus exit statuses and report formats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLANTED = ROOT / "tests" / "fuzz_servers" / "planted.py"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_sansio_cli.fuzz_cmd", *args],
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
        "6s",
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
        again = cli("replay", finding["trace"], "--stdio", server(bug), cwd=tmp_path)
        assert again.returncode == 1, again.stdout + again.stderr
        assert "still fails" in again.stdout
        fixed = cli("replay", finding["trace"], "--stdio", server("none"), cwd=tmp_path)
        assert fixed.returncode == 0, fixed.stdout
        assert "no longer fails" in fixed.stdout


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


def test_a_configured_server_is_fuzzed_by_name(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"planted": {"command": sys.executable, "args": [str(PLANTED), "code"]}}})
    )
    done = cli("fuzz", "planted", "--budget", "2s", "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["target"] == "planted"

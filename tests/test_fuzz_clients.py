"""``mcp-sansio fuzz --client`` (hostile-server mode) end to end: each planted client defect
is found by the scenario that provokes it and replays; the clean twin (and this project's
own client) come through every scenario; the official Python SDK client shows its defects."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = ROOT / "tests" / "fuzz_clients"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_sansio_cli", *args],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def planted(bug: str) -> str:
    return f"{sys.executable} {CLIENTS / 'planted_client.py'} {bug}"


def fuzz(client: str, tmp_path: Path, *scenarios: str, timeout: str = "2") -> dict[str, object]:
    picks = [arg for name in scenarios for arg in ("--scenario", name)]
    done = cli(
        "fuzz",
        "--client",
        client,
        "--budget",
        "120s",
        "--client-timeout",
        timeout,
        "--json",
        *picks,
        cwd=tmp_path,
    )
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert isinstance(report, dict)
    return report


@pytest.mark.parametrize(
    ("bug", "scenario", "rule"),
    [
        ("utf8", "invalid-utf8", "client-crashed"),
        ("wait", "wrong-id", "client-hung"),
        ("version", "unsupported-version", "client-kept-unsupported-version"),
        ("line", "unbounded-line", "client-memory"),
    ],
)
def test_planted_client_defects_are_found_and_replay(
    bug: str, scenario: str, rule: str, tmp_path: Path
) -> None:
    report = fuzz(planted(bug), tmp_path, scenario)
    found = {(f["rule"], f["method"]): f for f in report["findings"]}  # type: ignore[attr-defined]
    assert (rule, scenario) in found, report
    finding = found[rule, scenario]
    assert finding["spec"] and Path(tmp_path / finding["trace"]).exists()
    again = cli("replay", finding["trace"], "--client", planted(bug), cwd=tmp_path)
    assert again.returncode == 1 and "still fails" in again.stdout, again.stdout + again.stderr
    fixed = cli("replay", finding["trace"], "--client", planted("none"), cwd=tmp_path)
    assert fixed.returncode == 0 and "no longer fails" in fixed.stdout, fixed.stdout + fixed.stderr


@pytest.mark.parametrize("client", ["planted_client.py none", "sansio_client.py"])
def test_a_robust_client_comes_through_every_scenario(client: str, tmp_path: Path) -> None:
    report = fuzz(f"{sys.executable} {CLIENTS / client}", tmp_path)
    assert report["findings"] == [], report["findings"]
    outcomes = report["outcomes"]
    assert isinstance(outcomes, dict) and len(outcomes) == 12
    assert outcomes["duplicate-answer"] == "handled"


def test_the_python_sdk_client_shows_three_defects(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    scenarios = ("invalid-utf8", "unbounded-line", "unsupported-version")
    report = fuzz(f"{sys.executable} {CLIENTS / 'sdk_client.py'}", tmp_path, *scenarios, timeout="3")
    found = {(f["rule"], f["method"]) for f in report["findings"]}  # type: ignore[attr-defined]
    assert ("client-wedged", "invalid-utf8") in found, found  # invalid UTF-8 wedges its stream
    # No line length limit: it held the line until its own timeout, or the quadratic buffer
    # starved its event loop so that even the timeout never fired.
    assert {("client-memory", "unbounded-line"), ("client-hung", "unbounded-line")} & found, found
    assert ("client-untyped-error", "unsupported-version") in found, found  # an ExceptionGroup


def test_hostile_mode_over_http_gives_the_client_a_url(tmp_path: Path) -> None:
    scenarios = ("duplicate-answer", "invalid-utf8", "session-expiry", "progress-drip")
    picks = [arg for name in scenarios for arg in ("--scenario", name)]
    client = f"{sys.executable} {CLIENTS / 'sansio_client.py'}"
    done = cli(
        "fuzz",
        "--client",
        client,
        "--client-transport",
        "http",
        "--budget",
        "120s",
        "--client-timeout",
        "2",
        "--json",
        *picks,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["transport"] == "client-http"
    assert report["outcomes"]["duplicate-answer"] == "handled"
    assert report["outcomes"]["session-expiry"].startswith("refused")  # it gave up: no endless re-initialize


def test_a_budget_too_short_for_one_scenario_is_refused_saying_how_long_it_must_be(tmp_path: Path) -> None:
    # It ran nothing and said "no findings", status 0: a CI job that passed without fuzzing.
    client = f"{sys.executable} {CLIENTS / 'sansio_client.py'}"
    done = cli("fuzz", "--client", client, "--budget", "10s", "--json", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == ("mcp-sansio: error: --budget 10s runs no scenario: each may take 15s (twice "
                           "--client-timeout, plus 5s); give --budget 16s or more\n")
    assert json.loads(done.stdout)["error"].startswith("--budget 10s runs no scenario")
    done = cli("fuzz", "--client", client, "--budget", "10s", "--client-timeout", "1",
               "--scenario", "not-json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{client} (client, seed 0): " in " ".join(done.stdout.split())  # no "None" for the era


def test_a_finding_over_http_is_replayed_with_client(capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_sansio_cli.fuzz_cmd import _print
    from mcp_sansio_fuzz.model import Report, ReportedFinding, Stats

    finding = ReportedFinding(rule="client-crashed", level="ROBUSTNESS", method="invalid-utf8", message="m",
                              spec="s", trace="mcp-sansio-fuzz/t.jsonl", steps=1, time=0.1)
    _print(Report(target="node c.mjs", transport="client-http", version=None, seed=0, duration=1.0,
                  stats=Stats(), findings=[finding]))
    out = capsys.readouterr().out
    assert "  replay: mcp-sansio replay mcp-sansio-fuzz/t.jsonl --client 'node c.mjs'\n" in out


def test_the_python_api_refuses_a_budget_too_short_for_one_scenario() -> None:
    from mcp_sansio_fuzz import ClientFuzzer, Options

    with pytest.raises(ValueError, match="a budget of 10 s runs no scenario: each may take 15 s"):
        ClientFuzzer(f"{sys.executable} {CLIENTS / 'sansio_client.py'}", Options(seed=1, budget=10)).run()

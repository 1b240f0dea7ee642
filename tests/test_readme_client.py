"""The README's client examples run as printed, as a stranger runs them: in an empty directory,
with the installed ``python`` first on ``PATH``, ``server.py`` made by the CLI section's first
command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = (Path(__file__).parent.parent / "README.md").read_text()


def section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def blocks(title: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(title), re.S)


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    """An empty directory holding what the CLI section's first block makes: ``server.py`` and
    ``.mcp.json`` (whose ``npx -y`` needs the network: the tests use the installed peer)."""
    run(["sh", "-c", blocks("The CLI", "sh")[0]], tmp_path)
    assert (tmp_path / "server.py").is_file()
    config = json.loads((tmp_path / ".mcp.json").read_text())
    assert config["mcpServers"]["everything"]["args"][-1] == "@modelcontextprotocol/server-everything"
    return tmp_path


def run(argv: list[str], cwd: Path) -> str:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # "python" is ours
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_drivers_example_runs_as_a_script_and_prints_what_the_readme_says(directory: Path) -> None:
    (directory / "client.py").write_text(blocks("The drivers", "python")[0])
    out = run(["python", "client.py"], directory)
    assert out.splitlines() == ["mcp-sansio-demo 2026-07-28", "hi False None"]


def test_the_core_by_hand_example_drives_a_real_server(directory: Path) -> None:
    (directory / "by_hand.py").write_text(blocks("The core by hand", "python")[0])
    out = run(["python", "by_hand.py"], directory)
    assert out == "[TextContent(text='hi', annotations=None, meta=None)]\n"


def test_the_cli_examples_on_server_py_run_as_printed(directory: Path) -> None:
    lines = [line.split("  #")[0] for line in blocks("The CLI", "sh")[1].splitlines()
             if '--stdio "python server.py"' in line]
    assert [line.split()[1] for line in lines] == ["inspect", "call", "prompt", "read"]
    outputs = [run(["sh", "-c", line], directory) for line in lines]
    assert "echo" in outputs[0] and "greeting" in outputs[0] and "demo://readme" in outputs[0]
    assert '"text":"hi"' in outputs[1]
    assert outputs[2].endswith("user: Say hello to Ada.\n")
    assert outputs[3].startswith("mcp-sansio demo server\n")


def test_the_readme_installs_extras_from_the_checkout() -> None:
    # mcp-sansio is not on PyPI: "pip install 'mcp-sansio[otel]'" found no distribution.
    assert "pip install 'mcp-sansio" not in README
    assert "pip install '.[otel]'" in README and "pip install '.[redis]'" in README

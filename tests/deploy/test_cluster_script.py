"""The README's recipe for a deployment on loopback, ``python tests/deploy/cluster.py APP.py``,
run as a stranger runs it: from the checkout, with no ``PYTHONPATH``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mcp_sansio import ClientConfig
from mcp_sansio.types import TextContent
from mcp_sansio_sync import connect_http


def test_the_readme_cluster_recipe_runs_as_a_script_and_stops_when_its_input_closes() -> None:
    script = Path(__file__).with_name("cluster.py")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    proc = subprocess.Popen([sys.executable, str(script), str(Path(__file__).with_name("deployed_app.py"))],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=script.parent.parent.parent)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else url
        with connect_http(url, config=ClientConfig(protocol="2025-11-25")) as client:
            [content] = client.call_tool("add", {"a": 2, "b": 40}).content
            assert isinstance(content, TextContent) and content.text == "42"
        proc.stdin.close()
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

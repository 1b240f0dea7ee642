"""The benchmarks' ``--only`` as a stranger types it (``--only asyncio``): a filter that keeps
no row is refused with the rows it could keep, before anything is measured; it ran nothing
and printed an empty table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize(("script", "names"), [
    ("count_server.py", "the rows: h11 JSON, "),
    ("bench_server.py", "the transports: stdio, HTTP JSON, HTTP SSE"),
    ("bench_sessions_http.py", "the servers: mcp-sansio h11 (asyncio), "),
    ("fuzz_corpus.py", "the servers: "),
])
def test_an_only_that_keeps_no_row_is_refused_naming_the_rows(script: str, names: str) -> None:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(BENCH / script), "--only", "nothing-starts-so"], env=env,
                          capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == ""
    assert "error: --only 'nothing-starts-so' " in done.stderr and names in done.stderr

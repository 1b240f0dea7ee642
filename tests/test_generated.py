"""What is generated from the code is current: the blocking driver (``scripts/unasync.py``)
and the state diagrams (``scripts/state_diagram.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize("script", ["unasync.py", "state_diagram.py"])
def test_generated_files_are_current(script: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--check"], capture_output=True,
                          cwd=ROOT, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()

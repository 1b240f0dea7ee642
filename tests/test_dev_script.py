"""``scripts/dev``, the README's quick start: what decides that ``.venv`` must be installed again."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "scripts" / "dev"


def venv_key(checkout: Path) -> str:
    """``venv_key`` of ``scripts/dev``, run in ``checkout``."""
    function = re.search(r"^venv_key\(\) \{\n.*?^\}\n", SCRIPT.read_text(), re.S | re.M)
    assert function is not None
    done = subprocess.run(["bash", "-c", f"{function.group(0)}venv_key"], cwd=checkout, capture_output=True,
                          text=True, timeout=30, check=True)
    return done.stdout.strip()


def test_the_egg_info_an_install_writes_does_not_ask_for_another_install(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'mcp-sansio'\n")
    (tmp_path / "mcp_sansio").mkdir()
    (tmp_path / "drivers" / "mcp_sansio_asyncio").mkdir(parents=True)
    before = venv_key(tmp_path)
    (tmp_path / "mcp_sansio.egg-info").mkdir()  # what `pip install -e .` leaves beside the package
    assert venv_key(tmp_path) == before
    (tmp_path / "drivers" / "mcp_sansio_trio").mkdir()  # a new top-level package does
    assert venv_key(tmp_path) != before

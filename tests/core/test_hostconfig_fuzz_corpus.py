"""Replay the hostconfig fuzz seeds (and reproducers) without atheris."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

FUZZ = Path(__file__).parents[2] / "fuzz"


def _target() -> object:
    spec = importlib.util.spec_from_file_location("fuzz_hostconfig", FUZZ / "fuzz_hostconfig.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.test_one_input


@pytest.mark.parametrize("seed", sorted((FUZZ / "corpus" / "hostconfig").iterdir()), ids=lambda p: p.name)
def test_fuzz_seed_raises_nothing_undocumented(seed: Path) -> None:
    test_one_input = _target()
    assert callable(test_one_input)
    test_one_input(seed.read_bytes())

"""Replay the auth_metadata fuzz seeds (and reproducers) without atheris."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest

FUZZ = Path(__file__).parents[2] / "fuzz"


def _target() -> Callable[[bytes], None]:
    spec = importlib.util.spec_from_file_location("fuzz_auth_metadata", FUZZ / "fuzz_auth_metadata.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    target: Callable[[bytes], None] = module.test_one_input
    return target


@pytest.mark.parametrize("seed", sorted((FUZZ / "corpus" / "auth_metadata").iterdir()), ids=lambda p: p.name)
def test_fuzz_seed_raises_nothing_undocumented(seed: Path) -> None:
    _target()(seed.read_bytes())

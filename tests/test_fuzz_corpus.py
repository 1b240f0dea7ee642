"""Replay every fuzz target's seeds and crash reproducers under plain pytest (no atheris).

Each ``fuzz/fuzz_<target>.py`` exposes ``test_one_input(data: bytes)`` and has its corpus
in ``fuzz/corpus/<target>/``; a target without a corpus fails here (STYLE.md section 10).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

FUZZ = Path(__file__).parent.parent / "fuzz"
TARGETS = sorted(path.stem.removeprefix("fuzz_") for path in FUZZ.glob("fuzz_*.py"))


def _corpus(target: str) -> list[Path]:
    directory = FUZZ / "corpus" / target
    return sorted(p for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []


@cache
def _entry_point(target: str) -> Callable[[bytes], None]:
    """``test_one_input`` of ``fuzz/fuzz_<target>.py``, imported once by path."""
    spec = importlib.util.spec_from_file_location(f"fuzz_{target}", FUZZ / f"fuzz_{target}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load fuzz/fuzz_{target}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    entry: Callable[[bytes], None] = module.test_one_input
    return entry


def test_the_core_targets_exist() -> None:
    assert {"framing", "jsonrpc", "session"} <= set(TARGETS)


@pytest.mark.parametrize("target", TARGETS)
def test_target_has_a_corpus(target: str) -> None:
    assert _corpus(target), f"fuzz/corpus/{target}/ holds no seed for fuzz/fuzz_{target}.py"


@pytest.mark.parametrize(
    ("target", "seed"),
    [(target, seed) for target in TARGETS for seed in _corpus(target)],
    ids=lambda value: value.name if isinstance(value, Path) else str(value),
)
def test_seed_replays_cleanly(target: str, seed: Path) -> None:
    _entry_point(target)(seed.read_bytes())

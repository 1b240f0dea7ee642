"""A small seeded generator, so the fuzzer's core takes its entropy as an argument.

The core may not import :mod:`random` (STYLE.md section 1); a run is reproducible from its
seed alone, on every platform and Python version, because the stream is defined here:
SplitMix64 (Steele, Lea and Flood, 2014), whose output is a pure function of the seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final, TypeVar

__all__ = ["Rng"]

T = TypeVar("T")

_MASK: Final = (1 << 64) - 1


class Rng:
    """A deterministic stream of 64-bit numbers from an integer seed.

    ``fork(label)`` derives an independent stream, so adding draws to one part of the
    fuzzer does not change the values another part sees for the same seed.
    """

    __slots__ = ("_state",)

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK

    def next64(self) -> int:
        """The next 64-bit value (SplitMix64)."""
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A value in ``[0, n)``; ``n`` must be positive."""
        return self.next64() % n

    def randint(self, low: int, high: int) -> int:
        """A value in ``[low, high]``, both included."""
        return low + self.below(high - low + 1)

    def random(self) -> float:
        """A float in ``[0, 1)``."""
        return (self.next64() >> 11) / float(1 << 53)

    def chance(self, p: float) -> bool:
        """``True`` with probability ``p``."""
        return self.random() < p

    def choice(self, items: Sequence[T]) -> T:
        """One of ``items`` (not empty)."""
        return items[self.below(len(items))]

    def fork(self, label: str) -> Rng:
        """An independent generator named ``label``, derived from this one's state."""
        digest = hashlib.sha256(f"{self._state}:{label}".encode()).digest()
        return Rng(int.from_bytes(digest[:8], "big"))

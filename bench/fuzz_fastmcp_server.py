# mypy: disable-error-code="untyped-decorator"
# (fastmcp lives in the corpus venv only, so its decorators are untyped here)
"""A small server on the standalone ``fastmcp`` package (4.x), for the fuzz corpus: the
shapes FastMCP users write (typed arguments, a Pydantic model, an enum, a resource
template, a prompt). Run with a Python that has ``fastmcp``:
``python bench/fuzz_fastmcp_server.py``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from fastmcp import FastMCP
from pydantic import BaseModel, Field

app = FastMCP("fastmcp-corpus")


class Unit(StrEnum):
    """A temperature unit."""

    CELSIUS = "C"
    FAHRENHEIT = "F"


class Point(BaseModel):
    """A point on a plane."""

    x: float
    y: float


@app.tool
def convert(value: float, to: Unit) -> float:
    """Convert a temperature to the other unit."""
    return value * 9 / 5 + 32 if to is Unit.FAHRENHEIT else (value - 32) * 5 / 9


@app.tool
def distance(a: Point, b: Point) -> float:
    """Euclidean distance between two points."""
    return float(((a.x - b.x) ** 2 + (a.y - b.y) ** 2) ** 0.5)


@app.tool
def repeat(text: Annotated[str, Field(max_length=50)], times: Annotated[int, Field(ge=1, le=5)] = 1) -> str:
    """Repeat a short text a few times."""
    return text * times


@app.resource("notes://{name}")
def note(name: str) -> str:
    """A note by name."""
    return f"note {name}"


@app.prompt
def review(code: str, language: str = "python") -> str:
    """Ask for a code review."""
    return f"Review this {language} code:\\n{code}"


if __name__ == "__main__":
    app.run(show_banner=False)

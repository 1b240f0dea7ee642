"""The fuzzer's errors, under the library's base class."""

from __future__ import annotations

from ..errors import McpSansioError

__all__ = ["TraceError"]


class TraceError(McpSansioError):
    """A trace file cannot be read: not a trace, or a broken line."""

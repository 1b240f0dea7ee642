"""Parsing of ``WWW-Authenticate`` challenges (RFC 9110 section 11.6.1, RFC 6750).

``Bearer realm="mcp", error="insufficient_scope", scope="a b", resource_metadata="..."``
becomes ``[Challenge(scheme="bearer", params={...})]``. Lenient (an unquoted value may
hold any character but whitespace, comma and quote), bounded, never raises.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

__all__ = ["Challenge", "parse_www_authenticate"]

_MAX_HEADER: Final = 16 * 1024
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TOKEN68: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
# An unquoted parameter value: RFC 9110 wants a token, but servers send bare URLs
# (resource_metadata=https://...); take everything up to whitespace or a comma.
_BARE_VALUE: Final = re.compile(r'[^\s,"]+')
_SPACE: Final = re.compile(r"[ \t]*")


class Challenge(msgspec.Struct, frozen=True, kw_only=True):
    """One authentication challenge; ``scheme`` and parameter names are lower-case."""

    scheme: str
    params: dict[str, str]
    token68: str | None = None


def parse_www_authenticate(value: str) -> list[Challenge]:
    """Every challenge in a ``WWW-Authenticate`` value (or several joined with ``,``)."""
    text = value[:_MAX_HEADER]
    pos = 0
    challenges: list[Challenge] = []
    while pos < len(text):
        pos = _skip(text, pos, ", \t")
        m = _TOKEN.match(text, pos)
        if m is None:
            pos += 1
            continue
        scheme = m.group().lower()
        pos = _SPACE.match(text, m.end()).end()  # type: ignore[union-attr]  # always matches
        params: dict[str, str] = {}
        token68: str | None = None
        t68 = _TOKEN68.match(text, pos)
        if t68 is not None and _at_param_end(text, t68.end()) and "=" not in text[pos:t68.end()].rstrip("="):
            token68 = t68.group()
            pos = t68.end()
        else:
            pos = _parse_params(text, pos, params)
        challenges.append(Challenge(scheme=scheme, params=params, token68=token68))
    return challenges


def _parse_params(text: str, pos: int, params: dict[str, str]) -> int:
    while pos < len(text):
        pos = _skip(text, pos, ", \t")
        start = pos
        m = _TOKEN.match(text, pos)
        if m is None:
            return pos + 1
        after = _SPACE.match(text, m.end()).end()  # type: ignore[union-attr]  # always matches
        if after >= len(text) or text[after] != "=":
            return start  # a new challenge's scheme
        pos = _SPACE.match(text, after + 1).end()  # type: ignore[union-attr]  # "[ \t]*" always matches
        name = m.group().lower()
        if pos < len(text) and text[pos] == '"':
            value, pos = _quoted(text, pos + 1)
        else:
            v = _BARE_VALUE.match(text, pos)
            value = v.group() if v else ""
            pos = v.end() if v else pos
        params.setdefault(name, value)
    return pos


def _quoted(text: str, pos: int) -> tuple[str, int]:
    out: list[str] = []
    while pos < len(text):
        ch = text[pos]
        if ch == "\\" and pos + 1 < len(text):
            out.append(text[pos + 1])
            pos += 2
        elif ch == '"':
            return "".join(out), pos + 1
        else:
            out.append(ch)
            pos += 1
    return "".join(out), pos


def _skip(text: str, pos: int, chars: str) -> int:
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _at_param_end(text: str, pos: int) -> bool:
    rest = text[pos:].lstrip(" \t")
    return not rest or rest[0] == ","

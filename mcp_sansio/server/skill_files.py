"""Registering a skill (the Skills extension, SEP-2640, :meth:`MCPServer.add_skill`): each
file of the skill becomes a resource under ``skill://<skill-path>/``, its ``SKILL.md``
listed with the frontmatter's name and description; the ``skills/*`` methods that serve
the entries are :mod:`.skills`.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Final

from ..errors import LocalProtocolError, SkillError
from ..skills import EXTENSION, Skill, SkillResource, digest_of, parse_frontmatter
from ..types import Resource
from .registry import RegisteredResource, Registry

__all__ = ["add_skill"]

_SKILL_FILE: Final = "SKILL.md"
_MIME_BY_SUFFIX: Final[Mapping[str, str]] = {
    ".md": "text/markdown", ".txt": "text/plain", ".json": "application/json", ".py": "text/x-python",
    ".yaml": "application/yaml", ".yml": "application/yaml", ".html": "text/html", ".csv": "text/csv",
}


def add_skill(registry: Registry, extensions: dict[str, dict[str, object]],
              files: Mapping[str, bytes | str], *, path: str | None = None) -> Skill:
    """Register a skill made of ``files`` (relative path -> content) in ``registry``, and
    declare the extension in ``extensions``; see the module doc.

    Raises:
        LocalProtocolError: no ``SKILL.md``, unreadable frontmatter without a string
            ``name`` and ``description``, a path whose last segment is not the name, or a
            file path that leaves the skill.
    """
    contents = {name: data.encode() if isinstance(data, str) else bytes(data) for name, data in files.items()}
    manifest = contents.get(_SKILL_FILE)
    if manifest is None:
        raise LocalProtocolError("a skill needs a SKILL.md")
    try:
        frontmatter = parse_frontmatter(manifest.decode("utf-8"))
    except (UnicodeDecodeError, SkillError) as exc:
        raise LocalProtocolError(f"SKILL.md: {exc}") from exc
    name, description = frontmatter.get("name"), frontmatter.get("description")
    if not isinstance(name, str) or not isinstance(description, str) or not name:
        raise LocalProtocolError("SKILL.md frontmatter needs a string name and description")
    skill_path = path or name
    if skill_path.rsplit("/", 1)[-1] != name:
        raise LocalProtocolError(f"the skill path {skill_path!r} must end in its name {name!r}")
    root = f"skill://{skill_path}"
    listed: list[SkillResource] = []
    for relative, data in sorted(contents.items(), key=lambda item: item[0] != _SKILL_FILE):
        if not relative or relative.startswith("/") or ".." in relative.split("/"):
            raise LocalProtocolError(f"the skill file {relative!r} is not inside the skill")
        uri = f"{root}/{relative}"
        listed.append(SkillResource(uri=uri, digest=digest_of(data), size=len(data)))
        _serve(registry, uri, relative, data, name if relative == _SKILL_FILE else None, description)
    entry = Skill(uri=f"{root}/{_SKILL_FILE}", frontmatter=frontmatter, resources=listed)
    registry.skills[entry.uri] = entry
    extensions.setdefault(EXTENSION, {})
    return entry


def _serve(registry: Registry, uri: str, relative: str, data: bytes, name: str | None,
           description: str) -> None:
    """Register one file of a skill as a static resource (text when it is UTF-8)."""
    suffix = relative[relative.rfind("."):] if "." in relative else ""
    try:
        text: str | None = data.decode("utf-8")
        mime = _MIME_BY_SUFFIX.get(suffix, "text/plain")
    except UnicodeDecodeError:
        text, mime = None, "application/octet-stream"
    resource = Resource(uri=uri, name=name or relative, description=description if name else None,
                        mime_type=mime, size=len(data))
    blob = None if text is not None else base64.b64encode(data).decode("ascii")
    listed = name is not None  # SKILL.md only: the other files are read through the manifest
    registry.add_resource(RegisteredResource(resource=resource, text=text, blob=blob, listed=listed))

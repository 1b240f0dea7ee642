"""The Skills extension (``io.modelcontextprotocol/skills``, SEP-2640), server side.

A skill is a directory of files whose ``SKILL.md`` begins with YAML frontmatter naming
and describing it. Registering one (:meth:`MCPServer.add_skill`) computes each file's
size and SHA-256 digest once, serves every file as a resource under
``skill://<skill-path>/`` (``SKILL.md`` listed in ``resources/list`` with the
frontmatter's name and description, the other files readable but unlisted), and answers
``skills/list`` (entries whole on each page) and ``skills/get`` from the entries. The
content is the caller's: the core reads no file (``mcp_sansio_base`` has a loader).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from .. import jsonrpc
from ..errors import LocalProtocolError, SkillError
from ..skills import (
    EXTENSION,
    GetSkillResult,
    ListSkillsResult,
    Skill,
    SkillResource,
    digest_of,
    parse_frontmatter,
)
from ..types import Resource
from .registry import RegisteredResource

if TYPE_CHECKING:
    from .app import MCPServer
    from .methods import Request
    from .session import ServerSession

from .paging import page

__all__ = ["EXTENSION", "add_skill", "get_skill", "list_skills"]

_SKILL_FILE: Final = "SKILL.md"
_MIME_BY_SUFFIX: Final[Mapping[str, str]] = {
    ".md": "text/markdown", ".txt": "text/plain", ".json": "application/json", ".py": "text/x-python",
    ".yaml": "application/yaml", ".yml": "application/yaml", ".html": "text/html", ".csv": "text/csv",
}


def add_skill(app: MCPServer, files: Mapping[str, bytes | str], *, path: str | None = None) -> Skill:
    """Register a skill made of ``files`` (relative path -> content); see the module doc.

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
        _serve(app, uri, relative, data, name if relative == _SKILL_FILE else None, description)
    entry = Skill(uri=f"{root}/{_SKILL_FILE}", frontmatter=frontmatter, resources=listed)
    app.registry.skills[entry.uri] = entry
    app.extensions.setdefault(EXTENSION, {})
    return entry


def _serve(app: MCPServer, uri: str, relative: str, data: bytes, name: str | None, description: str) -> None:
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
    app.registry.add_resource(RegisteredResource(resource=resource, text=text, blob=blob, listed=listed))


def _no_skills(session: ServerSession, req: Request) -> bool:
    if session.app.registry.skills:
        return False
    session.reject(req, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {req.method} (no skills)")
    return True


def list_skills(session: ServerSession, req: Request, now: float) -> None:
    """``skills/list``: every entry, whole on its page, with caching hints."""
    if _no_skills(session, req):
        return
    found = page(session, req, "skills", list(session.app.registry.skills.values()))
    if found is not None:
        result = ListSkillsResult(skills=found[0], next_cursor=found[1])
        session.answer(req, result, cache=(session.config.list_ttl_ms, session.config.list_cache_scope))


def get_skill(session: ServerSession, req: Request, now: float) -> None:
    """``skills/get``: one entry by its ``SKILL.md`` URI (``-32602`` for an unknown one)."""
    if _no_skills(session, req):
        return
    uri = req.params.uri
    entry = session.app.registry.skills.get(uri)
    if entry is None:
        session.reject(req, jsonrpc.INVALID_PARAMS, f"Unknown skill: {uri}", {"uri": uri})
        return
    cache = (session.config.list_ttl_ms, session.config.list_cache_scope)
    session.answer(req, GetSkillResult(skill=entry), cache=cache)


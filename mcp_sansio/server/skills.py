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

from typing import TYPE_CHECKING

from .. import jsonrpc
from ..skills import (
    EXTENSION,
    GetSkillResult,
    ListSkillsResult,
)
from .skill_files import add_skill

if TYPE_CHECKING:
    from .port import Request, SessionPort

from .paging import page

__all__ = ["EXTENSION", "add_skill", "get_skill", "list_skills"]


def _no_skills(session: SessionPort, req: Request) -> bool:
    if session.app.registry.skills:
        return False
    session.reject(req, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {req.method} (no skills)")
    return True


def list_skills(session: SessionPort, req: Request, now: float) -> None:
    """``skills/list``: every entry, whole on its page, with caching hints."""
    if _no_skills(session, req):
        return
    found = page(session, req, "skills", list(session.app.registry.skills.values()))
    if found is not None:
        result = ListSkillsResult(skills=found[0], next_cursor=found[1])
        session.answer(req, result, cache=(session.config.list_ttl_ms, session.config.list_cache_scope))


def get_skill(session: SessionPort, req: Request, now: float) -> None:
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


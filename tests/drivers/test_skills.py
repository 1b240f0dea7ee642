"""Every driver against a Skills-extension server (SEP-2640), in both eras: listing reads no
file, loading verifies ``SKILL.md``, further reads go only to listed files and are verified.

No released server implements the extension, so ``tests/servers/skills_server.py`` is a
small scripted one; the conformance suite's ``sep-2640-client-*`` mocks score the same paths.
"""

from __future__ import annotations

import json

import pytest
from peer_servers import sdk_server

from mcp_sansio import RequestError, SkillDigestMismatch, SkillFileNotListed

from .driver_adapter import Driver, SessionUnderTest, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.peer]

PDF = "skill://pdf-processing/SKILL.md"
TAMPERED = "skill://tampered/SKILL.md"


async def _reads(client: SessionUnderTest) -> list[str]:
    reads: list[str] = json.loads(text_of(await client.call_tool("reads")))
    return reads


@pytest.mark.parametrize(("flags", "era"), [(["--modern"], "modern"), ([], "legacy")])
async def test_skills_are_listed_loaded_and_verified(driver: Driver, flags: list[str], era: str) -> None:
    async with driver.connect(*sdk_server("skills_server", *flags)) as client:
        assert client.era == era
        skills = await client.list_skills()
        assert [skill.uri for skill in skills] == [PDF, TAMPERED]
        assert await _reads(client) == []  # no prefetch

        loaded = await client.load_skill(skills[0])
        assert loaded.content.endswith("Use FORMS.md.\n")
        assert await client.read_skill_file(loaded, "references/FORMS.md") == b"Supporting content.\n"
        with pytest.raises(SkillFileNotListed):
            await client.read_skill_file(loaded, "references/NEW.md")

        with pytest.raises(SkillDigestMismatch):
            await client.load_skill(TAMPERED)  # fetched with skills/get, then read
        assert await _reads(client) == [PDF, "skill://pdf-processing/references/FORMS.md", TAMPERED]

        with pytest.raises(RequestError) as unknown:
            await client.get_skill("skill://nowhere/SKILL.md")
        assert unknown.value.code == -32602

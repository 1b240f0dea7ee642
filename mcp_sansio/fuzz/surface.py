"""What the server under test offers, learnt from its own answers: its capabilities and
the pages of its ``tools/list``, ``resources/list``, ``resources/templates/list`` and
``prompts/list`` results, kept as the plain JSON values it sent."""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = ["CAPABILITY_OF", "LIST_METHODS", "Surface"]

LIST_METHODS: Final = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")
CAPABILITY_OF: Final = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "prompts/list": "prompts",
}


class Surface(msgspec.Struct, kw_only=True):
    """What the server offers, as learnt from its answers (plain JSON values)."""

    capabilities: dict[str, object] = msgspec.field(default_factory=dict)
    tools: list[dict[str, object]] = msgspec.field(default_factory=list)
    resources: list[dict[str, object]] = msgspec.field(default_factory=list)
    templates: list[dict[str, object]] = msgspec.field(default_factory=list)
    prompts: list[dict[str, object]] = msgspec.field(default_factory=list)

    def offers(self, list_method: str) -> bool:
        """Whether the server declared the capability behind ``list_method``."""
        return CAPABILITY_OF[list_method] in self.capabilities

    def learn(self, list_method: str, result: object) -> str | None:
        """Add one page of a list result; return its ``nextCursor``, if any."""
        if not isinstance(result, dict):
            return None
        field = {
            "tools/list": "tools",
            "resources/list": "resources",
            "resources/templates/list": "resourceTemplates",
            "prompts/list": "prompts",
        }[list_method]
        items = result.get(field)
        target = {
            "tools/list": self.tools,
            "resources/list": self.resources,
            "resources/templates/list": self.templates,
            "prompts/list": self.prompts,
        }[list_method]
        target += [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []
        cursor = result.get("nextCursor")
        return cursor if isinstance(cursor, str) and cursor else None

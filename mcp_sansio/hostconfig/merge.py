"""Combine the documents of every scope into one view of the servers, with provenance.

Documents are applied in ascending :class:`Scope` order; documents of the same scope in
the order given, so a later one wins (``load_documents`` lists the closest directory
last). For each server name the definition comes from the last document that defines it.
Its state comes from the last document that mentions it at all: a definition enables it
unless the entry says ``"disabled": true``; a ``disabled`` name turns it off; an
``enabled`` name turns it back on. Within one document, ``disabled`` beats ``enabled``.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from mcp_sansio.hostconfig.model import ScopeDocument, ServerEntry, ServerState

__all__ = ["MergedConfig", "merge_scopes"]


class MergedConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of :func:`merge_scopes`.

    Attributes:
        entries: the winning entry of every defined server, by name, sorted by name.
            Disabled servers are included with ``state`` ``DISABLED``.
        overridden: definitions that lost to a later one, in the order they were replaced,
            for a host that explains where each server came from.
    """

    entries: dict[str, ServerEntry]
    overridden: tuple[ServerEntry, ...] = ()

    def enabled(self) -> list[ServerEntry]:
        """Return the entries the host should connect to, sorted by name."""
        return [entry for entry in self.entries.values() if entry.state is ServerState.ENABLED]


def merge_scopes(documents: Sequence[ScopeDocument]) -> MergedConfig:
    """Merge documents by scope precedence (see the module docstring).

    Args:
        documents: every document, in any scope order; same-scope ones in precedence order.

    Returns:
        The merged configuration. Names that are only enabled or disabled, never defined,
        do not appear.
    """
    winners: dict[str, ServerEntry] = {}
    overridden: list[ServerEntry] = []
    for document in sorted(documents, key=lambda document: document.scope):
        for name, config in document.servers.items():
            if name in winners:
                overridden.append(winners[name])
            winners[name] = ServerEntry(
                name=name,
                config=config,
                scope=document.scope,
                source=document.source,
                state=ServerState.ENABLED,
                state_source=document.source,
            )
        for names, state in (
            (document.enabled, ServerState.ENABLED),
            (document.disabled, ServerState.DISABLED),
        ):
            for name in names & winners.keys():
                winners[name] = msgspec.structs.replace(
                    winners[name], state=state, state_source=document.source
                )
    return MergedConfig(
        entries={name: winners[name] for name in sorted(winners)}, overridden=tuple(overridden)
    )

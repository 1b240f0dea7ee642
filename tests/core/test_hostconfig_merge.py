"""Scope precedence, provenance and enabling/disabling across documents."""

from __future__ import annotations

from mcp_sansio.hostconfig import (
    HttpServerConfig,
    Scope,
    ScopeDocument,
    ServerConfig,
    ServerEntry,
    ServerState,
    StdioServerConfig,
    merge_scopes,
)

A = StdioServerConfig(command="a")
B = StdioServerConfig(command="b")
WEB = HttpServerConfig(url="https://x/mcp")


def doc(
    scope: Scope,
    source: str,
    servers: dict[str, ServerConfig] | None = None,
    *,
    disabled: frozenset[str] = frozenset(),
    enabled: frozenset[str] = frozenset(),
) -> ScopeDocument:
    return ScopeDocument(
        scope=scope, source=source, servers=servers or {}, disabled=disabled, enabled=enabled
    )


def test_scopes_are_ordered_plugin_user_project_local() -> None:
    assert Scope.PLUGIN < Scope.USER < Scope.PROJECT < Scope.LOCAL


def test_higher_scope_wins_per_name_whatever_the_input_order() -> None:
    merged = merge_scopes([doc(Scope.LOCAL, "local", {"s": B}), doc(Scope.USER, "user", {"s": A, "w": WEB})])
    assert merged.entries == {
        "s": ServerEntry(
            name="s",
            config=B,
            scope=Scope.LOCAL,
            source="local",
            state=ServerState.ENABLED,
            state_source="local",
        ),
        "w": ServerEntry(
            name="w",
            config=WEB,
            scope=Scope.USER,
            source="user",
            state=ServerState.ENABLED,
            state_source="user",
        ),
    }


def test_losing_definitions_are_kept_as_overridden() -> None:
    merged = merge_scopes([doc(Scope.PROJECT, "p", {"s": B}), doc(Scope.PLUGIN, "plug", {"s": A})])
    assert [(e.source, e.config) for e in merged.overridden] == [("plug", A)]


def test_later_document_of_the_same_scope_wins() -> None:
    merged = merge_scopes(
        [doc(Scope.PROJECT, "/.mcp.json", {"s": A}), doc(Scope.PROJECT, "/p/.mcp.json", {"s": B})]
    )
    assert merged.entries["s"].source == "/p/.mcp.json"


def test_empty_section_changes_nothing() -> None:
    base = [doc(Scope.USER, "u", {"s": A})]
    assert merge_scopes([*base, doc(Scope.LOCAL, "l")]) == merge_scopes(base)


def test_entries_are_sorted_by_name() -> None:
    merged = merge_scopes([doc(Scope.USER, "u", {"z": A, "a": B})])
    assert list(merged.entries) == ["a", "z"]


def test_disabled_in_a_higher_scope_stays_visible_as_disabled() -> None:
    merged = merge_scopes(
        [doc(Scope.PROJECT, "p", {"s": A, "t": B}), doc(Scope.LOCAL, "l", disabled=frozenset({"s"}))]
    )
    entry = merged.entries["s"]
    assert (entry.config, entry.source, entry.state, entry.state_source) == (
        A,
        "p",
        ServerState.DISABLED,
        "l",
    )
    assert [e.name for e in merged.enabled()] == ["t"]


def test_definition_in_a_higher_scope_overrides_a_lower_disable() -> None:
    merged = merge_scopes(
        [doc(Scope.USER, "u", {"s": A}, disabled=frozenset({"s"})), doc(Scope.PROJECT, "p", {"s": B})]
    )
    assert merged.entries["s"].state is ServerState.ENABLED


def test_enabled_in_a_higher_scope_undoes_a_lower_disable() -> None:
    merged = merge_scopes(
        [
            doc(Scope.USER, "u", {"s": A}, disabled=frozenset({"s"})),
            doc(Scope.LOCAL, "l", enabled=frozenset({"s"})),
        ]
    )
    assert (merged.entries["s"].state, merged.entries["s"].state_source) == (
        ServerState.ENABLED,
        "l",
    )


def test_disabled_beats_enabled_within_one_document() -> None:
    both = frozenset({"s"})
    merged = merge_scopes([doc(Scope.USER, "u", {"s": A}, disabled=both, enabled=both)])
    assert merged.entries["s"].state is ServerState.DISABLED


def test_toggles_for_undefined_names_are_ignored() -> None:
    merged = merge_scopes([doc(Scope.LOCAL, "l", disabled=frozenset({"ghost"}))])
    assert merged.entries == {}

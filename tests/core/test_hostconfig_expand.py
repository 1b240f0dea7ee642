"""``${VAR}`` expansion: values, defaults, escapes, and a warning for every gap."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.hostconfig import (
    ExpansionProblem,
    ExpansionWarning,
    HttpServerConfig,
    StdioServerConfig,
    expand_server,
    expand_text,
)

ENV = {"HOME": "/home/u", "EMPTY": "", "TOKEN": "t0k"}


def expand(text: str, inputs: dict[str, str] | None = None) -> tuple[str, list[ExpansionWarning]]:
    return expand_text(text, ENV, server="s", field="f", inputs=inputs)


def warning(problem: ExpansionProblem, variable: str, offset: int) -> ExpansionWarning:
    return ExpansionWarning(server="s", field="f", problem=problem, variable=variable, offset=offset)


def test_set_variable_is_substituted() -> None:
    assert expand("${HOME}/bin") == ("/home/u/bin", [])


def test_set_but_empty_variable_becomes_empty() -> None:
    assert expand("a${EMPTY}b") == ("ab", [])


def test_missing_variable_stays_literal_with_a_warning() -> None:
    assert expand("x${NOPE}y") == (
        "x${NOPE}y",
        [warning(ExpansionProblem.MISSING_VARIABLE, "NOPE", 1)],
    )


def test_default_is_used_when_variable_is_missing() -> None:
    assert expand("${NOPE:-fallback}") == ("fallback", [])


def test_default_is_used_when_variable_is_empty() -> None:
    assert expand("${EMPTY:-fallback}") == ("fallback", [])


def test_value_wins_over_default() -> None:
    assert expand("${TOKEN:-fallback}") == ("t0k", [])


def test_default_may_nest_a_placeholder() -> None:
    assert expand("${A:-${HOME}/x}") == ("/home/u/x", [])


def test_defaults_nest_several_levels() -> None:
    assert expand("${A:-${B:-${C:-deep}}}!") == ("deep!", [])


def test_missing_variable_inside_a_used_default_is_reported() -> None:
    assert expand("${A:-${B}}") == ("${B}", [warning(ExpansionProblem.MISSING_VARIABLE, "B", 5)])


def test_unused_default_is_not_expanded_nor_reported() -> None:
    assert expand("${HOME:-${NOPE}}") == ("/home/u", [])


def test_default_may_hold_balanced_braces() -> None:
    assert expand('${A:-{"k": {}}}') == ('{"k": {}}', [])


def test_braces_outside_placeholders_are_literal() -> None:
    assert expand("} {x} {") == ("} {x} {", [])


def test_double_dollar_is_a_literal_dollar() -> None:
    assert expand("$$HOME costs $$5") == ("$HOME costs $5", [])


def test_double_dollar_escapes_a_placeholder() -> None:
    assert expand("$${HOME}") == ("${HOME}", [])


def test_unbraced_dollar_is_literal() -> None:
    assert expand("$HOME $ a$") == ("$HOME $ a$", [])


def test_vscode_env_spelling_is_a_variable() -> None:
    assert expand("${env:HOME}") == ("/home/u", [])


def test_malformed_placeholder_is_kept_and_reported() -> None:
    assert expand("a${1x}b") == (
        "a${1x}b",
        [warning(ExpansionProblem.MALFORMED_PLACEHOLDER, "", 1)],
    )


def test_placeholder_with_unsupported_operator_is_malformed() -> None:
    assert expand("${A-x}")[1] == [warning(ExpansionProblem.MALFORMED_PLACEHOLDER, "", 0)]


def test_unclosed_default_is_kept_from_its_start_and_reported() -> None:
    assert expand("ok ${A:-${HOME}") == (
        "ok ${A:-${HOME}",
        [warning(ExpansionProblem.UNBALANCED_BRACES, "A", 3)],
    )


def test_warnings_inside_an_unclosed_default_are_replaced_by_one() -> None:
    assert expand("${A:-${NOPE} {") == (
        "${A:-${NOPE} {",
        [warning(ExpansionProblem.UNBALANCED_BRACES, "A", 0)],
    )


def test_input_placeholder_is_kept_with_a_warning_naming_the_input() -> None:
    assert expand("Bearer ${input:api-key}") == (
        "Bearer ${input:api-key}",
        [warning(ExpansionProblem.INPUT_REQUIRED, "api-key", 7)],
    )


def test_input_placeholder_takes_a_prompted_value() -> None:
    assert expand("${input:api-key}", inputs={"api-key": "sk"}) == ("sk", [])


def test_messages_name_server_field_and_variable() -> None:
    messages = [expand(text)[1][0].message for text in ("${NOPE}", "${input:k}", "${ x", "${A:-")]
    assert messages == [
        "server 's', field 'f': ${NOPE} is not set and has no default; kept as is",
        "server 's', field 'f': input 'k' must be prompted for; kept as is",
        "server 's', field 'f': '${' at offset 0 starts no valid placeholder",
        "server 's', field 'f': ${A:- at offset 0 is never closed",
    ]


def test_stdio_server_fields_are_expanded_with_field_names() -> None:
    config = StdioServerConfig(
        command="${HOME}/bin/srv",
        args=("--token", "${TOKEN}", "${NOPE}"),
        env={"KEY": "${MISSING}", "${HOME}": "keys are not expanded"},
        cwd="${HOME}",
    )
    expanded, warnings = expand_server("srv", config, ENV)
    assert expanded == StdioServerConfig(
        command="/home/u/bin/srv",
        args=("--token", "t0k", "${NOPE}"),
        env={"KEY": "${MISSING}", "${HOME}": "keys are not expanded"},
        cwd="/home/u",
    )
    assert [(w.server, w.field, w.variable) for w in warnings] == [
        ("srv", "args[2]", "NOPE"),
        ("srv", "env.KEY", "MISSING"),
    ]


def test_shell_prefix_words_are_expanded_with_field_names() -> None:
    config = StdioServerConfig(command="c", shell_prefix=("${HOME}/sandbox", "${GONE}"))
    expanded, warnings = expand_server("s", config, ENV)
    assert expanded == StdioServerConfig(command="c", shell_prefix=("/home/u/sandbox", "${GONE}"))
    assert [(w.field, w.variable) for w in warnings] == [("shellPrefix[1]", "GONE")]


def test_stdio_server_without_cwd_keeps_none() -> None:
    expanded, _ = expand_server("s", StdioServerConfig(command="c"), ENV)
    assert expanded == StdioServerConfig(command="c")


def test_http_server_url_and_header_values_are_expanded() -> None:
    config = HttpServerConfig(
        url="https://${HOST:-localhost}/mcp",
        headers={"Authorization": "Bearer ${API_TOKEN}", "X": "${TOKEN}"},
    )
    expanded, warnings = expand_server("web", config, ENV)
    assert expanded == HttpServerConfig(
        url="https://localhost/mcp",
        headers={"Authorization": "Bearer ${API_TOKEN}", "X": "t0k"},
    )
    assert [(w.field, w.variable) for w in warnings] == [("headers.Authorization", "API_TOKEN")]


_pieces = st.sampled_from(["${", "}", "{", ":-", "$", "$$", "A", "HOME", "input:", "env:", "x"])


@given(st.lists(_pieces | st.text(max_size=3), max_size=40).map("".join))
def test_random_nesting_never_raises_and_warnings_are_in_range(text: str) -> None:
    result, warnings = expand(text)
    assert isinstance(result, str)
    assert all(0 <= w.offset < len(text) for w in warnings)


@given(st.text().filter(lambda text: "$" not in text))
def test_text_without_dollar_is_unchanged(text: str) -> None:
    assert expand(text) == (text, [])


@given(st.text(alphabet=st.characters(blacklist_characters="${}")))
def test_missing_variable_default_is_the_default_text(default: str) -> None:
    assert expand_text("${NOPE:-" + default + "}", {}, server="s", field="f") == (default, [])


_plain = st.text(alphabet=st.characters(blacklist_characters="${}"), max_size=4)


def _nest(children: st.SearchStrategy[tuple[str, str]]) -> st.SearchStrategy[tuple[str, str]]:
    """Wrap rendered/expected pairs in ``${MISSING:-...}`` defaults or concatenate them."""
    wrapped = children.map(lambda pair: ("${NOPE:-" + pair[0] + "}", pair[1]))
    joined = st.lists(children, min_size=2, max_size=3).map(
        lambda pairs: ("".join(p[0] for p in pairs), "".join(p[1] for p in pairs))
    )
    return wrapped | joined


@given(st.recursive(_plain.map(lambda text: (text, text)), _nest, max_leaves=12))
def test_nested_defaults_of_missing_variables_expand_to_their_innermost_text(
    case: tuple[str, str],
) -> None:
    rendered, expected = case
    assert expand(rendered) == (expected, [])


def test_very_deep_nesting_does_not_recurse() -> None:
    assert expand("${A:-" * 50_000 + "x" + "}" * 50_000) == ("x", [])

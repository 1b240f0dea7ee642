"""``${VAR}`` expansion in server definitions, reporting every variable it cannot fill.

Rules, applied to ``command``, ``args``, ``env`` values, ``cwd``, ``shellPrefix`` words,
``url`` and ``headers`` values (never to keys):

- ``${NAME}`` (NAME is ``[A-Za-z_][A-Za-z0-9_]*``) becomes ``env[NAME]``, even if that is
  empty. ``${env:NAME}`` (VS Code's spelling) is the same.
- ``${NAME:-DEFAULT}`` becomes ``env[NAME]`` if it is set and non-empty (the shell's rule),
  else DEFAULT, itself expanded. DEFAULT may nest placeholders (``${A:-${HOME}/x}``) and
  bare ``{ }`` pairs; an unused DEFAULT is not expanded and reports nothing.
- ``${input:ID}`` (VS Code) becomes ``inputs[ID]`` when the host passes it, else stays.
- ``$$`` is a literal ``$``; any other ``$`` not starting ``${`` is literal (``$HOME``
  stays as written: only the braced form expands).

Nothing is ever silently emptied. A missing variable keeps its literal ``${NAME}`` (as
Claude Code does) and yields an :class:`ExpansionWarning`; so do a ``${`` that starts no
valid placeholder (kept as written) and a ``${NAME:-`` never closed (the text from it to
the end kept as written). Expansion never raises.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from typing import Final, assert_never

import msgspec

from mcp_sansio.hostconfig.model import ServerConfig, StdioServerConfig

__all__ = ["ExpansionProblem", "ExpansionWarning", "expand_server", "expand_text"]

_SPECIAL: Final = re.compile(r"\$\$|\$\{|[{}]")
_PLACEHOLDER: Final = re.compile(
    r"\$\{(?:input:(?P<input>[A-Za-z0-9_.-]+)\}"
    r"|env:(?P<env>[A-Za-z_][A-Za-z0-9_]*)\}"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<end>\}|:-))"
)


class ExpansionProblem(enum.Enum):
    """Why a placeholder was left as written."""

    MISSING_VARIABLE = "missing-variable"
    INPUT_REQUIRED = "input-required"
    MALFORMED_PLACEHOLDER = "malformed-placeholder"
    UNBALANCED_BRACES = "unbalanced-braces"


class ExpansionWarning(msgspec.Struct, frozen=True, kw_only=True):
    """A placeholder in one field that expansion left unexpanded.

    Attributes:
        server: the server name.
        field: the field, as ``command``, ``args[2]``, ``env.TOKEN``, ``headers.Authorization``.
        problem: what went wrong.
        variable: the variable (or VS Code input id) involved, or ``""`` for a malformed ``${``.
        offset: where the placeholder starts in the field's original text.
    """

    server: str
    field: str
    problem: ExpansionProblem
    variable: str
    offset: int

    @property
    def message(self) -> str:
        """A sentence for the user naming the server, the field and the variable."""
        where = f"server {self.server!r}, field {self.field!r}"
        match self.problem:
            case ExpansionProblem.MISSING_VARIABLE:
                return f"{where}: ${{{self.variable}}} is not set and has no default; kept as is"
            case ExpansionProblem.INPUT_REQUIRED:
                return f"{where}: input {self.variable!r} must be prompted for; kept as is"
            case ExpansionProblem.MALFORMED_PLACEHOLDER:
                return f"{where}: '${{' at offset {self.offset} starts no valid placeholder"
            case ExpansionProblem.UNBALANCED_BRACES:
                return f"{where}: ${{{self.variable}:- at offset {self.offset} is never closed"
            case _:  # pragma: no cover
                assert_never(self.problem)


@dataclasses.dataclass(slots=True, kw_only=True)
class _Frame:
    """An open ``${NAME:-`` default, or a bare ``{`` inside one (``name`` is None)."""

    start: int
    name: str | None
    value: str
    """The variable's value; the default is used (and ``active``) when it is empty."""
    active: bool
    """Whether text inside this frame reaches the output (so its warnings count)."""
    parts: list[str]
    warned: int
    """How many warnings existed when the frame opened, to drop if it never closes."""


def expand_text(
    text: str,
    env: Mapping[str, str],
    *,
    server: str,
    field: str,
    inputs: Mapping[str, str] | None = None,
) -> tuple[str, list[ExpansionWarning]]:
    """Expand one string by the module's rules.

    Args:
        text: the field's value.
        env: the variables, usually the host's environment.
        server: the server name, for warnings.
        field: the field name, for warnings.
        inputs: values the host prompted for, by VS Code input id.

    Returns:
        The expanded text and the warnings, in order of appearance.
    """
    inputs = inputs or {}
    out: list[str] = []
    warnings: list[ExpansionWarning] = []
    stack: list[_Frame] = []
    pos = 0

    def warn(problem: ExpansionProblem, variable: str, offset: int) -> None:
        if not stack or stack[-1].active:
            warnings.append(
                ExpansionWarning(
                    server=server, field=field, problem=problem, variable=variable, offset=offset
                )
            )

    while (special := _SPECIAL.search(text, pos)) is not None:
        parts = stack[-1].parts if stack else out
        parts.append(text[pos : special.start()])
        pos = special.start()
        token = special.group()
        if token == "}" and stack:
            frame = stack.pop()
            if frame.name is None:
                parts.append("}")
            else:
                (stack[-1].parts if stack else out).append(frame.value or "".join(frame.parts))
            pos += 1
        elif token == "{" and stack:
            stack.append(
                _Frame(
                    start=pos,
                    name=None,
                    value="",
                    active=stack[-1].active,
                    parts=parts,
                    warned=len(warnings),
                )
            )
            parts.append("{")
            pos += 1
        elif token != "${":  # "$$", or a bare brace outside any default
            parts.append(token[0])
            pos += len(token)
        elif (placeholder := _PLACEHOLDER.match(text, pos)) is None:
            warn(ExpansionProblem.MALFORMED_PLACEHOLDER, "", pos)
            parts.append(token)
            pos += len(token)
        elif (input_id := placeholder.group("input")) is not None:
            if input_id not in inputs:
                warn(ExpansionProblem.INPUT_REQUIRED, input_id, pos)
            parts.append(inputs.get(input_id, placeholder.group()))
            pos = placeholder.end()
        else:
            name = placeholder.group("env") or placeholder.group("name")
            if placeholder.group("end") == ":-":
                value = env.get(name, "")
                active = (not stack or stack[-1].active) and not value
                stack.append(
                    _Frame(
                        start=pos,
                        name=name,
                        value=value,
                        active=active,
                        parts=[],
                        warned=len(warnings),
                    )
                )
            else:
                if name not in env:
                    warn(ExpansionProblem.MISSING_VARIABLE, name, pos)
                parts.append(env.get(name, placeholder.group()))
            pos = placeholder.end()
    if not stack:
        out.append(text[pos:])
        return "".join(out), warnings
    outer = stack[0]
    del warnings[outer.warned :]
    stack.clear()
    warn(ExpansionProblem.UNBALANCED_BRACES, outer.name or "", outer.start)
    return "".join(out) + text[outer.start :], warnings


def expand_server(
    name: str,
    config: ServerConfig,
    env: Mapping[str, str],
    *,
    inputs: Mapping[str, str] | None = None,
) -> tuple[ServerConfig, list[ExpansionWarning]]:
    """Expand every expandable field of one server definition.

    Args:
        name: the server name, for warnings.
        config: the definition as read from its file.
        env: the variables, usually the host's environment.
        inputs: values the host prompted for, by VS Code input id.

    Returns:
        A new definition with the fields expanded, and the warnings from all fields.
    """
    warnings: list[ExpansionWarning] = []

    def expand(text: str, field: str) -> str:
        result, found = expand_text(text, env, server=name, field=field, inputs=inputs)
        warnings.extend(found)
        return result

    def expand_values(values: Mapping[str, str], field: str) -> dict[str, str]:
        return {key: expand(value, f"{field}.{key}") for key, value in values.items()}

    expanded: ServerConfig
    if isinstance(config, StdioServerConfig):
        expanded = msgspec.structs.replace(
            config,
            command=expand(config.command, "command"),
            args=tuple(expand(arg, f"args[{index}]") for index, arg in enumerate(config.args)),
            env=expand_values(config.env, "env"),
            cwd=None if config.cwd is None else expand(config.cwd, "cwd"),
            shell_prefix=tuple(expand(word, f"shellPrefix[{index}]")
                               for index, word in enumerate(config.shell_prefix)),
        )
    else:
        expanded = msgspec.structs.replace(
            config, url=expand(config.url, "url"), headers=expand_values(config.headers, "headers")
        )
    return expanded, warnings

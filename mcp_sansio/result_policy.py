"""Keep tool results within a token budget: measure, then keep, truncate or persist.

A result's ``content`` blocks (wire-shape dicts, or content Structs, which are turned
into dicts) are measured with the usual estimate of 4 characters per token. Text-like
blocks (``text``, and ``resource`` blocks embedding ``text``) count their characters;
an image counts ``ResultPolicy.image_tokens`` (default 1,600, a full-size image's cost to
a model once it is passed as an image, not as base64 text; ``None`` counts base64
length / 4, for hosts that inline it); anything else counts its JSON length.

The budget, from weakest to strongest: 25,000 tokens; ``MAX_MCP_OUTPUT_TOKENS`` in the
environment passed in (a positive integer, else ignored); ``ResultPolicy.max_tokens``;
the tool's ``_meta["anthropic/maxResultSizeChars"]`` hint (characters, capped at
``max_hint_chars``); a per-server rule; a per-tool rule. The user's own per-server and
per-tool rules thus beat what the server asks for.

Over budget, the action (``truncate`` unless a rule says ``persist``) decides:

- truncate: blocks are kept in order while they fit; the first text-like block that does
  not is cut, and a marker ``[... truncated 12,345 of 140,000 characters ...]`` is
  appended; blocks that no longer fit are replaced by a note saying what was dropped.
- persist: all text goes to a file the *driver* writes (:class:`PersistResult`); the model
  gets a note with the path. Images are never persisted: they are kept if they fit, else
  dropped with a note. A result with no text is truncated instead.

Nothing here writes files; every function returns a decision.
"""

from __future__ import annotations

import enum
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Final

import msgspec

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.naming import normalize_name

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "MAX_RESULT_SIZE_META_KEY",
    "Budget",
    "KeptResult",
    "OverflowAction",
    "PersistResult",
    "ResultDecision",
    "ResultPolicy",
    "ResultRule",
    "ResultSize",
    "apply_result_policy",
    "measure",
    "resolve_budget",
]

DEFAULT_MAX_TOKENS: Final = 25_000
MAX_RESULT_SIZE_META_KEY: Final = "anthropic/maxResultSizeChars"
"""The tool ``_meta`` key through which a server asks for a larger (or smaller) budget."""

_ENV_VAR: Final = "MAX_MCP_OUTPUT_TOKENS"
_CHARS_PER_TOKEN: Final = 4
_ENV_VALUE: Final = re.compile(r"[0-9]{1,12}")
_PATH: Final = "{path}"

Block = dict[str, object]


class OverflowAction(enum.Enum):
    """What to do with a result over its budget."""

    TRUNCATE = "truncate"
    PERSIST = "persist"


class ResultRule(msgspec.Struct, frozen=True, kw_only=True):
    """A per-server or per-tool override; ``None`` fields leave the weaker setting alone."""

    max_tokens: int | None = None
    action: OverflowAction | None = None


class ResultPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How the host bounds tool results.

    Attributes:
        max_tokens: the global budget; ``None`` uses the environment or the default.
        action: the global overflow action.
        servers: rules by server name.
        tools: rules by server name, then tool name.
        image_tokens: the estimated cost of one image; ``None`` counts its base64 length.
        max_hint_chars: the most a tool's ``_meta`` hint may ask for.
    """

    max_tokens: int | None = None
    action: OverflowAction = OverflowAction.TRUNCATE
    servers: dict[str, ResultRule] = msgspec.field(default_factory=dict)
    tools: dict[str, dict[str, ResultRule]] = msgspec.field(default_factory=dict)
    image_tokens: int | None = 1_600
    max_hint_chars: int = 500_000


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    """The budget that applies to one tool's results."""

    tokens: int
    action: OverflowAction


class ResultSize(msgspec.Struct, frozen=True, kw_only=True):
    """A result's measured size.

    Attributes:
        tokens: the estimated token count.
        bytes: UTF-8 bytes of text plus decoded bytes of base64 data (and JSON of the rest).
        text_chars: characters in text-like blocks.
        images: the number of image blocks.
    """

    tokens: int
    bytes: int
    text_chars: int
    images: int


class KeptResult(msgspec.Struct, frozen=True, kw_only=True):
    """The result is handed to the model as ``content``: unchanged, or truncated.

    Attributes:
        content: the blocks to pass on.
        size: the size of the original result.
        truncated: whether anything was cut or dropped.
    """

    content: list[Block]
    size: ResultSize
    truncated: bool = False


class PersistResult(msgspec.Struct, frozen=True, kw_only=True):
    """Write ``content_bytes`` to a file, then pass ``replacement_content(path)`` on.

    Attributes:
        suggested_filename: a safe file name, stable for the same server, tool and text.
        content_bytes: the result's text (text-like blocks joined by blank lines), UTF-8.
        replacement_text_template: the note for the model; ``{path}`` marks the path.
        other_content: the non-text blocks kept, or notes for the ones dropped.
        size: the size of the original result.
    """

    suggested_filename: str
    content_bytes: bytes
    replacement_text_template: str
    other_content: list[Block]
    size: ResultSize

    def replacement_content(self, path: str) -> list[Block]:
        """Return the content to pass on once the driver has written the file at ``path``."""
        head, _, tail = self.replacement_text_template.rpartition(_PATH)
        return [{"type": "text", "text": head + path + tail}, *self.other_content]


ResultDecision = KeptResult | PersistResult


def _positive_int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def resolve_budget(
    policy: ResultPolicy,
    *,
    server: str,
    tool: str,
    env: Mapping[str, str],
    tool_meta: Mapping[str, object] | None = None,
) -> Budget:
    """Work out the budget of one tool's results (precedence in the module docstring).

    Args:
        policy: the host's policy.
        server: the server name.
        tool: the tool name, as the server knows it.
        env: the environment variables.
        tool_meta: the tool's ``_meta`` from ``tools/list``, if any.
    """
    tokens = DEFAULT_MAX_TOKENS
    env_value = env.get(_ENV_VAR, "").strip()
    if _ENV_VALUE.fullmatch(env_value) and int(env_value) > 0:
        tokens = int(env_value)
    if policy.max_tokens is not None:
        tokens = policy.max_tokens
    hint = _positive_int((tool_meta or {}).get(MAX_RESULT_SIZE_META_KEY))
    if hint is not None:
        tokens = math.ceil(min(hint, policy.max_hint_chars) / _CHARS_PER_TOKEN)
    action = policy.action
    for rule in (policy.servers.get(server), policy.tools.get(server, {}).get(tool)):
        if rule is not None:
            tokens = tokens if rule.max_tokens is None else rule.max_tokens
            action = rule.action or action
    return Budget(tokens=tokens, action=action)


def _to_blocks(content: Sequence[object]) -> list[Block]:
    blocks: list[Block] = []
    for item in content:
        try:
            block = msgspec.json.decode(msgspec.json.encode(item))
        except (TypeError, ValueError, msgspec.EncodeError) as exc:  # ValueError: surrogates
            raise LocalProtocolError(f"content block is not JSON-shaped: {exc}") from exc
        if not isinstance(block, dict):
            raise LocalProtocolError(f"content block must be an object, not {item!r:.60}")
        blocks.append(block)
    return blocks


def _text_of(block: Block) -> str | None:
    """Return the text of a text-like block, else ``None``."""
    if block.get("type") == "text" and isinstance(text := block.get("text"), str):
        return text
    resource = block.get("resource")
    if block.get("type") == "resource" and isinstance(resource, dict):
        text = resource.get("text")
        return text if isinstance(text, str) else None
    return None


def _with_text(block: Block, text: str) -> Block:
    """Return a text-like block with its text replaced."""
    resource = block.get("resource")
    if block.get("type") == "resource" and isinstance(resource, dict):
        return {**block, "resource": {**resource, "text": text}}
    return {**block, "text": text}


def _base64_bytes(data: str) -> int:
    """Return the decoded size of base64 ``data`` without decoding it."""
    return len(data) * 3 // 4 - min(len(data) - len(data.rstrip("=")), 2)


class _Measured:
    """One block with its estimated cost."""

    __slots__ = ("block", "bytes", "text", "tokens")

    def __init__(self, block: Block, policy: ResultPolicy) -> None:
        self.block = block
        self.text = _text_of(block)
        data = block.get("data")
        if self.text is not None:
            self.tokens = math.ceil(len(self.text) / _CHARS_PER_TOKEN)
            self.bytes = len(self.text.encode("utf-8", "surrogatepass"))
        elif isinstance(data, str) and block.get("type") in ("image", "audio"):
            self.bytes = _base64_bytes(data)
            image_tokens = policy.image_tokens if block.get("type") == "image" else None
            self.tokens = image_tokens or math.ceil(len(data) / _CHARS_PER_TOKEN)
        else:
            self.bytes = len(msgspec.json.encode(block))
            self.tokens = math.ceil(self.bytes / _CHARS_PER_TOKEN)

    def drop_note(self, budget: int) -> Block:
        kind = self.block.get("type")
        what = f"{kind} content" if kind != "image" else f"image ({self.block.get('mimeType')})"
        return {
            "type": "text",
            "text": f"[{what} of {self.bytes:,} bytes dropped: over the {budget:,}-token result budget]",
        }


def _size(measured: Sequence[_Measured]) -> ResultSize:
    return ResultSize(
        tokens=sum(item.tokens for item in measured),
        bytes=sum(item.bytes for item in measured),
        text_chars=sum(len(item.text) for item in measured if item.text is not None),
        images=sum(item.block.get("type") == "image" for item in measured),
    )


def measure(content: Sequence[object], policy: ResultPolicy | None = None) -> ResultSize:
    """Estimate the size of a result's ``content``.

    Raises:
        LocalProtocolError: a block is not a JSON object (or a Struct that encodes as one).
    """
    policy = policy or ResultPolicy()
    return _size([_Measured(block, policy) for block in _to_blocks(content)])


def _fit(measured: Sequence[_Measured], budget: int) -> list[Block]:
    """Keep blocks in order while they fit; cut the first text that does not; note drops."""
    remaining = budget
    kept: list[Block] = []
    cut = 0
    for item in measured:
        if item.tokens <= remaining:
            kept.append(item.block)
            remaining -= item.tokens
        elif item.text is not None:
            keep = max(remaining, 0) * _CHARS_PER_TOKEN
            if keep:
                kept.append(_with_text(item.block, item.text[:keep]))
            cut += len(item.text) - keep
            remaining = 0
        else:
            kept.append(item.drop_note(budget))
    if cut:
        total = sum(len(item.text) for item in measured if item.text is not None)
        kept.append({"type": "text", "text": f"[... truncated {cut:,} of {total:,} characters ...]"})
    return kept


def apply_result_policy(
    content: Sequence[object],
    *,
    server: str,
    tool: str,
    policy: ResultPolicy | None = None,
    env: Mapping[str, str] | None = None,
    tool_meta: Mapping[str, object] | None = None,
) -> ResultDecision:
    """Decide what the model gets for one tool result.

    Args:
        content: the result's ``content`` blocks.
        server: the server name.
        tool: the tool name, as the server knows it.
        policy: the host's policy; the defaults if ``None``.
        env: the environment variables (for ``MAX_MCP_OUTPUT_TOKENS``).
        tool_meta: the tool's ``_meta`` from ``tools/list``.

    Returns:
        A :class:`KeptResult` (the content as is, or truncated), or a :class:`PersistResult`.

    Raises:
        LocalProtocolError: a block is not a JSON object (or a Struct that encodes as one).
    """
    policy = policy or ResultPolicy()
    budget = resolve_budget(policy, server=server, tool=tool, env=env or {}, tool_meta=tool_meta)
    measured = [_Measured(block, policy) for block in _to_blocks(content)]
    size = _size(measured)
    if size.tokens <= budget.tokens:
        return KeptResult(content=[item.block for item in measured], size=size)
    texts = [item.text for item in measured if item.text is not None]
    if budget.action is OverflowAction.TRUNCATE or not texts:
        return KeptResult(content=_fit(measured, budget.tokens), size=size, truncated=True)
    data = "\n\n".join(texts).encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(data).hexdigest()[:12]
    template = (
        f"[The result of tool {tool!r} of server {server!r} is {size.text_chars:,} characters"
        f" (~{size.tokens:,} tokens), over the {budget.tokens:,}-token budget. It was saved"
        f" to {_PATH}; read that file in parts rather than calling the tool again.]"
    )
    others = [item for item in measured if item.text is None]
    return PersistResult(
        suggested_filename=f"{normalize_name(server)[:40]}-{normalize_name(tool)[:40]}-{digest}.txt",
        content_bytes=data,
        replacement_text_template=template,
        other_content=_fit(others, budget.tokens),
        size=size,
    )

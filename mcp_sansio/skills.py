"""The Skills extension (``io.modelcontextprotocol/skills``, SEP-2640): wire types and the
host's checks, pure.

A server that declares the extension in ``capabilities.extensions`` serves ``skills/list``
and ``skills/get``. Each entry (:class:`Skill`) carries the skill's frontmatter and a
manifest of its files with SHA-256 digests and sizes; the files themselves are ordinary
resources, read with ``resources/read`` only when needed (listing reads nothing). Loading
a skill is :func:`check_entry` (before any read), one read of ``SKILL.md`` and
:func:`load_skill`, which verifies size, digest and frontmatter; the :class:`LoadedSkill`
it returns is the held entry of the spec's acting window: it resolves further reads to
listed files only and verifies each. A mismatch raises and the content is never returned.
See the extension's specification, "Skill Entries" and "Integrity and Verification".
"""

from __future__ import annotations

import base64
import binascii
import datetime
import functools
import hashlib
import re
from typing import TYPE_CHECKING, Final

import msgspec

if TYPE_CHECKING:
    import yaml

from .errors import (
    InvalidSkillEntry,
    SkillDigestMismatch,
    SkillFileNotListed,
    SkillFrontmatterMismatch,
    SkillSizeMismatch,
    SkillVerificationError,
)
from .types import MethodResult, ReadResourceResult
from .types._base import WireStruct, required_list

__all__ = [
    "DYNAMIC",
    "EXTENSION",
    "GET_SKILL",
    "LIST_SKILLS",
    "GetSkillRequestParams",
    "GetSkillResult",
    "ListSkillsResult",
    "LoadedSkill",
    "Skill",
    "SkillResource",
    "check_entry",
    "digest_of",
    "load_skill",
    "parse_frontmatter",
]

EXTENSION: Final = "io.modelcontextprotocol/skills"
"""The extension's identifier, the key in ``capabilities.extensions``."""
DYNAMIC: Final = "dynamic"
"""``resources`` of a skill generated on demand: no manifest, no digests."""
_SKILL_FILE: Final = "/SKILL.md"
_DIGEST: Final = re.compile(r"sha256:[0-9a-f]{64}")
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


class SkillResource(WireStruct, kw_only=True, omit_defaults=True):
    """One file of a skill: its URI, ``sha256:{hex}`` digest and size in bytes."""

    uri: str
    digest: str
    size: int


class Skill(WireStruct, kw_only=True, omit_defaults=True):
    """A skill's entry, as ``skills/list`` and ``skills/get`` give it.

    Decoding is lenient so one malformed entry does not sink a whole listing;
    :func:`check_entry` says whether it can be loaded.

    Attributes:
        uri: the URI of the skill's ``SKILL.md``.
        frontmatter: ``SKILL.md``'s YAML frontmatter as JSON (``name``, ``description``, ...).
        resources: every file of the skill, or ``"dynamic"``.
    """

    uri: str
    frontmatter: dict[str, object] = msgspec.field(default_factory=dict)
    resources: list[SkillResource] | str | None = None


class ListSkillsResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``skills/list``: one page of entries, with caching hints."""

    skills: list[Skill] = required_list()
    next_cursor: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class GetSkillRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``skills/get``: the URI of the skill's ``SKILL.md``."""

    uri: str
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class GetSkillResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``skills/get``: one entry, with caching hints."""

    skill: Skill
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


LIST_SKILLS: Final = MethodResult("skills/list", ListSkillsResult)
GET_SKILL: Final = MethodResult("skills/get", GetSkillResult)


def digest_of(data: bytes) -> str:
    """The extension's digest of ``data``: ``sha256:`` and 64 lowercase hex digits."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def check_entry(entry: Skill, *, max_files: int, max_bytes: int) -> None:
    """Check that ``entry`` may be loaded, before any of its files is read.

    The ``SKILL.md`` URI's last skill-path segment must be the frontmatter's ``name``;
    ``resources`` must be ``"dynamic"`` or a manifest that lists ``SKILL.md``, holds only
    files of the skill, once each, with well-formed digests, within the limits.

    Raises:
        InvalidSkillEntry: why not.
    """
    problem = _entry_problem(entry, _root(entry.uri), max_files, max_bytes)
    if problem is not None:
        raise InvalidSkillEntry(f"{entry.uri}: {problem}", uri=entry.uri)


def _entry_problem(entry: Skill, root: str, max_files: int, max_bytes: int) -> str | None:
    name, description = entry.frontmatter.get("name"), entry.frontmatter.get("description")
    if not isinstance(name, str) or not isinstance(description, str):
        return "the frontmatter needs a string name and description"
    if root.rsplit("/", 1)[1] != name:
        return f"the skill path does not end in its name {name!r}"
    files = entry.resources
    if files == DYNAMIC:
        return None
    if not isinstance(files, list):
        return "resources must be a list of files or 'dynamic'"
    if len(files) > max_files:
        return f"{len(files)} files, more than the {max_files} allowed"
    total = sum(file.size for file in files)
    if total > max_bytes:
        return f"{total} bytes, more than the {max_bytes} allowed"
    seen: set[str] = set()
    for file in files:
        if file.uri in seen or not file.uri.startswith(root + "/"):
            return f"{file.uri} is listed twice or is not in the skill"
        if not _DIGEST.fullmatch(file.digest) or file.size < 0:
            return f"{file.uri} has a malformed digest or size"
        seen.add(file.uri)
    return None if entry.uri in seen else "resources do not list SKILL.md"


def load_skill(entry: Skill, result: ReadResourceResult, *, max_bytes: int) -> LoadedSkill:
    """Verify the ``resources/read`` of ``entry.uri`` and start acting on the skill.

    Call :func:`check_entry` first. The read must match the entry's size and digest
    (unless ``resources`` is ``"dynamic"``), be UTF-8, and begin with YAML frontmatter
    equal, field by field, to the entry's.

    Raises:
        SkillVerificationError: the content is not what the entry describes (its
            subclasses say how); the skill must not be loaded.
        InvalidSkillEntry: a dynamic skill's ``SKILL.md`` is over ``max_bytes``.
    """
    loaded = LoadedSkill(entry, max_bytes=max_bytes)
    data = loaded.verify(entry.uri, result)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillFrontmatterMismatch(f"{entry.uri} is not UTF-8 text", uri=entry.uri) from exc
    field = _differing_field(entry.frontmatter, parse_frontmatter(text, uri=entry.uri))
    if field is not None:
        raise SkillFrontmatterMismatch(f"{entry.uri}: frontmatter field {field!r} differs from the entry's",
                                       uri=entry.uri)
    loaded.content = text
    return loaded


class LoadedSkill:
    """A skill being acted on: the held entry, ``SKILL.md``'s verified text, and the
    checks every further read of its files goes through.

    Attributes:
        entry: the entry the skill was loaded from.
        content: ``SKILL.md``, verified.
    """

    def __init__(self, entry: Skill, *, max_bytes: int) -> None:
        self.entry = entry
        self.content = ""
        self._root = _root(entry.uri)
        files = entry.resources
        self._files = {file.uri: file for file in files} if isinstance(files, list) else None
        self._budget = max_bytes  # what a dynamic skill may still retrieve

    @property
    def name(self) -> str:
        """The skill's name (its frontmatter's ``name``)."""
        return str(self.entry.frontmatter.get("name"))

    def resolve(self, path: str) -> str:
        """The URI of one of the skill's files, from a path relative to the skill's root
        (``references/FORMS.md``) or a full URI.

        Raises:
            SkillFileNotListed: the file is outside the skill, or the held manifest does
                not list it (an unlisted file is a change to the skill).
        """
        if _SCHEME.match(path):
            uri = path
        else:
            parts: list[str] = []
            for part in path.split("/"):
                if part == "..":
                    if not parts:
                        raise SkillFileNotListed(f"{path} leaves the skill's directory", uri=path)
                    parts.pop()
                elif part not in ("", "."):
                    parts.append(part)
            uri = self._root + "/" + "/".join(parts)
        allowed = uri.startswith(self._root + "/") if self._files is None else uri in self._files
        if not allowed:
            raise SkillFileNotListed(f"{uri} is not a file of {self.entry.uri}", uri=uri)
        return uri

    def verify(self, uri: str, result: ReadResourceResult) -> bytes:
        """The bytes of ``uri`` from its ``resources/read`` result, once they match the
        held entry (size first, then digest); a dynamic skill's reads count against the
        total-size limit instead.

        Raises:
            SkillFileNotListed: ``uri`` is not a file of the skill.
            SkillSizeMismatch, SkillDigestMismatch: the content is not the listed file.
            SkillVerificationError: the result holds no single readable content for ``uri``.
            InvalidSkillEntry: a dynamic skill went over the total-size limit.
        """
        uri = self.resolve(uri)
        data = _content_bytes(uri, result)
        if self._files is None:
            if len(data) > self._budget:
                raise InvalidSkillEntry(f"{self.entry.uri}: the files read exceed the size limit",
                                        uri=self.entry.uri)
            self._budget -= len(data)
            return data
        listed = self._files[uri]
        if len(data) != listed.size:
            raise SkillSizeMismatch(f"{uri}: {len(data)} bytes, the entry says {listed.size}", uri=uri)
        if digest_of(data) != listed.digest:
            raise SkillDigestMismatch(f"{uri}: the content does not match the entry's digest", uri=uri)
        return data


def parse_frontmatter(text: str, *, uri: str = "SKILL.md") -> dict[str, object]:
    """The YAML frontmatter at the start of a ``SKILL.md``, as JSON-like values.

    The frontmatter sits between a first line ``---`` and the next line ``---``. It is
    read with YAML's safe loader, without aliases (which no frontmatter needs and which
    could expand beyond any bound); dates become ISO 8601 strings.

    Raises:
        SkillFrontmatterMismatch: there is no frontmatter, or it is not a YAML mapping
            with string keys.
    """
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    ends = [i for i, line in enumerate(lines) if line.rstrip() == "---"]
    if len(ends) < 2 or ends[0] != 0:
        raise SkillFrontmatterMismatch(f"{uri} does not begin with YAML frontmatter", uri=uri)
    import yaml  # here, not at import: YAML is needed only when a skill is loaded

    try:
        value = yaml.load("".join(lines[1:ends[1]]), Loader=_loader())  # a SafeLoader
    except (yaml.YAMLError, RecursionError) as exc:
        raise SkillFrontmatterMismatch(f"{uri}: unreadable frontmatter: {exc}", uri=uri) from exc
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        raise SkillFrontmatterMismatch(f"{uri}: the frontmatter is not a mapping of names", uri=uri)
    return {key: _json_like(item) for key, item in value.items()}


@functools.cache
def _loader() -> type[yaml.SafeLoader]:
    """YAML's safe loader, refusing aliases (so a value is never shared, never expanded)."""
    import yaml

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
            if self.check_event(yaml.AliasEvent):
                raise yaml.composer.ComposerError(problem="aliases are not allowed in frontmatter")
            return super().compose_node(parent, index)

    return Loader


def _json_like(value: object) -> object:
    if isinstance(value, datetime.date):  # datetime too
        return value.isoformat()
    if isinstance(value, list):
        return [_json_like(item) for item in value]
    if isinstance(value, dict):
        return {key: _json_like(item) for key, item in value.items()}
    return value


def _differing_field(expected: dict[str, object], found: dict[str, object]) -> str | None:
    """The first top-level field (by name) on which the two frontmatters differ."""
    for key in sorted(expected.keys() | found.keys()):
        if key not in expected or key not in found or not _same(expected[key], found[key]):
            return key
    return None


def _same(a: object, b: object) -> bool:
    """JSON equality: booleans are not numbers, ``1`` equals ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    return type(a) is type(b) and a == b


def _root(uri: str) -> str:
    """The skill's root directory: ``uri`` without ``/SKILL.md``.

    Raises:
        InvalidSkillEntry: ``uri`` is not ``scheme://<skill-path>/SKILL.md``.
    """
    scheme = _SCHEME.match(uri)
    if scheme is None or not uri.endswith(_SKILL_FILE) or len(uri) - len(_SKILL_FILE) <= scheme.end():
        raise InvalidSkillEntry(f"{uri} is not the URI of a SKILL.md", uri=uri)
    return uri[: -len(_SKILL_FILE)]


def _content_bytes(uri: str, result: ReadResourceResult) -> bytes:
    """The raw bytes a read returned for ``uri`` (text as UTF-8, blobs decoded).

    Raises:
        SkillVerificationError: not exactly one content for ``uri``, or one that cannot
            be turned into bytes.
    """
    found = [content for content in result.contents if content.uri == uri]
    if len(found) == 1:
        content = found[0]
        try:
            if content.text is not None:
                return content.text.encode("utf-8")
            if content.blob is not None:
                return base64.b64decode(content.blob, validate=True)
        except (UnicodeEncodeError, binascii.Error) as exc:
            raise SkillVerificationError(f"{uri}: unreadable content: {exc}", uri=uri) from exc
    raise SkillVerificationError(f"{uri}: the read returned {len(found)} contents for it", uri=uri)

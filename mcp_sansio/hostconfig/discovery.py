"""Where configuration files live, and reading them through a caller-supplied reader.

The module never touches the filesystem: :func:`load_documents` takes a ``read``
callable that returns a file's text, or ``None`` when the file does not exist, so the
host decides how (and whether) to do I/O, and tests pass a dictionary's ``get``.

Files, lowest precedence first (see ``merge.merge_scopes``):

1. USER: ``$XDG_CONFIG_DIRS/mcp-sansio/mcp.json`` (default ``/etc/xdg``, last directory
   first), then ``$XDG_CONFIG_HOME/mcp-sansio/mcp.json`` (default ``~/.config``).
2. For each directory from the filesystem root down to ``cwd``: ``.mcp.json`` (PROJECT)
   and ``.mcp.local.json`` (LOCAL, private: keep it out of version control). Closer
   directories come later, so they win within a scope.
3. Files the user named (``--config FILE``, any format ``read_config_file`` knows), in
   order, all at LOCAL scope, so they win over everything discovered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import Final

from mcp_sansio.hostconfig.formats import ConfigFile, read_config_file
from mcp_sansio.hostconfig.model import ConfigError, Scope, ScopeDocument

__all__ = [
    "Reader",
    "load_config_files",
    "load_documents",
    "local_config_path",
    "project_config_paths",
    "user_config_paths",
]

PROJECT_FILE: Final = ".mcp.json"
LOCAL_FILE: Final = ".mcp.local.json"
USER_FILE: Final = PurePath("mcp-sansio", "mcp.json")

Reader = Callable[[PurePath], str | None]
"""Returns a file's text, or ``None`` if it does not exist; other failures may raise."""


def project_config_paths(cwd: PurePath) -> list[PurePath]:
    """Return the ``.mcp.json`` candidates from the filesystem root down to ``cwd``.

    The closest file comes last, matching merge order: it wins per server name.
    """
    return [directory / PROJECT_FILE for directory in reversed((cwd, *cwd.parents))]


def local_config_path(project: PurePath) -> PurePath:
    """Return the private, per-project file of ``project`` (``<project>/.mcp.local.json``)."""
    return project / LOCAL_FILE


def user_config_paths(home: PurePath, env: Mapping[str, str]) -> list[PurePath]:
    """Return the user-scope files by the XDG base directory rules, lowest precedence first.

    Relative values of ``XDG_CONFIG_HOME`` and ``XDG_CONFIG_DIRS`` entries are ignored, as
    the XDG specification requires.

    Args:
        home: the user's home directory; its flavour (posix or Windows) is kept.
        env: the environment variables.
    """
    flavour = type(home)
    config_home = flavour(env.get("XDG_CONFIG_HOME", ""))
    if not config_home.is_absolute():
        config_home = home / ".config"
    config_dirs = [flavour(item) for item in env.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")]
    ordered = [*reversed([item for item in config_dirs if item.is_absolute()]), config_home]
    return [directory / USER_FILE for directory in ordered]


def load_config_files(
    read: Reader,
    cwd: PurePath,
    home: PurePath,
    env: Mapping[str, str],
    *,
    configs: Sequence[PurePath] = (),
) -> list[ConfigFile]:
    """Read every configuration file that applies to ``cwd``, lowest precedence first.

    Args:
        read: the reader (see :data:`Reader`).
        cwd: the host's working directory, absolute; also the project whose section of a
            ``~/.claude.json`` named in ``configs`` is read.
        home: the user's home directory.
        env: the environment variables, for the XDG paths.
        configs: files the user named explicitly; each must exist.

    Returns:
        The files that exist, in the order of the module docstring.

    Raises:
        ConfigError: a file is malformed, or a file in ``configs`` does not exist.
    """
    found: list[ConfigFile] = []
    candidates = [(path, Scope.USER) for path in user_config_paths(home, env)]
    for path in project_config_paths(cwd):
        candidates += [(path, Scope.PROJECT), (local_config_path(path.parent), Scope.LOCAL)]
    for path, scope in candidates:
        text = read(path)
        if text is not None:
            found.append(read_config_file(str(path), text, scope=scope, project=cwd))
    for path in configs:
        text = read(path)
        if text is None:
            raise ConfigError("no such file", file=str(path))
        found.append(read_config_file(str(path), text, scope=Scope.LOCAL, project=cwd))
    return found


def load_documents(
    read: Reader,
    cwd: PurePath,
    home: PurePath,
    env: Mapping[str, str],
    *,
    configs: Sequence[PurePath] = (),
) -> list[ScopeDocument]:
    """Return the documents of :func:`load_config_files`, ready for ``merge_scopes``.

    Raises:
        ConfigError: as :func:`load_config_files`.
    """
    files = load_config_files(read, cwd, home, env, configs=configs)
    return [document for file in files for document in file.documents]

"""The host layer's configuration: which MCP servers to run, from which files, and how.

Pure functions over file *contents*: the host reads files (``load_documents`` takes a
reader callable), this package validates them into typed definitions
(:class:`StdioServerConfig`, :class:`HttpServerConfig`), merges the scopes
(PLUGIN < USER < PROJECT < LOCAL) with provenance, and expands ``${VAR}`` placeholders
with warnings for everything it cannot fill. It also reads the files of Claude Desktop,
Claude Code, Cursor and VS Code. A host does, at start-up::

    documents = load_documents(read, cwd, home, os.environ, configs=cli_config_files)
    for entry in merge_scopes(documents).enabled():
        config, warnings = expand_server(entry.name, entry.config, os.environ)
        ...  # show warnings, then start or connect to the server
"""

from mcp_sansio.hostconfig.discovery import (
    Reader,
    load_config_files,
    load_documents,
    local_config_path,
    project_config_paths,
    user_config_paths,
)
from mcp_sansio.hostconfig.expand import (
    ExpansionProblem,
    ExpansionWarning,
    expand_server,
    expand_text,
)
from mcp_sansio.hostconfig.formats import ConfigFile, ConfigFormat, InputPrompt, read_config_file
from mcp_sansio.hostconfig.merge import MergedConfig, merge_scopes
from mcp_sansio.hostconfig.model import (
    ConfigError,
    HttpServerConfig,
    Scope,
    ScopeDocument,
    ServerConfig,
    ServerEntry,
    ServerState,
    StdioServerConfig,
    Transport,
)

__all__ = [
    "ConfigError",
    "ConfigFile",
    "ConfigFormat",
    "ExpansionProblem",
    "ExpansionWarning",
    "HttpServerConfig",
    "InputPrompt",
    "MergedConfig",
    "Reader",
    "Scope",
    "ScopeDocument",
    "ServerConfig",
    "ServerEntry",
    "ServerState",
    "StdioServerConfig",
    "Transport",
    "expand_server",
    "expand_text",
    "load_config_files",
    "load_documents",
    "local_config_path",
    "merge_scopes",
    "project_config_paths",
    "read_config_file",
    "user_config_paths",
]

"""A stdio MCP server of the Skills extension (SEP-2640), in plain JSON-RPC (no SDK ships one).

Skills: ``pdf-processing`` (``SKILL.md`` and ``references/FORMS.md``, served as listed) and
``tampered`` (its ``SKILL.md`` differs from the digest it lists). ``resources/read`` serves
the files; the tool ``reads`` answers with the URIs read so far, as JSON, so a test can see
what the client fetched. ``--modern`` answers ``server/discover`` (2026-07-28); without it
the probe gets "method not found" and the client falls back to ``initialize`` (2025-11-25).
"""

from __future__ import annotations

import hashlib
import json
import sys

EXTENSION = "io.modelcontextprotocol/skills"
CAPABILITIES: dict[str, object] = {"resources": {}, "tools": {}, "extensions": {EXTENSION: {}}}
FILES = {
    "skill://pdf-processing/SKILL.md": ("---\nname: pdf-processing\n"
                                        "description: Extract, fill, and assemble PDF documents\n---\n\n"
                                        "Use FORMS.md.\n"),
    "skill://pdf-processing/references/FORMS.md": "Supporting content.\n",
    "skill://tampered/SKILL.md": "---\nname: tampered\ndescription: Looks harmless\n---\n\nEvil body!!\n",
    "skill://tampered/notes.md": "Never read.\n",
}
LISTED = {**FILES, "skill://tampered/SKILL.md": FILES["skill://tampered/SKILL.md"].replace("Evil", "Good")}


def _entry(name: str, description: str) -> dict[str, object]:
    root = f"skill://{name}/"
    files = [{"uri": uri, "digest": "sha256:" + hashlib.sha256(text.encode()).hexdigest(),
              "size": len(text.encode())} for uri, text in LISTED.items() if uri.startswith(root)]
    return {"uri": root + "SKILL.md", "frontmatter": {"name": name, "description": description},
            "resources": files}


SKILLS = [_entry("pdf-processing", "Extract, fill, and assemble PDF documents"),
          _entry("tampered", "Looks harmless")]


def main() -> None:
    """Answer one client on stdin/stdout until stdin closes."""
    modern = "--modern" in sys.argv
    reads: list[str] = []
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method, params = message["method"], message.get("params") or {}
        result: dict[str, object] | None = None
        if method == "server/discover" and modern:
            result = {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                      "capabilities": CAPABILITIES, "ttlMs": 0, "cacheScope": "public",
                      "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "skills", "version": "1"}}}
        elif method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": CAPABILITIES,
                      "serverInfo": {"name": "skills", "version": "1"}}
        elif method == "skills/list":
            result = {"skills": SKILLS, "ttlMs": 0, "cacheScope": "public"}
        elif method == "skills/get":
            found = [skill for skill in SKILLS if skill["uri"] == params.get("uri")]
            result = {"skill": found[0], "ttlMs": 0, "cacheScope": "public"} if found else None
        elif method == "resources/read" and params.get("uri") in FILES:
            reads.append(params["uri"])
            result = {"contents": [{"uri": params["uri"], "mimeType": "text/markdown",
                                    "text": FILES[params["uri"]]}], "ttlMs": 0, "cacheScope": "public"}
        elif method == "tools/list":
            result = {"tools": [{"name": "reads", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": json.dumps(reads)}]}
        elif method == "ping":
            result = {}
        if result is None:
            code = -32602 if method in ("skills/get", "resources/read") else -32601
            reply: dict[str, object] = {"error": {"code": code, "message": f"no {method} here"}}
        else:
            reply = {"result": result}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

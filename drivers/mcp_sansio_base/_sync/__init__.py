# Generated from drivers/mcp_sansio_base/_async/__init__.py by scripts/unasync.py: do not edit.
"""The async surfaces (written by hand); ``_sync`` holds their generated blocking twins."""

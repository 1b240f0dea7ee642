"""The async surfaces (written by hand); ``_sync`` holds their generated blocking twins."""

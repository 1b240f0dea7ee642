"""Tests of the drivers against real servers (a package, so its helpers import as modules)."""

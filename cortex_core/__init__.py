"""Cortex core: a repository's memory — symbol-level git history, co-change and hotspots in SQLite.

The public API returns typed results (dataclasses); front ends (CLI, language server) render them.
"""

__version__ = "0.1.0"

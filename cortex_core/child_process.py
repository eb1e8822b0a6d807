"""Front ends run `cortex index --progress-json` as a child process (the language server, the
MCP server's `sync`): how to stop it, and how to read why it failed."""

from __future__ import annotations

import os


def signal_group(pid: int, sig: int) -> None:
    """Signal the indexer and its worker processes: it runs in its own process group."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def last_error(stderr: str) -> str | None:
    """The indexer's own error line (`cortex: ...`), else the last line it printed."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("cortex: "):
            return ln[len("cortex: "):][:500]
    return lines[-1][:500] if lines else None

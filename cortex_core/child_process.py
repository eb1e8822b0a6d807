"""Front ends run `cortex index --progress-json` as a child process (the language server, the
MCP server's `sync`): how to stop it, and how to read why it failed."""

from __future__ import annotations

import os
import signal

# Set by a server for the `cortex index` it starts: that server's pid.
PARENT_ENV = "CORTEX_PARENT_PID"


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


def die_with_parent() -> None:
    """In `cortex index` started by a server (PARENT_ENV set): on Linux, be sent SIGTERM when
    that server dies, even by SIGKILL. The indexer runs in its own session, so nothing else would
    stop it; re-parented, it would go on until its next write. Elsewhere: nothing."""
    parent = os.environ.get(PARENT_ENV, "")
    if not parent.isdigit():
        return
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)      # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):   # it died before prctl took effect
        raise SystemExit(143)

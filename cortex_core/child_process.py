"""The indexer as a child process: front ends run `cortex index` (the language server and the
MCP server's `sync` with `--progress-json`, the git hooks in the background). Its command line,
how a server starts it, how to stop it, and how to read why it failed. When to run it, and what
to show of its progress, is each front end's own policy."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from cortex_core.errors import ACTIONS, CortexError, Hint

# Set by a server for the `cortex index` it starts: that server's pid.
PARENT_ENV = "CORTEX_PARENT_PID"

# What a Python interpreter is given to run the CLI. -P: the working directory (often the
# repository) must never come first on sys.path, or a repository's own cortex_core/ or json.py
# would run as the indexer. Installed hooks run exactly this: it must keep working.
CLI_ARGS = ("-P", "-m", "cortex_core")

# The phases of a recent-first run (ingest.py) are named with these before them, so that its
# progress says which history it is reading.
RECENT, OLDER = "recent history: ", "older history: "


def index_arguments(repo_root: Path | str, *, db: Path | str | None = None,
                    progress_json: bool = False, wait: float | None = None,
                    rebuild: bool = False, model: str | None = None, quiet: bool = False,
                    coalesce: bool = False, recent_first: str | None = None) -> list[str]:
    """`index` and its options, for the repository at `repo_root` (last). Without `db`, the
    indexer decides where the store is as every front end does (store_location)."""
    args = ["index"]
    if quiet:
        args.append("--quiet")
    if coalesce:
        args.append("--coalesce")
    if progress_json:
        args.append("--progress-json")
    if wait is not None:
        args += ["--wait", str(wait)]
    if rebuild:
        args.append("--rebuild")
    if recent_first:
        args.append(f"--recent-first={recent_first}")
    if model:
        args.append(f"--model={model}")   # one argument: a value cannot pose as an option
    if db is not None:
        args += ["--db", str(db)]
    return args + ["--repo", str(repo_root)]


def index_command(repo_root: Path | str, *, python: str | None = None,
                  **options: Any) -> list[str]:
    """The whole command line of an indexer run by `python` (default: this interpreter), with
    the options of `index_arguments`."""
    return [python or sys.executable, *CLI_ARGS, *index_arguments(repo_root, **options)]


# What a spare indexer is started with (cortex_cli/spare.py): it reads a run's arguments on stdin.
SPARE_ARGS = (*CLI_ARGS, "--spare")


def spare_arguments(command: list[str]) -> list[str] | None:
    """The arguments a spare started by this interpreter takes for `command` (an
    `index_command`): what follows the interpreter and CLI_ARGS; None for a command a spare
    cannot run (another interpreter, another program)."""
    head = [sys.executable, *CLI_ARGS]
    if command[:len(head)] != head or command[len(head):len(head) + 1] != ["index"]:
        return None
    return command[len(head):]


def spawn_options() -> dict[str, Any]:
    """How a server starts the indexer; subprocess.Popen and asyncio.create_subprocess_exec take
    these alike (the caller chooses where stderr goes). No stdin; the progress events on a pipe;
    its own session, so that stopping it reaches the worker processes it reads history with; "/"
    as working directory (with -P, no repository file is ever imported); PARENT_ENV, so that it
    dies with the server (die_with_parent)."""
    return dict(stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True,
                cwd="/", env=dict(os.environ, PYTHONIOENCODING="utf-8",
                                  **{PARENT_ENV: str(os.getpid())}))


def signal_group(pid: int, sig: int) -> None:
    """Signal the indexer and its worker processes: it runs in its own process group."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def error_event(exc: CortexError) -> dict:
    """The `--progress-json` line of an indexer's error: the message and the action that fixes
    it, for the front end that started it to phrase in its own words."""
    return {"event": "error", "message": exc.message, "hint": exc.hint.action if exc.hint else None}


def error_of(event: dict) -> CortexError:
    """The error of an `error` event (error_event), with its hint when it names a known one."""
    message, hint = event.get("message"), event.get("hint")
    return CortexError(str(message)[:500] if message else "the indexer failed",
                       Hint(hint) if isinstance(hint, str) and hint in ACTIONS else None)


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

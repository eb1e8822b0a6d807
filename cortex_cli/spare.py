"""A spare indexer: `python -P -m cortex_core --spare`, started ahead of time by a server.

An index run started by the language server paid a new process's start before its first
commit: Python's and the imports of what indexing needs, about 0.3 s of a one-commit update
that takes about a second (docs/numbers.md, "One-commit update"). A spare pays it while
nothing waits for it. It imports what a run needs (engine.load_indexer), then reads one line
from its standard input: the run's arguments as a JSON list of strings, `index` first. Then
it is that run, as `python -P -m cortex_core index ...` would have been. End of input, or
anything else, and it exits without doing anything: a server that no longer needs it closes
its input. Started by a server (CORTEX_PARENT_PID), it dies with that server
(child_process.die_with_parent), waiting or running. When Cortex's files changed while it
waited (an upgrade, an edit), it runs as a fresh process would, with the files as they are
now: the same process, replaced by `python -P -m cortex_core index ...` (os.execv).
"""

from __future__ import annotations

import json
import os
import sys

from cortex_cli.daemon import CodeStamp
from cortex_core.child_process import CLI_ARGS, die_with_parent
from cortex_core.engine import load_indexer

MAX_LINE = 1 << 20   # bytes; the arguments of a run are far fewer
# The first event of a run handed to a spare that restarted as a fresh process (arguments).
FRESH = {"event": "fresh"}


def arguments() -> list[str] | None:
    """Wait, loaded, for the run's arguments; None when there will be none."""
    die_with_parent()
    # Cortex's files as they are before most of them load (as the daemon checks its own,
    # cortex_cli/daemon.py): an upgrade during the loading is seen too.
    stamp = CodeStamp()
    load_indexer()
    import cortex_cli.cli   # noqa: F401  the command line that runs it, loaded too
    line = sys.stdin.buffer.readline(MAX_LINE)
    # The run reads no input (a server starts the indexer with none): stdin is left empty.
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        argv = json.loads(line)
    except ValueError:   # end of input, or not JSON: no run
        return None
    if not isinstance(argv, list) or argv[:1] != ["index"] or \
            not all(isinstance(arg, str) for arg in argv):
        return None
    if stamp.changed():   # loaded code that is no longer Cortex's: a fresh start runs it
        if "--progress-json" in argv:   # the server that handed the run over: it is not warm
            os.write(1, json.dumps(FRESH).encode() + b"\n")
        os.execv(sys.executable, [sys.executable, *CLI_ARGS, *argv])
    return argv

"""How a `cortex` process ends: at once when nothing is left to finish.

Python's own exit tears everything down first: it runs a last garbage collection and frees
every module, object, parse tree and cache the command built. After an index update that is
50-130 ms of a run that takes about a second (docs/numbers.md, "One-commit update"), and a
query's process pays it too; nothing the user sees depends on it. So once the command has
returned, its output is flushed and the process exits with `os._exit`.

Only when that cannot lose anything: the store is closed by then (the engine closes what it
opened, in `with` blocks and `finally`), and a process that still has something running
besides its main thread exits the usual way. That is a thread that is not a daemon (its work
would be cut), or multiprocessing loaded (a worker pool's semaphores and its resource tracker
are cleaned up by finalizers), or a stream that cannot be flushed (a closed pipe: Python's own
exit reports it as before). Only the entry points call this (bin/cortex, `python -m
cortex_core`), never `main()`, which tests and the daemon run inside their own processes.
"""

import os
import sys

TYPE_CHECKING = False   # not typing's: this module is on the way of every `cortex` start
if TYPE_CHECKING:
    from typing import NoReturn

_TEARDOWN_NEEDED = ("multiprocessing", "concurrent.futures")


def leave(code: "int | None" = 0) -> "NoReturn":
    """End the process with `code` (as sys.exit's: None is 0), without Python's teardown when
    nothing is left to finish; otherwise as sys.exit does."""
    code = 0 if code is None else code
    # A status past a C int (only a daemon of another version could send one): sys.exit's way.
    if -2**31 <= code < 2**31 and _nothing_running():
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None and not stream.closed:
                    stream.flush()
        except (OSError, ValueError):
            sys.exit(code)   # Python's exit says what went wrong, as it always did
        os._exit(code)
    sys.exit(code)


def _nothing_running() -> bool:
    if any(name in sys.modules for name in _TEARDOWN_NEEDED):
        return False
    threading = sys.modules.get("threading")
    if threading is None:
        return True
    main = threading.main_thread()
    return all(t is main or t.daemon for t in threading.enumerate())

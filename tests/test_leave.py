"""The command line's exit without Python's teardown (cortex_cli/leave.py), in real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# Buffered streams, as a user's are (PYTHONUNBUFFERED would flush every write on its own).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def _python(code: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT,
                          timeout=60, env=ENV, **kwargs)


def test_what_was_written_arrives_whole_with_the_exit_status() -> None:
    """Buffered output to pipes is flushed before the process ends; the status is the
    command's, and None is 0 as with sys.exit."""
    done = _python("import sys\nfrom cortex_cli.leave import leave\n"
                   "sys.stdout.write('o' * 200_000)\nsys.stdout.write('end')\n"
                   "sys.stderr.write('a line\\n')\nsys.stderr.write('and')\n"
                   "leave(3)\n")
    assert (done.returncode, done.stdout, done.stderr) == (3, b"o" * 200_000 + b"end",
                                                           b"a line\nand")
    assert _python("from cortex_cli.leave import leave\nleave(None)\n").returncode == 0
    # Past a C int, as sys.exit ends it (os._exit would raise OverflowError).
    huge = _python("from cortex_cli.leave import leave\nleave(2**40 + 3)\n")
    assert (huge.returncode, huge.stderr) == (
        _python("import sys\nsys.exit(2**40 + 3)\n").returncode, b"")


def test_teardown_is_skipped_only_when_nothing_else_runs() -> None:
    """A thread that is not a daemon, or multiprocessing loaded (a pool's finalizers), keeps
    Python's own exit; a daemon thread does not. Checked in a fresh interpreter: pytest's own
    process has loaded multiprocessing."""
    done = _python(
        "import threading\nfrom cortex_cli.leave import _nothing_running as free\n"
        "first = free()\n"
        "stop = threading.Event()\n"
        "worker = threading.Thread(target=stop.wait)\nworker.start()\n"
        "with_worker = free()\nstop.set(); worker.join()\n"
        "daemon = threading.Thread(target=threading.Event().wait, daemon=True)\n"
        "daemon.start()\nwith_daemon = free()\n"
        "import multiprocessing\n"
        "print(first, with_worker, with_daemon, free())\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [b"True", b"False", b"True", b"False"]


def test_a_thread_left_running_finishes_before_the_process_ends(tmp_path: Path) -> None:
    """With a thread that is not a daemon still at work, the process ends as Python ends it:
    the thread finishes (once this test, told the process is leaving, closes its stdin) and
    what it writes is kept."""
    marker = tmp_path / "marker"
    code = ("import sys, threading\nfrom cortex_cli.leave import leave\n"
            f"def work():\n    sys.stdin.read()\n    open({str(marker)!r}, 'w').write('done')\n"
            "threading.Thread(target=work).start()\nprint('leaving', flush=True)\nleave(0)\n")
    with subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, env=ENV) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline() == b"leaving\n"
        proc.stdin.write(b"go")
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    assert marker.read_text() == "done"


def test_it_loads_nothing_on_the_way_of_every_start() -> None:
    """The `cortex` script imports this before a query goes to the daemon (cortex_cli/quick.py
    loads no more than `_socket`): it brings no module a bare interpreter has not loaded."""
    done = _python("import sys\nbefore = set(sys.modules)\nimport cortex_cli.leave\n"
                   "print(sorted(set(sys.modules) - before))\n")
    assert done.stdout.strip() == b"['cortex_cli', 'cortex_cli.leave']", done.stderr

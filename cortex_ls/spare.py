"""One spare indexer, started after each run, for the next run of any repository.

A run handed to a spare (cortex_cli/spare.py) starts with Python and what indexing imports
already loaded: about 0.3 s of a one-commit update that takes about a second. The spare is a
child process like a run (its own session, dying with this server), holding some 35 MB while it
waits; there is one per server, not one per repository. It is started once a run has ended,
not beside a first run's long reading, and a run that cannot use it (another interpreter) is
started as before.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import subprocess
import sys

from cortex_core import child_process

log = logging.getLogger(__name__)


class Spare:
    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.closed = False
        self.starting = False   # two repositories' runs ending together start one spare

    async def take(self, command: list[str]) -> asyncio.subprocess.Process | None:
        """The spare, now running `command` (an index_command); None when there is no live
        spare or it cannot run that command (the caller then starts the command itself)."""
        args = child_process.spare_arguments(command)
        proc = self.proc
        if args is None or proc is None or proc.returncode is not None or proc.stdin is None:
            return None
        self.proc = None
        try:
            proc.stdin.write(json.dumps(args).encode() + b"\n")
            await proc.stdin.drain()
            proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError) as exc:   # it died meanwhile
            log.info("the spare indexer is gone: %s", exc)
            return None
        return proc

    async def refill(self) -> None:
        """Start a spare if there is none (after a run: for the next one)."""
        if self.closed or self.starting or (self.proc is not None
                                             and self.proc.returncode is None):
            return
        options = child_process.spawn_options()
        options["stdin"] = subprocess.PIPE
        self.starting = True
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, *child_process.SPARE_ARGS, stderr=subprocess.PIPE, **options)
        except OSError as exc:   # runs are started as before
            log.warning("could not start a spare indexer: %s", exc)
            return
        finally:
            self.starting = False
        if self.closed:   # the server closed while it started
            child_process.signal_group(proc.pid, signal.SIGKILL)
            return
        self.proc = proc

    async def close(self) -> None:
        """Stop the spare at once: it holds nothing (no store, no file), and one still loading
        would not read its closed input for a while (the server's shutdown waits for this)."""
        self.closed = True
        proc, self.proc = self.proc, None
        if proc is None or proc.returncode is not None:
            return
        child_process.signal_group(proc.pid, signal.SIGKILL)
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:
            log.warning("the spare indexer (pid %s) did not stop", proc.pid)

    def kill(self) -> None:
        """After the connection is gone: kill a spare at once (see Server.kill_children)."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.returncode is None:
            child_process.signal_group(proc.pid, signal.SIGKILL)

"""The `sync` tool's indexer: `cortex index` in a child process, one per repository at a time.

A child process, as in the language server: the server stays small (a long first run peaks at a
few hundred MB), a crash in indexing cannot take the agent's server down, and the store's writer
lock makes it take turns with a `cortex index` run from a terminal or a git hook. A run outlives
the tool call that started it (an agent's call may time out long before a first index of a large
history is done); the next `sync` call or `status` reports on it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cortex_core.child_process import (error_of, index_command, last_error, signal_group,
                                       spawn_options)

if TYPE_CHECKING:
    from cortex_core.engine import Engine


@dataclass
class Run:
    """What one indexer run is doing, or did."""
    started: float
    phase: str = "starting"
    done: int = 0
    total: int = 0
    finished: bool = False
    ok: bool = False
    summary: dict | None = None
    error: str | None = None
    events: int = 0                 # progress lines seen: a waiter wakes when this grows
    ended: float | None = None
    pid: int | None = None

    @property
    def message(self) -> str:
        if self.finished:
            return "done" if self.ok else f"failed: {self.error}"
        return f"{self.phase}: {self.done}/{self.total}" if self.total else self.phase


class Indexers:
    """Background index runs by database; every method is thread-safe."""

    def __init__(self):
        self._lock = threading.Condition()
        self._runs: dict[Path, Run] = {}
        self._procs: dict[Path, subprocess.Popen] = {}
        self._closed = False

    def current(self, engine: Engine) -> Run | None:
        with self._lock:
            return self._runs.get(engine.db)

    def running(self, engine: Engine) -> Run | None:
        run = self.current(engine)
        return run if run is not None and not run.finished else None

    def start(self, engine: Engine, rebuild: bool = False) -> tuple[Run, bool]:
        """The running run for this database, or a new one. (run, started now)."""
        with self._lock:
            run = self._runs.get(engine.db)
            if run is not None and not run.finished:
                return run, False
            if self._closed:
                raise RuntimeError("the server is stopping")
            # Without --db, the indexer decides where the store is as the server does. A first
            # index of a long history reads a recent window first: answers within a minute.
            cmd = index_command(engine.root, db=engine.db if engine.location.explicit else None,
                                progress_json=True, wait=30, rebuild=rebuild,
                                recent_first="auto")
            errors = tempfile.TemporaryFile()
            # Its own session: stopping it reaches the worker processes it reads history with.
            proc = subprocess.Popen(cmd, stderr=errors, **spawn_options())
            run = Run(started=time.time(), pid=proc.pid)
            self._runs[engine.db] = run
            self._procs[engine.db] = proc
        threading.Thread(target=self._follow, args=(engine.db, run, proc, errors),
                         name=f"indexer {proc.pid}", daemon=True).start()
        return run, True

    def wait(self, run: Run, seen: int, timeout: float) -> None:
        """Until `run` reports progress past `seen` events, finishes, or `timeout` passes."""
        deadline = time.monotonic() + max(0.0, timeout)
        with self._lock:
            while not run.finished and run.events <= seen:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._lock.wait(left)

    def _follow(self, db: Path, run: Run, proc: subprocess.Popen, errors) -> None:
        failure: list = []      # the indexer's error event, phrased when the run ends
        try:
            self._read_events(run, proc, failure)
        finally:    # whatever happens here, the run ends: no later `sync` joins a dead run
            self._finish(db, run, proc, errors, failure[-1] if failure else None)

    def _read_events(self, run: Run, proc: subprocess.Popen, failure: list) -> None:
        for raw in proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            with self._lock:
                if event.get("event") == "progress":
                    run.phase = str(event.get("phase", ""))
                    try:
                        run.done, run.total = int(event.get("done", 0)), int(event.get("total", 0))
                    except (TypeError, ValueError):
                        pass
                elif event.get("event") == "done":
                    run.summary = event.get("summary")
                elif event.get("event") == "error":
                    failure.append(error_of(event))
                run.events += 1
                self._lock.notify_all()

    def _finish(self, db: Path, run: Run, proc: subprocess.Popen, errors, failure) -> None:
        code = proc.wait()
        errors.seek(0)
        stderr = errors.read().decode("utf-8", "replace")
        errors.close()
        with self._lock:
            run.ok = code == 0 and run.summary is not None
            if not run.ok and failure is not None:     # the fix in this server's words
                from cortex_mcp.server import WORDS
                run.error = failure.phrased(WORDS)
            elif not run.ok:
                run.error = last_error(stderr) or (
                    "interrupted" if code in (-signal.SIGINT, 130, -signal.SIGKILL)
                    else f"the indexer exited with status {code}")
            run.finished, run.ended = True, time.time()
            run.events += 1
            self._procs.pop(db, None)
            self._lock.notify_all()

    def close(self, grace: float = 5.0) -> None:
        """Interrupt running children, and kill those still running after `grace` seconds (an
        interrupted or killed run keeps what it committed; the next one continues)."""
        with self._lock:
            self._closed = True
            procs = list(self._procs.values())
        for proc in procs:
            signal_group(proc.pid, signal.SIGINT)
        deadline = time.monotonic() + grace
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                signal_group(proc.pid, signal.SIGKILL)
                proc.wait()

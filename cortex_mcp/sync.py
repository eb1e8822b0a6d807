"""The `sync` tool's indexer: `cortex index` in a child process, one per repository at a time.

A child process, as in the language server: the server stays small (a long first run peaks at a
few hundred MB), a crash in indexing cannot take the agent's server down, and the store's writer
lock makes it take turns with a `cortex index` run from a terminal or a git hook. A run outlives
the tool call that started it (an agent's call may time out long before a first index of a large
history is done); the next `sync` call or `status` reports on it.

As in the language server (cortex_ls/spare.py), once a run has ended a spare indexer (`python -P
-m cortex_core --spare`, cortex_cli/spare.py) waits with Python and what indexing imports already
loaded, and the next run of any repository is handed to it: about 0.3 s less of an update that
takes about a second. One per server, some 35 MB while it waits, dying with the server.
"""

from __future__ import annotations

import json
import logging
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from cortex_core.child_process import (SPARE_ARGS, error_of, index_command, last_error,
                                       signal_group, spare_arguments, spawn_options)

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
    warm: bool = False              # run by the spare indexer, loaded before it was asked

    @property
    def message(self) -> str:
        if self.finished:
            return "done" if self.ok else f"failed: {self.error}"
        return f"{self.phase}: {self.done}/{self.total}" if self.total else self.phase


log = logging.getLogger(__name__)


class _Spare:
    """The spare indexer and the file its errors go to (read as a run's when it runs one). Its
    state is guarded by the lock of the Indexers that own it. It is started from a thread of its
    own, which lives as long as the server: a child is sent its parent-death signal when the
    *thread* that started it ends (prctl(2)), and a run's thread ends with the run."""

    def __init__(self, lock: threading.Condition) -> None:
        self._lock = lock
        self.proc: subprocess.Popen | None = None
        self.errors: IO[bytes] | None = None
        self.closed = False
        self._asks: queue.SimpleQueue[threading.Event | None] = queue.SimpleQueue()
        self._starter: threading.Thread | None = None

    def take(self, command: list[str]) -> tuple[subprocess.Popen, IO[bytes]] | None:
        """The spare, now running `command` (an index_command), with its errors' file; None
        when none waits alive or it cannot run that command (the caller starts it itself).
        Call under the lock."""
        args = spare_arguments(command)
        if args is None or self.proc is None:
            return None
        proc, errors = self.proc, self.errors
        self.proc = self.errors = None
        assert errors is not None and proc.stdin is not None
        try:
            if proc.poll() is not None:   # it died while it waited
                raise BrokenPipeError
            proc.stdin.write(json.dumps(args).encode() + b"\n")
            proc.stdin.close()
        except OSError as exc:   # BrokenPipeError: gone meanwhile
            log.info("the spare indexer is gone: %s", exc)
            errors.close()
            return None
        return proc, errors

    def refill(self, timeout: float = 10.0) -> None:
        """Have a spare waiting (after a run: for the next one), started by the starter thread;
        returns once it has started. Call without the lock."""
        started = threading.Event()
        with self._lock:   # asked in turn with close(): never after the starter has stopped
            if self.closed:
                return
            if self._starter is None or not self._starter.is_alive():
                self._starter = threading.Thread(target=self._starting, daemon=True,
                                                 name="spare indexer")
                self._starter.start()
            self._asks.put(started)
        started.wait(timeout)

    def _starting(self) -> None:
        while True:
            asked = self._asks.get()
            if asked is None:
                return
            try:
                with self._lock:
                    if not self.closed:
                        self._start()
            except Exception:   # never the starter's end: runs are started as before
                log.exception("could not start a spare indexer")
            finally:
                asked.set()

    def _start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        self._drop()
        try:   # a file for its errors (the temporary folder may be full or gone), then it
            errors = tempfile.TemporaryFile()
        except OSError as exc:   # runs are started as before
            log.warning("could not start a spare indexer: %s", exc)
            return
        options = spawn_options()
        options["stdin"] = subprocess.PIPE
        try:
            self.proc = subprocess.Popen([sys.executable, *SPARE_ARGS], stderr=errors, **options)
        except OSError as exc:
            log.warning("could not start a spare indexer: %s", exc)
            errors.close()
            return
        self.errors = errors

    def close(self) -> None:
        """For good: stop a waiting spare at once (it holds no store and no file of the
        repository) and the starter thread. Call under the lock."""
        self.closed = True
        self._drop()
        self._asks.put(None)

    def _drop(self) -> None:
        proc, errors, self.proc, self.errors = self.proc, self.errors, None, None
        if proc is not None and proc.poll() is None:
            signal_group(proc.pid, signal.SIGKILL)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                log.warning("the spare indexer (pid %s) did not stop", proc.pid)
        if errors is not None:
            errors.close()


class Indexers:
    """Background index runs by database; every method is thread-safe."""

    def __init__(self):
        self._lock = threading.Condition()
        self._runs: dict[Path, Run] = {}
        self._procs: dict[Path, subprocess.Popen] = {}
        self._closed = False
        self._spare = _Spare(self._lock)   # one for every repository of the server

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
            taken = self._spare.take(cmd)
            if taken is not None:
                proc, errors = taken
            else:
                errors = tempfile.TemporaryFile()
                # Its own session: stopping it reaches the worker processes it reads with.
                try:
                    proc = subprocess.Popen(cmd, stderr=errors, **spawn_options())
                except BaseException:
                    errors.close()
                    raise
            run = Run(started=time.time(), pid=proc.pid, warm=taken is not None)
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
                elif event.get("event") == "fresh":   # the spare started afresh: new code
                    run.warm = False
                run.events += 1
                self._lock.notify_all()

    def _finish(self, db: Path, run: Run, proc: subprocess.Popen, errors, failure) -> None:
        code = proc.wait()
        errors.seek(0)
        stderr = errors.read().decode("utf-8", "replace")
        errors.close()
        self._spare.refill()   # before the run is told it ended: ready for the next one
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
            self._spare.close()
        for proc in procs:
            signal_group(proc.pid, signal.SIGINT)
        deadline = time.monotonic() + grace
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                signal_group(proc.pid, signal.SIGKILL)
                proc.wait()

"""Background indexing: `cortex index` in a child process, its progress forwarded to the editor.

A child process, not a thread: the server stays small (indexing a large history peaks at a few
hundred MB, the spectral step most), stays responsive (no GIL contention with requests), and a
crash or an out-of-memory kill in indexing cannot take the editor's server down. The store's
writer lock makes the server and a `cortex index` run from a terminal take turns.

HEAD moves (commit, checkout, pull, rebase) are noticed by `head_state` — from the client's file
watcher when it has one, and by a cheap poll — and start an incremental run. A run is handed to
the server's spare indexer when one waits (spare.py): the same command, without the start.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable

from cortex_core import child_process
from cortex_core.child_process import OLDER, RECENT, last_error, signal_group

from cortex_ls.repos import WORDS, Repo
from cortex_ls.spare import Spare

if TYPE_CHECKING:
    from cortex_core.engine import Engine

log = logging.getLogger(__name__)

# Share of the progress bar each phase of `cortex index` fills (commits dominate a first run).
_PHASES = {"commits": (0, 80), "files read for structure": (80, 88), "commit messages": (88, 92),
           "texts embedded": (92, 97), "areas": (97, 100)}
BUSY_RETRY_SECONDS = 2.0


@dataclass(frozen=True)
class Progress:
    percentage: int
    message: str


@dataclass(frozen=True)
class Outcome:
    ok: bool
    summary: dict | None = None
    error: str | None = None
    busy: bool = False          # another indexer held the store: retried later
    warm: bool = False          # run by the spare indexer (cortex_ls/spare.py)


def head_state(engine: Engine) -> str | None:
    """HEAD's ref and commit, e.g. "refs/heads/main 3f2a…", "detached 3f2a…" or "unborn"; None
    when it cannot be read. A token to compare: it changes when HEAD moves or switches branch.

    Reads `.git/HEAD` and the ref it names, loose or packed: microseconds, no git process."""
    head = engine.head()
    if head is None:
        return None
    if head.unborn:
        return "unborn"
    return f"{head.ref or 'detached'} {head.commit}"


# A first run over a long history indexes a recent window first (cortex_core's ingest.py, recent
# first): its phases fill the bar's first part, the whole history's the rest.
_HISTORIES = {RECENT: (0, 20), OLDER: (20, 100)}


def _percentage(phase: str, done: int, total: int) -> int:
    for prefix, (start, end) in _HISTORIES.items():
        if phase.startswith(prefix):
            inner = _percentage(phase[len(prefix):], done, total)
            return start + (end - start) * inner // 100
    lo, hi = _PHASES.get(phase, (97, 100))
    fraction = done / total if total > 0 else 1.0
    return int(lo + (hi - lo) * min(1.0, max(0.0, fraction)))


class IndexRun:
    """One repository's indexer: at most one child at a time; requests made while it runs are
    folded into one more run after it."""

    def __init__(self, repo: Repo, command: Callable[[bool], list[str]],
                 on_progress: Callable[[Repo, Progress], None],
                 on_done: Callable[[Repo, Outcome], Awaitable[None]],
                 on_start: Callable[[Repo], Awaitable[None]], spare: Spare | None = None):
        self.repo = repo
        self.spare = spare   # the server's spare indexer, shared by its repositories
        self.command = command
        self.on_progress = on_progress
        self.on_done = on_done
        self.on_start = on_start
        self.task: asyncio.Task | None = None
        self.again = False
        self.again_rebuild = False
        self.proc: asyncio.subprocess.Process | None = None
        self.closed = False

    def request(self, rebuild: bool = False) -> bool:
        """Start a run, or ask for one more after the current one. True when it started now."""
        if self.closed:
            return False
        if self.task is not None and not self.task.done():
            self.again = True
            self.again_rebuild |= rebuild
            return False
        self.task = asyncio.ensure_future(self._loop(rebuild))
        return True

    async def _loop(self, rebuild: bool) -> None:
        while not self.closed:
            outcome = await self._guarded(rebuild)
            if self.spare is not None and not self.closed:
                await self.spare.refill()   # before the run is told: ready for the next one
            if outcome.busy and not self.closed:
                await asyncio.sleep(BUSY_RETRY_SECONDS)
                self.again = True
            await self.on_done(self.repo, outcome)
            if not self.again or self.closed:
                return
            rebuild, self.again, self.again_rebuild = self.again_rebuild, False, False

    async def _guarded(self, rebuild: bool) -> Outcome:
        """One run; whatever goes wrong in this server's part of it ends the run with an
        error, never with the repository left "indexing" and a child nobody reads."""
        try:
            return await self._run_once(rebuild)
        except Exception as exc:
            log.exception("index run of %s", self.repo.root)
            proc, self.proc = self.proc, None
            if proc is not None and proc.returncode is None:
                signal_group(proc.pid, signal.SIGKILL)   # its output is no longer read
            state = self.repo.index
            state.running, state.error = False, f"the index run failed: {exc}"
            return Outcome(False, error=state.error)

    async def _run_once(self, rebuild: bool) -> Outcome:
        state = self.repo.index
        state.running, state.percentage, state.message = True, 0, "starting"
        await self.on_start(self.repo)
        command = self.command(rebuild)
        self.proc = await self.spare.take(command) if self.spare is not None else None
        warm = self.proc is not None
        try:
            # Its own process group: stopping it reaches the worker processes it reads with.
            if self.proc is None:
                self.proc = await asyncio.create_subprocess_exec(
                    *command, stderr=asyncio.subprocess.PIPE, **child_process.spawn_options())
        except (OSError, ValueError) as exc:   # ValueError: an argument no OS string can hold
            state.running = False
            state.error = f"could not start the indexer: {exc}"
            return Outcome(False, error=state.error)
        summary, last, failure = None, -1, None
        errors = asyncio.ensure_future(self.proc.stderr.read())
        async for raw in self.proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            if event.get("event") == "done":
                summary = event.get("summary")
            elif event.get("event") == "error":
                failure = child_process.error_of(event)
            elif event.get("event") == "fresh":   # the spare restarted afresh (new code)
                warm = False
            elif event.get("event") == "progress":
                pct = _percentage(str(event.get("phase")), int(event.get("done", 0)),
                                  int(event.get("total", 0)))
                pct = max(pct, state.percentage)
                message = f"{event.get('phase')}: {event.get('done')}/{event.get('total')}"
                state.percentage, state.message = pct, message
                if pct != last:
                    last = pct
                    self.on_progress(self.repo, Progress(pct, message))
        code = await self.proc.wait()
        stderr = (await errors).decode("utf-8", "replace").strip()
        self.proc = None
        state.running = False
        if code == 0 and summary is not None:
            state.error = None
            return Outcome(True, summary, warm=warm)
        if failure is not None:     # the fix in this server's words
            message = failure.phrased(WORDS)
            busy = failure.hint is not None and failure.hint.action in ("wait", "retry")
        else:
            message = last_error(stderr) or f"the indexer exited with status {code}"
            busy = "another indexer is running" in message or "index is busy" in message
        state.error = None if busy else message
        return Outcome(False, error=message, busy=busy)

    async def close(self) -> None:
        """Stop: interrupt a running child (an interrupted run keeps what it stored)."""
        self.closed = True
        proc = self.proc
        if proc is not None and proc.returncode is None:
            signal_group(proc.pid, signal.SIGINT)
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except asyncio.TimeoutError:
                signal_group(proc.pid, signal.SIGKILL)
                try:
                    await asyncio.wait_for(proc.wait(), 5)
                except asyncio.TimeoutError:
                    log.warning("the indexer (pid %s) did not stop", proc.pid)
        if self.task is not None:
            self.task.cancel()


def index_command(repo: Repo, model_setting: Callable[[], str | None]
                  ) -> Callable[[bool], list[str]]:
    """The command line of one run; the model setting is read when the run starts."""
    def command(rebuild: bool) -> list[str]:
        # No --db: the indexer decides where the store is as the server does (store_location).
        # A first open of a long history: a recent window first, answers from it within a minute
        # (the threshold is the repository's `[index] recent_first_commits`).
        return child_process.index_command(repo.root, progress_json=True, wait=30,
                                           recent_first="auto",
                                           rebuild=rebuild, model=model_setting())
    return command

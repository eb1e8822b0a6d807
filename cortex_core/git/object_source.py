"""Objects libgit2 cannot read but git can: a partial clone's blobs, kept by its promisor remote.

libgit2 knows nothing of promisor remotes, so in a `git clone --filter=blob:none` every blob of
the history is "not found" to it. git itself fetches such objects on demand. Two ways through it:

- `prefetch`: before a run reads its commits, list the objects those commits reach that are not
  here (`git rev-list --objects --missing=print`) and fetch them in one go (`git fetch --stdin`
  with their ids, what git's own lazy fetch runs, for all of them at once). One round trip
  (two for a treeless clone, whose first fetch brings the trees naming the blobs).
- `ObjectSource.fetch`: one object at a time through a long-lived `git cat-file --batch-check`,
  which fetches lazily: one round trip per object (bench/bench_partial.py measures both).

Either way git stores what it fetched in the repository, where libgit2 finds it on its next read
(it rescans the packs when an object is not found). Offline, neither can succeed: the first
failure marks the remote unreachable and nothing is fetched after it, so a run never pays one
failed connection per object. Nothing here ever prompts or waits for a terminal, nor for a remote
that stops answering: a fetch silent for FETCH_IDLE_SECONDS (git's progress is its sign of life)
is killed, with whatever it started, and counts as the remote being unreachable.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

import pygit2

# No prompts, no terminal, no background gc repacking the packs libgit2 is reading from.
_GIT_CONFIG = ("-c", "gc.auto=0", "-c", "maintenance.auto=false",
               "-c", "fetch.writeCommitGraph=false", "-c", "http.lowSpeedLimit=1000",
               "-c", "http.lowSpeedTime=30")
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "SSH_ASKPASS": "true",
            "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o ConnectTimeout=15"}

# What a missing object means, as the summary and `cortex status` say it.
CAUSE_PARTIAL_OFFLINE = "partial clone, remote unreachable"
CAUSE_PARTIAL = "partial clone"
CAUSE_DAMAGED = "missing from the repository"
CAUSE_TRUNCATED = "damaged in the repository: truncated or corrupt loose objects"
CAUSE_CORRUPT = "damaged in the repository: listed in its packs or objects, but unreadable"


# A remote that accepts a connection and then never answers (a stalled server, a remote helper
# that hangs) must not hold a run forever; CORTEX_FETCH_IDLE_SECONDS sets another bound.
IDLE_ENV = "CORTEX_FETCH_IDLE_SECONDS"
FETCH_IDLE_SECONDS = 60.0


def fetch_idle_seconds() -> float:
    try:
        value = float(os.environ.get(IDLE_ENV, ""))
    except ValueError:
        return FETCH_IDLE_SECONDS
    return value if value > 0 else FETCH_IDLE_SECONDS


def _env() -> dict[str, str]:
    return {**os.environ, **_GIT_ENV}


def _kill(process: subprocess.Popen) -> None:
    """Kill a git started in a session of its own, and everything it started (a remote helper,
    ssh), then reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    process.wait()


def _fetch_until_idle(args: list[str], workdir: str, data: bytes, idle: float) -> int | None:
    """Run a fetch with `data` on its stdin; its return code, None when it was silent (no
    progress on stderr) for `idle` seconds and was killed."""
    process = subprocess.Popen(args, cwd=workdir, env=_env(), stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)

    def feed() -> None:
        try:
            process.stdin.write(data)
            process.stdin.close()
        except OSError:
            pass
    threading.Thread(target=feed, daemon=True).start()
    err = process.stderr.fileno()
    try:
        while True:
            ready, _, _ = select.select([err], [], [], idle)
            if not ready:
                _kill(process)
                return None
            if not os.read(err, 65536):
                break
        try:
            return process.wait(timeout=idle)
        except subprocess.TimeoutExpired:
            _kill(process)
            return None
    finally:
        process.stderr.close()


def promisor_remote(repo: pygit2.Repository) -> str | None:
    """The remote a partial clone fetches its missing objects from, None for a full clone."""
    config = repo.config
    try:
        name = config["extensions.partialclone"]
    except KeyError:
        name = None
    if name:
        return name
    for entry in config:
        key = entry.name
        # A key without a value is true to git.
        if key.startswith("remote.") and key.endswith(".promisor") and \
                (entry.value or "true").lower() in ("true", "yes", "on", "1"):
            return key[len("remote."):-len(".promisor")]
    return None


@dataclass(frozen=True)
class Prefetch:
    missing: int   # objects the commits reach that were not in the repository
    fetched: bool  # all fetched; False: the remote could not be reached (or refused)


def missing_objects(workdir: str, tips: list[str], hide: list[str]) -> list[str]:
    """Ids of the objects reachable from `tips` but not from `hide` that are not here."""
    args = ["git", *_GIT_CONFIG, "rev-list", "--objects", "--missing=print", *tips]
    if hide:
        args += ["--not", *hide]
    done = subprocess.run(args, cwd=workdir, env=_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return []   # a damaged repository: the readers record what they cannot read
    return [line[1:] for line in done.stdout.splitlines() if line.startswith("?")]


PREFETCH_ROUNDS = 3  # a treeless clone (--filter=tree:0) learns its blobs' ids from the trees
                     # of the first round; a blobless one needs one round


def prefetch(workdir: str, remote: str, tips: list[str], hide: list[str]) -> Prefetch:
    """Fetch, in one request per round, every object the commits from `tips` (not from `hide`)
    reach and the repository lacks."""
    total = 0
    for _ in range(PREFETCH_ROUNDS):
        oids = missing_objects(workdir, tips, hide)
        if not oids:
            break
        # What git's lazy fetch runs (promisor-remote.c), for all the objects at once.
        code = _fetch_until_idle(
            ["git", *_GIT_CONFIG, "-c", "fetch.negotiationAlgorithm=noop", "fetch", remote,
             "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no", "--progress",
             "--filter=blob:none", "--stdin"],
            workdir, ("\n".join(oids) + "\n").encode(), fetch_idle_seconds())
        if code != 0:
            return Prefetch(total + len(oids), False)
        total += len(oids)
    return Prefetch(total, True)


class ObjectSource:
    """One long-lived `git cat-file --batch-check` for the objects libgit2 does not find: asking
    git for an object makes it fetch it from the promisor remote. Started on the first miss;
    `online=False` (or a first failure) never asks at all."""

    def __init__(self, workdir: str, online: bool):
        self.workdir = workdir
        self.online = online
        self._process: subprocess.Popen | None = None

    def fetch(self, oid: str) -> bool:
        """True when git now has the object (fetched, or present after all)."""
        if not self.online:
            return False
        try:
            process = self._start()
            process.stdin.write(oid.encode() + b"\n")
            process.stdin.flush()
            answer = self._answer(process).decode("ascii", "replace")
        except OSError:
            answer = ""
        if answer.endswith(" missing\n") or not answer:
            # The remote cannot give it (unreachable, or it lacks the object too): do not try
            # again for every other object of the run.
            self.online = False
            self.close()
            return False
        return True

    def _start(self) -> subprocess.Popen:
        if self._process is None:
            self._process = subprocess.Popen(
                ["git", *_GIT_CONFIG, "cat-file", "--batch-check"], cwd=self.workdir,
                env=_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, bufsize=0, start_new_session=True)
        return self._process

    @staticmethod
    def _answer(process: subprocess.Popen) -> bytes:
        """git's one line of answer; empty when it did not come within the idle bound (the
        process is then killed: the remote hangs)."""
        out = process.stdout.fileno()
        deadline = time.monotonic() + fetch_idle_seconds()
        line = b""
        while not line.endswith(b"\n"):
            ready, _, _ = select.select([out], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(out, 4096) if ready else b""
            if not chunk:
                _kill(process)
                return b""
            line += chunk
        return line

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            try:
                process.stdin.close()
            except OSError:
                pass
            process.wait()

"""The state of the working copy that ranking can use: branch, modified and staged files."""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from cortex_core.git.git_reads import path_text
from cortex_core.memory.tokens import query_terms

_TRUNK = {"main", "master", "trunk", "develop", "development", "dev", "head", "default"}


@dataclass(frozen=True)
class Workspace:
    branch: str | None              # None when detached
    modified: tuple[str, ...]       # changed in the working tree, not staged
    staged: tuple[str, ...]         # changed in the index
    untracked: tuple[str, ...]
    # (new path, old path) of the renames staged in the index (`git mv`): both paths are also
    # in `staged`, the old one as deleted.
    renamed: tuple[tuple[str, str], ...] = ()
    # Why git could not say (a timeout, an error): the lists above are then empty, not known
    # to be empty. None when git answered.
    unread: str | None = None
    # The branch checked out when it has no commit yet (`git checkout --orphan`, a new
    # repository): `branch` is None then, as for a detached HEAD, which this is not.
    unborn: str | None = None

    @property
    def changed(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.staged + self.modified))

    def renamed_from(self, path: str) -> str | None:
        """The path a staged rename moved to `path`, if any."""
        return next((old for new, old in self.renamed if new == path), None)

    @property
    def branch_terms(self) -> list[str]:
        """Words of a topic branch name (`fix/retry-budget` -> retry, budget); none for trunk."""
        if not self.branch or self.branch.lower() in _TRUNK:
            return []
        return [t for t in query_terms(self.branch.replace("/", " "))
                if len(t) > 2 and t not in {"fix", "feat", "feature", "bugfix", "hotfix", "chore"}
                and not t.isdigit()]


# `git status`, not libgit2: importing pygit2 costs a command-line search a third of its time
# (~35 ms), and git's own answer is the user's (their fsmonitor, their untracked cache).
# --no-optional-locks: never take the index lock that the user's own git may need at that moment.
_STATUS = ("git", "--no-optional-locks", "status", "--porcelain=v2", "-z", "--branch",
           "--no-renames", "--untracked-files=normal")
# Staged renames, asked only where they matter (staged_renames): rename detection made a status
# of a large staged refactor 90 times slower (900 files: 0.02 s -> 1.8 s). Past this many
# candidates git pairs identical contents only.
_RENAMES = ("git", "--no-optional-locks", "diff", "--cached", "--name-status", "-z", "-M",
            "-l200", "--diff-filter=R")
# Variables that point git at another repository; a server started from a git hook inherits them.
_ELSEWHERE = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
              "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX")
STATUS_TIMEOUT = 10.0   # seconds; a huge or network-mounted tree gives no context rather than hang
# Seconds an answer is still read once STATUS_TIMEOUT has passed: a search slower than the timeout
# still gets what git has already said.
GRACE = 0.05


NOTHING = Workspace(None, (), (), ())


def _unread(why: str) -> Workspace:
    return Workspace(None, (), (), (), unread=why)


def skip_worktree_paths(repo_root: Path | str, timeout: float = STATUS_TIMEOUT) -> frozenset[str]:
    """Tracked paths git leaves out of the working tree on purpose: its skip-worktree entries
    (a sparse checkout's, or `git update-index --skip-worktree`). libgit2's status, which does
    not read that flag, calls them deleted; git's own answer is the user's. Empty on any git
    error or timeout (then they count as deleted, as before)."""
    import subprocess
    env = {k: v for k, v in os.environ.items() if k not in _ELSEWHERE}
    try:
        out = subprocess.run(("git", "--no-optional-locks", "ls-files", "-t", "-z"),
                             cwd=repo_root, env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, timeout=timeout, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    # Each entry is a tag, a space and the path ("S" marks skip-worktree), NUL-terminated.
    return frozenset(os.fsdecode(entry[2:]) for entry in out.split(b"\0")
                     if entry[:2] == b"S ")


def staged_renames(repo_root: Path | str, timeout: float = STATUS_TIMEOUT
                   ) -> tuple[tuple[str, str], ...]:
    """(new path, old path) of the renames staged in the index (`git mv`); empty on any git
    error or timeout, or without a HEAD to compare with."""
    import subprocess
    env = {k: v for k, v in os.environ.items() if k not in _ELSEWHERE}
    try:
        out = subprocess.run(_RENAMES, cwd=repo_root, env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, timeout=timeout, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    # Each rename is three NUL-terminated fields: "R<score>", the old path, the new path.
    fields = out.split(b"\0")
    found = []
    for at in range(0, len(fields) - 2, 3):
        if fields[at][:1] == b"R":
            old = path_text(fields[at + 1])
            found.append((path_text(fields[at + 2]), old))
    return tuple(sorted(found))


def with_renames(workspace: Workspace, repo_root: Path) -> Workspace:
    """The workspace with its staged renames read (a second git call, only when something is
    staged)."""
    if not workspace.staged:
        return workspace
    from dataclasses import replace
    return replace(workspace, renamed=staged_renames(repo_root))


def read_workspace(repo_root: Path) -> Workspace:
    """Branch and changed files from `git status` (ignored files excluded). Empty on any git error
    or timeout: the working copy only ever adds context, it is never required."""
    with PendingWorkspace(repo_root) as pending:
        return pending.result()


class PendingWorkspace:
    """`git status`, started now and read when needed, so that the caller works meanwhile: a
    search reads the index while git reads the working tree (on scrapy, 21 ms of a 38 ms search
    in the language server). Use it in a `with` block: leaving it stops git if it still runs.
    git runs in its own process group, so that stopping it reaches what a wrapper script of the
    user's `git` started, and nothing it leaves behind holds the caller."""

    def __init__(self, repo_root: Path, timeout: float = STATUS_TIMEOUT):
        import subprocess
        import time
        env = {k: v for k, v in os.environ.items() if k not in _ELSEWHERE}
        self._deadline = time.monotonic() + timeout
        self._timeout = timeout
        self._answer: Workspace | None = None
        try:
            self._proc: subprocess.Popen | None = subprocess.Popen(
                _STATUS, cwd=repo_root, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        except (OSError, subprocess.SubprocessError) as exc:
            self._proc, self._answer = None, _unread(f"git could not be started ({exc})")

    def result(self) -> Workspace:
        """The workspace (waiting for git, at most until STATUS_TIMEOUT from the start)."""
        import subprocess
        import time
        if self._answer is None and self._proc is not None:
            try:
                out, _ = self._proc.communicate(
                    timeout=max(GRACE, self._deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._stop()
                self._answer = _unread(f"git status gave no answer within {self._timeout:g} s")
            except (OSError, subprocess.SubprocessError) as exc:
                self._stop()
                self._answer = _unread(f"git status failed ({exc})")
            else:
                code = self._proc.returncode
                self._answer = parse_status(out) if code == 0 else _unread(
                    f"git status failed (exit status {code})")
        return self._answer or NOTHING

    def _stop(self) -> None:
        """Kill git's process group if git still runs, reap git, and let go of the pipe (never
        read to its end: a process that outlived the kill may hold it open)."""
        import signal
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> PendingWorkspace:
        return self

    def __exit__(self, *exc) -> None:
        self._stop()


class WorkspaceCache:
    """A server's last `git status`, reused for `seconds` after git was started (searches typed
    one after another, as a quick pick sends them, would each start git; on scrapy that start
    held the language server's thread ~8 ms of a ~50 ms search on a loaded machine). `forget`
    drops it: the language server calls it when a document is saved or HEAD or a ref moves (the
    files it watches), so that what goes stale is only what changed outside the editor (an
    edit, a `git add` in a terminal), for at most `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._kept: tuple[float, Workspace] | None = None
        self._generation = 0

    def pending(self, repo_root: Path, timeout: float = STATUS_TIMEOUT):
        """A PendingWorkspace, or a finished one holding the kept answer."""
        import time
        with self._lock:
            if self._kept is not None and time.monotonic() - self._kept[0] < self.seconds:
                return _Kept(self._kept[1])
            generation = self._generation
        return _Keeping(repo_root, timeout, self, generation, time.monotonic())

    def forget(self) -> None:
        with self._lock:
            self._kept = None
            self._generation += 1

    def _keep(self, generation: int, started: float, answer: Workspace) -> None:
        with self._lock:   # an answer that a change overtook while git ran is not kept
            if generation == self._generation and answer is not NOTHING \
                    and answer.unread is None:
                self._kept = (started, answer)


class _Kept:
    def __init__(self, answer: Workspace) -> None:
        self._answer = answer

    def result(self) -> Workspace:
        return self._answer

    def __enter__(self) -> _Kept:
        return self

    def __exit__(self, *exc) -> None:
        pass


class _Keeping(PendingWorkspace):
    def __init__(self, repo_root: Path, timeout: float, cache: WorkspaceCache, generation: int,
                 started: float) -> None:
        super().__init__(repo_root, timeout)
        self._cache, self._generation, self._started = cache, generation, started

    def result(self) -> Workspace:
        answer = super().result()
        self._cache._keep(self._generation, self._started, answer)
        return answer


def parse_status(out: bytes) -> Workspace:
    """The workspace of `git status --porcelain=v2 -z --branch` output. A conflicted file counts
    as modified in the working tree (its owner is editing it)."""
    branch, born = None, True
    staged, modified, untracked, renamed = [], [], [], []
    records = iter(out.split(b"\0"))
    for record in records:
        kind = record[:2]
        if record.startswith(b"# branch.head "):
            head = record[len(b"# branch.head "):].decode("utf-8", "replace")
            branch = None if head == "(detached)" else head
        elif record == b"# branch.oid (initial)":
            born = False
        elif kind in (b"1 ", b"2 ", b"u "):
            # Fields before the path: 8 for changed, 9 for renamed (then the old path follows as
            # a record of its own), 10 for unmerged.
            before = {b"1 ": 8, b"2 ": 9, b"u ": 10}[kind]
            fields = record.split(b" ", before)
            origin = next(records, None) if kind == b"2 " else None
            if len(fields) <= before or len(fields[1]) != 2:
                continue   # not git's format: skip rather than guess
            path = path_text(fields[-1])   # as the index stores it
            xy = fields[1].decode("ascii", "replace")
            if kind == b"u " or xy[1:2] != ".":
                modified.append(path)
            if kind != b"u " and xy[:1] != ".":
                staged.append(path)
            if origin and xy[:1] == "R":
                # Counted as git without renames counts it, the old path deleted, and kept.
                old = path_text(origin)
                staged.append(old)
                renamed.append((path, old))
        elif kind == b"? ":
            untracked.append(path_text(record[2:]))
    return Workspace(branch if born else None, tuple(sorted(modified)), tuple(sorted(staged)),
                     tuple(sorted(untracked)), tuple(sorted(renamed)),
                     unborn=None if born else branch)


# -- what git is in the middle of -------------------------------------------------------------

_STATE_BYTES = 4096   # the most read of one of git's state files (untrusted, like all of .git)


def operation_in_progress(repo_root: Path) -> str | None:
    """What git is in the middle of in this working copy, as its state files say it: a rebase
    (its branch, onto what, which step), a merge, a cherry-pick, a revert, `git am`, a bisect;
    None when nothing (or the git folder cannot be read)."""
    git = _git_dir(repo_root)
    if git is None:
        return None
    merge = git / "rebase-merge"
    apply = git / "rebase-apply"
    if merge.is_dir() or (apply.is_dir() and not (apply / "applying").exists()):
        folder = merge if merge.is_dir() else apply
        branch = _read(folder / "head-name").removeprefix("refs/heads/")
        onto = _read(folder / "onto")[:10]
        step, last = ((_read(folder / "msgnum"), _read(folder / "end")) if folder is merge
                      else (_read(folder / "next"), _read(folder / "last")))
        return ("rebasing" + (f" {branch}" if branch and branch != "detached HEAD" else "")
                + (f" onto {onto}" if onto else "")
                + (f" (step {step} of {last})" if step.isdigit() and last.isdigit() else ""))
    if apply.is_dir():
        return "applying patches (git am)"
    for name, doing in (("MERGE_HEAD", "merging"), ("CHERRY_PICK_HEAD", "cherry-picking"),
                        ("REVERT_HEAD", "reverting")):
        sha = _read(git / name)[:10]
        if sha:
            return f"{doing} {sha}"
    if (git / "BISECT_LOG").is_file():
        return "bisecting"
    return None


def _git_dir(repo_root: Path) -> Path | None:
    """The working copy's own git folder: `.git`, or where a linked worktree's `.git` file points."""
    dot = Path(repo_root) / ".git"
    if dot.is_dir():
        return dot
    line = _read(dot)
    if not line.startswith("gitdir:"):
        return None
    target = Path(line.removeprefix("gitdir:").strip())
    return target if target.is_absolute() else Path(repo_root) / target


def _read(path: Path) -> str:
    """The first line of a small state file, stripped; "" when absent, unreadable or not a
    regular file (a FIFO there held `cortex what` forever: opened without blocking, checked,
    then read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        data = os.read(fd, _STATE_BYTES)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace").split("\n", 1)[0].strip()

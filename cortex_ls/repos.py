"""The repositories of a workspace: where each one's store is, and read connections to it.

Requests run on a small thread pool; each thread keeps its own read connection per repository
(an APSW connection is not to be used by two threads at once). A connection is reopened when the
database file is replaced (a `--rebuild`, or deleted and indexed again); a missing database gives
no connection, and the request answers "no index yet" instead of failing.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from cortex_core.config import CONFIG_FILE, Settings, repository_settings
from cortex_core.errors import CortexError
from cortex_core.store.store import open_reader
from cortex_core.store.store_location import Location, store_location


@dataclass
class IndexState:
    """What the background indexer is doing for a repository."""
    running: bool = False
    error: str | None = None      # the last run's failure, if it failed
    percentage: int = 0
    message: str = ""


@dataclass
class Repo:
    root: Path
    db: Path
    index: IndexState = field(default_factory=IndexState)
    web_base: str | None = None
    seen_head: str | None = None  # HEAD when last looked at (see indexer.head_state)
    refused: str | None = None    # why its store is not used (see store.shipped_store)
    location: Location | None = None   # where the store is, and why (store_location)
    problem: str | None = None    # why the store could not be opened last time (corrupt...)
    notice: str | None = None     # a line for the user, shown once (the store's location)
    folders: set = field(default_factory=set)   # the workspace folders inside it
    _local: threading.local = field(default_factory=threading.local, repr=False)
    embedder_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    embedder: object | None = None
    embedder_key: str | None = None
    config_problem: str | None = None   # why .cortex/config.toml could not be used, if so
    config_told: str | None = None      # the problem the user was last told of
    _config: tuple | None = field(default=None, repr=False)   # (file stamp, Settings)

    @property
    def name(self) -> str:
        return self.root.name

    def reader(self):
        """This thread's read connection, or None when there is no usable index."""
        if self.refused:
            return None
        try:
            st = os.stat(self.db)
        except OSError:
            self._drop()
            return None
        identity = (st.st_ino, st.st_dev)
        con = getattr(self._local, "con", None)
        if con is not None and getattr(self._local, "identity", None) == identity:
            return con
        self._drop()
        try:
            con = open_reader(self.db)
        except CortexError as exc:   # an older schema mid-upgrade, a newer one, a damaged file
            self.problem = str(exc)
            return None
        self.problem = None
        self._local.con, self._local.identity = con, identity
        return con

    def config(self) -> Settings:
        """The repository's settings (its `.cortex/config.toml` over the defaults), read again
        when the file changes. A file that cannot be used gives the defaults, and
        `config_problem` says why: a hover must not fail for a typo in it."""
        stamp = (_stamp(os.lstat, self.root / CONFIG_FILE),   # the link itself, if it is one
                 _stamp(os.stat, self.root / CONFIG_FILE))    # and what it points to
        cached = self._config
        if cached is not None and cached[0] == stamp:
            return cached[1]
        try:
            settings, problem = repository_settings(self.root), None
        except CortexError as exc:
            # `cortex index` refuses the file too: say so, or the index silently stops moving.
            settings, problem = Settings(), (f"Cortex: {exc}; answers use the default settings, "
                                             "and indexing waits until the file is fixed")
        self.config_problem = problem
        self._config = (stamp, settings)
        return settings

    def relocate(self) -> str | None:
        """Decide again where the store is (an index run may have made the per-user one);
        returns the line to tell the user when it moved out of `.cortex`, else None."""
        before = self.location
        self.location = store_location(self.root)
        self.db = self.location.path
        if self.location.fallback and (before is None or before.path != self.location.path):
            return f"Cortex: the index of {self.root.name} is at {self.db}: {self.location.reason}"
        return None

    def _drop(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            self._local.con = None
            try:
                con.close()
            except Exception:   # closing a connection to a deleted file must not fail a request
                pass

    def state(self) -> str:
        """ready | indexing | missing | error — for answers and the status."""
        if self.refused:
            return "error"
        if self.index.running:
            return "indexing"
        if not self.db.exists():
            return "error" if self.index.error else "missing"
        return "error" if self.problem else "ready"

    @property
    def partial(self) -> bool:
        """Answers may miss recent history: indexing is running, or never finished yet."""
        return self.index.running or not self.db.exists()


def find_root(folder: Path) -> Path | None:
    """The working-tree root of the git repository holding `folder`, if any."""
    try:
        folder = folder.resolve()
    except (OSError, RuntimeError, ValueError):   # a loop of links, a NUL in the name
        return None
    for candidate in (folder, *folder.parents):
        git = candidate / ".git"
        if git.exists():
            return candidate
    return None


class Repos:
    """The repositories of the workspace folders, each once, however many folders share it."""

    def __init__(self):
        self.by_root: dict[Path, Repo] = {}

    def add_folder(self, folder: Path) -> Repo | None:
        root = find_root(folder)
        if root is None:
            return None
        if root not in self.by_root:
            from cortex_core.git.remotes import web_base
            from cortex_core.store.store import shipped_store
            repo = Repo(root, root / ".cortex" / "cortex.db", web_base=web_base(root),
                        refused=shipped_store(root))
            try:
                repo.notice = repo.relocate()    # told once the client is ready (initialized)
            except CortexError as exc:           # no per-user folder (HOME unset)
                repo.refused = repo.refused or str(exc)
            self.by_root[root] = repo
        repo = self.by_root[root]
        repo.folders.add(folder)
        return repo

    def remove_folder(self, folder: Path) -> None:
        """Forget a folder; its repository goes with the last of its folders."""
        root = find_root(folder)
        repo = self.by_root.get(root) if root is not None else None
        if repo is not None:
            repo.folders.discard(folder)
            if not repo.folders:
                del self.by_root[root]

    def for_path(self, path: Path) -> Repo | None:
        """The repository a file belongs to: the innermost known root above it."""
        best = None
        for root, repo in self.by_root.items():
            if path == root or root in path.parents:
                if best is None or len(root.parts) > len(best.root.parts):
                    best = repo
        return best

    def all(self) -> list[Repo]:
        return list(self.by_root.values())


def _stamp(stat, path: Path) -> tuple | None:
    """What changes when a file is rewritten: ctime too, as a copy that keeps the old mtime
    (`cp -p`, `rsync -t`) still sets it."""
    try:
        st = stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)

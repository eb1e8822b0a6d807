"""The repositories of a workspace: one engine (cortex_core.engine) each, and what the server
tracks of it (its indexer, what the user was told).

Requests run on a small thread pool; the engine keeps one read connection per thread (an APSW
connection is not to be used by two threads at once), reopened when the database file is
replaced (a `--rebuild`, or deleted and indexed again); a missing database gives no snapshot,
and the request answers "no index yet" instead of failing.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from cortex_core.api import CortexError, NoIndex
from cortex_core.engine import Engine

if TYPE_CHECKING:
    from cortex_core.engine import Snapshot

    from cortex_ls.settings import Settings as ClientSettings

# How long a search may reuse the working copy's `git status` (Engine's workspace_seconds):
# what changes outside the editor and outside git's own files is seen that much later.
WORKSPACE_SECONDS = 2.0

# What fixes an error (its Hint), in the language server's words (cortex_core/errors.py,
# ACTIONS): its users have a terminal too, and the indexer runs on its own.
WORDS = {
    "index": "{message}: run the command Cortex: Reindex",
    "upgrade": "{message}; run `cortex index` to upgrade it",
    "rebuild": "{message}: run `cortex index --rebuild` there (notes are kept)",
    "newer": "{message}; upgrade Cortex or run `cortex index --rebuild`",
    "budget": "{message}; give a larger `budget`",
    "focus": "give a position or `target`, a `query`, or both",
    "retry": "{message}; try again",
    "free_space": "{message}: is the disk full? Free some space, then run the command Cortex: "
                  "Reindex",
    "elsewhere": "{message} (this server reads the index only from its default places; "
                 "`cortex index --db FILE` serves the command line and MCP)",
    "wait": "{message}; run the command Cortex: Reindex later",
    "model": "{message}; the `cortex/status` request says why",
    "one_worker": "{message}; run `cortex index --jobs 1` in a terminal",
    "continue": "{message}: run the command Cortex: Reindex",
    "foreign": "{message}: run `cortex index --rebuild` in a terminal to replace it",
}


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
    engine: Engine
    index: IndexState = field(default_factory=IndexState)
    web_base: str | None = None
    seen_head: str | None = None  # HEAD when last looked at (see indexer.head_state)
    refused: str | None = None    # why its store is not used (see Engine.shipped)
    problem: str | None = None    # why the store could not be opened last time (corrupt...)
    notice: str | None = None     # a line for the user, shown once (the store's location)
    folders: set = field(default_factory=set)   # the workspace folders inside it
    config_told: str | None = None      # the problem the user was last told of
    reader_told: bool = False           # told that an earlier reader read the store
    located: bool = False               # where the store is was decided (relocate)

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def db(self) -> Path:
        return self.engine.db

    @property
    def config_problem(self) -> str | None:
        """Why `.cortex/config.toml` could not be used, if so (answers use the defaults)."""
        problem = self.engine.config_problem
        return (f"Cortex: {problem}; answers use the default settings, and indexing waits until "
                "the file is fixed") if problem else None

    @contextmanager
    def snapshot(self, settings: ClientSettings) -> Iterator[Snapshot | None]:
        """A consistent read of the index, with the engine's settings under the client's; None
        when there is no usable index (`problem` says why, when it is not just missing)."""
        from cortex_ls.settings import engine_overrides
        self.engine.set_overrides(engine_overrides(settings), "the editor's settings")
        if self.refused:
            yield None
            return
        try:
            self.engine.reader()
        except NoIndex:
            yield None
            return
        except CortexError as exc:   # an older schema mid-upgrade, a newer one, a damaged file
            self.problem = exc.phrased(WORDS)
            yield None
            return
        self.problem = None
        with self.engine.snapshot() as snap:
            yield snap

    def relocate(self) -> str | None:
        """Decide again where the store is (an index run may have made the per-user one);
        returns the line to tell the user when it moved out of `.cortex`, else None."""
        before, first = self.engine.location, not self.located
        location = self.engine.relocate()
        self.located = True
        if location.fallback and (first or before.path != location.path):
            return f"Cortex: the index of {self.root.name} is at {location.path}: {location.reason}"
        return None

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
            # A server searches many times: it keeps the embeddings in memory, and searches
            # typed one after another share one `git status` (forgotten on save and when git's
            # files change: features.py).
            engine = Engine(root, decide=False, lenient_config=True,
                            source="the editor's settings", keep_vectors=True,
                            workspace_seconds=WORKSPACE_SECONDS)
            repo = Repo(root, engine, web_base=engine.web_base(), refused=engine.shipped())
            try:
                repo.notice = repo.relocate()    # told once the client is ready (initialized)
            except CortexError as exc:           # no per-user folder (HOME unset)
                repo.refused = repo.refused or exc.phrased(WORDS)
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
                del self.by_root[root]   # its connections close with it (a request may
                                         # still be reading through one)

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

"""Which repository a call is about, and read connections to its index.

An MCP call carries no working directory, so every tool takes an optional `repo`; without it the
server's own repository (`cortex mcp --repo`, or the directory it was started in) is used.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from cortex_core.errors import CortexError, NotARepository
from cortex_core.git.repo_paths import find_repo_root, repo_relative
from cortex_core.query.targets import TargetSpec, parse_target


@dataclass(frozen=True)
class Place:
    root: Path
    db: Path
    reason: str | None = None     # why the store is not <repo>/.cortex/cortex.db (store_location)
    explicit: bool = False        # given with `cortex mcp --db`


class Places:
    """Repositories by path, with one cached read connection per worker thread and database."""

    def __init__(self, default: Path | None, db: Path | None = None):
        self.default = default
        self.default_db = db
        self._local = threading.local()
        self._refused: dict[Path, str | None] = {}

    def find(self, repo: str | None) -> Place:
        if repo is None or not repo.strip():
            if self.default is None:
                raise CortexError("no repository: pass `repo` (a path inside a git repository), or "
                                  "start the server with `cortex mcp --repo PATH`")
            return self._checked(self._place(self.default))
        if "\x00" in repo:
            raise CortexError("the repository path contains a NUL character")
        try:
            root = find_repo_root(repo)
        except OSError as exc:          # ENAMETOOLONG, EACCES, ELOOP...
            raise NotARepository(f"cannot use the repository path {repo[:200]!r}: "
                                 f"{exc.strerror or exc}") from None
        return self._checked(self._place(root))

    def _place(self, root: Path) -> Place:
        """Where the repository's store is, decided as every front end does (store_location)."""
        from cortex_core.store.store_location import store_location
        location = store_location(root, self.default_db if root == self.default else None)
        return Place(root, location.path, None if location.explicit else location.reason,
                     location.explicit)

    def _checked(self, place: Place) -> Place:
        """Refuse an index the repository ships (tracked under .cortex/), as the language server
        and the indexer do: it could hold invented history, or a database built to hang queries."""
        from cortex_core.errors import StoreError
        from cortex_core.store.store import default_db_path, shipped_store
        if place.db == default_db_path(place.root):
            refused = self._refused.get(place.root, ...)
            if refused is ...:
                refused = self._refused[place.root] = shipped_store(place.root)
            if refused:
                raise StoreError(refused)
        return place

    def reader(self, place: Place):
        """A read connection, kept for this thread; a rebuilt database (a new file) is reopened."""
        from cortex_core.errors import StoreError
        from cortex_core.store.store import open_reader
        cache = self._local.__dict__.setdefault("cons", {})
        try:
            ident = os.stat(place.db).st_ino
        except FileNotFoundError:
            raise StoreError(f"no index at {place.db}; call the `sync` tool (or run "
                             "`cortex index`) to build it") from None
        kept = cache.get(place.db)
        if kept is not None and kept[1] == ident:
            return kept[0]
        if kept is not None:
            kept[0].close()
        con = open_reader(place.db)
        cache[place.db] = (con, ident)
        return con


def spec_of(text: str, root: Path) -> TargetSpec:
    """`PATH`, `PATH::SYMBOL` or `PATH:LINE`, the path relative to the repository root (an
    absolute path inside it works too)."""
    if not isinstance(text, str) or not text.strip():
        raise CortexError("give a target: PATH, PATH::SYMBOL or PATH:LINE")
    if "\x00" in text:
        raise CortexError("the target contains a NUL character")
    if len(text) > 4096:
        raise CortexError(f"the target is too long ({len(text)} characters; at most 4096)")
    spec = parse_target(text.strip())
    return TargetSpec(repo_relative(spec.path, root, cwd=root), spec.symbol, spec.line)

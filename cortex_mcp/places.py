"""Which repository a call is about: one engine (cortex_core.engine) per repository.

An MCP call carries no working directory, so every tool takes an optional `repo`; without it the
server's own repository (`cortex mcp --repo`, or the directory it was started in) is used.
"""

from __future__ import annotations

import threading
from pathlib import Path

from cortex_core.api import CortexError, Hint, NotARepository, StoreError, TargetSpec
from cortex_core.engine import Engine


class Places:
    """The engines of the repositories the server was asked about, each made once."""

    def __init__(self, default: Path | None, db: Path | None = None):
        self.default = default
        self.default_db = db
        self._engines: dict[Path, Engine] = {}
        self._lock = threading.Lock()

    def find(self, repo: str | None) -> Engine:
        if repo is None or not repo.strip():
            if self.default is None:
                raise CortexError("no repository: pass `repo` (a path inside a git repository), or "
                                  "start the server with `cortex mcp --repo PATH`")
            return self._checked(self._engine(self.default))
        if "\x00" in repo:
            raise CortexError("the repository path contains a NUL character")
        try:
            root = Engine.find_root(repo)
        except OSError as exc:          # ENAMETOOLONG, EACCES, ELOOP...
            raise NotARepository(f"cannot use the repository path {repo[:200]!r}: "
                                 f"{exc.strerror or exc}") from None
        return self._checked(self._engine(root))

    def _engine(self, root: Path) -> Engine:
        """The repository's engine; where its store is is decided again on each call, as every
        front end decides it (an index run may have made the per-user store)."""
        with self._lock:
            engine = self._engines.get(root)
            if engine is None:
                engine = self._engines[root] = Engine.open(
                    root, db=self.default_db if root == self.default else None,
                    source="the MCP server", keep_vectors=True)
                return engine
        engine.relocate()
        return engine

    def _checked(self, engine: Engine) -> Engine:
        """Refuse an index the repository ships (tracked under .cortex/), as the language server
        and the indexer do: it could hold invented history, or a database built to hang queries."""
        refused = engine.shipped()
        if refused:
            raise StoreError(refused, Hint("elsewhere"))
        return engine

    def close(self) -> None:
        with self._lock:
            engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            engine.close()


def spec_of(text: str, engine: Engine) -> TargetSpec:
    """`PATH`, `PATH::SYMBOL` or `PATH:LINE`, the path relative to the repository root (an
    absolute path inside it works too)."""
    if not isinstance(text, str) or not text.strip():
        raise CortexError("give a target: PATH, PATH::SYMBOL or PATH:LINE")
    if "\x00" in text:
        raise CortexError("the target contains a NUL character")
    if len(text) > 4096:
        raise CortexError(f"the target is too long ({len(text)} characters; at most 4096)")
    return engine.target(text.strip(), cwd=engine.root)

"""Where a repository's store lives: the one decision every front end makes the same way.

`--db` wins. Otherwise the store is `<repo>/.cortex/cortex.db` when that folder can be used, and a
per-user folder when it cannot (a read-only file system, `.cortex` that is a file, a folder we may
not write, a file system whose locks do not work):
`$XDG_CACHE_HOME/cortex/<name>-<hash of the repository path>/cortex.db` (`~/.cache` without
XDG_CACHE_HOME). Readers (CLI queries, language server, MCP) and the indexer call the same
function, so they find the same file:

- a store that exists is used before one that would have to be made: an index built in the
  per-user folder stays in use when `.cortex` becomes usable later (it holds the notes; it is
  never silently replaced by an empty one), until the user moves or removes it;
- an existing `.cortex/cortex.db` that can no longer be written (the file system was remounted
  read-only) is still read as it is; the indexer, which must write, builds the per-user store
  instead, starting from the notes it can read there, and from then on readers use that one.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cortex_core.errors import Hint, StoreError

DB_NAME = "cortex.db"
# A lock that fails with these means the file system has no working locks (some network and FUSE
# file systems); SQLite's WAL mode and our writer lock both need them. Other errors are reported
# as they are.
_NO_LOCKS = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


@dataclass(frozen=True)
class Location:
    """Where a repository's store is, and why when it is not in <repo>/.cortex."""
    path: Path                      # the database file
    reason: str | None = None       # why it is not <repo>/.cortex/cortex.db (None: it is)
    explicit: bool = False          # given with --db
    seed: Path | None = None        # a store the indexer cannot write, whose notes a new store
                                    # at `path` should start with

    @property
    def fallback(self) -> bool:
        return self.reason is not None and not self.explicit


def local_db_path(repo_root: Path) -> Path:
    return repo_root / ".cortex" / DB_NAME


def user_db_path(repo_root: Path) -> Path:
    """The per-user store of a repository: one folder per resolved working-tree path, named for
    people (the folder's name) and made unique by a hash (two clones called `app`)."""
    import hashlib   # here: only the per-user store needs it, and every command starts here
    resolved = str(repo_root.resolve())
    digest = hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", repo_root.name)[:40].lstrip(".") or "repo"
    return _cache_home() / "cortex" / f"{name}-{digest}" / DB_NAME


def _cache_home() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):          # the XDG spec: a relative value is to be ignored
        return Path(xdg)
    try:
        return Path.home() / ".cache"
    except RuntimeError:            # no HOME and no passwd entry
        raise StoreError("no per-user folder for the index: HOME is not set",
                         Hint("elsewhere")) from None


def store_location(repo_root: Path, explicit_db: str | os.PathLike | None = None, *,
                   for_writing: bool = False) -> Location:
    """Where the store of the repository at `repo_root` is (see the module's docstring).
    `for_writing`: the caller is the indexer, which cannot use a store it cannot write."""
    if explicit_db is not None and str(explicit_db):
        return Location(Path(explicit_db).expanduser().resolve(), "given explicitly", True)
    local = local_db_path(repo_root)
    problem = unusable_reason(local.parent)
    if problem is None:
        if _is_file(local):
            return Location(local)
        try:
            user = user_db_path(repo_root)
        except StoreError:          # no per-user folder, and none needed
            return Location(local)
        if not _is_file(user):
            return Location(local)
        return Location(user, f"the index was built here while {_short(local.parent, repo_root)}"
                              f" could not be used; it stays in use until you move it to "
                              f"{_short(local, repo_root)} (or remove it)")
    try:
        user = user_db_path(repo_root)
    except StoreError as exc:
        if _is_file(local) and not for_writing:
            return Location(local, problem)
        raise StoreError(f"{problem}, and {exc.message}", exc.hint) from None
    if for_writing and not _is_file(user) and _is_file(local):
        return Location(user, problem, seed=local)
    if for_writing or _is_file(user) or not _is_file(local):
        return Location(user, problem)
    return Location(local, f"{problem}: the index there is read as it is and cannot be updated "
                           "(an index run builds one in the per-user folder)")


def _short(path: Path, root: Path) -> str:
    return os.path.relpath(path, root) if path.is_relative_to(root) else str(path)


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def unusable_reason(folder: Path) -> str | None:
    """Why the store folder `<repo>/.cortex` cannot hold the index, or None when it can. A
    symbolic link is not a reason to move elsewhere: it is refused (store.check_location), as a
    repository that plants one must not choose where the indexer writes."""
    name = folder.name
    try:
        if folder.is_symlink():
            return None
        if folder.exists() and not folder.is_dir():
            return f"{name} is not a folder"
    except OSError as exc:
        return f"{name} cannot be read ({exc.strerror or exc})"
    existing = folder if folder.is_dir() else folder.parent
    # access() reports EROFS for a read-only file system even to root, whose permission bits
    # always pass: one call covers both.
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{name} is not writable ({_why_not_writable(existing)})"
    db = folder / DB_NAME
    if _is_file(db) and not os.access(db, os.W_OK):
        return f"{name}/{DB_NAME} is not writable ({_why_not_writable(db)})"
    return _lock_problem(existing, name)


def _why_not_writable(path: Path) -> str:
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "read-only file system"
    except OSError:
        pass
    return "permission denied"


def _lock_problem(folder: Path, name: str) -> str | None:
    """Take and drop a shared lock on the folder itself, both kinds the store uses: flock (our
    writer lock) and POSIX record locks (SQLite's). On the folder, not on the database: closing
    any descriptor of a file drops every POSIX lock this process holds on it, which would pull
    the locks from under the SQLite connections of a long-running server."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        return f"{name} cannot be opened ({exc.strerror or exc})"
    try:
        for lock, unlock in ((fcntl.flock, fcntl.LOCK_UN), (fcntl.lockf, fcntl.LOCK_UN)):
            try:
                lock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                lock(fd, unlock)
            except BlockingIOError:
                pass                # held by someone else: locks work
            except OSError as exc:   # ENOLCK, EOPNOTSUPP: no locks; anything else: no use
                why = "do not work" if exc.errno in _NO_LOCKS else "fail"
                return f"file locks {why} where {name} is ({exc.strerror or exc})"
    finally:
        os.close(fd)
    return None

"""Loose objects libgit2 must not read: a truncated (or otherwise broken) `.git/objects/xx/...` file.

libgit2 1.9 reads a truncated loose object forever: when zlib runs out of input before the end
of the stream it reports Z_BUF_ERROR, which libgit2's inflate loop takes for "try again", and
the read spins at full CPU without end (libgit2 issue 7342, fixed after 1.9.7, the version
pygit2 1.21 ships). A blob, a tree or a commit cut short by a crash, a full disk or an
interrupted copy would hang an index run (holding the writer lock) or a language server.
Packs are not affected: a truncated pack fails its reads at once.

So before libgit2 reads them, loose objects are checked here with Python's zlib, which says
whether a stream is complete. Two ways:

- `check_loose`: every loose file written since a time (the index run keeps the time of its
  last check in the store, so a run looks only at files new since then: fan-out folders not
  modified since are not even listed). 46,027 loose objects (257 MB, psf/requests unpacked)
  take 1.7 s to check in full; a few hundred, as a working repository holds, under 0.1 s.
- `loose_damaged`: one object by id, for reads that name the blob they want.

What fails the check is hidden from the repository (`hide`): its object database is rebuilt
with the same packs and a loose backend that says "not found" for those ids, so every read
(including those libgit2 makes inside a diff) treats them as missing objects, which the rest of
Cortex already handles (a damaged repository's missing object). Nothing in the repository is
ever changed.
"""

from __future__ import annotations

import os
import time
import weakref
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

# Imported by the index passes and by reads that have opened a repository already: pygit2 is
# loaded by then, and nothing that must start fast imports this module.
import pygit2

_CHUNK = 1 << 16          # bytes of a file read at a time
_OUTPUT = 1 << 20         # bytes inflated at a time: a large blob is never held whole
_ALTERNATES_DEPTH = 5     # as deep as git and libgit2 follow objects/info/alternates
# A file's mtime may be as coarse as a second, and a file may be written while a check runs.
_SLACK_NS = 2_000_000_000
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class LooseCheck:
    damaged: frozenset[str]   # ids of loose objects that cannot be read whole
    checked_ns: int           # files with an mtime from here on are checked by the next run
    examined: int             # files inflated by this check


def objects_dirs(repo: pygit2.Repository) -> list[str]:
    """The repository's object folders: its own (the common one of a linked worktree), then
    those its alternates name, recursively."""
    git_dir = Path(repo.path)
    common = git_dir
    try:
        common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
    except (OSError, ValueError):
        pass
    found: list[str] = []
    _with_alternates(str(common / "objects"), found, 0)
    return found


def _with_alternates(folder: str, found: list[str], depth: int) -> None:
    if folder in found or not os.path.isdir(folder):
        return
    found.append(folder)
    if depth >= _ALTERNATES_DEPTH:
        return
    try:
        lines = Path(folder, "info", "alternates").read_text(errors="replace").splitlines()
    except OSError:
        return
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            _with_alternates(os.path.normpath(os.path.join(folder, line)), found, depth + 1)


def complete(path: str) -> bool:
    """Whether the file at `path` is one whole zlib stream (what a loose object is). Inflates it
    in pieces, keeping none of the output."""
    inflater = zlib.decompressobj()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                while chunk and not inflater.eof:
                    inflater.decompress(chunk, _OUTPUT)
                    chunk = inflater.unconsumed_tail
                if inflater.eof:
                    return True
    except (OSError, zlib.error, ValueError):
        return False
    return inflater.eof


def _loose_files(folder: str, since_ns: int) -> Iterator[tuple[str, str]]:
    """(id, path) of the loose objects in `folder` whose file is from `since_ns` on. A fan-out
    folder older than that holds no newer file: adding one (git writes a temporary file and
    renames it) changes the folder's mtime."""
    for fan in range(256):
        sub = os.path.join(folder, f"{fan:02x}")
        try:
            if os.stat(sub).st_mtime_ns < since_ns:
                continue
            entries = os.scandir(sub)
        except OSError:
            continue
        with entries:
            for entry in entries:
                name = entry.name
                if len(name) not in (38, 62) or not _HEX.issuperset(name):
                    continue   # git's temporary files, editors' leftovers
                try:
                    if since_ns and entry.stat(follow_symlinks=False).st_mtime_ns < since_ns:
                        continue
                except OSError:
                    pass
                yield f"{fan:02x}{name}", entry.path


def check_loose(folders: Iterable[str], since_ns: int = 0,
                damaged: Iterable[str] = ()) -> LooseCheck:
    """Check the loose objects of `folders` written from `since_ns` on (0: all of them), and
    again those of `damaged` (a former check's: a fetch may have repaired them)."""
    folders = list(folders)
    checked_ns = time.time_ns() - _SLACK_NS
    bad: set[str] = set()
    examined = 0
    for folder in folders:
        for oid, path in _loose_files(folder, since_ns):
            examined += 1
            if not complete(path):
                bad.add(oid)
    for oid in set(damaged) - bad:
        if _is_hex_id(oid) and loose_damaged(folders, oid):
            bad.add(oid)
    return LooseCheck(frozenset(bad), checked_ns, examined)


# A long-lived reader's last check of each set of folders (the language server's): the next
# looks only at what is newer, even when the store's own check is old or absent.
_last_check: dict[tuple[str, ...], LooseCheck] = {}


def check_loose_again(folders: Iterable[str], since_ns: int = 0,
                      damaged: Iterable[str] = ()) -> LooseCheck:
    """`check_loose` for a process that reads the same repository again and again: from this
    process's own last check when it is newer than `since_ns`."""
    key = tuple(folders)
    last = _last_check.get(key)
    if last is not None and last.checked_ns > since_ns:
        since_ns, damaged = last.checked_ns, {*damaged, *last.damaged}
    check = check_loose(key, since_ns, damaged)
    _last_check[key] = check
    return check


def _is_hex_id(oid: str) -> bool:
    return len(oid) in (40, 64) and _HEX.issuperset(oid)


def loose_damaged(folders: Iterable[str], oid: str) -> bool:
    """Whether object `oid` (lower-case hex) is loose in one of `folders` and cannot be read
    whole. A packed or absent object is not damaged here."""
    for folder in folders:
        path = os.path.join(folder, oid[:2], oid[2:])
        if os.path.isfile(path):
            return not complete(path)
    return False


# What each repository hides: `Repository.free()` (process_memory.release_memory) drops its
# object database, and libgit2 opens the default one again on the next read.
_hidden: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def hide(repo: pygit2.Repository, damaged: Iterable[str]) -> pygit2.Repository:
    """`repo`, its object database rebuilt so that the loose objects `damaged` are not found.
    Unchanged when there are none."""
    hidden = {pygit2.Oid(hex=oid) for oid in damaged if _is_hex_id(oid)}
    if not hidden:
        return repo
    _hidden[repo] = hidden
    _hide(repo, hidden)
    return repo


def hide_again(repo: pygit2.Repository) -> None:
    """After `repo.free()`: hide again what `hide` hid."""
    hidden = _hidden.get(repo)
    if hidden:
        _hide(repo, hidden)


def _hide(repo: pygit2.Repository, hidden: set[pygit2.Oid]) -> None:
    odb = pygit2.Odb()
    for folder in objects_dirs(repo):
        # libgit2's own order: packs first (priority 2), then loose objects (1).
        odb.add_backend(pygit2.OdbBackendPack(folder), 2)
        odb.add_backend(_HidingLoose(folder, hidden), 1)
    repo.set_odb(odb)


class _HidingLoose(pygit2.OdbBackend):
    """libgit2's loose-object backend, but for the ids it hides. Raising KeyError is how a
    Python backend says "not found" to libgit2."""

    def __init__(self, folder: str, hidden: set[pygit2.Oid]):
        super().__init__()
        self._loose = pygit2.OdbBackendLoose(folder, 0, False)
        self._hidden = hidden

    def read_cb(self, oid):
        if oid in self._hidden:
            raise KeyError(oid)
        return self._loose.read(oid)

    def read_header_cb(self, oid):
        if oid in self._hidden:
            raise KeyError(oid)
        return self._loose.read_header(oid)

    def read_prefix_cb(self, oid):
        full = self._loose.exists_prefix(oid)   # not read_prefix: it would read a cut object
        if full in self._hidden:
            raise KeyError(oid)
        kind, data = self._loose.read(full)
        return kind, data, full

    def exists_cb(self, oid):
        return oid not in self._hidden and self._loose.exists(oid)

    def exists_prefix_cb(self, oid):
        full = self._loose.exists_prefix(oid)
        if full in self._hidden:
            raise KeyError(oid)
        return full

    def refresh_cb(self):
        self._loose.refresh()

    def __iter__(self):
        return (oid for oid in self._loose if oid not in self._hidden)

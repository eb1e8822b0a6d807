"""Git reads outside the history walk: HEAD of a repository, a commit by id, and a blob's bytes
(by id, at a path of a commit, or at a path of the indexed HEAD).

The index passes, the analyses and the front ends all read these; they read them here. Every
read is through libgit2 (no git process: microseconds) and none raises for what a repository
may be: no repository, a bare or odd one, an unborn HEAD, a detached HEAD, or a missing object
(a partial clone's promisor blob, a damaged repository) all come back as None, or as a `Head`
that says so. pygit2 is imported inside the functions: importing it costs a command's start.

A blob's bytes are read once. pygit2's `Blob.data` (and `read_raw()`) reads the object from the
object database again on every call, inflating it and resolving its delta chain anew, although
the Blob already holds its content: 28 MB/s on psf/requests' history, against a copy of the
loaded content through the buffer protocol at over 1 GB/s. Index runs read every changed file's
two versions, so the difference was a tenth of a full index.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only a type here: importing pygit2 costs a command's start
    import pygit2


def path_text(raw: bytes | str) -> str:
    """A path as git names it (bytes, untrusted), as the index keys it: UTF-8, with each byte
    that is not UTF-8 as `\\xNN`. Lossless, so two names that differ only in such bytes stay
    two files (as U+FFFD they were one); the command line reads a raw argument the same way."""
    return raw if isinstance(raw, str) else raw.decode("utf-8", "backslashreplace")


@dataclass(frozen=True)
class Head:
    """What HEAD is: a branch at a commit, a detached commit, or unborn (no commit yet)."""
    commit: str | None       # the commit id; None when unborn
    ref: str | None = None   # the branch's full name ("refs/heads/main"); None: detached, unborn
    branch: str | None = None   # its short name ("main", "fix/retry"); None: detached, unborn

    @property
    def unborn(self) -> bool:
        return self.commit is None

    @property
    def detached(self) -> bool:
        return self.commit is not None and self.ref is None


def repository(repo_root: Path | str) -> pygit2.Repository | None:
    """The repository at (or above) `repo_root`; None when there is none or it cannot be read."""
    import pygit2
    try:
        return pygit2.Repository(str(repo_root))
    except (pygit2.GitError, KeyError, ValueError, OSError):
        return None


def revision_sha(repo_root: Path | str, text: str) -> str | None:
    """The commit git's revision syntax names (`HEAD~1`, a branch, a tag, `sha^`), or None."""
    import pygit2
    if not text or text.startswith("-") or len(text) > 1000:
        return None
    repo = repository(repo_root)
    try:
        found = repo.revparse_single(text) if repo is not None else None
        commit = found.peel(pygit2.Commit) if found is not None else None
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None
    return str(commit.id) if commit is not None else None


def head_of(repo: pygit2.Repository) -> Head:
    """HEAD of an open repository. Raises pygit2.GitError (or KeyError, ValueError) when HEAD
    cannot be read; `read_head` is the variant that never raises."""
    if repo.head_is_unborn:
        return Head(None)
    if repo.head_is_detached:
        return Head(str(repo.head.target))
    ref = repo.head
    return Head(str(ref.target), ref.name, ref.shorthand)


def read_head(repo_root: Path | str) -> Head | None:
    """HEAD of the repository at `repo_root`, read from `.git/HEAD` and the ref it names (loose or
    packed); None when it cannot be read."""
    import pygit2
    try:
        return head_of(pygit2.Repository(str(repo_root)))
    except (pygit2.GitError, KeyError, ValueError, OSError):
        return None


def head_commit(repo: pygit2.Repository) -> pygit2.Commit | None:
    """HEAD's commit object; None when unborn or unreadable (a missing object, a broken ref)."""
    import pygit2
    try:
        return None if repo.head_is_unborn else repo.head.peel(pygit2.Commit)
    except (pygit2.GitError, KeyError, ValueError):
        return None


def commit(repo: pygit2.Repository, sha: str | None) -> pygit2.Commit | None:
    """The commit `sha`; None when it is not given, not a commit, or not in the repository (a
    rewrite then gc, a shallow or partial clone)."""
    import pygit2
    if not sha:
        return None
    try:
        found = repo.get(sha)
    except (ValueError, pygit2.GitError):
        return None
    return found if isinstance(found, pygit2.Commit) else None


def blob_bytes(blob: pygit2.Blob) -> bytes:
    """The content of a blob already looked up, without reading it again."""
    return bytes(memoryview(blob))


def read_blob(repo: pygit2.Repository, blob_id) -> bytes | None:
    """The bytes of blob `blob_id` (an id's text or an Oid); None when it is missing, unreadable
    or not a blob."""
    import pygit2
    try:
        found = repo[blob_id]
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return blob_bytes(found) if isinstance(found, pygit2.Blob) else None


def read_blob_at(repo_root: Path | str, blob_id: str) -> bytes | None:
    """`read_blob` in the repository at `repo_root`; None when there is none, or when the blob
    is a loose object cut short (which libgit2 would read forever: loose_objects)."""
    from cortex_core.git.loose_objects import loose_damaged, objects_dirs
    repo = repository(repo_root)
    if repo is None or loose_damaged(objects_dirs(repo), str(blob_id).lower()):
        return None
    return read_blob(repo, blob_id)


def path_blob(repo: pygit2.Repository, at: pygit2.Commit | None, path: str) -> bytes | None:
    """The bytes of `path` in commit `at`'s tree; None when there is no commit, the path is not
    a file there, or its tree or blob cannot be read."""
    import pygit2
    if at is None:
        return None
    try:
        entry = at.tree[path]
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return read_blob(repo, entry.id)


def head_blob_at(repo_root: Path | str, path: str) -> bytes | None:
    """The bytes of `path` at the repository's HEAD (which may be ahead of the indexed one);
    None when the repository, HEAD or the file there cannot be read."""
    import pygit2
    try:
        repo = pygit2.Repository(str(repo_root))
    except pygit2.GitError:
        return None
    return path_blob(repo, head_commit(repo), path)


def indexed_head_blob(con, repo_root: Path | str, path: str) -> bytes | None:
    """The bytes of `path` at the indexed HEAD: the commit the index last recorded (its
    `head_files`), not the repository's HEAD, which may be ahead. None when the index has no
    such file at HEAD or its blob cannot be read. The one lookup in the store here is the
    blob's id."""
    row = con.execute("select h.blob from head_files h join files f on f.id = h.file_id"
                      " where f.path = ?", (path,)).fetchone()
    return read_blob_at(repo_root, row[0]) if row is not None else None

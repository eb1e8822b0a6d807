"""Finding the repository and naming paths inside it — without importing pygit2, so that query
commands start fast."""

from __future__ import annotations

import os
import re
from pathlib import Path

from cortex_core.errors import Hint, NotARepository

_SEPARATOR = re.compile(r"\\(?!x[89a-f][0-9a-f])")


def find_repo_root(start: str | os.PathLike | None = None) -> Path:
    """The working-tree root of the git repository containing `start` (default: the current
    directory). A `.git` file (worktrees, submodules) counts as well as a `.git` folder."""
    here = Path(start if start is not None else os.getcwd()).expanduser()
    if not here.exists():
        raise NotARepository(f"{here} does not exist")
    here = here.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
        if folder.name == ".git" and _bare(folder):   # a working copy's own git folder
            return folder.parent
        if _bare(folder):
            raise NotARepository(f"{folder} is a bare repository; Cortex indexes a working copy "
                                 f"(make one with: git clone {folder} DIR)")
    raise NotARepository(f"{here} is not inside a git repository", Hint("repository"))


def _bare(folder: Path) -> bool:
    """Whether `folder` looks like a bare repository (or a .git folder): what git itself checks
    first, a HEAD file beside objects/ and refs/."""
    return (folder / "HEAD").is_file() and (folder / "objects").is_dir() and \
        (folder / "refs").is_dir()


def repo_relative(path: str, repo_root: Path, cwd: Path | None = None) -> str:
    """`path` as the index names it: relative to the repository root, with forward slashes.

    Accepts a path relative to the root, relative to the current directory, or absolute. A
    symlink is named as itself, not as what it points to: git tracks the link. A path that
    leads outside the repository is an error, however it is spelled."""
    # A backslash is a separator, as Windows writes paths, except in `\\xNN` of a byte that is
    # not UTF-8 (git_reads.path_text): a folder named x80 to xff must then be written with `/`.
    cleaned = _SEPARATOR.sub("/", path.strip())
    candidate = Path(cleaned)
    if candidate.is_absolute():
        inside = _within(candidate, repo_root)
        if inside is None:
            raise NotARepository(f"{path} is outside the repository {repo_root}")
        return inside
    cwd = (cwd or Path.cwd()).resolve()
    # At the root too: `../repo/x.c` there leads back in, which the name alone would not say.
    if cwd == repo_root or repo_root in cwd.parents:
        from_cwd = cwd / candidate
        if os.path.lexists(from_cwd):
            inside = _within(from_cwd, repo_root)
            if inside is None:
                raise NotARepository(f"{path} is outside the repository {repo_root}")
            return inside
    named = Path(os.path.normpath(cleaned)).as_posix().lstrip("/")
    if named == ".." or named.startswith("../"):
        raise NotARepository(f"{path} is outside the repository {repo_root}")
    return named


def _within(path: Path, root: Path) -> str | None:
    """Absolute `path` relative to `root` (resolved), or None when it lies outside. ".." is
    collapsed by name and the last part kept as it is, so a symlink names itself; the folders
    above it are resolved, so a path through a symlinked folder to the repository (/tmp ->
    /private/tmp) lands inside, and one through a link that leaves the repository does not."""
    normal = Path(os.path.normpath(path))
    if normal.resolve() == root:
        return "."
    parent = normal.parent.resolve()
    if parent != root and root not in parent.parents:
        return None
    return (parent / normal.name).relative_to(root).as_posix()

"""Finding the repository and naming paths inside it — without importing pygit2, so that query
commands start fast."""

from __future__ import annotations

import os
from pathlib import Path

from cortex_core.errors import Hint, NotARepository


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

    Accepts a path relative to the root, relative to the current directory, or absolute."""
    cleaned = path.strip().replace("\\", "/")
    candidate = Path(cleaned)
    if candidate.is_absolute():
        try:
            return candidate.resolve().relative_to(repo_root).as_posix()
        except ValueError:
            raise NotARepository(f"{path} is outside the repository {repo_root}") from None
    cwd = (cwd or Path.cwd()).resolve()
    if cwd != repo_root and repo_root in cwd.parents:
        from_cwd = (cwd / candidate).resolve()
        if from_cwd.exists():
            return from_cwd.relative_to(repo_root).as_posix()
    return Path(os.path.normpath(cleaned)).as_posix().lstrip("/")

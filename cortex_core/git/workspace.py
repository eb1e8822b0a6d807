"""The state of the working copy that ranking can use: branch, modified and staged files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cortex_core.git.git_reads import head_of
from cortex_core.memory.tokens import query_terms

_TRUNK = {"main", "master", "trunk", "develop", "development", "dev", "head", "default"}


@dataclass(frozen=True)
class Workspace:
    branch: str | None              # None when detached
    modified: tuple[str, ...]       # changed in the working tree, not staged
    staged: tuple[str, ...]         # changed in the index
    untracked: tuple[str, ...]

    @property
    def changed(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.staged + self.modified))

    @property
    def branch_terms(self) -> list[str]:
        """Words of a topic branch name (`fix/retry-budget` -> retry, budget); none for trunk."""
        if not self.branch or self.branch.lower() in _TRUNK:
            return []
        return [t for t in query_terms(self.branch.replace("/", " "))
                if len(t) > 2 and t not in {"fix", "feat", "feature", "bugfix", "hotfix", "chore"}
                and not t.isdigit()]


def read_workspace(repo_root: Path) -> Workspace:
    """Branch and changed files from git (ignored files excluded). Empty on any git error: the
    working copy only ever adds context, it is never required."""
    import pygit2
    from pygit2.enums import FileStatus
    try:
        repo = pygit2.Repository(str(repo_root))
        branch = head_of(repo).branch
        status = repo.status(untracked_files="normal", ignored=False)
    except (pygit2.GitError, KeyError, ValueError):
        return Workspace(None, (), (), ())
    index_flags = (FileStatus.INDEX_NEW | FileStatus.INDEX_MODIFIED | FileStatus.INDEX_DELETED
                   | FileStatus.INDEX_RENAMED | FileStatus.INDEX_TYPECHANGE)
    tree_flags = (FileStatus.WT_MODIFIED | FileStatus.WT_DELETED | FileStatus.WT_RENAMED
                  | FileStatus.WT_TYPECHANGE)
    staged, modified, untracked = [], [], []
    for raw, flags in sorted(status.items()):
        # The index stores undecodable file names with replacement characters; so does this.
        path = os.fsencode(raw).decode("utf-8", "replace")
        if flags & index_flags:
            staged.append(path)
        if flags & tree_flags:
            modified.append(path)
        if flags & FileStatus.WT_NEW:
            untracked.append(path)
    return Workspace(branch, tuple(modified), tuple(staged), tuple(untracked))

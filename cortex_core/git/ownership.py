"""Whether a store holds this repository's history.

`--db FILE` (and a copied `.cortex/` folder) can pair a store with a repository it was never
built from. Read, such a store answered with the other repository's commits as if they were
this one's; indexed, the run took its commits for a rewritten history, marked them all
unreachable and wrote the two histories into one store. So a store records the working tree it
was last indexed from (store.REPOSITORY_META). Where a read comes from another path, and on
every index run, the store must find a few of its commits
in the repository: its recorded head and the first and last commits it wrote
(store.sample_commits). A moved copy, a worktree and a partial clone keep them; a shallow clone
does when its history reaches one. None of them there: another repository's store, or a
history rewritten from its first commit, which only a rebuild follows.
"""

from __future__ import annotations

from pathlib import Path

from cortex_core.errors import Hint, StoreError


def identity(repo_root: Path) -> str:
    """What the store records of the repository: its working tree's path. (Which `.git` is
    there would tell a clone of another repository made at the same path, but no cheap mark
    does: a new `.git` can get the old one's inode, and its times move with every git
    command.)"""
    return str(repo_root)


def check_owner(repo_root: Path, db_path: Path, recorded: str | None, shas) -> None:
    """Raise StoreError (Hint "foreign") when the store at `db_path`, last indexed from the
    repository `recorded` (identity(); None: not recorded) and holding the commits `shas()` (a
    sample, read only when needed), holds another repository's history. Free when `recorded`
    is this repository; otherwise libgit2 looks for the commits (its import: about 30 ms)."""
    if recorded == identity(repo_root):
        return
    shas = shas()
    if not shas:
        return
    present = has_commits(repo_root, shas)
    if present is not None and not any(present):
        raise StoreError(
            f"the index at {db_path} holds another repository's history: none of its commits"
            f" ({', '.join(sha[:10] for sha in shas[:3])}, …) is in {repo_root} (if this"
            " repository's whole history was rewritten, rebuild the index)", Hint("foreign"))


def has_commits(repo_root: Path, shas: list[str]) -> list[bool] | None:
    """Which of `shas` are commits of the repository at `repo_root`; None when it cannot be
    opened (then nothing is refused). libgit2, not git: git would fetch what a partial clone
    lacks."""
    import pygit2
    from cortex_core.git.git_reads import repository
    repo = repository(repo_root)
    if repo is None:
        return None
    out = []
    for sha in shas:
        try:
            out.append(isinstance(repo.get(sha), pygit2.Commit))
        except (ValueError, pygit2.GitError):
            out.append(False)
    return out

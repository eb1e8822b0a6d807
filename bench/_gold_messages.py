"""retrieval_gold.py: refs in commit messages (`#N`, `owner/name#N`, GitHub URLs, "issue 1234",
"gh-1234") and the commits reachable from HEAD that cite each ref."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pygit2


URL = re.compile(r"""(?:https?://|www\.)[^\s<>"'`)\]]+""", re.IGNORECASE)
GH_URL = re.compile(r"https?://(?:www\.)?github\.com/([\w.-]+)/([\w.-]+)/(?:issues|pulls?)/(\d+)",
                     re.IGNORECASE)
# `#N`, optionally `owner/name#N`; not after a word character, '&' (&#123;) or '#', not before a
# word character or a decimal part. A backslash (markdown's `\#`) may precede the '#'.
HASH = re.compile(r"(?<![\w&#\\])(?:([\w.-]+)/([\w.-]+))?\\?#(\d{1,7})(?![\w]|\.\d)")
GH_DASH = re.compile(r"(?<![\w/.-])gh-(\d{1,7})(?![\w]|\.\d)", re.IGNORECASE)
# A keyword and a bare number: "issue 1234", "issue #1234" (the '#' form is HASH's too), "issue1234"
# (not "/issue1234", a URL or a branch, nor "issue1234-name", a branch).
_KEYWORD_NUM = re.compile(
    r"(?<![\w/.-])(?:issues?|bugs?|prs?|pull[ -]requests?|pulls?|tickets?)"
    r"(?:(?:\s*[:#]\s*|\s+#?)(\d{1,7})|(\d{1,7}))(?![\w-]|\.\d)", re.IGNORECASE)


def repo_names(repo: pygit2.Repository, repo_path: Path) -> set[str]:
    """Names under which this repository's refs may be written: the folder's name and the last
    component of each remote's URL (lower case, without .git; `owner+name` folders split)."""
    names = {repo_path.resolve().name}
    for remote in repo.remotes:
        url = (remote.url or "").rstrip("/")
        last = re.split(r"[/:]", url)[-1]
        names.add(last)
        if last == "repo":  # a mirror laid out as .../owner+name/repo
            names.add(re.split(r"[/:]", url)[-2] if "/" in url else last)
    out = set()
    for n in names:
        n = n.lower().removesuffix(".git")
        out.add(n)
        if "+" in n:
            out.add(n.split("+", 1)[1])
    return out


def message_refs(message: str, names: set[str]) -> set[int]:
    """The issue/PR numbers a commit message cites (see the module's documentation)."""
    refs: set[int] = set()
    for m in GH_URL.finditer(message):
        if m.group(2).lower().removesuffix(".git") in names:
            refs.add(int(m.group(3)))
    text = URL.sub(" ", message)
    for m in HASH.finditer(text):
        if m.group(2) is None or m.group(2).lower() in names:
            refs.add(int(m.group(3)))
    for m in GH_DASH.finditer(text):
        refs.add(int(m.group(1)))
    for m in _KEYWORD_NUM.finditer(text):
        refs.add(int(m.group(1) or m.group(2)))
    refs.discard(0)
    return refs


@dataclass
class CitingCommit:
    sha: str
    subject: str
    parents: int
    title: str      # the subject, or for "Merge pull request #N from ..." the PR's title (the
                    # body's first line)


def commit_refs(repo: pygit2.Repository, names: set[str]) -> tuple[dict[int, set[str]],
                                                                    dict[str, CitingCommit]]:
    """ref -> shas of the commits reachable from HEAD that cite it; sha -> commit, for those."""
    by_ref: dict[int, set[str]] = defaultdict(set)
    commits: dict[str, CitingCommit] = {}
    walker = repo.walk(repo.head.target, pygit2.enums.SortMode.NONE)
    for commit in walker:
        message = commit.message
        refs = message_refs(message, names)
        if not refs:
            continue
        sha = str(commit.id)
        lines = [line.strip() for line in message.strip().split("\n")]
        title = lines[0]
        if len(commit.parent_ids) > 1 and MERGE_LINE.match(title):
            title = next((line for line in lines[1:] if line), title)
        commits[sha] = CitingCommit(sha, lines[0], len(commit.parent_ids), title)
        for ref in refs:
            by_ref[ref].add(sha)
    return by_ref, commits


MERGE_LINE = re.compile(r"^\s*merge (?:pull request|branch|remote-tracking branch)\b", re.IGNORECASE)

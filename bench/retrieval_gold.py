#!/usr/bin/env python3
"""Gold queries for retrieval benchmarks, from a repository's own changelog.

A human-written changelog is a set of natural-language descriptions of changes, each citing the
issues or pull requests (#1234, :gh:`1234`, ...) it comes from. With those numbers removed, an
entry is a query; the commits whose messages cite the same numbers ("Merge pull request #1234
from ...", "Fix X (#1234)", "Fixes #1234", "closes gh-1234") are its gold answers.

    gold_queries(repo_path, changelog=None, *, min_words=4) -> list[GoldQuery]
    extract(repo_path, changelog=None, *, min_words=4) -> GoldSet   # the same, with statistics

How it works:

1. The changelog: `changelog` (a path relative to the repository, or absolute), else the
   candidate (HISTORY.md, CHANGES.rst, CHANGELOG.md, NEWS, docs/news.rst, ...; see
   CHANGELOG_NAMES) that cites the most issue/PR numbers, read from HEAD's tree (the working
   tree if HEAD has no such file). Markdown or reStructuredText, by extension or by content.
2. Entries: the top-level bullets (`-`, `*`, `+`), each with its continuation lines (indented
   lines, nested bullets, indented paragraphs after a blank line, and markdown's unindented
   "lazy" continuation lines). Headings, bold-only lines (`**Bugfixes**`), unindented
   paragraphs and code/literal blocks end or stay out of an entry.
3. Refs of an entry: `#N`, `\\#N`, `GH-N`, `:gh:`N``/`:issue:`N``/`:pr:`N`` (also `:gh:`text <N>``),
   links to this repository's issues/pull requests on GitHub (`.../issues/N`, `.../pull/N`, the
   owner is not checked: repositories move, e.g. kennethreitz/requests -> psf/requests) and
   `owner/name#N` when name is this repository's. Refs to other repositories (`shazow/urllib3#544`,
   `travis#296`, bugs.python.org, `bpo-N`, CVE numbers) are not refs; URLs and other repositories'
   refs are removed from the text, `bpo-N` and CVE ids stay (they are words of the entry).
   `:commit:` and `:rev:` roles are removed; an entry citing a commit directly (`:commit:`abc``)
   is dropped: in scrapy's old notes those entries are copies of commit subjects, which would
   make the query the gold commit's own message.
4. Query text: the entry with the refs (and the word that introduces them: "fixes", "closes",
   "see", "issue", "PR", ...) removed, empty brackets left behind removed, markup reduced to its
   words (``code`` -> code, :class:`~a.b.C` -> C, :ref:`text <target>` -> text, [text](url) ->
   text, **bold** -> bold, escapes undone), whitespace normalised.
5. Gold: every commit reachable from HEAD (any number of parents: merges included) whose message
   cites one of the entry's refs, the union over the refs. Commit messages are matched with the
   forms above plus "issue N", "issueN", "bug N", "PR N", "pull request N", "ticket N" (the
   keyword before the number, no '#' needed), whole numbers only: `#12345` never counts for 1234,
   nor `#1234.5`, `#1234abc`, `&#1234;`, `x#1234`, `a/b#1234` (another repository) or
   `/issue1234` (a URL, or a branch name in "Merge pull request #N from user/issue1234", which
   is the merged branch's name, not a reference).
6. Dropped, counted by reason: no refs, only refs below `min_ref` (10: "test #2", "Merge pull
   request #1 from user/master" -- a pull request inside a fork -- make small numbers
   unreliable), more than `max_refs` refs (catch-all entries; no limit by default), a `:commit:`
   citation, a copied "Merge pull request/branch" line, fewer than `min_words` words, refs that no
   commit cites, and duplicates (entries with the same query text are merged: refs and gold
   united, the first location kept).
7. Optionally (`expand_merges`), a gold merge brings the commits it merged into the gold.

Run `python bench/retrieval_gold.py REPO [--changelog FILE] [--json]` for the statistics and a
few examples. Standard library and pygit2 only.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import re
import statistics
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

CHANGELOG_NAMES = (
    "HISTORY.md", "HISTORY.rst", "HISTORY.txt", "HISTORY",
    "CHANGES.md", "CHANGES.rst", "CHANGES.txt", "CHANGES",
    "CHANGELOG.md", "CHANGELOG.rst", "CHANGELOG.txt", "CHANGELOG",
    "NEWS.md", "NEWS.rst", "NEWS.txt", "NEWS",
    "RELEASE_NOTES.md", "RELEASE-NOTES.md", "RELEASES.md", "RELEASES.rst",
)
CHANGELOG_DIRS = ("", "docs", "doc")
CHANGELOG_DOC_NAMES = ("news.rst", "changelog.rst", "changes.rst", "history.rst", "changelog.md",
                       "changes.md", "history.md", "news.md", "release-notes.rst",
                       "release_notes.rst", "releases.rst", "whatsnew.rst")


@dataclass(frozen=True)
class GoldQuery:
    query: str                 # the entry's words, refs and markup removed
    refs: tuple[int, ...]      # the issue/PR numbers the entry cited
    gold: frozenset[str]       # full shas of the commits whose messages cite one of refs
    source: str                # "HISTORY.md:123": the changelog and the entry's first line


@dataclass
class GoldSet:
    queries: list[GoldQuery]
    changelog: str
    fmt: str                                   # "markdown" | "rst"
    entries: int                               # bullets found
    dropped: dict[str, int]                    # reason -> entries
    stats: dict = field(default_factory=dict)  # see _stats


# ---------------------------------------------------------------------------------------------
# Refs in commit messages

_URL = re.compile(r"""(?:https?://|www\.)[^\s<>"'`)\]]+""", re.IGNORECASE)
_GH_URL = re.compile(r"https?://(?:www\.)?github\.com/([\w.-]+)/([\w.-]+)/(?:issues|pulls?)/(\d+)",
                     re.IGNORECASE)
# `#N`, optionally `owner/name#N`; not after a word character, '&' (&#123;) or '#', not before a
# word character or a decimal part. A backslash (markdown's `\#`) may precede the '#'.
_HASH = re.compile(r"(?<![\w&#\\])(?:([\w.-]+)/([\w.-]+))?\\?#(\d{1,7})(?![\w]|\.\d)")
_GH_DASH = re.compile(r"(?<![\w/.-])gh-(\d{1,7})(?![\w]|\.\d)", re.IGNORECASE)
# A keyword and a bare number: "issue 1234", "issue #1234" (the '#' form is _HASH's too), "issue1234"
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
    for m in _GH_URL.finditer(message):
        if m.group(2).lower().removesuffix(".git") in names:
            refs.add(int(m.group(3)))
    text = _URL.sub(" ", message)
    for m in _HASH.finditer(text):
        if m.group(2) is None or m.group(2).lower() in names:
            refs.add(int(m.group(3)))
    for m in _GH_DASH.finditer(text):
        refs.add(int(m.group(1)))
    for m in _KEYWORD_NUM.finditer(text):
        refs.add(int(m.group(1) or m.group(2)))
    refs.discard(0)
    return refs


@dataclass
class _Commit:
    sha: str
    subject: str
    parents: int
    title: str      # the subject, or for "Merge pull request #N from ..." the PR's title (the
                    # body's first line)


def commit_refs(repo: pygit2.Repository, names: set[str]) -> tuple[dict[int, set[str]],
                                                                    dict[str, _Commit]]:
    """ref -> shas of the commits reachable from HEAD that cite it; sha -> commit, for those."""
    by_ref: dict[int, set[str]] = defaultdict(set)
    commits: dict[str, _Commit] = {}
    walker = repo.walk(repo.head.target, pygit2.enums.SortMode.NONE)
    for commit in walker:
        message = commit.message
        refs = message_refs(message, names)
        if not refs:
            continue
        sha = str(commit.id)
        lines = [line.strip() for line in message.strip().split("\n")]
        title = lines[0]
        if len(commit.parent_ids) > 1 and _MERGE_LINE.match(title):
            title = next((line for line in lines[1:] if line), title)
        commits[sha] = _Commit(sha, lines[0], len(commit.parent_ids), title)
        for ref in refs:
            by_ref[ref].add(sha)
    return by_ref, commits


# ---------------------------------------------------------------------------------------------
# The changelog: finding it, splitting it into entries

def _read_head_file(repo: pygit2.Repository, path: str) -> str | None:
    try:
        obj = repo.revparse_single(f"HEAD:{path}")
    except (KeyError, ValueError, pygit2.GitError):
        return None
    if not isinstance(obj, pygit2.Blob):
        return None
    return obj.data.decode("utf-8", "replace")


def _head_paths(repo: pygit2.Repository) -> list[str]:
    """Changelog candidates present in HEAD's tree (root, docs/, doc/; names case-insensitive)."""
    tree = repo.head.peel(pygit2.Commit).tree
    wanted_root = {n.lower() for n in CHANGELOG_NAMES}
    wanted_doc = wanted_root | set(CHANGELOG_DOC_NAMES)
    out = []
    for folder in CHANGELOG_DIRS:
        try:
            sub = tree[folder] if folder else tree
        except KeyError:
            continue
        if not isinstance(sub, pygit2.Tree):
            continue
        for entry in sub:
            if entry.type_str == "blob" and entry.name.lower() in (
                    wanted_doc if folder else wanted_root):
                out.append(f"{folder}/{entry.name}" if folder else entry.name)
    return out


def _sniff_format(path: str, text: str) -> str:
    lower = path.lower()
    if lower.endswith((".md", ".markdown")):
        return "markdown"
    if lower.endswith((".rst", ".rest")):
        return "rst"
    if re.search(r":(?:gh|issue|pr|pull):`", text) or re.search(r"^\.\. \w", text, re.MULTILINE):
        return "rst"
    return "markdown"


def find_changelog(repo: pygit2.Repository, repo_path: Path, changelog: str | None,
                   names: set[str]) -> tuple[str, str]:
    """(path, text) of the changelog: the one given, else the candidate citing the most refs."""
    if changelog is not None:
        p = Path(changelog)
        if p.is_absolute():
            return str(p), p.read_text(encoding="utf-8", errors="replace")
        text = _read_head_file(repo, changelog)
        if text is None:
            text = (repo_path / p).read_text(encoding="utf-8", errors="replace")
        return changelog, text
    best: tuple[int, str, str] | None = None
    for path in _head_paths(repo):
        text = _read_head_file(repo, path) or ""
        fmt = _sniff_format(path, text)
        count = len(_changelog_refs(text, fmt, names)[0])
        if best is None or count > best[0]:
            best = (count, path, text)
    if best is None or best[0] == 0:
        tried = ", ".join(f"{d}/{n}" if d else n for d in CHANGELOG_DIRS
                          for n in (CHANGELOG_NAMES if not d else CHANGELOG_DOC_NAMES))
        raise FileNotFoundError(f"no changelog citing issue numbers in {repo_path} "
                                f"(looked for {tried}); pass one explicitly")
    return best[1], best[2]


_BULLET = re.compile(r"^(\s*)([-*+])(\s+)(\S.*)$")
_UNDERLINE = re.compile(r"^\s*([=\-~^\"'`#*+])\1{2,}\s*$")
_BOLD_LINE = re.compile(r"^\s*(\*\*|__)[^*_].*(\*\*|__):?\s*$")
_ATX = re.compile(r"^#{1,6}\s")


@dataclass
class _Entry:
    line: int            # 1-based
    indent: int          # the bullet's column
    lines: list[str]


def split_entries(text: str, fmt: str) -> list[_Entry]:
    """The top-level bullets of a changelog with their continuation lines (the bullet marker
    removed from the first line). Code and literal blocks are left out."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    entries: list[_Entry] = []
    cur: _Entry | None = None
    blank_before = False
    fence = False
    skip_indent: int | None = None     # inside a code/literal block indented deeper than this
    literal_next = False               # the previous paragraph ended with '::'
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" \t"))
        # markdown fences
        if fmt == "markdown" and stripped.startswith(("```", "~~~")):
            fence = not fence
            continue
        if fence:
            continue
        if not stripped:
            blank_before = True
            continue
        if skip_indent is not None:
            if indent > skip_indent:
                blank_before = False
                continue
            skip_indent = None
        if literal_next and blank_before:
            literal_next = False
            if cur is not None and indent > cur.indent:
                skip_indent = indent - 1
                blank_before = False
                continue
        literal_next = False
        # headings end entries: a setext/RST title (text over an underline), the underline
        # itself, an ATX heading, a bold-only line
        is_heading = (_UNDERLINE.match(nxt) and not _UNDERLINE.match(line)
                      and len(nxt.strip()) >= max(3, len(stripped) // 2) and indent == 0)
        if is_heading or _UNDERLINE.match(line) or (_ATX.match(line) and indent == 0) \
                or (_BOLD_LINE.match(line) and (cur is None or indent <= cur.indent)):
            cur = None
            blank_before = False
            continue
        bullet = _BULLET.match(line)
        if bullet and (cur is None or indent <= cur.indent):
            cur = _Entry(i + 1, indent, [bullet.group(4)])
            entries.append(cur)
        elif cur is not None and (indent > cur.indent or (not blank_before and fmt == "markdown")):
            if fmt == "rst" and stripped.startswith(".. "):
                # a directive inside the entry: code blocks left out, the others' bodies kept
                if re.match(r"\.\.\s+(code-block|code|sourcecode|highlight|literalinclude)::",
                            stripped) or stripped.startswith(".. _") or stripped == "..":
                    skip_indent = indent
                blank_before = False
                continue
            if fmt == "markdown" and indent >= cur.indent + 8 and blank_before:
                # an indented code block inside the bullet
                skip_indent = indent - 1
                blank_before = False
                continue
            cur.lines.append(stripped)
        else:
            cur = None
        if cur is not None and fmt == "rst" and stripped.endswith("::"):
            literal_next = True
        blank_before = False
    return entries


# ---------------------------------------------------------------------------------------------
# Refs in the changelog, and the query text

_REF_WORDS = (r"(?:(?:c\.?f\.?|fix(?:es|ed)?|close[sd]?|resolve[sd]?|see(?:\s+also)?|refs?|references?|"
              r"addresse?s?|issues?|bugs?|prs?|pull\s+requests?|gh|and|or|also|via|in)\s*:?\s*)")
_RST_REF_ROLE = re.compile(
    r":(?:gh|issue|issues|pr|pull|pulls|bug|ghissue|ghpull):`(?:[^`<]*<)?#?(\d+)>?`", re.IGNORECASE)
_RST_OTHER_REF = re.compile(r":(?:commit|rev|ghcommit|user|ghuser):`[^`]*`", re.IGNORECASE)
_MD_LINK = re.compile(r"\[((?:[^\[\]]|\\\[|\\\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_ANGLE_URL = re.compile(r"<(?:https?://|www\.)[^>\s]*>")


def _changelog_refs(text: str, fmt: str, names: set[str]) -> tuple[list[int], str, bool]:
    """(refs in order of appearance, the text with refs/URLs removed, cites a commit directly)."""
    refs: list[int] = []
    cites_commit = bool(_RST_OTHER_REF.search(text)) and bool(
        re.search(r":(?:commit|ghcommit):`", text, re.IGNORECASE))

    def add(n: int) -> None:
        if n and n not in refs:
            refs.append(n)

    def role(m: re.Match) -> str:
        add(int(m.group(1)))
        return " \x00 "
    text = _RST_REF_ROLE.sub(role, text)
    text = _RST_OTHER_REF.sub(" \x00 ", text)

    def md_link(m: re.Match) -> str:
        label, url = m.group(1), m.group(2)
        gh = _GH_URL.match(url)
        label_is_ref = re.fullmatch(r"\s*(?:[\w.-]+/[\w.-]+)?\s*\\?#\d+\s*", label)
        if gh:
            if gh.group(2).lower().removesuffix(".git") in names:
                add(int(gh.group(3)))
            if label_is_ref or re.fullmatch(r"\s*(?:https?://\S*|\S*\d+)\s*", label):
                return " \x00 "
        elif label_is_ref:
            return " \x00 "       # a ref to some other tracker: not ours, not words either
        return label
    if fmt == "markdown":
        text = _MD_LINK.sub(md_link, text)

    def url(m: re.Match) -> str:
        gh = _GH_URL.match(m.group(0).strip("<>"))
        if gh and gh.group(2).lower().removesuffix(".git") in names:
            add(int(gh.group(3)))
        return " \x00 "
    text = _ANGLE_URL.sub(url, text)
    text = re.sub(r"`([^`<]*?)\s*<(?:https?://|www\.)[^>]*>`_{1,2}", r"\1", text)  # rst links
    text = _URL.sub(url, text)

    def hash_ref(m: re.Match) -> str:
        if m.group(2) is None or m.group(2).lower() in names:
            add(int(m.group(3)))
        return " \x00 "
    text = _HASH.sub(hash_ref, text)

    def dash_ref(m: re.Match) -> str:
        add(int(m.group(1)))
        return " \x00 "
    text = _GH_DASH.sub(dash_ref, text)
    # The words that introduced the refs ("fixes #1", "see :gh:`2`", "(#1, #2 and #3)"), then
    # brackets left empty.
    marker = re.compile(r"(?:\b" + _REF_WORDS + r")*\x00(?:\s*(?:[,;/&|]|\band\b|\bor\b)?\s*"
                        r"(?:\b" + _REF_WORDS + r")*\x00)*", re.IGNORECASE)
    text = marker.sub(" \x00 ", text)
    text = re.sub(r"(?:\s*\x00\s*)+", " \x00 ", text)
    text = re.sub(r"[(\[][\s,;:.]*\x00[\s,;:.]*[)\]]", " ", text)  # brackets that held refs only
    text = re.sub(r"\s*\x00\s*([.,;:])", r"\1", text)
    text = re.sub(r"[,;:]?\s*\x00\s*", " ", text)
    return refs, text, cites_commit


def _rst_role(m: re.Match) -> str:
    body = m.group(2)
    title = re.match(r"(.*?)\s*<[^>]*>\s*$", body, re.DOTALL)
    if title and title.group(1):
        return title.group(1)
    body = body.strip().lstrip("!")
    if body.startswith("~"):
        body = body[1:].rsplit(".", 1)[-1]
    return body.lstrip(".")          # :meth:`.Request.meta`: a search, rendered without the dot


def plain_text(text: str, fmt: str) -> str:
    """The words of an entry without markup, whitespace normalised. Code spans and roles are
    kept verbatim (``__init__`` stays __init__) while emphasis and escapes are undone around
    them."""
    spans: list[str] = []

    def keep(value: str) -> str:
        spans.append(value)
        return f"\x01{len(spans) - 1}\x01"
    if fmt == "rst":
        text = re.sub(r":([\w:+.-]+):`([^`]*)`", lambda m: keep(_rst_role(m)), text)
        text = re.sub(r"``(.+?)``", lambda m: keep(m.group(1)), text, flags=re.DOTALL)
        text = re.sub(r"`([^`<]*?)\s*<[^>]*>`_{1,2}", r"\1", text, flags=re.DOTALL)  # `text <target>`_
        text = re.sub(r"`([^`]+)`_{1,2}", r"\1", text)                 # `text`_
        text = re.sub(r"`([^`]+)`", lambda m: keep(m.group(1)), text)  # default role
        text = re.sub(r"(?<=[A-Za-z0-9])_{1,2}(?=[\s,.;:)]|$)", "", text)  # name_ references
        text = re.sub(r"\|([^|\s][^|]*)\|", r"\1", text)               # |substitution|
        text = re.sub(r"\*\*(.+?)\*\*", r"\1", text)
        text = re.sub(r"(?<![\w*])\*(\S(?:.*?\S)?)\*(?![\w*])", r"\1", text)
        text = re.sub(r"\\(.)", r"\1", text)
    else:
        text = re.sub(r"``\s*(.+?)\s*``", lambda m: keep(m.group(1)), text, flags=re.DOTALL)
        text = re.sub(r"`([^`]+)`", lambda m: keep(m.group(1)), text)
        text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
        text = re.sub(r"(?<![\w*])\*(\S(?:.*?\S)?)\*(?![\w*])", r"\1", text)
        text = re.sub(r"(?<![\w_])_(\S(?:.*?\S)?)_(?![\w_])", r"\1", text)
        text = re.sub(r"\\([\\`*_{}\[\]()#+\-.!<>|~])", r"\1", text)
        text = re.sub(r"</?[a-zA-Z][^>]*>", " ", text)                 # inline HTML tags
    text = re.sub(r"\x01(\d+)\x01", lambda m: spans[int(m.group(1))], text)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([.,;:!?]+)(?=\s|$|[\"')\]])", r"\1", text)
    text = re.sub(r"\s+\)", ")", text)
    text = re.sub(r"([(\[])\s+", r"\1", text)
    return text


def _words(text: str) -> int:
    return sum(1 for tok in text.split() if re.search(r"\w", tok))


_MERGE_LINE = re.compile(r"^\s*merge (?:pull request|branch|remote-tracking branch)\b", re.IGNORECASE)


def _subject_key(subject: str, names: set[str]) -> str:
    return plain_text(_changelog_refs(subject, "markdown", names)[1], "markdown").lower()


# ---------------------------------------------------------------------------------------------

def extract(repo_path: Path, changelog: str | None = None, *, min_words: int = 4,
            min_ref: int = 10, max_refs: int | None = None,
            expand_merges: bool = False) -> GoldSet:
    """The gold queries of a repository and the statistics of their extraction.

    min_ref: numbers below it are not refs, on either side ("#1" in a commit message is as often
    an enumeration, "test #2", or a pull request merged inside a contributor's fork, "Merge pull
    request #1 from user/master", as this repository's issue 1). max_refs: entries citing more
    refs are dropped (catch-all entries such as "Other documentation improvements" citing 50
    pull requests); None keeps them all. expand_merges: a gold merge commit brings the commits
    it merged (reachable from its other parents, not from its first) into the gold too, unless
    they are more than MAX_MERGED (a long-lived branch rather than a pull request)."""
    repo_path = Path(repo_path)
    repo = pygit2.Repository(str(repo_path))
    names = repo_names(repo, repo_path)
    path, text = find_changelog(repo, repo_path, changelog, names)
    fmt = _sniff_format(path, text)
    by_ref, commits = commit_refs(repo, names)
    entries = split_entries(text, fmt)
    dropped: Counter[str] = Counter()
    unmapped_refs: Counter[int] = Counter()
    merged: dict[str, dict] = {}
    expansion: dict[str, set[str] | None] = {}
    for entry in entries:
        # nested bullets' markers are not words
        raw = "\n".join(re.sub(r"^[-*+]\s+", "", line) for line in entry.lines)
        refs, rest, cites_commit = _changelog_refs(raw, fmt, names)
        if not refs:
            dropped["no_refs"] += 1
            continue
        if not any(r >= min_ref for r in refs):
            dropped["refs_below_min_ref"] += 1
            continue
        refs = [r for r in refs if r >= min_ref]
        if max_refs is not None and len(refs) > max_refs:
            dropped["too_many_refs"] += 1
            continue
        if cites_commit:
            dropped["cites_commit"] += 1
            continue
        query = plain_text(rest, fmt)
        if _MERGE_LINE.match(query):
            dropped["merge_line"] += 1
            continue
        if _words(query) < min_words:
            dropped["too_short"] += 1
            continue
        gold: set[str] = set()
        for ref in refs:
            gold |= by_ref.get(ref, set())
            if ref not in by_ref:
                unmapped_refs[ref] += 1
        if not gold:
            dropped["refs_without_commit"] += 1
            continue
        if expand_merges:
            for sha in [s for s in gold if commits[s].parents > 1]:
                if sha not in expansion:
                    expansion[sha] = _merged_commits(repo, sha)
                gold |= expansion[sha] or set()
        source = f"{path}:{entry.line}"
        if query in merged:
            dropped["duplicate"] += 1
            m = merged[query]
            m["refs"] += [r for r in refs if r not in m["refs"]]
            m["gold"] |= gold
            continue
        merged[query] = {"refs": list(refs), "gold": gold, "source": source}
    queries = [GoldQuery(q, tuple(m["refs"]), frozenset(m["gold"]), m["source"])
               for q, m in merged.items()]
    out = GoldSet(queries, path, fmt, len(entries), dict(dropped))
    out.stats = _stats(queries, commits, by_ref, unmapped_refs, names)
    if expand_merges:
        out.stats["merges_expanded"] = sum(1 for v in expansion.values() if v is not None)
        out.stats["merges_not_expanded_too_large"] = sum(1 for v in expansion.values() if v is None)
    return out


MAX_MERGED = 50


def _merged_commits(repo: pygit2.Repository, sha: str) -> set[str] | None:
    """The commits a merge brought in (reachable from its other parents, not from its first);
    None if more than MAX_MERGED."""
    commit = repo[sha]
    walker = repo.walk(commit.parent_ids[1], pygit2.enums.SortMode.NONE)
    for extra in commit.parent_ids[2:]:
        walker.push(extra)
    walker.hide(commit.parent_ids[0])
    out: set[str] = set()
    for c in walker:
        out.add(str(c.id))
        if len(out) > MAX_MERGED:
            return None
    return out


def gold_queries(repo_path: Path, changelog: str | None = None, *, min_words: int = 4,
                 min_ref: int = 10, max_refs: int | None = None) -> list[GoldQuery]:
    """The gold queries of a repository (see the module's documentation and `extract`)."""
    return extract(repo_path, changelog, min_words=min_words, min_ref=min_ref,
                   max_refs=max_refs).queries


def _summary(values: list[float]) -> dict:
    if not values:
        return {"mean": None, "median": None, "max": None}
    return {"mean": round(statistics.fmean(values), 2), "median": statistics.median(values),
            "max": max(values), "min": min(values)}


def _stats(queries: list[GoldQuery], commits: dict[str, _Commit], by_ref: dict[int, set[str]],
           unmapped_refs: Counter, names: set[str]) -> dict:
    per_commit: Counter[str] = Counter()
    for q in queries:
        per_commit.update(q.gold)
    gold_all = [sha for q in queries for sha in q.gold if sha in commits]
    merge_only = sum(1 for q in queries
                     if all(s in commits and commits[s].parents > 1 for s in q.gold))
    # A query that is (nearly) the subject of one of its gold commits: the changelog copied the
    # PR title. Realistic, but an easy query; counted, not dropped.
    verbatim = 0
    for q in queries:
        key = q.query.lower()
        for sha in q.gold & commits.keys():
            subject = _subject_key(commits[sha].title, names)
            if difflib.SequenceMatcher(None, key, subject).ratio() >= 0.9:
                verbatim += 1
                break
    hubs = [{"sha": sha, "queries": n, "subject": commits[sha].subject,
             "parents": commits[sha].parents}
            for sha, n in per_commit.most_common(5) if n > 1 and sha in commits]
    return {
        "gold_size": _summary([len(q.gold) for q in queries]),
        "refs_per_query": _summary([len(q.refs) for q in queries]),
        "query_words": _summary([_words(q.query) for q in queries]),
        "gold_commits_distinct": len(per_commit),
        "gold_merge_share": round(sum(commits[s].parents > 1 for s in gold_all)
                                  / len(gold_all), 3) if gold_all else None,
        "queries_gold_merges_only": merge_only,
        "queries_near_verbatim_subject": verbatim,
        "commits_gold_for_several_queries": sum(1 for n in per_commit.values() if n > 1),
        "commits_gold_for_5_or_more_queries": sum(1 for n in per_commit.values() if n >= 5),
        "top_shared_gold_commits": hubs,
        "commits_citing_refs": len(commits),
        "refs_cited_by_commits": len(by_ref),
        "changelog_refs_without_commit": len(unmapped_refs),
    }


# ---------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Gold queries from a repository's changelog: "
                                "entries without their issue/PR numbers, and the commits that "
                                "cite those numbers.")
    p.add_argument("repo", type=Path, help="the git repository")
    p.add_argument("--changelog", help="the changelog, relative to the repository (default: "
                   "found automatically)")
    p.add_argument("--min-words", type=int, default=4, help="shorter queries are dropped "
                   "(default 4)")
    p.add_argument("--min-ref", type=int, default=10, help="smaller numbers are not refs "
                   "(default 10)")
    p.add_argument("--max-refs", type=int, help="entries citing more refs are dropped (default: "
                   "none dropped)")
    p.add_argument("--expand-merges", action="store_true", help="a gold merge adds the commits "
                   "it merged to the gold")
    p.add_argument("--examples", type=int, default=5, help="random examples shown (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the examples (default 0)")
    p.add_argument("--all", action="store_true", help="with --json: every query, not only the "
                   "examples")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    args = p.parse_args(argv)
    gs = extract(args.repo, args.changelog, min_words=args.min_words, min_ref=args.min_ref,
                 max_refs=args.max_refs, expand_merges=args.expand_merges)
    repo = pygit2.Repository(str(args.repo))
    rng = random.Random(args.seed)
    sample = rng.sample(gs.queries, min(args.examples, len(gs.queries)))

    def example(q: GoldQuery) -> dict:
        return {"query": q.query, "refs": list(q.refs), "source": q.source,
                "gold": [{"sha": s, "subject": repo[s].message.strip().split("\n", 1)[0]}
                         for s in sorted(q.gold)]}
    report = {"repository": str(args.repo.resolve()), "changelog": gs.changelog,
              "format": gs.fmt, "entries": gs.entries, "queries": len(gs.queries),
              "min_words": args.min_words, "min_ref": args.min_ref, "max_refs": args.max_refs,
              "dropped": gs.dropped, **gs.stats,
              "examples": [example(q) for q in sample]}
    if args.all:
        report["all_queries"] = [{"query": q.query, "refs": list(q.refs), "source": q.source,
                                  "gold": sorted(q.gold)} for q in gs.queries]
    if args.json:
        json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    s = gs.stats
    print(f"{report['repository']}: {gs.changelog} ({gs.fmt}), {gs.entries} entries")
    print(f"queries: {len(gs.queries)} (min {args.min_words} words)")
    print("dropped: " + (", ".join(f"{k} {v}" for k, v in sorted(gs.dropped.items())) or "none"))
    g, r, w = s["gold_size"], s["refs_per_query"], s["query_words"]
    print(f"gold commits per query: mean {g['mean']}, median {g['median']}, max {g['max']}")
    print(f"refs per query: mean {r['mean']}, max {r['max']};  words per query: mean {w['mean']},"
          f" median {w['median']}, max {w['max']}")
    print(f"distinct gold commits {s['gold_commits_distinct']}, of which merges "
          f"{s['gold_merge_share']:.0%}; queries whose gold is merges only "
          f"{s['queries_gold_merges_only']}; near-verbatim PR/commit subject "
          f"{s['queries_near_verbatim_subject']}")
    print(f"commits gold for several queries {s['commits_gold_for_several_queries']}, "
          f"for 5 or more {s['commits_gold_for_5_or_more_queries']}; changelog refs no commit "
          f"cites: {s['changelog_refs_without_commit']}")
    for h in s["top_shared_gold_commits"]:
        print(f"  {h['sha'][:10]}  gold for {h['queries']} queries  {h['subject'][:70]}")
    print(f"\n{len(sample)} examples (seed {args.seed}):")
    for ex in report["examples"]:
        print(f"\n  {ex['source']}  refs {ex['refs']}\n  query: {ex['query']}")
        for gdict in ex["gold"]:
            print(f"    {gdict['sha'][:10]}  {gdict['subject'][:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

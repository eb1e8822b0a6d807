"""retrieval_gold.py: the changelog (finding it in HEAD's tree, splitting it into entries), the
refs each entry cites, and an entry's plain text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pygit2

from _gold_messages import GH_DASH, GH_URL, HASH, URL


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


def sniff_format(path: str, text: str) -> str:
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
        fmt = sniff_format(path, text)
        count = len(changelog_refs(text, fmt, names)[0])
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


_REF_WORDS = (r"(?:(?:c\.?f\.?|fix(?:es|ed)?|close[sd]?|resolve[sd]?|see(?:\s+also)?|refs?|references?|"
              r"addresse?s?|issues?|bugs?|prs?|pull\s+requests?|gh|and|or|also|via|in)\s*:?\s*)")
_RST_REF_ROLE = re.compile(
    r":(?:gh|issue|issues|pr|pull|pulls|bug|ghissue|ghpull):`(?:[^`<]*<)?#?(\d+)>?`", re.IGNORECASE)
_RST_OTHER_REF = re.compile(r":(?:commit|rev|ghcommit|user|ghuser):`[^`]*`", re.IGNORECASE)
_MD_LINK = re.compile(r"\[((?:[^\[\]]|\\\[|\\\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_ANGLE_URL = re.compile(r"<(?:https?://|www\.)[^>\s]*>")


def changelog_refs(text: str, fmt: str, names: set[str]) -> tuple[list[int], str, bool]:
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
        gh = GH_URL.match(url)
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
        gh = GH_URL.match(m.group(0).strip("<>"))
        if gh and gh.group(2).lower().removesuffix(".git") in names:
            add(int(gh.group(3)))
        return " \x00 "
    text = _ANGLE_URL.sub(url, text)
    text = re.sub(r"`([^`<]*?)\s*<(?:https?://|www\.)[^>]*>`_{1,2}", r"\1", text)  # rst links
    text = URL.sub(url, text)

    def hash_ref(m: re.Match) -> str:
        if m.group(2) is None or m.group(2).lower() in names:
            add(int(m.group(3)))
        return " \x00 "
    text = HASH.sub(hash_ref, text)

    def dash_ref(m: re.Match) -> str:
        add(int(m.group(1)))
        return " \x00 "
    text = GH_DASH.sub(dash_ref, text)
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

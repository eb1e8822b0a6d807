"""Cutting text into memory items: commit messages into segments, documents into sections.

A commit whose body is a list of changes ("- fix the timeout", "- rename Session.send") becomes one
segment per list item plus a head segment (subject and any prose before the list), each tied to the
files and symbols it names; a commit that describes one change stays one segment. Documents are
split at their headings (Markdown ATX and setext, reStructuredText underlines); changelog sections
are split further into their entries, one per bullet. Long sections are cut at paragraph breaks.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

MAX_SECTION_CHARS = 4000     # a longer section is cut at paragraph breaks
MIN_BULLETS = 2              # a body needs at least this many list items to be split
MAX_SEGMENTS = 50            # a longer list (a changelog pasted into a message) stays one segment
MAX_SECTIONS = 1000          # sections of one document beyond this join the last one

_BULLET = re.compile(r"^ {0,3}(?:[-*+\u2022]|\d{1,3}[.)])\s+(?=\S)")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)")   # only the marker: the title is cut in Python
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")

DOC_NAMES = ("readme", "changelog", "changes", "history", "news", "contributing", "architecture",
             "design", "hacking", "security", "upgrading", "migration")
DOC_DIRS = ("docs/", "doc/", "adr/", "adrs/", "decisions/", "rfcs/")
DOC_EXTS = (".md", ".markdown", ".rst", ".txt", "")
CHANGELOG_NAMES = ("changelog", "changes", "history", "news", "release-notes", "releases")


@dataclass(frozen=True)
class Segment:
    text: str
    files: tuple[str, ...]               # paths the segment is about
    symbols: tuple[tuple[str, str], ...]  # (path, qualname) it names


@dataclass(frozen=True)
class Section:
    title: str        # heading path, "Install › From source"
    text: str
    line: int         # 1-based, first line of the section
    end_line: int


# -- commits -----------------------------------------------------------------------------------


def commit_segments(subject: str, body: str, paths: list[str],
                    symbols: list[tuple[str, str, str]]) -> list[Segment]:
    """Segments of a commit message. `paths`: files the commit changed; `symbols`: (path, qualname,
    name) of symbols it changed. The first segment is the subject (with any prose before a list)."""
    everything = (tuple(paths), tuple((p, q) for p, q, _ in symbols))
    items, preamble = _bullets(body)
    if not MIN_BULLETS <= len(items) <= MAX_SEGMENTS:
        text = subject + ("\n\n" + body if body else "")
        return [Segment(text, *everything)]
    head = subject + ("\n\n" + preamble if preamble else "")
    segments = [Segment(head, *everything)]
    for item in items:
        # An item that names nothing is about the whole commit: the head segment already links
        # it to every file (linking each such item again would grow with items x files).
        segments.append(Segment(item, *_named(item, paths, symbols)))
    return segments


def _bullets(body: str) -> tuple[list[str], str]:
    """The list items of a body and the prose before the first one. Continuation lines join their
    item; prose after an item (a squash-merge's message under its subject) joins it too."""
    items: list[list[str]] = []
    preamble: list[str] = []
    current: list[str] | None = None
    for line in body.split("\n"):
        match = _BULLET.match(line)
        if match:
            current = [line[match.end():].strip()]
            items.append(current)
        elif not line.strip():
            current = None
        elif current is not None:
            current.append(line.strip())
        elif items:
            items[-1].append(line.strip())
        else:
            preamble.append(line.strip())
    return [" ".join(i) for i in items], "\n".join(preamble).strip()


def _named(text: str, paths: list[str], symbols: list[tuple[str, str, str]]):
    words = set(re.findall(r"[\w.\-/]+", text))
    tokens = set(re.findall(r"\w+", text))
    files = []
    for path in paths:
        base = posixpath.basename(path)
        stem = base.rsplit(".", 1)[0]
        if path in text or base in words or (len(stem) >= 4 and stem in tokens):
            files.append(path)
    syms = [(p, q) for p, q, name in symbols if len(name) >= 3 and name in tokens]
    files.extend(p for p, _ in syms if p not in files)
    return tuple(files), tuple(syms)


# -- documents ---------------------------------------------------------------------------------


def is_doc_path(path: str) -> bool:
    """Documents worth searching: READMEs, changelogs and the like anywhere; .md/.rst/.txt files
    under docs/, doc/, adr/ ..."""
    lower = path.lower()
    base = posixpath.basename(lower)
    stem, ext = posixpath.splitext(base)
    if ext not in DOC_EXTS:
        return False
    if stem.split(".")[0] in DOC_NAMES:
        return True
    in_docs = any(lower.startswith(d) or "/" + d in lower for d in DOC_DIRS)
    return in_docs and ext in (".md", ".markdown", ".rst")


def is_changelog(path: str) -> bool:
    base = posixpath.basename(path.lower())
    return base.split(".")[0] in CHANGELOG_NAMES


def doc_sections(path: str, text: str) -> list[Section]:
    """Sections of a document at its headings; a changelog's sections split into entries."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    rst = path.lower().endswith((".rst", ".txt"))
    headings = _headings(lines, rst)
    doc = path
    out: list[Section] = []
    stack: list[tuple[int, str]] = []
    bounds = headings + [(len(lines), None, None, 0)]
    if not headings or headings[0][0] > 0:      # text before the first heading
        first = headings[0][0] if headings else len(lines)
        out.extend(_pieces(doc, lines, 0, first, 0))
    for (start, level, title, skip), (end, *_rest) in zip(bounds, bounds[1:]):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        label = " › ".join([doc] + [t for _, t in stack])
        body_start = start + skip
        if is_changelog(path):
            entries = _entries(lines, body_start, end)
            if len(entries) >= MIN_BULLETS:
                out.extend(Section(label, t, a + 1, b) for a, b, t in entries)
                continue
        out.extend(_pieces(label, lines, body_start, end, start))
    out = [s for s in out if s.text.strip()]
    if len(out) > MAX_SECTIONS:   # a generated document: its tail is one section
        tail = out[MAX_SECTIONS - 1:]
        out = out[:MAX_SECTIONS - 1] + [Section(tail[0].title, "\n\n".join(t.text for t in tail),
                                                tail[0].line, tail[-1].end_line)]
    return out


def _headings(lines: list[str], rst: bool) -> list[tuple[int, int, str, int]]:
    """(line index, level, title, lines the heading spans), in order."""
    found: list[tuple[int, int, str, int]] = []
    styles: list[str] = []
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            atx = None if rst else _ATX.match(line)
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if atx:
                found.append((i, len(atx.group(1)), _atx_title(line[atx.end():]), 1))
            elif line.strip() and not _BULLET.match(line) and i + 1 < len(lines):
                under = _RST_UNDERLINE.match(nxt) if rst else _SETEXT.match(nxt)
                if under and len(nxt.strip()) >= min(len(line.strip()), 3):
                    over = i > 0 and lines[i - 1].strip() == nxt.strip()
                    style = ("o" if over else "") + nxt.strip()[0]
                    if style not in styles:
                        styles.append(style)
                    start = i - 1 if over else i
                    if found and found[-1][0] == start:
                        i += 1
                        continue
                    # Markdown setext: '=' is a level-1 heading, '-' level 2. RST: the order in
                    # which underline styles first appear defines their levels.
                    level = (1 if style == "=" else 2) if not rst else 100 + styles.index(style)
                    found.append((start, level, line.strip(), 3 if over else 2))
                    i += 2
                    continue
        i += 1
    return found


def _atx_title(rest: str) -> str:
    """An ATX heading's text without its optional closing run of '#'."""
    title = rest.strip()
    bare = title.rstrip("#")
    if bare != title and (not bare or bare[-1] in " \t"):
        title = bare.rstrip()
    return title


def _entries(lines: list[str], start: int, end: int) -> list[tuple[int, int, str]]:
    """Bullet entries between two headings: (first index, last line number, text)."""
    entries: list[tuple[int, int, str]] = []
    current: list[str] = []
    first = last = start
    for i in range(start, end):
        line = lines[i]
        bullet = _BULLET.match(line)
        if bullet and (not current or len(line) - len(line.lstrip()) <= 3):
            if current:
                entries.append((first, last + 1, " ".join(current)))
            current, first, last = [line[bullet.end():].strip()], i, i
        elif current and line.strip():
            current.append(line.strip())
            last = i
    if current:
        entries.append((first, last + 1, " ".join(current)))
    return entries


def _pieces(label: str, lines: list[str], start: int, end: int, heading: int) -> list[Section]:
    """A section's text, cut at paragraph breaks when longer than MAX_SECTION_CHARS."""
    out: list[Section] = []
    chunk: list[str] = []
    chunk_start = start
    size = 0
    for i in range(start, end):
        line = lines[i]
        if size > MAX_SECTION_CHARS and not line.strip():
            out.append(Section(label, "\n".join(chunk).strip(), min(heading, chunk_start) + 1, i))
            chunk, size, chunk_start, heading = [], 0, i + 1, i + 1
            continue
        chunk.append(line)
        size += len(line) + 1
    if chunk:
        out.append(Section(label, "\n".join(chunk).strip(), min(heading, chunk_start) + 1, end))
    return out

"""Words of a commit's change: the identifiers and string-literal words of its changed lines.

A changelog entry, or a question about a change, names what changed in the code (a function, an
option, an error message) more often than the commit message does. The lines a commit added or
removed in source files hold those names, so the lexical index gets them as a field of their own.

Bounded at every step, so a vendored dump or a generated file cannot swell the index: at most
`MAX_LINES_PER_FILE` changed lines of a file are read, `MAX_WORDS` distinct words kept per commit
(first seen first), words of 3 to `MAX_WORD_CHARS` characters. Language keywords and English
stopwords are left out (every diff has them). The changed lines are redacted (text/redact.py)
before any word is taken, so a secret a diff added never reaches the index.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from cortex_core.text.redact import redact

MAX_LINES_PER_FILE = 400
MAX_WORDS = 200
MAX_WORD_CHARS = 40
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Keywords and builtins of the languages the index parses, and English function words: they
# carry no topic, and a field where every commit has them only adds noise.
NOISE = frozenset("""
and any are as assert async await bool boolean break byte case catch char class const continue
def default del defer delete do double elif else enum except export extends false final finally
float for from func function get global goto if impl implements import in instanceof int interface
is lambda let long match mod mut new nil none nonlocal not null object of or package pass print
private protected pub public raise return self static str string struct super switch synchronized
this throw throws true try type typeof undefined use var void volatile while with yield fn
the for that this with from are was were been have has had not but can could would should will
into onto its it's our your their there these those then than when where which while what who
also only just use used using self cls args kwargs len isinstance none
""".split())


def changed_lines(patch, limit: int = MAX_LINES_PER_FILE) -> list[str]:
    """The added and removed lines of a pygit2 Patch, at most `limit`. From the patch's text:
    walking its hunks' line objects costs several times more."""
    out: list[str] = []
    in_hunks = False
    for line in (patch.text or "").split("\n"):
        if line.startswith("@@"):
            in_hunks = True
        elif in_hunks and line[:1] in ("+", "-"):
            out.append(line[1:])
            if len(out) >= limit:
                break
    return out


def words_of(lines: Iterable[str]) -> list[str]:
    """Distinct words of changed lines, first seen first, redacted and bounded (see above)."""
    text = redact("".join(line if line.endswith("\n") else line + "\n" for line in lines))
    seen: dict[str, None] = {}
    # Each spelling once, in the order first seen: stripping may join two ("_x_y", "x_y"), and
    # the first of them comes first either way.
    for word in dict.fromkeys(_WORD.findall(text)):
        word = word.strip("_")
        if not 3 <= len(word) <= MAX_WORD_CHARS or word.lower() in NOISE or word in seen:
            continue
        if word.startswith("REDACTED"):
            continue
        seen[word] = None
        if len(seen) >= MAX_WORDS:
            break
    return list(seen)


def merge_words(groups: Iterable[list[str]], limit: int = MAX_WORDS) -> list[str]:
    """The words of several files as one bounded list, each file's first words first (a
    commit's first file must not take the whole budget)."""
    groups = [g for g in groups if g]
    out: dict[str, None] = {}
    depth = 0
    while groups and len(out) < limit:
        progressed = False
        for group in groups:
            if depth < len(group):
                progressed = True
                out.setdefault(group[depth], None)
                if len(out) >= limit:
                    break
        if not progressed:
            break
        depth += 1
    return list(out)

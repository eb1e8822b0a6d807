"""Commit messages: subject and body without trailer noise, the kind of change they describe,
and their "why" (what hovers, histories, `cortex what` and context packs show as a commit's
reason)."""

from __future__ import annotations

import re

from cortex_core.text.redact import redact, redact_pair

# Conventional-commit types (conventionalcommits.org plus the common Angular set).
CONVENTIONAL_TYPES = frozenset(
    {"feat", "fix", "docs", "style", "refactor", "perf", "test", "tests", "build", "ci", "chore",
     "revert", "deps", "security", "release"})

_CONVENTIONAL = re.compile(r"^\s*([a-zA-Z]+)(\([^)]*\))?(!)?:\s")

# Inference from words, in priority order: the first group whose pattern matches wins. A revert or a
# fix is the strongest signal a message carries, so they are tried first. Compiled on first use:
# a query such as `cortex history` imports this module for `why` and classifies nothing.
_INFERRED_WORDS = (
    ("revert", r"^\s*revert\b"),
    ("fix", r"\b(fix(es|ed|ing)?|bug(fix)?|hotfix|patch(ed)?|resolve[sd]?|crash|regression|"
            r"correct(s|ed)?|repair(s|ed)?|workaround)\b"),
    ("perf", r"\b(perf(ormance)?|speed ?up|faster|optimi[sz]e[sd]?)\b"),
    ("refactor", r"\b(refactor(s|ed|ing)?|clean ?up|cleanups?|renamed?|simplif(y|ied|ies)|"
                 r"reorgani[sz]e[sd]?|restructure[sd]?|moved?|extract(ed)?)\b"),
    ("test", r"\btests?\b|\btesting\b"),
    ("docs", r"\b(docs?|documentation|readme|docstrings?|typos?|changelog|comments?)\b"),
    ("build", r"\b(bump(ed)?|release[sd]?|version|dependenc(y|ies)|deps|requirements|"
              r"setup\.py|pyproject|ci|travis|workflow)\b"),
    ("feat", r"\b(add(s|ed|ing)?|implement(s|ed)?|introduce[sd]?|support(s|ed)?|new|"
             r"allow(s|ed)?|enable[sd]?)\b"),
)
_inferred: tuple[tuple[str, re.Pattern[str]], ...] | None = None


def _inferred_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    global _inferred
    if _inferred is None:   # built whole, then published: a racing thread compiles it again
        _inferred = tuple((kind, re.compile(words, re.I)) for kind, words in _INFERRED_WORDS)
    return _inferred


def split_message(message: str, drop_trailers: tuple[str, ...]) -> tuple[str, str]:
    """(subject, body): the first line, and the rest with noise trailers and surrounding blank
    lines removed. Trailers are dropped wherever they stand: they say who, never why."""
    lines = message.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    subject = lines[0].strip() if lines else ""
    prefixes = tuple(t.lower() + ":" for t in drop_trailers)
    body_lines = [line.rstrip() for line in lines[1:]
                  if not line.strip().lower().startswith(prefixes)]
    return subject, "\n".join(body_lines).strip("\n")


def classify(subject: str, is_merge: bool = False) -> str:
    """The kind of a commit: its conventional-commit type when it declares one, `merge` for merges,
    else a kind inferred from its words, else `other`."""
    if is_merge:
        return "merge"
    match = _CONVENTIONAL.match(subject)
    if match and match.group(1).lower() in CONVENTIONAL_TYPES:
        kind = match.group(1).lower()
        return {"tests": "test", "deps": "build", "release": "chore"}.get(kind, kind)
    for kind, pattern in _inferred_patterns():
        if pattern.search(subject):
            return kind
    return "other"


# How long a "why" may be: a line of a hover, a history or `cortex what` (WHY_CHARS); an item of
# a context pack (PACK_WHY_CHARS), which its budget cuts further when room is short.
WHY_CHARS = 200
PACK_WHY_CHARS = 500

_TRAILER = re.compile(r"^[A-Za-z-]+: .+$")
_SPACE = re.compile(r"\s+")


def why(subject: str, body: str, limit: int = WHY_CHARS) -> str | None:
    """A commit's reason: the first paragraph of its body that adds to the subject, redacted,
    on one line, clipped to `limit` characters with `…` (redacted before it is clipped, so a
    secret cannot be cut out of its pattern's reach). Merge boilerplate, trailers, bare
    references and a repeat of the subject do not count; None when nothing is left. The subject
    and body are redacted together first: a secret may span them."""
    subject, body = redact_pair(subject, body)
    for paragraph in body.strip().split("\n\n"):
        lines = [ln for ln in paragraph.strip().splitlines()
                 if ln.strip() and not _TRAILER.match(ln.strip())]
        text = _SPACE.sub(" ", " ".join(lines)).strip()
        if len(text) < 12 or text.lower() == subject.strip().lower():
            continue
        if text.lower().startswith(("merge ", "this reverts commit")):
            continue
        text = redact(text)
        return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"
    return None

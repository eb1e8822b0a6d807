"""Commit messages: subject and body without trailer noise, and the kind of change they describe."""

from __future__ import annotations

import re

# Conventional-commit types (conventionalcommits.org plus the common Angular set).
CONVENTIONAL_TYPES = frozenset(
    {"feat", "fix", "docs", "style", "refactor", "perf", "test", "tests", "build", "ci", "chore",
     "revert", "deps", "security", "release"})

_CONVENTIONAL = re.compile(r"^\s*([a-zA-Z]+)(\([^)]*\))?(!)?:\s")

# Inference from words, in priority order: the first group whose pattern matches wins. A revert or a
# fix is the strongest signal a message carries, so they are tried first.
_INFERRED = (
    ("revert", re.compile(r"^\s*revert\b", re.I)),
    ("fix", re.compile(r"\b(fix(es|ed|ing)?|bug(fix)?|hotfix|patch(ed)?|resolve[sd]?|crash|regression|"
                       r"correct(s|ed)?|repair(s|ed)?|workaround)\b", re.I)),
    ("perf", re.compile(r"\b(perf(ormance)?|speed ?up|faster|optimi[sz]e[sd]?)\b", re.I)),
    ("refactor", re.compile(r"\b(refactor(s|ed|ing)?|clean ?up|cleanups?|renamed?|simplif(y|ied|ies)|"
                            r"reorgani[sz]e[sd]?|restructure[sd]?|moved?|extract(ed)?)\b", re.I)),
    ("test", re.compile(r"\btests?\b|\btesting\b", re.I)),
    ("docs", re.compile(r"\b(docs?|documentation|readme|docstrings?|typos?|changelog|comments?)\b",
                        re.I)),
    ("build", re.compile(r"\b(bump(ed)?|release[sd]?|version|dependenc(y|ies)|deps|requirements|"
                         r"setup\.py|pyproject|ci|travis|workflow)\b", re.I)),
    ("feat", re.compile(r"\b(add(s|ed|ing)?|implement(s|ed)?|introduce[sd]?|support(s|ed)?|new|"
                        r"allow(s|ed)?|enable[sd]?)\b", re.I)),
)


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
    for kind, pattern in _INFERRED:
        if pattern.search(subject):
            return kind
    return "other"

"""The second stage of search: the best first-stage candidates re-ordered by a small linear model.

The first stage (search.py) ranks by BM25 and vector neighbours. Here each of its best `DEPTH`
candidates gets features the first stage cannot use cheaply: how much of the query its message,
its title and its code (the symbols and changed-line words of items_code) cover, whether the
identifiers the query names are among its code words, its vector similarity and ranks, its
recency, the kind of change and the area prior. A logistic model scores them: one weight per
feature (`Model`), fitted on self-supervised pairs (a pull request's title as the query, the
commits it merged as the answers: bench/fit_rerank.py), never on the evaluation's changelog
queries. Two models: one with vector features, one for lexical-only search.

Every feature's contribution (weight × value) stays with the hit, so a hit still explains its
score. Pure Python: a few hundred multiplications per query, no numpy on the search path.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from cortex_core.memory.tokens import STOPWORDS, split_identifier

DEPTH = 50        # candidates re-ranked; the others keep their first-stage order after them

FEATURES = ("text_bm25", "code_bm25", "lexical_rank", "vector_similarity", "vector_rank",
            "covered", "title_covered", "code_covered", "identifiers", "recency", "signal", "area")


@dataclass(frozen=True)
class Model:
    bias: float
    weights: tuple[float, ...]     # one per FEATURES


# Fitted by bench/fit_rerank.py (see bench/README.md "Retrieval quality").
WITH_VECTORS = Model(0.0, (1.152, 0.848, 1.275, 0.745, 0.767, 0.922, 1.033, 0.332, 0.364,
                            -0.245, 0.385, 0.256))
LEXICAL_ONLY = Model(0.0, (1.386, 0.848, 1.495, 0.0, 0.0, 1.18, 1.267, 0.339, 0.355,
                            -0.256, 0.398, 0.381))


@dataclass(frozen=True)
class Candidate:
    """What the first stage knows of one candidate, and its text."""
    text_bm25: float | None
    code_bm25: float | None
    lexical_rank: int | None
    vector_similarity: float | None
    vector_rank: int | None
    title: str
    body: str
    code: str            # its symbols and changed-line words (items_code), "" if none
    recency: float
    signal: float
    area: float


_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*[\w]")


def stem(word: str) -> str:
    """A light stem so that `timeouts`, `timeout` and `timed` meet (Porter is the index's)."""
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> set[str]:
    """Stemmed words of a text, identifiers also split into their parts."""
    out: set[str] = set()
    for match in _WORD.finditer(text):
        word = match.group()
        out.add(stem(word.lower()))
        if not word.islower():
            out.update(stem(p) for p in split_identifier(word))
    return out


def query_words(query: str) -> list[str]:
    return [w for w in dict.fromkeys(stem(w) for w in _lower_words(query)) if w not in STOPWORDS]


def _lower_words(text: str) -> list[str]:
    out = []
    for match in _WORD.finditer(text):
        word = match.group()
        out.append(word.lower())
        if not word.islower():
            out.extend(split_identifier(word))
    return out


def query_identifiers(query: str) -> set[str]:
    """Names in the query that look like code: snake_case, camelCase, dotted (`Session.send`);
    each as its last dotted part, lowercased."""
    out = set()
    for match in _IDENTIFIER.finditer(query):
        token = match.group()
        code_like = "_" in token or "." in token or (not token.islower() and not token.isupper()
                                                     and not token.istitle())
        if code_like:
            last = token.rstrip(".").split(".")[-1].strip("_").lower()
            if len(last) >= 3:
                out.add(last)
    return out


_MERGE = re.compile(r"Merge (?:pull request|branch|remote-tracking branch) ")


def headline(title: str, body: str) -> str:
    """What a commit is called: its subject, or for a merge (whose subject is boilerplate) the
    first line of its body, the pull request's title."""
    if _MERGE.match(title):
        first = body.strip().split("\n", 1)[0]
        return first or title
    return title


def _share(wanted: list[str], have: set[str]) -> float:
    return sum(1 for w in wanted if w in have) / len(wanted) if wanted else 0.0


def features(query: str, candidates: list[Candidate]) -> list[tuple[float, ...]]:
    """The feature vector (FEATURES) of each candidate for this query."""
    wanted = query_words(query)
    idents = query_identifiers(query)
    best_text = max((c.text_bm25 or 0.0 for c in candidates), default=0.0) or 1.0
    best_code = max((c.code_bm25 or 0.0 for c in candidates), default=0.0) or 1.0
    out = []
    for c in candidates:
        title = words(headline(c.title, c.body))
        message = title | words(c.body)
        code = words(c.code)
        code_names = {w.lower() for w in c.code.split()}
        out.append((
            (c.text_bm25 or 0.0) / best_text,
            (c.code_bm25 or 0.0) / best_code,
            10.0 / (10.0 + c.lexical_rank) if c.lexical_rank else 0.0,
            c.vector_similarity or 0.0,
            60.0 / (60.0 + c.vector_rank) if c.vector_rank else 0.0,
            _share(wanted, message),
            _share(wanted, title),
            _share(wanted, code),
            sum(1 for i in idents if i in code_names) / len(idents) if idents else 0.0,
            c.recency,
            c.signal,
            c.area,
        ))
    return out


def score(model: Model, values: tuple[float, ...]) -> tuple[float, tuple[float, ...]]:
    """(probability-like score in (0, 1), each feature's contribution to its logit)."""
    parts = tuple(w * v for w, v in zip(model.weights, values))
    logit = model.bias + sum(parts)
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit)))), parts

"""The baseline of the search benchmark: plain BM25 over commit messages, outside Cortex.

Each commit reachable from HEAD (merges included) is one document: its whole message, subject and
body, read from git with pygit2. Words: lowercased runs of letters and digits, the same small
English stopword list as the queries get everywhere, no stemming, no identifier splitting (what a
rank-bm25-style script does). Okapi BM25 with k1 = 1.2, b = 0.75 and the non-negative idf
log(1 + (N - n + 0.5) / (n + 0.5)). Ties go to the newer commit. Nothing of cortex_core is used, so
the comparison is with a baseline anyone could write, not with Cortex's own lexical index.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import pygit2

K1 = 1.2
B = 0.75
_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset("""
a an and are as at be been but by can could did do does for from had has have how i if in into is
it its of on or our so that the their them then there these this those to was we were what when
where which while who why will with would you your
""".split())


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


class MessageBM25:
    """BM25 over the messages of the commits HEAD reaches, in memory."""

    def __init__(self, repo_path: Path):
        repo = pygit2.Repository(str(repo_path))
        head = repo.head.peel(pygit2.Commit)
        self.shas: list[str] = []
        self.lengths: list[int] = []
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for n, commit in enumerate(repo.walk(head.id, pygit2.GIT_SORT_TIME)):
            message = commit.raw_message.decode("utf-8", "replace")
            counts = Counter(words(message))
            self.shas.append(str(commit.id))
            self.lengths.append(sum(counts.values()))
            for word, tf in counts.items():
                self.postings.setdefault(word, []).append((n, tf))
        self.n_docs = len(self.shas)
        self.avgdl = sum(self.lengths) / self.n_docs if self.n_docs else 0.0

    def search(self, query: str, k: int = 10) -> list[str]:
        """The shas of the k best commits, best first (newest first among equals)."""
        scores: dict[int, float] = {}
        for word in dict.fromkeys(words(query)):
            posting = self.postings.get(word)
            if not posting:
                continue
            idf = math.log(1 + (self.n_docs - len(posting) + 0.5) / (len(posting) + 0.5))
            for doc, tf in posting:
                norm = K1 * (1 - B + B * self.lengths[doc] / self.avgdl)
                scores[doc] = scores.get(doc, 0.0) + idf * tf * (K1 + 1) / (tf + norm)
        best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return [self.shas[doc] for doc, _ in best]

"""Words for the lexical index and queries: identifiers split the way people say them.

FTS5's unicode61 tokenizer already splits `get_user_by_id` and `src/http/client.py` at `_ / . -`,
but keeps `getUserById` and `HTTPServerError` whole. `expand` adds the spoken parts of such
identifiers (`get user by id`, `http server error`) to a separate column, so that a query in words
finds the code spelling and a query in code finds the words. `fts_query` turns free text into a
safe FTS5 expression: every word quoted (user text can never inject FTS syntax), stopwords dropped,
the alternatives joined with OR so BM25 ranks partial matches instead of requiring all words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_WORD = re.compile(r"[^\W_]+", re.UNICODE)              # what unicode61 keeps together
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*")
# Split points inside an identifier: lower->Upper, ACRONYMWord, letter<->digit.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

STOPWORDS = frozenset("""
a an and are as at be been but by can could did do does for from had has have how i if in into is
it its of on or our so that the their them then there these this those to was we were what when
where which while who why will with would you your
""".split())

MAX_QUERY_TERMS = 64   # a pasted page should not become a thousand-term OR

# The tails of English contractions: "what's" is "what" and "s" to unicode61, and a query of
# "what's this" searched for "s" alone, matching any message with a possessive.
_TAILS = frozenset({"s", "t", "d", "m", "ll", "re", "ve"})
_APOSTROPHES = frozenset("'\u2019")

# Words of an item's paths. The message's table (items_fts) keeps a few: FTS5's bm25 divides a
# match by the length of the whole row, all columns, so a commit of 643 files (fastapi's docs
# setup, 4,346 path words) lost its exact title match to commits that share two words with the
# query. Chosen on the tuning repositories (issue 18: requests, scrapy, fastapi; hybrid
# Recall@10 / MRR@10 against every path word): 8 words +1.0 / -0.2, +1.2 / +0.9, +0.7 / +1.9
# points; 4, 16 and 32 words, the first 10 paths and none at all did worse on at least one of
# them (docs/numbers.md, "Memory search"). The code's table (items_code) keeps up to
# CODE_PATH_WORDS, so that a file's name finds the commits that changed it.
PATH_WORDS = 8
CODE_PATH_WORDS = 200


def path_words(paths: Iterable[str], limit: int = PATH_WORDS) -> str:
    """The first `limit` distinct words of the paths, sorted (the order a store lists an item's
    files in is not the same from one build to the next), composed (NFC: a name git stores
    decomposed, `re\u0301sume\u0301`, is one word as unicode61 reads it), split as unicode61
    splits them, lowercased, space separated: `src/http/client.py` -> `src http client py`."""
    out: dict[str, None] = {}
    for path in sorted(paths):
        for word in _WORD.findall(unicodedata.normalize("NFC", path)):
            out.setdefault(word.lower(), None)
            if len(out) >= limit:
                return " ".join(out)
    return " ".join(out)


def split_identifier(word: str) -> list[str]:
    """`getUserById` -> [get, user, by, id]; `HTTPServer2` -> [http, server, 2]; lowercased."""
    return [part.lower() for part in _CAMEL.findall(word)]


def expand(text: str) -> str:
    """The spoken parts of every mixed-case identifier in `text`, space separated (may be empty)."""
    out: list[str] = []
    seen: set[str] = set()
    for match in _IDENT.finditer(text):
        word = match.group()
        if word in seen or word.islower() or word.isupper() and len(word) < 2:
            continue
        seen.add(word)
        parts = split_identifier(word)
        if len(parts) > 1:
            out.extend(parts)
    return " ".join(out)


def query_terms(text: str, keep_tails: bool = False) -> list[str]:
    """The words of a query as the index sees them: lowercased, identifiers also split, the
    tails of contractions dropped (the "s" of "what's"; kept with `keep_tails`, as the areas
    count them), stopwords dropped unless nothing else is left, duplicates removed, order kept.
    A query typed decomposed (NFD: `re\u0301sume\u0301`) gives its composed words first, as path words are
    stored, then its own, as a message may be."""
    forms = [text] if unicodedata.is_normalized("NFC", text) else \
        [unicodedata.normalize("NFC", text), text]
    words: list[str] = []
    for form in forms:
        for match in _WORD.finditer(form):
            word = match.group()
            at = match.start()
            if not keep_tails and word.lower() in _TAILS and at >= 2 \
                    and form[at - 1] in _APOSTROPHES and form[at - 2].isalpha():
                continue
            words.append(word.lower())
            parts = split_identifier(word) if not word.islower() else []
            if len(parts) > 1:
                words.extend(parts)
    kept = [w for w in words if w not in STOPWORDS] or words
    unique = list(dict.fromkeys(kept))
    return unique[:MAX_QUERY_TERMS]


def only_common_words(text: str) -> list[str]:
    """The query's words when every one is a stopword (then matched all the same, for want of
    others: query_terms), else []."""
    terms = query_terms(text)
    return terms if terms and all(t in STOPWORDS for t in terms) else []


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression for free text, or None when the text has no words."""
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)

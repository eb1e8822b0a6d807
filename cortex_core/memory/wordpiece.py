"""BERT's WordPiece tokenization of an ASCII query, over a vocabulary kept in the store.

Loading a model's tokenizer costs a fresh `cortex search` about 30 ms (importing `tokenizers`,
then parsing its 30,000-token JSON), for a query of a few words. When the index is embedded, the
vocabulary of a tokenizer this module can follow exactly is copied into the store
(`query_vocab`, with the tokenizer file's size and time and the settings it needs, in the meta
key of the same name), and a query looks up only the pieces it tries, by key.

It follows `tokenizers` (BertNormalizer, BertPreTokenizer, WordPiece) for ASCII text only:
outside ASCII, Unicode's tables (categories, white space, case, accents) differ between Python's
and the Rust crates', so any other character, and any added token's text (`[MASK]`...), leaves
the query to the `tokenizers` package (query_encoder.py). tests/test_wordpiece.py compares
the two on thousands of texts.
"""

from __future__ import annotations

import json
import os
import string
from pathlib import Path
from typing import Any, Callable

TABLE = "query_vocab"
META = "query_vocab"
_PUNCTUATION = frozenset(string.punctuation)      # BertPreTokenizer isolates each of them
_WHITESPACE = frozenset("\t\n\r\x0b\x0c ")         # Unicode White_Space within ASCII (not
#                                                    \x1c-\x1f, which str.split() takes too)
_CLEAN_SPACE = frozenset("\t\n\r ")               # clean_text: these become a space; the other
#                                                    controls, \x0b and \x0c among them, go
_MAX_LOOKUP = 100                                  # tokenizers' default max_input_chars_per_word


def spec_of(document: Any) -> dict | None:
    """The settings of a parsed tokenizer.json that this module follows, None for any other
    tokenizer (another normalizer, pre-tokenizer or model, or one option it does not know)."""
    if not isinstance(document, dict):
        return None
    normalizer, pre, model = (document.get(k) for k in ("normalizer", "pre_tokenizer", "model"))
    if not (isinstance(normalizer, dict) and normalizer.get("type") == "BertNormalizer"
            and isinstance(pre, dict) and pre == {"type": "BertPreTokenizer"}
            and isinstance(model, dict) and model.get("type") == "WordPiece"):
        return None
    if set(normalizer) - {"type", "clean_text", "handle_chinese_chars", "strip_accents",
                          "lowercase"}:
        return None
    unk, prefix = model.get("unk_token"), model.get("continuing_subword_prefix", "##")
    longest = model.get("max_input_chars_per_word", _MAX_LOOKUP)
    vocab = model.get("vocab")
    if not (isinstance(unk, str) and isinstance(prefix, str) and prefix
            and isinstance(longest, int) and longest > 0 and isinstance(vocab, dict)
            and isinstance(vocab.get(unk), int)):
        return None
    added = [t.get("content") for t in document.get("added_tokens") or []
             if isinstance(t, dict)]
    if not all(isinstance(a, str) and a for a in added):
        return None
    # model2vec cuts a long text at max_length × the median length of the vocabulary's tokens
    # (statistics.median over get_vocab(), added tokens included).
    lengths = sorted(len(t) for t in {**vocab, **dict.fromkeys(added)})
    middle = len(lengths) // 2
    median = (lengths[middle] if len(lengths) % 2 else
              int((lengths[middle - 1] + lengths[middle]) / 2)) if lengths else 0
    return {"clean_text": normalizer.get("clean_text", True) is True,
            "lowercase": normalizer.get("lowercase", True) is True,
            "unk_id": vocab[unk], "prefix": prefix, "max_chars": longest, "added": added,
            "median_length": median}


def file_key(path: Path) -> str:
    """What says that tokenizer.json is the file the stored vocabulary came from: its size, its
    times and its inode. The change time cannot be set back (a copy that keeps the modification
    time, `cp -p` or rsync, still changes it), so a replaced file reads as another."""
    stat = os.stat(path)
    return f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}:{stat.st_ino}"


class StoredWordPiece:
    """Token ids of ASCII texts, looked up in the store's copy of the vocabulary."""

    def __init__(self, lookup: Callable[[list[str]], dict[str, int]], spec: dict) -> None:
        self._lookup = lookup
        self._spec = spec
        self.unk_id: int = spec["unk_id"]
        self.median_length: int = spec.get("median_length", 0)

    def handles(self, text: str) -> bool:
        """Whether this reader gives `tokenizers`' answer for `text`."""
        # An added token's text is cut out before (or, for some, after) normalization:
        # compared case-blind with the text and with its normalized form, any that might match
        # sends the text to `tokenizers`; so does an added token that is not plain printable
        # ASCII (normalized, it might match what this comparison cannot see).
        if not text.isascii():
            return False
        forms = (text.lower(), self._normalize(text).lower())
        return not any(not all(32 <= ord(c) < 127 for c in a) or
                       any(a.lower() in form for form in forms) for a in self._spec["added"])

    def _normalize(self, text: str) -> str:
        """BertNormalizer on ASCII: controls dropped (clean_text), lower case; no accents."""
        if self._spec["clean_text"]:
            text = "".join(" " if c in _CLEAN_SPACE else c for c in text
                           if c in _CLEAN_SPACE or 32 <= ord(c) < 127)
        return text.lower() if self._spec["lowercase"] else text

    def ids(self, text: str) -> list[int]:
        out: list[int] = []
        for word in _words(self._normalize(text)):
            out.extend(self._pieces(word))
        return out

    def _pieces(self, word: str) -> list[int]:
        """Greedy longest match first; a word with a part that matches nothing is one unknown."""
        if len(word) > self._spec["max_chars"]:
            return [self.unk_id]
        prefix, pieces, start = self._spec["prefix"], [], 0
        while start < len(word):
            lead = prefix if start else ""
            tried = [lead + word[start:end] for end in range(len(word), start, -1)]
            found = self._lookup(tried)
            match = next((t for t in tried if t in found), None)
            if match is None:
                return [self.unk_id]
            pieces.append(found[match])
            start += len(match) - len(lead)
        return pieces


def _words(text: str) -> list[str]:
    """BertPreTokenizer: split at white space, and every punctuation mark a word of its own."""
    words = []
    for chunk in "".join(" " if c in _WHITESPACE else c for c in text).split(" "):
        current = ""
        for c in chunk:
            if c in _PUNCTUATION:
                if current:
                    words.append(current)
                    current = ""
                words.append(c)
            else:
                current += c
        if current:
            words.append(current)
    return words


def store_vocabulary(con, folder: Path) -> bool:
    """Copy the vocabulary of the model folder's tokenizer into the store, when this module can
    follow that tokenizer; otherwise remove any copy. True when a copy is there afterwards."""
    path = folder / "tokenizer.json"
    try:
        recorded = json.loads(_meta(con) or "{}")
    except ValueError:      # a damaged record: written again below
        recorded = None
    try:
        key = file_key(path)
        if (isinstance(recorded, dict) and recorded.get("key") == key and _complete(recorded)
                and _has_table(con)):
            return True
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        document = None
    spec = spec_of(document)
    con.execute(f"drop table if exists {TABLE}")
    con.execute("delete from meta where key = ?", (META,))
    if spec is None:
        return False
    vocab = {t: i for t, i in document["model"]["vocab"].items()
             if isinstance(t, str) and isinstance(i, int)}
    con.execute(f"create table {TABLE}(token text primary key, id integer not null)"
                " without rowid")
    con.executemany(f"insert or ignore into {TABLE} values (?, ?)", vocab.items())
    con.execute("insert into meta values (?, ?)", (META, json.dumps({"key": key, **spec})))
    return True


def stored_tokenizer(con, folder: Path) -> StoredWordPiece | None:
    """The store's copy of the vocabulary of `folder`'s tokenizer, if it is that file's."""
    try:
        recorded = json.loads(_meta(con) or "null")
        if not isinstance(recorded, dict) or recorded.get("key") != file_key(
                folder / "tokenizer.json") or not _has_table(con) or not _complete(recorded):
            return None
    except (OSError, ValueError):
        return None

    def lookup(tokens: list[str]) -> dict[str, int]:
        marks = ",".join("?" * len(tokens))
        return dict(con.execute(f"select token, id from {TABLE} where token in ({marks})",
                                tokens))
    return StoredWordPiece(lookup, recorded)


def _complete(spec: dict) -> bool:
    """Whether a recorded spec has every setting, of its type (a damaged meta row has not)."""
    return (all(isinstance(spec.get(k), bool) for k in ("clean_text", "lowercase"))
            and all(isinstance(spec.get(k), int) for k in ("unk_id", "max_chars", "median_length"))
            and isinstance(spec.get("prefix"), str) and bool(spec["prefix"])
            and isinstance(spec.get("added"), list)
            and all(isinstance(a, str) for a in spec["added"]))


def _meta(con) -> str | None:
    row = con.execute("select value from meta where key = ?", (META,)).fetchone()
    return row[0] if row else None


def _has_table(con) -> bool:
    return con.execute("select 1 from sqlite_master where name = ?", (TABLE,)).fetchone() \
        is not None

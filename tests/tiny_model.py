"""A tiny, real model2vec model for tests: a word-level vocabulary in which the words of a topic
share a direction, so that "deadline" is close to "timeout" and far from "cache". Built in a few
milliseconds, saved with model2vec's own `save_pretrained`, loaded like any downloaded model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

TOPICS = {
    "timeout": "timeout timeouts deadline deadlines slow hang hangs stall latency waiting",
    "crash": "crash crashes panic exception error errors failure fails segfault traceback",
    "cache": "cache caches caching memo memoize memoized lru eviction stale",
    "auth": "auth login password credentials token tokens session sessions signin",
    "docs": "docs documentation readme typo typos guide tutorial wording",
    "retry": "retry retries backoff attempt attempts resend again",
    "parse": "parse parser parsing syntax grammar tokenizer lexer ast",
}
DIM = 16


def build_tiny_model(folder: Path, dim: int = DIM, seed: int = 7) -> Path:
    from model2vec import StaticModel
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    rng = np.random.default_rng(seed)
    vocab: dict[str, int] = {"[PAD]": 0, "[UNK]": 1}
    rows = [np.zeros(dim), np.zeros(dim)]
    for words in TOPICS.values():
        direction = rng.normal(size=dim)
        direction /= np.linalg.norm(direction)
        for word in words.split():
            vocab[word] = len(vocab)
            rows.append(direction + rng.normal(scale=0.15, size=dim))
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    model = StaticModel(np.asarray(rows, dtype=np.float32), tokenizer, normalize=True)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    return folder


def build_tiny_wordpiece_model(folder: Path, dim: int = DIM, seed: int = 11) -> Path:
    """The same topics under BERT's tokenization (BertNormalizer, BertPreTokenizer, WordPiece),
    as the distilled and default models have it: whole words, some words only as pieces
    ("dead" "##line"), every letter and digit alone and as a "##" piece, and the punctuation."""
    import string

    from model2vec import StaticModel
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    rng = np.random.default_rng(seed)
    vocab: dict[str, int] = {"[PAD]": 0, "[UNK]": 1}
    rows = [np.zeros(dim), np.zeros(dim)]

    def add(token: str, row) -> None:
        if token not in vocab:
            vocab[token] = len(vocab)
            rows.append(row)
    for words in TOPICS.values():
        direction = rng.normal(size=dim)
        direction /= np.linalg.norm(direction)
        for word in words.split():
            add(word, direction + rng.normal(scale=0.15, size=dim))
            if len(word) > 5:   # its halves too, so that longest-match-first has choices
                add(word[:4], direction + rng.normal(scale=0.3, size=dim))
                add("##" + word[4:], direction + rng.normal(scale=0.3, size=dim))
    for c in string.ascii_lowercase + string.digits:
        add(c, rng.normal(size=dim))
        add("##" + c, rng.normal(size=dim))
    for c in string.punctuation:
        add(c, rng.normal(size=dim))
    tokenizer = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]",
                                           max_input_chars_per_word=40))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    model = StaticModel(np.asarray(rows, dtype=np.float32), tokenizer, normalize=True)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    return folder

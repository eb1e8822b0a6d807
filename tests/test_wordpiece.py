"""The store's copy of a tokenizer's vocabulary tokenizes a query as `tokenizers` does, or steps
aside (memory/wordpiece.py; issue 18, item 4: a search from the command line that does not load
the tokenizer).

Compared with `tokenizers` itself on thousands of random ASCII texts (letters, digits, every
punctuation mark, white space, control characters, long words), on the tiny WordPiece model and,
when CORTEX_TEST_MODEL points at it, on the distilled model the quality tests use."""

from __future__ import annotations

import json
import os
import random
import shutil
import string
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from cortex_core.memory.query_encoder import open_encoder
from cortex_core.memory.wordpiece import (StoredWordPiece, spec_of, store_vocabulary,
                                         stored_tokenizer)
from cortex_core.store.store import open_writer

WORDS = ("timeout deadline deadlines timeouts retry backoff parser cache caching lru session "
         "login crash traceback HTTP11DownloadHandler urllib3 max_retries fix(auth) don't "
         "POST GET 404 v2.1.0 __init__ self.cache e.g. x86_64 naive").split()
ALPHABET = (string.ascii_letters + string.digits + string.punctuation + " " * 12
            + "\t\n\r\x0b\x0c\x00\x01\x1b\x1c\x1f\x7f")


def _texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    out = ["", " ", "\x0b", "[UNK]", "a [PAD] b", "[unk] timeout", "x" * 39, "x" * 41,
           "y" * 100, "z" * 101, "deadline" * 30, " ".join(WORDS), "timeout " * 700]
    for _ in range(count):
        if rng.random() < 0.5:
            out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))))
        else:
            out.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 60))))
    return out


def _store(tmp_path: Path, folder: Path):
    con = open_writer(tmp_path / "cortex.db")
    with con:
        assert store_vocabulary(con, folder) is True
    return con


def _assert_same_ids(tmp_path: Path, folder: Path, count: int) -> int:
    con = _store(tmp_path, folder)
    stored = stored_tokenizer(con, folder)
    assert stored is not None
    reference = Tokenizer.from_file(str(folder / "tokenizer.json"))
    reference.no_padding()
    reference.no_truncation()
    handled = 0
    for text in _texts(seed=len(str(folder)), count=count):
        if not stored.handles(text):
            continue
        handled += 1
        assert stored.ids(text) == reference.encode(text, add_special_tokens=False).ids, repr(text)
    return handled


def test_ids_match_tokenizers_on_the_tiny_model(tmp_path, tiny_wordpiece_model):
    assert _assert_same_ids(tmp_path, Path(tiny_wordpiece_model), 3000) > 2900


@pytest.mark.skipif(not os.environ.get("CORTEX_TEST_MODEL"), reason="CORTEX_TEST_MODEL not set")
def test_ids_match_tokenizers_on_the_distilled_model(tmp_path):
    assert _assert_same_ids(tmp_path, Path(os.environ["CORTEX_TEST_MODEL"]), 3000) > 2900


def test_texts_it_cannot_promise_go_to_tokenizers(tmp_path, tiny_wordpiece_model):
    stored = stored_tokenizer(_store(tmp_path, Path(tiny_wordpiece_model)),
                              Path(tiny_wordpiece_model))
    assert stored is not None
    assert stored.handles("retry the login")
    for text in ("café timeout", "日本語", "tab\u00a0nbsp", "zero\u200bwidth"):
        assert not stored.handles(text), text
    # A tokenizer's added tokens are cut out of the text before it is split: the distilled
    # model's [PAD] and [UNK], here [MASK].
    document = json.loads((Path(tiny_wordpiece_model) / "tokenizer.json").read_text())
    document["added_tokens"] = [{"id": 1, "content": "[MASK]", "special": True}]
    masked = StoredWordPiece(lambda tokens: {}, spec_of(document))
    assert masked.handles("retry the login")
    assert not masked.handles("retry [MASK] login") and not masked.handles("a [mask] b")


@pytest.mark.parametrize("texts", [_texts(seed=5, count=300) + [
    "naïve café — ünïcödé 日本語 \U0001f600", "a\udcffb timeout", "[UNK] deadline"]])
def test_vectors_are_the_same_with_and_without_the_store(tmp_path, tiny_wordpiece_model, texts):
    """End to end through the encoder: the cut of long texts, truncation, the unknown token,
    and the texts that fall back to `tokenizers` in the same call."""
    folder = Path(tiny_wordpiece_model)
    con = _store(tmp_path, folder)
    plain, lazy = open_encoder(folder), open_encoder(folder, store=con)
    assert plain is not None and lazy is not None
    assert lazy._tokenizer is None          # the store's copy answers: no tokenizer loaded yet
    for text in texts:
        text = text.encode("utf-8", "replace").decode("utf-8")
        expected, got = plain.vector(text), lazy.vector(text, store=con)
        if expected is None:
            assert got is None, repr(text)
        else:
            assert got is not None, repr(text)
            np.testing.assert_array_equal(np.frombuffer(got, np.float32),
                                          np.frombuffer(expected, np.float32), err_msg=repr(text))


def test_a_changed_tokenizer_file_is_not_read_from_the_store(tmp_path, tiny_wordpiece_model):
    folder = tmp_path / "model"
    folder.mkdir()
    for f in Path(tiny_wordpiece_model).iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    con = _store(tmp_path, folder)
    assert stored_tokenizer(con, folder) is not None
    stat = (folder / "tokenizer.json").stat()
    os.utime(folder / "tokenizer.json", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert stored_tokenizer(con, folder) is None
    assert open_encoder(folder, store=con)._tokenizer is not None   # loaded at once instead
    with con:
        assert store_vocabulary(con, folder) is True                 # the next index run
    assert stored_tokenizer(con, folder) is not None


def test_other_tokenizers_are_not_copied(tmp_path, tiny_model):
    con = open_writer(tmp_path / "cortex.db")
    with con:
        assert store_vocabulary(con, Path(tiny_model)) is False      # word level
    assert stored_tokenizer(con, Path(tiny_model)) is None
    assert con.execute("select 1 from sqlite_master where name = 'query_vocab'").fetchone() is None


@pytest.mark.parametrize("change", [
    lambda d: d.update(normalizer={"type": "Lowercase"}),
    lambda d: d.update(pre_tokenizer={"type": "Whitespace"}),
    lambda d: d["model"].update(type="BPE"),
    lambda d: d["normalizer"].update(something_new=True),
    lambda d: d["model"].update(unk_token="[NOPE]"),
    lambda d: d.update(added_tokens=[{"content": 7}]),
])
def test_settings_it_does_not_follow_are_refused(tiny_wordpiece_model, change):
    document = json.loads((Path(tiny_wordpiece_model) / "tokenizer.json").read_text())
    assert spec_of(document) is not None
    change(document)
    assert spec_of(document) is None


def test_a_model_without_max_length_truncates_nothing(tmp_path, tiny_wordpiece_model):
    """model2vec reads every token when the model's config has no max_length (null): so do
    both query paths, whatever the tokenizer file's own truncation says."""
    from cortex_core.memory import embeddings
    folder = tmp_path / "model"
    shutil.copytree(tiny_wordpiece_model, folder)
    config = json.loads((folder / "config.json").read_text())
    config["max_length"] = None
    (folder / "config.json").write_text(json.dumps(config))
    con = _store(tmp_path, folder)
    text = "cache " * 500 + "deadline " * 100      # 600 tokens, past the file's 512
    assert len(text) <= embeddings.MAX_CHARS           # what Embedder.encode would cut
    embeddings._LOADED.pop(str(folder), None)
    expected = embeddings.load_model(str(folder)).encode([text])[0]
    for encoder, store in ((open_encoder(folder), None), (open_encoder(folder, con), con)):
        got = np.frombuffer(encoder.vector(text, store=store), np.float32)
        np.testing.assert_allclose(got, expected, atol=1e-5)   # 600 rows summed in float64


def test_a_replaced_tokenizer_file_with_the_same_size_and_time_is_not_trusted(
        tmp_path, tiny_wordpiece_model):
    """A copy that keeps the modification time (cp -p, rsync -a) is another file."""
    folder = tmp_path / "model"
    shutil.copytree(tiny_wordpiece_model, folder)
    con = _store(tmp_path, folder)
    path = folder / "tokenizer.json"
    stat = path.stat()
    swapped = tmp_path / "swapped.json"
    swapped.write_bytes(path.read_bytes())
    os.utime(swapped, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(swapped, path)
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert stored_tokenizer(con, folder) is None


def test_added_tokens_that_normalization_could_reveal_go_to_tokenizers(tiny_wordpiece_model):
    document = json.loads((Path(tiny_wordpiece_model) / "tokenizer.json").read_text())
    document["added_tokens"] = [{"id": 1, "content": "[MASK]", "normalized": True}]
    masked = StoredWordPiece(lambda tokens: {}, spec_of(document))
    assert not masked.handles("a [MA\x0bSK] b")            # a control character dropped
    assert masked.handles("a [MA SK] b")
    document["added_tokens"] = [{"id": 1, "content": "foo\x7fbar", "normalized": True}]
    assert not StoredWordPiece(lambda tokens: {}, spec_of(document)).handles("foobar")


@pytest.mark.parametrize("meta", ["null", "[1, 2]", "{}", '{"key": "x"}', "not json"])
def test_a_damaged_record_of_the_vocabulary_is_ignored_and_replaced(tmp_path, tiny_wordpiece_model,
                                                                    meta):
    folder = Path(tiny_wordpiece_model)
    con = _store(tmp_path, folder)
    recorded = json.loads(con.execute("select value from meta where key = 'query_vocab'").get)
    with con:
        con.execute("update meta set value = ? where key = 'query_vocab'",
                    (meta.replace('"x"', json.dumps(recorded["key"])),))
    assert stored_tokenizer(con, folder) is None
    with con:
        assert store_vocabulary(con, folder) is True       # the next index run writes it again
    assert stored_tokenizer(con, folder) is not None

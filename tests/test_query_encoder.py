"""The light query path gives model2vec's own vectors, and gives up (falls back) rather than guess.

Compared with `model2vec.StaticModel` through `Embedder.encode` on: the tiny word-level model
(float32 rows), a model saved with weights and a token mapping, and the distilled WordPiece model
(int8 rows) when CORTEX_TEST_MODEL points at it."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from cortex_core.memory import embeddings
from cortex_core.memory.query_encoder import open_encoder
from tests.tiny_model import build_tiny_model

TEXTS = [
    "the request hangs until the deadline", "Crash in the parser: ast error", "",
    "   ", "unknownword anotherone", "retry RETRY Retry backoff", "cache " * 900,
    "naïve café — ünïcödé 日本語 \U0001f600", "fix(auth): session token leaks on login",
    "a\udcffb timeout",  # a lone surrogate, as undecodable bytes arrive
]


def _full(name: str) -> embeddings.Embedder:
    embeddings._LOADED.pop(name, None)
    return embeddings.load_model(name)


def _light(name: str) -> embeddings.Embedder:
    embeddings._QUERY.pop(name, None)
    embeddings._LOADED.pop(name, None)
    embedder = embeddings.load_query_model(name)
    assert embedder._query is not None, "the light path was not taken"
    return embedder


def _assert_same(folder: Path, texts=TEXTS) -> None:
    name = str(folder)
    full, light = _full(name), _light(name)
    assert light.dim == full.dim and light.fingerprint == full.fingerprint
    for text in texts:
        expected = full.encode([text])[0]
        got = light.query_vector(text)
        if not expected.any():
            assert got is None, text
            continue
        assert got is not None, text
        vector = np.frombuffer(got, dtype=np.float32)
        np.testing.assert_allclose(vector, expected, atol=1e-5, err_msg=text)


def test_tiny_model_matches_model2vec(tmp_path):
    _assert_same(build_tiny_model(tmp_path / "tiny"))


def test_weights_and_mapping_match_model2vec(tmp_path):
    from model2vec import StaticModel
    tiny = StaticModel.from_pretrained(str(build_tiny_model(tmp_path / "tiny")))
    rng = np.random.default_rng(3)
    vocab = len(tiny.tokens)
    rows = rng.normal(size=(9, tiny.dim)).astype(np.float32)        # fewer rows than tokens
    mapping = rng.integers(0, len(rows), size=vocab).astype(np.int64)
    weights = rng.uniform(0.1, 2.0, size=vocab).astype(np.float32)
    model = StaticModel(rows, tiny.tokenizer, weights=weights, token_mapping=mapping, normalize=True)
    model.save_pretrained(str(tmp_path / "mapped"))
    _assert_same(tmp_path / "mapped")


@pytest.mark.skipif(not os.environ.get("CORTEX_TEST_MODEL"), reason="CORTEX_TEST_MODEL not set")
def test_distilled_model_matches_model2vec():
    _assert_same(Path(os.environ["CORTEX_TEST_MODEL"]),
                 TEXTS + ["Don't retry POST requests when the connection was reset (redirects)",
                          "HTTPConnectionPool max_retries exceeded; urllib3.util.Retry"])


def test_query_path_does_not_import_model2vec(tmp_path):
    """The point of the light path: a fresh process answers a query without numpy or model2vec."""
    import subprocess
    import sys
    folder = build_tiny_model(tmp_path / "tiny")
    code = ("import sys; from cortex_core.memory.embeddings import load_query_model as q; "
            f"v = q({str(folder)!r}).query_vector('deadline timeout'); "
            "print(len(v), 'numpy' in sys.modules, 'model2vec' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(4 * 16), "False", "False"]


def _rewrite_header(folder: Path, change) -> None:
    path = folder / "model.safetensors"
    data = path.read_bytes()
    (length,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + length])
    change(header)
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + length:])


@pytest.mark.parametrize("damage", [
    lambda h: h["embeddings"].update(dtype="BF16"),                      # a dtype not read here
    lambda h: h["embeddings"].update(shape=[10 ** 9, 16]),               # rows past the file
    lambda h: h["embeddings"].update(data_offsets=[0, 10 ** 12]),        # offsets past the file
    lambda h: h.pop("embeddings"),                                       # no embeddings
    lambda h: h["embeddings"].update(shape="16"),                        # not a shape
])
def test_unexpected_files_fall_back(tmp_path, damage):
    folder = build_tiny_model(tmp_path / "tiny")
    _rewrite_header(folder, damage)
    assert open_encoder(folder) is None


def test_garbage_files_fall_back(tmp_path):
    folder = build_tiny_model(tmp_path / "tiny")
    (folder / "model.safetensors").write_bytes(b"\xff" * 8 + b"{}")
    assert open_encoder(folder) is None
    (folder / "model.safetensors").write_bytes(b"")
    assert open_encoder(folder) is None
    (folder / "tokenizer.json").write_text("not json")
    assert open_encoder(folder) is None
    (folder / "config.json").write_text(json.dumps({"pooling": "cls"}))
    assert open_encoder(folder) is None

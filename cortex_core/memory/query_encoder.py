"""One query's vector from a model2vec model folder, without loading model2vec.

Encoding a short query with `model2vec.StaticModel` costs a fresh process about 0.3 s: importing
numpy, joblib and tqdm, reading the whole embedding matrix and measuring every token of the
vocabulary. The work itself takes a millisecond. A query needs only the rows of its own tokens,
so this reader tokenizes with the model's own tokenizer (the `tokenizers` package) and reads
those rows from `model.safetensors` by offset, memory-mapped.

It follows `StaticModel.encode` of model2vec 0.10 step by step: cut the text to `max_length`
times the median token length, tokenize without special tokens, truncate to `max_length` tokens,
drop the unknown token, map ids through `mapping`, scale rows by `weights`, average. Then, as
`embeddings.Embedder` does, scale to unit length; float32 bytes, as sqlite-vec takes them.
tests/test_query_encoder.py checks the result against model2vec itself.

Anything this reader does not know (another folder layout, a dtype, an odd header) makes
`open_encoder` return None, and the caller loads model2vec as before.
"""

from __future__ import annotations

import json
import math
import mmap
import struct
from array import array
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_LENGTH = 512      # model2vec's default when the config names none
MAX_HEADER = 16 << 20         # a safetensors header is a few hundred bytes; refuse absurd ones
_FLOATS = {"I8": ("b", 1), "F16": ("e", 2), "F32": ("f", 4), "F64": ("d", 8)}
_INTS = {"I8": ("b", 1), "I16": ("h", 2), "I32": ("i", 4), "I64": ("q", 8),
         "U8": ("B", 1), "U16": ("H", 2), "U32": ("I", 4), "U64": ("Q", 8)}


@dataclass(frozen=True)
class _Tensor:
    offset: int       # absolute, in the file
    rows: int
    width: int        # values per row (1 for a vector)
    code: str         # struct format code
    size: int         # bytes per value


class QueryEncoder:
    """The query path of one model folder. Not thread-safe for `close`; `vector` only reads."""

    def __init__(self, folder: Path, tokenizer, config: dict, blob: mmap.mmap,
                 tensors: dict[str, _Tensor]) -> None:
        """`tokenizer`: the `tokenizers` one, or None to load it when a text needs it."""
        self._folder = folder
        self._tokenizer = None
        self._blob = blob
        self._embeddings = tensors["embeddings"]
        self._weights = tensors.get("weights")
        self._mapping = tensors.get("mapping")
        self.dim = self._embeddings.width
        max_length = config.get("max_length", DEFAULT_MAX_LENGTH)
        self._max_length = max_length if isinstance(max_length, int) and max_length > 0 else None
        self._unk: int | None = None
        self._median: int | None = None
        if tokenizer is not None:
            self._prepare(tokenizer)

    def _prepare(self, tokenizer) -> None:
        # As model2vec: its max_length, or none at all (not the tokenizer file's own truncation).
        if self._max_length is not None:
            tokenizer.enable_truncation(self._max_length)
        else:
            tokenizer.no_truncation()
        self._unk = _unknown_id(tokenizer)
        self._tokenizer = tokenizer

    def vector(self, text: str, store=None) -> bytes | None:
        """The unit-length float32 vector of `text`; None when it has no known token. `store`:
        an index connection whose copy of this tokenizer's vocabulary (wordpiece.py), if it
        has one, tokenizes an ASCII text without loading the tokenizer."""
        stored = None
        if store is not None:
            from cortex_core.memory.wordpiece import stored_tokenizer
            stored = stored_tokenizer(store, self._folder)
        if self._max_length is not None and len(text) > self._max_length:
            median = stored.median_length if stored is not None else self._median_token_length()
            text = text[:self._max_length * median]
        if stored is not None and stored.handles(text):
            limit = self._max_length
            ids, unk = stored.ids(text)[:limit] if limit else stored.ids(text), stored.unk_id
        else:
            ids, unk = self._tokenize(text), self._unk
        ids = [i for i in ids if i != unk]
        if not ids:
            return None
        total = [0.0] * self.dim
        for token in ids:
            row = self._value(self._mapping, token) if self._mapping else token
            scale = float(self._value(self._weights, token)) if self._weights else 1.0
            for n, value in enumerate(self._row(int(row))):
                total[n] += value * scale
        norm = math.sqrt(sum(v * v for v in total))
        if norm == 0.0 or not math.isfinite(norm):   # no direction, or a damaged row
            return None
        return array("f", (v / norm for v in total)).tobytes()

    def _tokenize(self, text: str) -> list[int]:
        return self._loaded_tokenizer().encode(text, add_special_tokens=False).ids

    def _loaded_tokenizer(self):
        if self._tokenizer is None:
            self._prepare(_load_tokenizer(self._folder / "tokenizer.json"))
        return self._tokenizer

    def _row(self, index: int) -> tuple:
        t = self._embeddings
        if not 0 <= index < t.rows:
            raise ValueError(f"token row {index} outside the embedding matrix ({t.rows} rows)")
        start = t.offset + index * t.width * t.size
        return struct.unpack_from(f"<{t.width}{t.code}", self._blob, start)

    def _value(self, tensor: _Tensor | None, index: int) -> float | int:
        assert tensor is not None
        if not 0 <= index < tensor.rows:
            raise ValueError(f"token {index} outside a tensor of {tensor.rows} values")
        return struct.unpack_from(f"<{tensor.code}", self._blob,
                                  tensor.offset + index * tensor.size)[0]

    def _median_token_length(self) -> int:
        # model2vec cuts long texts at max_length * the median length of the vocabulary's tokens.
        if self._median is None:
            import statistics   # here: 6 ms to import, and only a long query needs it
            vocab = self._loaded_tokenizer().get_vocab()
            self._median = int(statistics.median(len(t) for t in vocab))
        return self._median

    def close(self) -> None:
        self._blob.close()


def open_encoder(folder: Path, store=None) -> QueryEncoder | None:
    """The query encoder of a model2vec folder in its own layout; None when this reader cannot
    promise model2vec's answer (the caller then loads model2vec). `store`: an index connection;
    when it holds a copy of this tokenizer's vocabulary (wordpiece.py), the tokenizer is loaded
    only if a query needs it (a one-shot command that asks through that store may never)."""
    files = [folder / "config.json", folder / "tokenizer.json", folder / "model.safetensors"]
    if not all(f.is_file() for f in files):
        return None
    lazy = False
    if store is not None:
        from cortex_core.memory.wordpiece import stored_tokenizer
        lazy = stored_tokenizer(store, folder) is not None
    try:
        config = json.loads(files[0].read_text(encoding="utf-8"))
        if not isinstance(config, dict) or config.get("pooling", "mean") != "mean":
            return None
        tokenizer = None if lazy else _load_tokenizer(files[1])
        with open(files[2], "rb") as handle:
            blob = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except Exception:
        # A damaged file raises whatever its parser raises (and `tokenizers` may be missing):
        # model2vec, loaded instead, reports the problem properly.
        return None
    tensors = _tensors(blob)
    if tensors is None or (tokenizer is not None and tokenizer.get_vocab_size() == 0):
        blob.close()
        return None
    return QueryEncoder(folder, tokenizer, config, blob, tensors)


def _load_tokenizer(path: Path):
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    return tokenizer


def _tensors(blob: mmap.mmap) -> dict[str, _Tensor] | None:
    """The tensors a query reads, checked against the file's size; None for anything unexpected."""
    if len(blob) < 8:
        return None
    (length,) = struct.unpack_from("<Q", blob, 0)
    if length > min(MAX_HEADER, len(blob) - 8):
        return None
    try:
        header = json.loads(blob[8:8 + length])
    except ValueError:
        return None
    if not isinstance(header, dict):
        return None
    found = {}
    for name, kinds, dims in (("embeddings", _FLOATS, 2), ("weights", _FLOATS, 1),
                              ("mapping", _INTS, 1)):
        entry = header.get(name)
        if entry is None:
            if name == "embeddings":
                return None
            continue
        tensor = _tensor(entry, kinds, dims, 8 + length, len(blob))
        if tensor is None:
            return None
        found[name] = tensor
    return found


def _tensor(entry, kinds: dict, dims: int, base: int, file_size: int) -> _Tensor | None:
    if not isinstance(entry, dict) or entry.get("dtype") not in kinds:
        return None
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if (not isinstance(shape, list) or len(shape) != dims or not isinstance(offsets, list)
            or len(offsets) != 2 or not all(isinstance(v, int) and v >= 0 for v in shape + offsets)):
        return None
    code, size = kinds[entry["dtype"]]
    rows, width = shape[0], (shape[1] if dims == 2 else 1)
    begin, end = offsets
    if end - begin != rows * width * size or base + end > file_size or width == 0:
        return None
    return _Tensor(base + begin, rows, width, code, size)


def _unknown_id(tokenizer) -> int | None:
    """The id model2vec drops from every text: the model's unknown token, if it has one."""
    model = tokenizer.model
    if hasattr(model, "unk_token"):
        token = model.unk_token
        return None if token is None else tokenizer.token_to_id(token)
    unk = json.loads(tokenizer.to_str())["model"].get("unk_id")
    return unk if isinstance(unk, int) else None

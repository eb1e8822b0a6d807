"""Counting tokens the way an agent's model does, for context packs and their budgets.

Encodings: `o200k` (o200k_base: GPT-4o, GPT-4.1 and later; the default), `cl100k` (cl100k_base:
GPT-4, GPT-3.5) and `estimate`. The two BPE encodings are counted exactly by the `bpe-openai`
package (MIT; a Rust extension that embeds both vocabularies, so nothing is downloaded at run
time). Its Python package loads every vocabulary it knows into dictionaries on import (about a
second), so the extension module is loaded on its own here (8 ms, then about 0.1 s to build one
encoding, once per process).

The estimate is the documented counter of earlier versions, and the fallback when `bpe-openai` is
not installed (a platform without its wheel) or cannot be loaded: the text is cut into pieces that
are either a run of word characters or a single other non-space character; a word costs
ceil(length / 4) tokens, any other piece 1. It over-counts BPE tokenizers on English and code
(a pack of 4,000 estimated tokens holds about 2,800 o200k tokens), so a pack that fits it fits
them; choose it for a model whose tokenizer is neither encoding. A counter that falls back says
so (`Counter.note`), and so does every pack counted with it.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass
from typing import Callable

from cortex_core.errors import CortexError
from cortex_core.text.sanitize import replace_surrogates

DEFAULT_ENCODING = "o200k"
ENCODINGS = ("o200k", "cl100k", "estimate")
_BPE_NAMES = {"o200k": "o200k_base", "cl100k": "cl100k_base"}

_PIECE = re.compile(r"\w+|[^\w\s]")


def estimate_tokens(text: str) -> int:
    """The documented estimate (see the module's docstring); additive over whitespace."""
    return sum(math.ceil(len(p) / 4) if p[0].isalnum() or p[0] == "_" else 1
               for p in _PIECE.findall(text))


def encoding_name(value) -> str:
    """`o200k`, `cl100k` or `estimate` from what a user wrote (`o200k_base` and any case too)."""
    if isinstance(value, str):
        name = value.strip().lower()
        name = name[:-len("_base")] if name.endswith("_base") else name
        if name in ENCODINGS:
            return name
    shown = repr(value)[:40]
    raise CortexError(f"unknown token encoding {shown} (one of {', '.join(ENCODINGS)})")


@dataclass(frozen=True)
class Counter:
    encoding: str                  # what was asked for: o200k, cl100k or estimate
    tokenizer: str                 # what counts: o200k, cl100k, or estimate (also as a fallback)
    count: Callable[[str], int]
    note: str = ""                 # why an asked-for BPE encoding is estimated instead

    @property
    def exact(self) -> bool:
        return self.tokenizer != "estimate"


_lock = threading.Lock()
_counters: dict[str, Counter] = {}
_backend: list = []                # [module or None, why not]


def counter(encoding: str = DEFAULT_ENCODING) -> Counter:
    """The counter for `encoding` (see `encoding_name`), built once per process."""
    name = encoding_name(encoding)
    found = _counters.get(name)
    if found is not None:
        return found
    with _lock:
        if name not in _counters:
            _counters[name] = _build(name)
        return _counters[name]


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    return counter(encoding).count(text)


def _build(name: str) -> Counter:
    if name == "estimate":
        return Counter(name, "estimate", estimate_tokens)
    module, why = _load_backend()
    if module is not None:
        try:
            tokenizer = module.tokenizer_for_encoding(_BPE_NAMES[name])
            return Counter(name, name, _any_text(tokenizer.count))
        except Exception as exc:   # a broken install must not break packs
            why = f"bpe-openai could not load {_BPE_NAMES[name]} ({type(exc).__name__}: {exc})"
    return Counter(name, "estimate", estimate_tokens,
                   note=f"{why}: tokens are estimated (an over-count on English and code, not "
                        f"on other scripts), not counted in {name}")


def _any_text(count: Callable[[str], int]) -> Callable[[str], int]:
    """`count` that takes any str. A lone surrogate (an undecodable byte carried through, a
    `\\ud800` escape in a client's JSON) has no UTF-8 form: a BPE encoder cannot take it. It is
    counted as the replacement character it is shown as (sanitize.replace_surrogates)."""
    def counted(text: str) -> int:
        try:
            return count(text)
        except UnicodeEncodeError:
            return count(replace_surrogates(text))
    return counted


def _load_backend():
    """bpe-openai's extension module alone (its package's `__init__` is not run: see above)."""
    if not _backend:
        _backend.extend(_find_backend())
    return _backend[0], _backend[1]


def _find_backend():
    import importlib.machinery
    import importlib.util
    from pathlib import Path
    try:
        spec = importlib.util.find_spec("bpe_openai")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None, "bpe-openai is not installed"
    try:
        for folder in spec.submodule_search_locations:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = Path(folder) / f"_bindings{suffix}"
                if path.is_file():
                    loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings",
                                                                     str(path))
                    found = importlib.util.spec_from_file_location("bpe_openai._bindings", path,
                                                                   loader=loader)
                    module = importlib.util.module_from_spec(found)
                    loader.exec_module(module)
                    return module, ""
    except Exception as exc:   # ImportError, a wrong platform's file, a damaged install
        return None, f"bpe-openai could not be loaded ({type(exc).__name__}: {exc})"
    return None, "bpe-openai has no extension module for this Python"

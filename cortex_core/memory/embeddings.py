"""Embeddings: a model2vec static model, loaded only from disk.

The model is chosen by `--model`, then `CORTEX_MODEL`, then `[memory] model` in the config file,
then the model the index was last embedded with, then the default. A name is a local folder or a
model-hub id; a hub id is looked up in the local hub cache only (never downloaded while indexing
or searching — `cortex model pull` downloads, on request). The name `none` turns semantic search off. Without a usable model, search is lexical and
`cortex status` says why.

Which model wrote the vectors, and their width, is recorded in the store; indexing with another
model drops the old vectors and embeds again, so vectors of two models are never mixed.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from cortex_core.errors import CortexError

DEFAULT_MODEL = "minishlab/potion-base-8M"
BATCH = 1024                  # texts per encode call
MAX_CHARS = 4000              # longer texts are cut; a static model averages tokens anyway
DISABLED = "none"
LIGHT_TEXTS = 256             # at most this many texts are embedded without model2vec


class ModelUnavailable(CortexError):
    pass


@dataclass(frozen=True)
class ModelChoice:
    name: str
    source: str   # "--model", "CORTEX_MODEL", "config", "default"

    @property
    def disabled(self) -> bool:
        return self.name.lower() == DISABLED


def choose_model(cli: str | None, config: str | None = None,
                 recorded: str | None = None) -> ModelChoice:
    """The first of: `--model`, `CORTEX_MODEL`, the config file, the choice the store recorded
    last (an explicit choice, `none` included, is remembered), the default. A folder is named by
    its absolute path, so that the choice holds from any directory."""
    for name, source in ((cli, "the run's option"),
                         (os.environ.get("CORTEX_MODEL"), "CORTEX_MODEL"),
                         (config, "config"), (recorded, "the index")):
        if name and name.strip():
            return ModelChoice(_absolute(name.strip()), source)
    return ModelChoice(DEFAULT_MODEL, "default")


def _absolute(name: str) -> str:
    folder = Path(name).expanduser()
    return str(folder.resolve()) if folder.is_dir() else name


def text_hash(text: str) -> str:
    import hashlib   # here: 5 ms to import, and a search does not hash
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


class Embedder:
    """A loaded model: texts in, unit-length float32 vectors out (all-zero for a text with no known
    token). `query_vector` answers one query; when the model folder allows it, it reads only the
    query's rows (query_encoder.py) and model2vec is loaded only if `encode` is called."""

    def __init__(self, name: str, model, fingerprint: str = "", *, query=None,
                 folder: Path | None = None) -> None:
        """`fingerprint`: what identifies the model's files; with `folder` instead, computed
        the first time it is asked for (a search never asks)."""
        self.name = name
        self._model = model
        self._query = query
        self.dim = int(model.dim if model is not None else query.dim)
        self._fingerprint = fingerprint
        self._folder = folder

    @property
    def fingerprint(self) -> str:
        """Changes when the files of a model folder change."""
        if not self._fingerprint and self._folder is not None:
            self._fingerprint = _fingerprint(self._folder)
        return self._fingerprint

    def encode(self, texts: list[str]):
        import numpy as np
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._model is None:
            self._model = load_model(self.name)._model
        out = self._model.encode([_clip(t) for t in texts], batch_size=BATCH,
                                 use_multiprocessing=False, normalize=False)
        vectors = np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        np.divide(vectors, norms, out=vectors, where=norms > 0)
        return vectors

    def unit_vectors(self, texts: list[str], store=None) -> list[bytes | None]:
        """Each text's unit vector as float32 bytes, None for a text with no known token (or a
        damaged row). A few texts with the light query path (a one-commit update need not load
        model2vec and numpy: ~0.5 s); many, or without it, through model2vec in batches."""
        if self._model is None and self._query is not None and len(texts) <= LIGHT_TEXTS:
            return [self._query.vector(_clip(t), store) for t in texts]
        import numpy as np
        vectors = self.encode(texts)
        norms = np.linalg.norm(vectors, axis=1)
        return [v.astype(np.float32).tobytes() if norm != 0 and np.isfinite(norm) else None
                for v, norm in zip(vectors, norms)]

    def query_vector(self, text: str, store=None) -> bytes | None:
        """The query's unit vector as float32 bytes (what sqlite-vec takes); None when it has no
        known token. `store`: the index asked, whose copy of the tokenizer's vocabulary, if it
        has one, tokenizes the query (wordpiece.py)."""
        if self._query is not None:
            return self._query.vector(_clip(text), store)
        vector = self.encode([text])[0]
        return vector.tobytes() if vector.any() else None


def _clip(text: str) -> str:
    # Lone surrogates (undecodable bytes carried through) would make the tokenizer raise.
    return text[:MAX_CHARS].encode("utf-8", "replace").decode("utf-8")


def local_model_path(name: str) -> Path:
    """Where the model lives on disk: the folder itself, or its snapshot in the hub cache."""
    folder = Path(name).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            raise ModelUnavailable(f"{folder} is not a model2vec model folder (no config.json)")
        return folder
    if name.startswith((".", "/", "~")) or name.count("/") != 1:
        raise ModelUnavailable(f"no model folder at {name}")
    repo = _hub_cache_repo(name)
    cached = _snapshot_at_main(repo)
    if cached is not None:
        return cached
    if not (repo / "refs" / "main").exists():
        # What snapshot_download(local_files_only=True) looks for first: without it, it fails.
        # Said here, without importing huggingface_hub (0.6 s an offline update paid).
        raise ModelUnavailable(f"model {name} is not downloaded (offline); "
                               f"run `cortex model pull {name}` once, online")
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError:  # pragma: no cover - huggingface_hub comes with model2vec
        raise ModelUnavailable("huggingface_hub is not installed") from None
    try:
        return Path(snapshot_download(name, local_files_only=True))
    except LocalEntryNotFoundError:
        raise ModelUnavailable(f"model {name} is not downloaded (offline); "
                               f"run `cortex model pull {name}` once, online") from None
    except Exception as exc:  # a malformed id or a damaged cache
        raise ModelUnavailable(f"model {name} cannot be found locally: {exc}") from None


def _hub_cache_repo(name: str) -> Path:
    """The hub cache's folder for the model `name`, as huggingface_hub's constants place it
    (HF_HUB_CACHE, the legacy HUGGINGFACE_HUB_CACHE, HF_HOME, XDG_CACHE_HOME), found without
    importing it (a few hundred milliseconds)."""
    # os.environ.get with defaults, as its constants use os.getenv: a variable set empty counts.
    def expand(path: str) -> str:
        return os.path.expandvars(os.path.expanduser(path))
    env = os.environ
    home = expand(env.get("HF_HOME", os.path.join(
        env.get("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache")),
        "huggingface")))
    hub = expand(env.get("HF_HUB_CACHE", env.get("HUGGINGFACE_HUB_CACHE",
                                                 os.path.join(home, "hub"))))
    # snapshot_download then takes Path(cache_dir).expanduser().resolve(): a `~` that a variable
    # brought in (HF_HUB_CACHE=$CACHE, CACHE=~/hf) is the home, `missing/../hub` is `hub`.
    return Path(hub).expanduser().resolve() / ("models--" + name.replace("/", "--"))


def _snapshot_at_main(repo: Path) -> Path | None:
    """The snapshot the `main` ref of a hub cache folder names; None when it is not there in
    that layout."""
    try:
        ref = (repo / "refs" / "main").read_text().strip()
    except OSError:
        return None
    snapshot = repo / "snapshots" / ref
    return snapshot if (snapshot / "config.json").is_file() else None


def model_fingerprint(name: str) -> str:
    """The fingerprint of the model `name` on disk, without loading it (ModelUnavailable if it is
    not there)."""
    return _fingerprint(local_model_path(name))


def download_model(name: str) -> Path:
    """Fetch a model from the hub into the local cache (network). Only on the user's request."""
    if Path(name).expanduser().is_dir():
        return local_model_path(name)
    from huggingface_hub import snapshot_download
    try:
        return Path(snapshot_download(name))
    except Exception as exc:
        raise CortexError(f"cannot download {name}: {exc}") from None


_LOADED: dict[str, Embedder] = {}
_LOADING = threading.Lock()     # the MCP server asks from many threads at once


def load_model(name: str) -> Embedder:
    """The model `name`, loaded once per process. Raises ModelUnavailable with the reason."""
    if name.lower() == DISABLED:
        raise ModelUnavailable("semantic search is turned off (model = none)")
    if name in _LOADED:
        return _LOADED[name]
    with _LOADING:
        if name in _LOADED:
            return _LOADED[name]
        return _load_model(name)


def _load_model(name: str) -> Embedder:
    path = local_model_path(name)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")   # belt and braces: model2vec must not go online
    try:
        from model2vec import StaticModel
        model = StaticModel.from_pretrained(str(path), force_download=False)
    except Exception as exc:
        raise ModelUnavailable(f"cannot load the model at {path}: {exc}") from None
    _LOADED[name] = embedder = Embedder(name, model, _fingerprint(path))
    return embedder


def _fingerprint(folder: Path) -> str:
    """What identifies a model's weights on disk: its config and the size and time of its files.
    Another model copied into the same folder changes it; loading the same one does not."""
    import hashlib
    digest = hashlib.sha1()
    for entry in sorted(folder.iterdir()):
        if entry.is_file():
            stat = entry.stat()
            digest.update(f"{entry.name}:{stat.st_size}:{int(stat.st_mtime)}".encode())
            if entry.name == "config.json":
                digest.update(entry.read_bytes())
    return digest.hexdigest()[:16]


_QUERY: dict[str, Embedder] = {}


def forget_changed_models(seen: dict[str, tuple | None]) -> bool:
    """For a process that answers command after command (`cortex daemon`): drop the models
    loaded here whose files changed since `seen` noted them (a model folder written again, a
    newer revision pulled into the hub cache), so that the next search loads them again, as a
    process of its own would; note those not seen yet. True when one was dropped: an engine
    keeps the one it was given (Engine.embedder), and is to be opened again."""
    dropped = False
    with _LOADING:
        for name in {*_LOADED, *_QUERY}:
            now = _files_of(name)
            if seen.setdefault(name, now) != now:
                _LOADED.pop(name, None)
                _QUERY.pop(name, None)
                del seen[name]
                dropped = True
    return dropped


def _files_of(name: str) -> tuple | None:
    """The model's folder and its files' names, sizes, times and inodes; None if not there."""
    try:
        folder = local_model_path(name)
        stats = [(entry.name, entry.stat()) for entry in sorted(folder.iterdir())]
    except (ModelUnavailable, OSError):
        return None
    return (str(folder), *((n, st.st_size, st.st_mtime_ns, st.st_ino) for n, st in stats))


def load_query_model(name: str, store=None) -> Embedder:
    """The model `name` for answering queries: its light query path when the folder allows it
    (no model2vec, no numpy), else the full model. Raises ModelUnavailable with the reason.
    `store`: an index connection whose copy of the tokenizer's vocabulary may spare loading the
    tokenizer (query_encoder.open_encoder)."""
    if name.lower() == DISABLED:
        raise ModelUnavailable("semantic search is turned off (model = none)")
    with _LOADING:
        if name in _QUERY:
            return _QUERY[name]
        if name in _LOADED:
            return _LOADED[name]
        from cortex_core.memory.query_encoder import open_encoder
        path = local_model_path(name)
        encoder = open_encoder(path, store)
        if encoder is None:
            return _load_model(name)
        _QUERY[name] = embedder = Embedder(name, None, query=encoder, folder=path)
        return embedder


def load_embedder(con, *, one_shot: bool = False) -> Embedder | None:
    """The model that wrote the store's vectors, if any and if it can be loaded here, ready to
    answer queries. `one_shot`: for a process that answers once and exits (the command line):
    the tokenizer is then loaded only if the store's copy of its vocabulary cannot answer
    (wordpiece.py); a server loads it at once."""
    from cortex_core.store.store import get_meta
    name = get_meta(con, "embed_model")
    if not name or not get_meta(con, "embed_dim"):
        return None
    try:
        embedder = load_query_model(name, con if one_shot else None)
    except ModelUnavailable:
        return None
    return embedder if str(embedder.dim) == get_meta(con, "embed_dim") else None


def semantic_state(con) -> tuple[bool, str]:
    """(on, explanation) for status lines and search results."""
    from cortex_core.store.store import get_meta
    name = get_meta(con, "embed_model")
    if not name:
        reason = get_meta(con, "embed_off_reason") or "no embedding model was used"
        return False, f"semantic search off: {reason}; lexical search only"
    try:
        embedder = load_query_model(name)
    except ModelUnavailable as exc:
        return False, f"semantic search off: {exc}; lexical search only"
    if str(embedder.dim) != get_meta(con, "embed_dim"):
        return False, (f"semantic search off: {name} now has {embedder.dim} dimensions, the index "
                       f"{get_meta(con, 'embed_dim')}; index again")
    return True, f"semantic search on: {name} ({embedder.dim} dimensions)"

"""Settings, with their defaults in one place, resolved the same way for every front end.

The order, each level over the one before:

1. the defaults below;
2. `<repo>/.cortex/config.toml` when it exists (`repository_settings`);
3. the environment: `CORTEX_MODEL` for `memory.model` (read where the model is chosen);
4. what the front end was given for this question (`override`): the command line's flags, the
   language server's client settings, an MCP tool's arguments.

So the CLI, the language server and MCP give the same answer to the same question unless the user
asked one of them otherwise. Every key is optional. Unknown keys and values of the wrong type are
errors with a clear message rather than silently ignored.

    [index]
    max_file_bytes = 10000000     # a blob larger than this is recorded at file level only
    max_diff_lines = 20000        # a file patch with more changed lines is recorded at file level only
                                  (additions and deletions of a whole file excepted)
    max_commit_files = 2000       # files of one commit beyond this are recorded at file level only
    memory_mb = 500               # what an index run's processes may hold together while they
                                  # read commits (workers, their caches and their number follow)
    worker_memory_mb = 0          # one commit-reading worker's budget instead (0: from memory_mb)
    recent_first_commits = 5000   # a larger history's first run indexes a recent window first
                                  # (when the front end asks: the language server does)
    window_commits = 500          # that window: at most this many first-parent commits
    window_days = 180.0           # and none older than this many days before HEAD
    drop_trailers = ["Signed-off-by", "Co-authored-by", ...]   # replaces the default list
    vendored = ["vendor/", "third_party/", ...]                # path prefixes or segments
    generated = ["*_pb2.py", "*.pb.go", ...]                   # fnmatch patterns on the path

    [hotspots]
    half_life_days = 90.0         # recency weight halves every this many days

    [time]
    clock = "repository"          # what windows and recency count back from: "repository" (the
                                  # indexed HEAD's date) or "wall" (today); see clock.py

    [coupling]
    max_changeset = 30            # commits touching more files are ignored for co-change (code-maat)
    min_support = 1               # a pair must share at least this many commits (1: shown as weak)
    half_life_days = 1825.0       # a shared commit's weight halves every this many days (0: none;
                                  unset: every half of the history's commits, on its clock of
                                  commits)

    [memory]
    model = "minishlab/potion-base-8M"   # a model-hub id or a local folder; "none" turns vectors off
                                         # (unset: $CORTEX_MODEL, else the index's model, else this)

    [search]
    half_life_days = 180.0        # the recency prior halves every this many days

    [packs]
    encoding = "o200k"            # how context packs count tokens: o200k, cl100k or estimate

    [clusters]
    min_clusters = 2              # bounds for the eigengap's choice of the number of areas
    max_clusters = 40
    knn = 10                      # neighbours per item in the similarity graph
    max_items = 20000             # beyond this, a sample is clustered and the rest assigned
                                  # in blocks: the areas step's memory follows this, not the items
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from cortex_core.errors import CortexError
from cortex_core.features.token_count import DEFAULT_ENCODING, encoding_name

DEFAULT_TRAILERS = (
    "Signed-off-by", "Co-authored-by", "Co-Authored-By", "Change-Id", "Reviewed-by", "Reviewed-on",
    "Acked-by", "Tested-by", "Reported-by", "Suggested-by", "Helped-by", "Cc", "Link",
    "git-svn-id", "Original-commit", "Backport-of", "Approved-by", "Differential Revision",
)

DEFAULT_VENDORED = (
    "vendor/", "vendors/", "vendored/", "_vendor/", "third_party/", "third-party/", "thirdparty/",
    "node_modules/", "bower_components/", "Pods/", "extern/",
)

DEFAULT_GENERATED = (
    "*_pb2.py", "*_pb2_grpc.py", "*.pb.go", "*.pb.cc", "*.pb.h", "*.generated.*", "*_generated.*",
    "*.g.dart", "*.designer.cs", "dist/*", "*.min.js", "*.min.css", "*.map",
)


@dataclass(frozen=True)
class IndexSettings:
    # 10 MB: a commit that changes a 10 MB Python file costs 5-6 s of CPU (incremental re-parse,
    # the walk over its definitions, matching), its trees 55-80 MB per MB of text in memory
    # (bench/bench_large_files.py: parse 0.2-0.4 s/MB, full extraction 0.3-0.8 s/MB).
    max_file_bytes: int = 10_000_000
    max_diff_lines: int = 20_000
    max_commit_files: int = 2_000
    # Memory of the index run's process tree while commits are read (read_pool.py): the main
    # process's part is set aside, the rest shared by the workers (fewer workers when each
    # would get too little); a worker past its share stops before its next commit and is
    # replaced by a fresh process, and its parser's caches are sized to the share. So the peak
    # is about `memory_mb` plus what one commit of the largest files takes (docs/settings.md,
    # "Memory of an index run"). `worker_memory_mb` > 0 sets each worker's share instead.
    memory_mb: int = 500
    worker_memory_mb: int = 0
    # Recent history first (ingest.py, `index_repository(recent_first=...)`): a first run over
    # a history of more than `recent_first_commits` commits (the language server's default; the
    # command line's `--recent-first` asks for it whatever the size) indexes a recent window
    # first, the last `window_commits` first-parent commits or the last `window_days` before
    # HEAD, whichever is shorter, then builds the whole history beside it and swaps it in.
    recent_first_commits: int = 5_000
    window_commits: int = 500
    window_days: float = 180.0
    drop_trailers: tuple[str, ...] = DEFAULT_TRAILERS
    vendored: tuple[str, ...] = DEFAULT_VENDORED
    generated: tuple[str, ...] = DEFAULT_GENERATED


@dataclass(frozen=True)
class HotspotSettings:
    half_life_days: float = 90.0


@dataclass(frozen=True)
class TimeSettings:
    clock: str = "repository"     # clock.CLOCKS


@dataclass(frozen=True)
class CouplingSettings:
    # The one set of co-change defaults: coupling.py, the CLI, the language server, MCP and packs
    # all read these (bench/bench_cochange.py measured them).
    max_changeset: int = 30
    min_support: int = 1
    half_life_days: float | None = None   # None: HALF_LIFE_SHARE of the history's commits (coupling.py)

    def options(self) -> dict:
        """The keywords of coupling's and blast's co-change queries."""
        return {"max_changeset": self.max_changeset, "min_support": self.min_support,
                "half_life_days": self.half_life_days}


COUPLING_DEFAULTS = CouplingSettings()


@dataclass(frozen=True)
class MemorySettings:
    model: str = ""     # empty: CORTEX_MODEL, the index's model, or minishlab/potion-base-8M


@dataclass(frozen=True)
class SearchSettings:
    half_life_days: float = 180.0


@dataclass(frozen=True)
class PackSettings:
    encoding: str = DEFAULT_ENCODING   # o200k, cl100k or estimate (features/token_count.py)


@dataclass(frozen=True)
class ClusterSettings:
    min_clusters: int = 2
    max_clusters: int = 40
    knn: int = 10
    max_items: int = 20_000


@dataclass(frozen=True)
class Settings:
    index: IndexSettings = field(default_factory=IndexSettings)
    hotspots: HotspotSettings = field(default_factory=HotspotSettings)
    coupling: CouplingSettings = field(default_factory=CouplingSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    packs: PackSettings = field(default_factory=PackSettings)
    clusters: ClusterSettings = field(default_factory=ClusterSettings)
    time: TimeSettings = field(default_factory=TimeSettings)


CONFIG_FILE = Path(".cortex") / "config.toml"


def repository_settings(root: Path) -> Settings:
    """The settings of the repository at `root`: the defaults, then its `.cortex/config.toml`."""
    return load_settings(root / CONFIG_FILE)


def override(settings: Settings, values: dict[str, object], source: str) -> Settings:
    """`settings` with a front end's values put over them (`{"search.half_life_days": 30}`),
    each checked as the file's are; `source` names them in an error ("the editor's settings")."""
    for dotted, value in values.items():
        section, _, key = dotted.partition(".")
        if section not in _SECTIONS:
            raise CortexError(f"{source}: unknown section [{section}]")
        settings = replace(settings, **{section: _apply(
            source, section, getattr(settings, section), {key: value})})
    return settings


def load_settings(path: Path) -> Settings:
    """Settings from a TOML file; defaults when nothing is at `path`. Something there that is
    not a regular file (a folder, a dangling link, a pipe that would block the read) is an
    error, as a typo is: silently ignoring it would hide the user's settings."""
    if not os.path.lexists(path):
        return Settings()
    if not path.is_file():
        raise CortexError(f"{path} is not a regular file (a folder, a broken link or a device): "
                          "make it a TOML file or remove it")
    import tomllib   # here: 7 ms to import, and most repositories have no config file
    try:
        # utf-8-sig: an editor's byte-order mark is not a TOML error.
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CortexError(f"cannot read {path}: {exc}") from None
    settings = Settings()
    for section, value in data.items():
        current = getattr(settings, section, None) if section in _SECTIONS else None
        if current is None:
            raise CortexError(f"{path}: unknown section [{section}] (known: {', '.join(_SECTIONS)})")
        if not isinstance(value, dict):
            raise CortexError(f"{path}: [{section}] must be a table of keys (`[{section}]` on a "
                              "line of its own, its keys below)")
        settings = replace(settings, **{section: _apply(path, section, current, value)})
    return settings


_SECTIONS = ("index", "hotspots", "coupling", "memory", "search", "packs", "clusters", "time")
_ZERO_MEANS_OFF = {("coupling", "half_life_days")}
_ZERO_MEANS_DERIVED = {("index", "worker_memory_mb")}   # whole numbers whose 0 is the default
_CHOICES = {("time", "clock"): ("repository", "wall")}
_MAX_INT = 2**31 - 1   # SQLite binds 64-bit integers; the CLI's bound, for every count and size


def _apply(path: Path | str, section: str, current, values: dict):
    known = {f.name: f for f in fields(current)}
    changes = {}
    for key, value in values.items():
        if key not in known:
            raise CortexError(f"{path}: unknown key {section}.{key} (known: {', '.join(known)})")
        default = getattr(current, key)
        if isinstance(default, tuple):
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise CortexError(f"{path}: {section}.{key} must be a list of strings")
            value = tuple(value)
        elif (section, key) in _CHOICES:
            choices = _CHOICES[section, key]
            if isinstance(value, str):   # " Wall" is wall, as the language server reads it
                value = value.strip().lower()
            if value not in choices:
                raise CortexError(f"{path}: {section}.{key} must be "
                                  + " or ".join(f'"{c}"' for c in choices))
        elif isinstance(default, str):
            if not isinstance(value, str) or not value.strip():
                raise CortexError(f"{path}: {section}.{key} must be a non-empty string")
            if (section, key) == ("packs", "encoding"):
                try:
                    value = encoding_name(value)
                except CortexError as exc:
                    raise CortexError(f"{path}: packs.encoding: {exc}") from None
        elif isinstance(default, float) or (section, key) in _ZERO_MEANS_OFF:
            zero = (section, key) in _ZERO_MEANS_OFF
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not (0 <= value if zero else 0 < value) or not value < float("inf"):
                # NaN fails the comparisons too
                raise CortexError(f"{path}: {section}.{key} must be a positive number"
                                  + (" or 0 (off)" if zero else ""))
            value = float(value)
        elif isinstance(default, int):
            low = 0 if (section, key) in _ZERO_MEANS_DERIVED else 1
            if isinstance(value, bool) or not isinstance(value, int) \
                    or not low <= value <= _MAX_INT:
                raise CortexError(f"{path}: {section}.{key} must be a whole number from {low} to "
                                  f"{_MAX_INT:,}")
        changes[key] = value
    return replace(current, **changes)

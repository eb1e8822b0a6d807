"""What the index holds: counts, languages, skipped files and why, the last indexed commit."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import apsw

from cortex_core.index.reader_version import EarlierReader, earlier_reader
from cortex_core.index.skip_rules import WAS, indexed_limits, limit_hint
from cortex_core.store.store import (SCHEMA_VERSION, get_meta, history_from, history_until,
                                     shallow_from)


@dataclass(frozen=True)
class LanguageCount:
    language: str
    files: int
    symbols: int


@dataclass(frozen=True)
class SkipCount:
    reason: str
    files_at_head: int       # files of the HEAD tree recorded at file level only
    changes_in_history: int  # file changes recorded at file level only
    explanation: str = ""    # the limit and the setting that raises it, for limits' reasons


@dataclass(frozen=True)
class Status:
    db_path: str
    db_bytes: int
    schema_version: int
    head: str | None
    indexed_at: int | None
    all_branches: bool
    commits: int
    unreachable_commits: int
    merges: int
    authors: int
    first_commit_time: int | None
    last_commit_time: int | None
    files_at_head: int
    symbols_alive: int
    symbols_total: int
    symbol_changes: int
    file_changes: int
    languages: list[LanguageCount]
    skipped: list[SkipCount]
    memory: MemoryStatus | None = None
    structure: list[ResolutionRate] | None = None
    store_reason: str | None = None   # why the store is not <repo>/.cortex/cortex.db (see
                                      # store_location); None when it is, or given with --db
    missing: MissingObjects | None = None   # None: every object the index needed was read
    # Set while the index holds a recent window only (older commits not indexed yet): the date
    # its history starts from (see `history_from`).
    history_from: int | None = None
    # Set while the first run has not reached HEAD (stopped, or still running): the date of
    # the newest commit indexed (see store.history_until).
    history_until: int | None = None
    # Set for a shallow clone: the date of its oldest commit (see store.shallow_from).
    shallow_from: int | None = None
    # Set when an earlier version of Cortex read the store's oldest commits (reader_version).
    earlier_reader: EarlierReader | None = None
    # Objects `git replace` replaced at the last index run (ingest.replaced_objects): git's log
    # shows their replacements, the index the objects as recorded.
    replaced_objects: int = 0
    # The working copy's HEAD commit, None when git cannot say (unborn, unreadable). Answers are
    # of `head`, the last indexed commit: the two differ until an index run catches up.
    working_head: str | None = None


@dataclass(frozen=True)
class MissingObjects:
    """Objects git could not give the indexer (see object_source): a partial clone whose
    remote was unreachable, or a damaged repository. Summed over the runs since the last
    rebuild."""
    objects: int
    cause: str               # object_source.CAUSE_*
    changes_in_history: int  # file changes recorded at file level only for want of them
    files_at_head: int


@dataclass(frozen=True)
class ResolutionRate:
    """How many references of a language found their target (imports excluded)."""
    language: str
    files: int
    refs: int
    resolved: int
    ambiguous: int
    external: int
    unresolved: int

    @property
    def rate(self) -> float:
        return self.resolved / self.refs if self.refs else 0.0


@dataclass(frozen=True)
class MemoryStatus:
    commit_items: int
    doc_items: int
    note_items: int
    without_vector: int
    semantic: bool
    semantic_note: str          # "semantic search on: <model> ..." or why it is off
    model: str | None
    areas: int
    notes_live: int
    notes_closed: int


def status(con: apsw.Connection, db_path: Path, store_reason: str | None = None) -> Status:
    one = lambda sql: con.execute(sql).get  # noqa: E731 - a single value
    size = sum(os.path.getsize(p) for p in (str(db_path), f"{db_path}-wal") if os.path.exists(p))
    langs = con.execute(
        "select f.language, count(*), (select count(*) from symbols s join files g on"
        " g.id = s.file_id where s.alive = 1 and g.language = f.language)"
        " from head_files h join files f on f.id = h.file_id"
        " where f.language is not null and h.skip_reason is null"
        " group by f.language order by 2 desc").fetchall()
    head_skips = dict(con.execute(
        "select skip_reason, count(*) from head_files where skip_reason is not null group by 1"))
    history_skips = dict((reason, n) for reason, n in con.execute(
        "select fc.skip_reason, count(*) from file_changes fc join commits c on c.id = fc.commit_id"
        " where fc.skip_reason is not null and c.reachable = 1 group by 1")
        # "was binary": a file readable again, whose definitions were read (skip_rules.WAS)
        if not reason.startswith(WAS))
    limits = indexed_limits(con)
    skipped = [SkipCount(r, head_skips.get(r, 0), history_skips.get(r, 0),
                         limit_hint(r, limits))
               for r in sorted(head_skips.keys() | history_skips.keys())]
    indexed_at = get_meta(con, "indexed_at")
    return Status(
        db_path=str(db_path), db_bytes=size, schema_version=SCHEMA_VERSION,
        head=get_meta(con, "head"), indexed_at=int(indexed_at) if indexed_at else None,
        all_branches=get_meta(con, "all_branches") == "1", history_from=history_from(con),
        history_until=history_until(con), shallow_from=shallow_from(con),
        commits=one("select count(*) from commits where reachable = 1"),
        unreachable_commits=one("select count(*) from commits where reachable = 0"),
        merges=one("select count(*) from commits where reachable = 1 and is_merge = 1"),
        authors=one("select count(distinct author_email) from commits where reachable = 1"),
        first_commit_time=one("select min(author_time) from commits where reachable = 1"),
        last_commit_time=one("select max(author_time) from commits where reachable = 1"),
        files_at_head=one("select count(*) from head_files"),
        symbols_alive=one("select count(*) from symbols where alive = 1"),
        symbols_total=one("select count(*) from symbols"),
        symbol_changes=one("select count(*) from symbol_changes"),
        file_changes=one("select count(*) from file_changes"),
        languages=[LanguageCount(*row) for row in langs],
        skipped=skipped, memory=_memory(con), structure=_structure(con),
        store_reason=store_reason, earlier_reader=earlier_reader(con),
        replaced_objects=int(get_meta(con, "replaced") or 0),
        missing=_missing(con, head_skips.get("missing object", 0),
                         history_skips.get("missing object", 0)))


def _missing(con: apsw.Connection, at_head: int, in_history: int) -> MissingObjects | None:
    objects = int(get_meta(con, "missing_objects") or 0)
    if not objects:
        return None
    return MissingObjects(objects, get_meta(con, "missing_cause") or "", in_history, at_head)


def _structure(con: apsw.Connection) -> list[ResolutionRate]:
    files = dict(con.execute("select language, count(*) from struct_files where skip_reason"
                             " is null group by language"))
    counts: dict[str, dict[str, int]] = {}
    for language, status, n in con.execute(
            "select s.language, r.status, count(*) from refs r join struct_files s"
            " on s.file_id = r.file_id where r.kind != 'import' group by 1, 2"):
        counts.setdefault(language, {})[status] = n
    return [ResolutionRate(lang, files.get(lang, 0), sum(c.values()), c.get("resolved", 0),
                           c.get("ambiguous", 0), c.get("external", 0), c.get("unresolved", 0))
            for lang, c in sorted(counts.items(), key=lambda kv: -sum(kv[1].values()))]


def _memory(con: apsw.Connection) -> MemoryStatus:
    from cortex_core.memory.embeddings import semantic_state
    kinds = dict(con.execute("select kind, count(*) from items group by kind"))
    on, note = semantic_state(con)
    live = con.execute("select count(*) from notes where superseded_by is null and"
                       " (valid_until is null or valid_until > ?)", (int(time.time()),)).get
    return MemoryStatus(
        commit_items=kinds.get("commit", 0), doc_items=kinds.get("doc", 0),
        note_items=kinds.get("note", 0),
        without_vector=con.execute("select count(*) from items where vector_id is null").get,
        semantic=on, semantic_note=note, model=get_meta(con, "embed_model"),
        areas=con.execute("select count(*) from clusters").get, notes_live=live,
        notes_closed=con.execute("select count(*) from notes").get - live)

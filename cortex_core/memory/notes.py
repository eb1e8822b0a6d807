"""Notes: what people and agents know about a symbol, a file or the repository, kept with time.

Bi-temporal: `valid_from`/`valid_until` say when what a note states holds, `recorded_at` when it was
written here. Superseding a note closes it (valid_until, superseded_by) and writes its successor;
the old row stays for the record but never reaches search results or context packs.

A note is anchored to its target as it was at the indexed HEAD: a symbol's body hash, a file's blob.
When the target changes later, the note is flagged as possibly stale, with the first commit that
changed it. Notes live in the store; `export`/`import` (JSON) carry them across machines, and
`cortex index --rebuild` keeps them.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from cortex_core.errors import CortexError, NotFound
from cortex_core.query.history import AFTER, COMMIT_COLUMNS, OLDEST_FIRST, CommitRef, commit_ref
from cortex_core.index.memory import delete_items, insert_item
from cortex_core.text.redact import redact
from cortex_core.store.store import get_meta, immediate
from cortex_core.query.targets import parse_target, resolve

EXPORT_VERSION = 1
MAX_NOTE_CHARS = 20_000


@dataclass(frozen=True)
class Note:
    id: int
    target: str                 # "" for the repository, PATH or PATH::QUALNAME
    text: str
    author: str | None
    valid_from: int
    valid_until: int | None
    recorded_at: int
    superseded_by: int | None
    anchor_commit: str | None
    live: bool
    stale: bool = False
    stale_reason: str | None = None
    changed_by: CommitRef | None = None

    @property
    def citation(self) -> str:
        return f"note #{self.id}"


# -- writing -----------------------------------------------------------------------------------


def git_author(repo_root: Path) -> str | None:
    """The user's name from git's configuration, the default author of a note."""
    import pygit2
    try:
        return pygit2.Repository(str(repo_root)).default_signature.name
    except (pygit2.GitError, KeyError, ValueError):
        return None


def add_note(con, repo_root: Path, target: str | None, text: str, *, author: str | None = None,
             valid_from: int | None = None) -> Note:
    """Write a note on `target` (PATH, PATH::SYMBOL, PATH:LINE; None for the repository)."""
    text = _check_text(text)
    label, path, qualname, anchor = _anchor(con, repo_root, target)
    now = int(time.time())
    head = get_meta(con, "head")
    with immediate(con):
        note_id = con.execute(
            "insert into notes(target, path, qualname, text, author, valid_from, recorded_at,"
            " anchor_commit, anchor_hash) values (?,?,?,?,?,?,?,?,?) returning id",
            (label, path, qualname, text, author, valid_from if valid_from is not None else now,
             now, head, anchor)).get
        sync_note_items(con)
    return get_note(con, repo_root, note_id)


def supersede_note(con, repo_root: Path, note_id: int, text: str, *,
                   author: str | None = None) -> Note:
    """Replace a live note by a new one on the same target; the old one is closed, not deleted."""
    text = _check_text(text)
    now = int(time.time())
    head = get_meta(con, "head")
    with immediate(con):   # the check and the write in one transaction: one successor only
        row = con.execute("select target, path, qualname, superseded_by from notes where id = ?",
                          (note_id,)).fetchone()
        if row is None:
            raise NotFound(f"no note #{note_id}")
        target, path, qualname, superseded_by = row
        if superseded_by is not None:
            raise CortexError(f"note #{note_id} is already superseded by #{superseded_by}")
        # The target as it is now, even when it is gone (a stale note can still be replaced).
        anchor = _current_hash(con, repo_root, path, qualname) if path else None
        new_id = con.execute(
            "insert into notes(target, path, qualname, text, author, valid_from, recorded_at,"
            " anchor_commit, anchor_hash) values (?,?,?,?,?,?,?,?,?) returning id",
            (target, path, qualname, text, author, now, now, head, anchor)).get
        con.execute("update notes set valid_until = ?, superseded_by = ? where id = ?",
                    (now, new_id, note_id))
        sync_note_items(con)
    return get_note(con, repo_root, new_id)


def sync_note_items(con) -> None:
    """Live notes have exactly one memory item; closed notes none. Links follow the targets as the
    index knows them now (a note imported before its files were indexed gets them later)."""
    now = int(time.time())
    delete_items(con, "kind = 'note' and note_id in (select id from notes where superseded_by"
                      " is not null or (valid_until is not null and valid_until <= ?))", (now,))
    pending = con.execute(
        "select id, target, path, qualname, text, valid_from from notes n where superseded_by is null"
        " and (valid_until is null or valid_until > ?)"
        " and not exists (select 1 from items i where i.note_id = n.id)", (now,)).fetchall()
    for note_id, target, path, qualname, text, valid_from in pending:
        files, symbols = _links(con, path, qualname)
        insert_item(con, kind="note", title=f"note #{note_id} on {target or 'the repository'}",
                    body=text, time=valid_from, signal="note", note_id=note_id,
                    files=files, symbols=symbols, paths=[path] if path else [])


def relink_note_items(con) -> None:
    """Link note items to their targets as the index knows them now: notes imported by a rebuild
    before their files were indexed get their links here."""
    # From the notes (a few) to their items, never the other way round: a scan of every item
    # was 20 ms of each update on sympy.
    rows = con.execute("select i.id, n.path, n.qualname from notes n cross join items i"
                       " on i.note_id = n.id where i.kind = 'note'").fetchall()
    for item_id, path, qualname in rows:
        files, symbols = _links(con, path, qualname)
        con.execute("delete from item_files where item_id = ?", (item_id,))
        con.execute("delete from item_symbols where item_id = ?", (item_id,))
        con.executemany("insert into item_files(item_id, file_id) values (?, ?)",
                        ((item_id, f) for f in files))
        con.executemany("insert into item_symbols(item_id, symbol_id) values (?, ?)",
                        ((item_id, s) for s in symbols))


def _links(con, path: str | None, qualname: str | None) -> tuple[list[int], list[int]]:
    file_row = con.execute("select id from files where path = ?", (path,)).fetchone() \
        if path else None
    symbol_row = con.execute("select id from symbols where file_id = ? and qualname = ?",
                             (file_row[0], qualname)).fetchone() if file_row and qualname else None
    return ([file_row[0]] if file_row else []), ([symbol_row[0]] if symbol_row else [])


def _check_text(text: str) -> str:
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").replace("\x00", "")
    text = text.strip()
    if not text:
        raise CortexError("a note needs some text")
    if len(text) > MAX_NOTE_CHARS:
        raise CortexError(f"a note is at most {MAX_NOTE_CHARS} characters ({len(text)} given)")
    return text


def _anchor(con, repo_root: Path, target: str | None):
    """(label, path, qualname, anchor hash) of a target at the indexed HEAD."""
    if not target:
        return "", None, None, None
    found = resolve(con, parse_target(target))
    if found.qualname and not found.alive:
        raise NotFound(f"{found.label} no longer exists at HEAD; note its file instead")
    return found.label, found.path, found.qualname, _current_hash(con, repo_root, found.path,
                                                                  found.qualname)


def _head_known(con) -> bool:
    """Whether an index run has recorded HEAD (a key lookup)."""
    from cortex_core.store.store import get_meta
    return get_meta(con, "head") is not None


def _current_hash(con, repo_root: Path, path: str, qualname: str | None) -> str | None:
    """A file's blob id, or the hash of a symbol's text, at the indexed HEAD (None: not there)."""
    row = con.execute("select h.blob, f.language from head_files h join files f on f.id = h.file_id"
                      " where f.path = ?", (path,)).fetchone()
    if row is None:
        return None
    blob_id, language = row
    if qualname is None:
        return blob_id
    if language is None:
        return None
    from cortex_core.git.git_reads import read_blob_at
    from cortex_core.lang.symbols import SymbolParser, body_hash
    source = read_blob_at(repo_root, blob_id)
    if source is None:
        return None
    for symbol in SymbolParser().symbols(language, blob_id, source):
        if symbol.qualname == qualname:
            return body_hash(symbol, source) or hashlib.blake2b(
                source[symbol.start_byte:symbol.end_byte], digest_size=8).hexdigest()
    return None


# -- reading -----------------------------------------------------------------------------------

_NOTE_COLUMNS = ("id, target, path, qualname, text, author, valid_from, valid_until, recorded_at,"
                 " superseded_by, anchor_commit, anchor_hash")


def get_note(con, repo_root: Path, note_id: int) -> Note:
    row = con.execute(f"select {_NOTE_COLUMNS} from notes where id = ?", (note_id,)).fetchone()
    if row is None:
        raise NotFound(f"no note #{note_id}")
    return _note(con, repo_root, row, {})


def list_notes(con, repo_root: Path, target: str | None = None, *,
               include_closed: bool = False) -> list[Note]:
    """Notes, newest first: those on `target` (a file's notes include its symbols' notes)."""
    params: tuple
    where, params = "1", ()
    if target:
        found = resolve(con, parse_target(target))
        if found.qualname:
            where, params = "path = ? and qualname = ?", (found.path, found.qualname)
        else:
            where, params = "path = ?", (found.path,)
    rows = con.execute(f"select {_NOTE_COLUMNS} from notes where {where}"
                       " order by recorded_at desc, id desc", params).fetchall()
    hashes: dict[tuple, str | None] = {}
    notes = [_note(con, repo_root, row, hashes) for row in rows]
    return [n for n in notes if n.live or include_closed]


def live_notes_for(con, repo_root: Path, path: str, qualname: str | None = None) -> list[Note]:
    """Live notes on a file (and its symbols) or on one symbol, plus the repository's notes."""
    params: tuple
    if qualname:
        where, params = "(path = ? and qualname = ?) or target = ''", (path, qualname)
    else:
        where, params = "path = ? or target = ''", (path,)
    rows = con.execute(f"select {_NOTE_COLUMNS} from notes where ({where}) and superseded_by"
                       " is null order by recorded_at desc", params).fetchall()
    hashes: dict[tuple, str | None] = {}
    return [n for n in (_note(con, repo_root, r, hashes) for r in rows) if n.live]


def _note(con, repo_root: Path, row, hashes: dict) -> Note:
    (note_id, target, path, qualname, text, author, valid_from, valid_until, recorded_at,
     superseded_by, anchor_commit, anchor_hash) = row
    now = int(time.time())
    live = superseded_by is None and (valid_until is None or valid_until > now)
    stale, reason, changed_by = False, None, None
    # Before a run has recorded HEAD (a first run or a rebuild under way or stopped: HEAD's
    # files are not all known yet) nothing can be said gone or changed.
    if path and anchor_hash is not None and _head_known(con):
        key = (path, qualname)
        if key not in hashes:
            hashes[key] = _current_hash(con, repo_root, path, qualname)
        current = hashes[key]
        if current != anchor_hash:
            stale = True
            what = f"{path}::{qualname}" if qualname else path
            reason = f"{what} is gone from HEAD" if current is None else \
                f"{what} changed since the note was written"
            changed_by = _first_change_after(con, path, qualname, anchor_commit, recorded_at)
    return Note(note_id, target, redact(text), redact(author) if author else author, valid_from,
                valid_until, recorded_at,
                superseded_by, anchor_commit, live, stale, reason, changed_by)


def _first_change_after(con, path: str, qualname: str | None, anchor_commit: str | None,
                        recorded_at: int) -> CommitRef | None:
    # "After" in history's order (history.ORDER_KEY), which does not depend on how the store
    # was indexed.
    anchor = con.execute("select order_time, generation, sha from commits where sha = ?",
                         (anchor_commit,)).fetchone() if anchor_commit else None
    after, values = (AFTER, tuple(anchor)) if anchor is not None \
        else ("c.author_time > ?", (recorded_at,))
    oldest_first = f"order by {OLDEST_FIRST} limit 1"
    if qualname:
        sql = (f"select {COMMIT_COLUMNS} from symbol_changes x join symbols s on s.id = x.symbol_id"
               " join files f on f.id = s.file_id join commits c on c.id = x.commit_id"
               f" where f.path = ? and s.qualname = ? and c.reachable = 1 and {after}"
               f" {oldest_first}")
        params = (path, qualname, *values)
    else:
        sql = (f"select {COMMIT_COLUMNS} from file_changes x join commits c on c.id = x.commit_id"
               " where (x.file_id = (select id from files where path = ?) or x.old_file_id ="
               f" (select id from files where path = ?)) and c.reachable = 1 and {after}"
               f" {oldest_first}")
        params = (path, path, *values)
    row = con.execute(sql, params).fetchone()
    return commit_ref(row) if row else None


# -- export / import ---------------------------------------------------------------------------


def export_notes(con) -> dict:
    """Every note, closed ones included, as a JSON-ready document."""
    rows = con.execute(f"select {_NOTE_COLUMNS} from notes order by id").fetchall()
    notes = []
    for row in rows:
        note = dict(zip(("id", "target", "path", "qualname", "text", "author", "valid_from",
                         "valid_until", "recorded_at", "superseded_by", "anchor_commit",
                         "anchor_hash"), row))
        del note["path"], note["qualname"]
        notes.append(note)
    return {"cortex_notes": EXPORT_VERSION, "exported_at": int(time.time()), "notes": notes}


def import_notes(con, data) -> int:
    """Add the notes of an export (a dict, or its `notes` list) that are not here yet. Ids are
    renumbered; supersession links follow. Returns the number added. Call inside a transaction."""
    notes = data.get("notes") if isinstance(data, dict) else data
    if isinstance(data, dict) and data.get("cortex_notes", EXPORT_VERSION) != EXPORT_VERSION:
        raise CortexError(f"unsupported notes export version {data.get('cortex_notes')!r}")
    if not isinstance(notes, list):
        raise CortexError("not a Cortex notes export: expected {\"notes\": [...]}")
    checked = [_checked(i, n) for i, n in enumerate(notes)]
    existing = {(t, x, r): i for i, t, x, r in con.execute(
        "select id, target, text, recorded_at from notes")}
    new_ids: dict[int, int] = {}
    added = 0
    for note in checked:
        key = (note["target"], note["text"], note["recorded_at"])
        if key in existing:
            new_ids[note["id"]] = existing[key]
            continue
        path, _, qualname = note["target"].partition("::")
        new_ids[note["id"]] = con.execute(
            "insert into notes(target, path, qualname, text, author, valid_from, valid_until,"
            " recorded_at, anchor_commit, anchor_hash) values (?,?,?,?,?,?,?,?,?,?) returning id",
            (note["target"], path or None, qualname or None, note["text"], note["author"],
             note["valid_from"], note["valid_until"], note["recorded_at"],
             note["anchor_commit"], note["anchor_hash"])).get
        added += 1
    for note in checked:
        successor = note["superseded_by"]
        if successor is not None and successor in new_ids:
            con.execute("update notes set superseded_by = ? where id = ?",
                        (new_ids[successor], new_ids[note["id"]]))
    sync_note_items(con)
    return added


def _checked(index: int, note) -> dict:
    def bad(why: str) -> CortexError:
        return CortexError(f"notes export, entry {index}: {why}")
    if not isinstance(note, dict):
        raise bad("not an object")
    out: dict = {}
    for key, kinds, required in (("id", int, True), ("target", str, True), ("text", str, True),
                                 ("author", (str, type(None)), False),
                                 ("valid_from", int, True), ("valid_until", (int, type(None)), False),
                                 ("recorded_at", int, True),
                                 ("superseded_by", (int, type(None)), False),
                                 ("anchor_commit", (str, type(None)), False),
                                 ("anchor_hash", (str, type(None)), False)):
        if key not in note:
            if required:
                raise bad(f"missing {key!r}")
            out[key] = None
            continue
        value = note[key]
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise bad(f"{key!r} has the wrong type")
        if isinstance(value, int) and not -2**63 <= value < 2**63:
            raise bad(f"{key!r} is out of range")
        if isinstance(value, str) and not _encodable(value):
            raise bad(f"{key!r} is not valid text")
        out[key] = value
    if not out["text"].strip() or len(out["text"]) > MAX_NOTE_CHARS:
        raise bad("empty or too long text")
    return out


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def saved_notes(db_path: Path) -> list[dict]:
    """The notes of a store about to be rebuilt (empty if it is missing or unreadable)."""
    if not db_path.is_file():
        return []
    import apsw
    try:
        con = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return export_notes(con)["notes"]
        finally:
            con.close()
    except apsw.Error:
        return []


def dumps(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

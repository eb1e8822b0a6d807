"""A damaged store: moved aside, and the notes read back from it.

Everything in the store but the notes is derived from git and is rebuilt; the notes are the one
thing only the store holds. `cortex index --rebuild` on a damaged file therefore renames it (and
its -wal/-shm, so that the three still open together) to `cortex.db.corrupt-<UTC time>`, reads the
notes it can from that file, and builds a fresh store with them.

Reading the notes tries SQL first (exact, when the notes' own pages and the schema are intact).
When SQL fails, it reads the file the way SQLite's `.recover` does, without the schema: every
table leaf page of the database and of its write-ahead log is parsed by hand
(https://www.sqlite.org/fileformat2.html, "B-tree Pages" and "Record Format"), and every record
shaped like a row of `notes` (twelve columns, of the declared types, its target agreeing with its
path and symbol) is kept. The installed APSW has no binding of SQLite's recovery extension, and
its SQLite is not built with `sqlite_dbpage`, so this is done here. It parses each page once,
follows overflow chains within a budget of four times the page count (no loops), and bounds every
length it reads from the file: linear in the file's size, whatever the bytes.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import apsw

from cortex_core.errors import StoreError

HEADER_MAGIC = b"SQLite format 3\x00"
WAL_MAGICS = (0x377F0682, 0x377F0683)
_TABLE_LEAF = 0x0D
_MAX_PAYLOAD = 1 << 20    # a note is at most 20,000 characters: no row of notes is larger
_SUFFIXES = ("", "-wal", "-shm")


@dataclass(frozen=True)
class Recovery:
    """What a rebuild did with a damaged store (for the summary)."""
    damage: str             # what SQLite said
    moved_to: str           # the damaged file, renamed
    notes_found: int        # notes read back from it
    notes_saved: int        # of them, written to the new store
    method: str             # "sql" (the notes table read as is) or "pages" (read page by page)


def store_damage(db_path: Path) -> str | None:
    """What is wrong with the store's file, if it is damaged (None: sound, or no file). A page
    by page check (`quick_check`): a rebuild reads everything again anyway."""
    if not db_path.is_file():
        return None
    try:
        con = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.CantOpenError:
        return None                 # not ours to judge (permissions): opening it says why
    try:
        rows = con.execute("pragma quick_check(5)").fetchall()
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        return str(exc)
    except apsw.Error:
        return None                 # busy, locked: not damage
    finally:
        con.close()
    problems = [r[0] for r in rows if r[0] != "ok"]
    return "; ".join(problems)[:300] if problems else None


def _aside_name(db_path: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = db_path.with_name(f"{db_path.name}.corrupt-{stamp}")
    n = 1
    while any(Path(f"{target}{s}").exists() for s in _SUFFIXES):
        n += 1
        target = db_path.with_name(f"{db_path.name}.corrupt-{stamp}-{n}")
    return target


def move_aside(db_path: Path, target: Path | None = None) -> Path:
    """Rename the database and its -wal/-shm to `<name>.corrupt-<UTC time>[-wal|-shm]`."""
    target = target or _aside_name(db_path)
    for suffix in _SUFFIXES:
        source = Path(f"{db_path}{suffix}")
        try:
            if source.exists():
                os.rename(source, f"{target}{suffix}")
        except OSError as exc:
            raise StoreError(f"cannot move the damaged index {source} aside: "
                             f"{exc.strerror or exc}") from None
    return target


def salvage_notes(db_path: Path) -> tuple[list[dict], str]:
    """The notes that can be read from the store at `db_path`, as notes.export_notes lists them,
    and how they were read ("sql" or "pages")."""
    try:
        return _notes_by_sql(db_path), "sql"
    except apsw.Error:
        return _notes_by_pages(db_path), "pages"


def _notes_by_sql(db_path: Path) -> list[dict]:
    from cortex_core.memory.notes import export_notes
    con = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return export_notes(con)["notes"]
    finally:
        con.close()


# -- reading pages ---------------------------------------------------------------------------

_NOTE_FIELDS = ("id", "target", "path", "qualname", "text", "author", "valid_from",
                "valid_until", "recorded_at", "superseded_by", "anchor_commit", "anchor_hash")
# Per column of `notes`: the storage classes it may hold ("n" null, "i" integer, "t" text).
_NOTE_SHAPE = ("n", "t", "tn", "tn", "t", "tn", "i", "in", "i", "in", "tn", "tn")


def _notes_by_pages(db_path: Path) -> list[dict]:
    """Rows of `notes` found in the table leaf pages of the file and of its write-ahead log. A row
    found more than once (an old copy on a free page, a newer one in the log) is taken in its
    latest state: a note only ever changes by being closed, so a closed copy is the newer one;
    between equals, the log's last frame wins."""
    best: dict[int, tuple[tuple, dict]] = {}
    for order, (rowid, values) in enumerate(_records(db_path)):
        note = _as_note(rowid, values)
        if note is None:
            continue
        rank = (note["valid_until"] is not None or note["superseded_by"] is not None, order)
        if rowid not in best or rank > best[rowid][0]:
            best[rowid] = (rank, note)
    return [best[k][1] for k in sorted(best)]


def _as_note(rowid: int, values: list) -> dict | None:
    if len(values) != len(_NOTE_SHAPE):
        return None
    for value, allowed in zip(values, _NOTE_SHAPE):
        kind = "n" if value is None else "i" if isinstance(value, int) else \
            "t" if isinstance(value, str) else "x"
        if kind not in allowed:
            return None
    row = dict(zip(_NOTE_FIELDS, values))
    path, qualname, target = row.pop("path"), row.pop("qualname"), row["target"]
    expected = "" if path is None else path if qualname is None else f"{path}::{qualname}"
    if target != expected or not row["text"].strip():
        return None
    row["id"] = rowid
    return row


def _records(db_path: Path) -> Iterator[tuple[int, list]]:
    """(rowid, values) of every cell of every table leaf page: the database's, then its log's."""
    with _mapped(db_path) as data:
        header_ok = data[:16] == HEADER_MAGIC
        wal = Path(f"{db_path}-wal")
        with _mapped(wal) as log:
            for page_size in _page_sizes(data, log, header_ok):
                reserved = data[20] if header_ok and len(data) > 20 else 0
                pages = _Pages(data, page_size, reserved)
                found = False
                for record in pages.leaf_records():
                    found = True
                    yield record
                for record in _log_records(log, page_size, reserved, pages):
                    found = True
                    yield record
                if found or header_ok:
                    return


def _page_sizes(data, log, header_ok: bool) -> list[int]:
    """The page size the header states; without a header, the log's, then every legal size."""
    if header_ok and len(data) >= 18:
        size = struct.unpack(">H", data[16:18])[0]
        size = 65536 if size == 1 else size
        if 512 <= size <= 65536 and size & (size - 1) == 0:
            return [size]
    sizes = [4096] + [1 << n for n in range(9, 17) if n != 12]   # 4096: SQLite's default
    if len(log) >= 32 and struct.unpack(">I", log[:4])[0] in WAL_MAGICS:
        stated = struct.unpack(">I", log[8:12])[0]
        if stated in sizes:
            sizes.remove(stated)
            sizes.insert(0, stated)
    return sizes


class _mapped:
    """A file mapped read-only (an empty bytes when it is missing or empty)."""

    def __init__(self, path: Path):
        self.path = path
        self.map: mmap.mmap | None = None

    def __enter__(self):
        try:
            with open(self.path, "rb") as f:
                if os.fstat(f.fileno()).st_size == 0:
                    return b""
                self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                return self.map
        except OSError:
            return b""

    def __exit__(self, *exc) -> None:
        if self.map is not None:
            self.map.close()


class _Pages:
    """The pages of a database file, and the records of its table leaf pages."""

    def __init__(self, data, page_size: int, reserved: int):
        self.data = data
        self.size = page_size
        self.usable = page_size - reserved
        self.count = len(data) // page_size
        self.overrides: dict[int, bytes] = {}   # pages as the log has them (for overflow chains)
        # Overflow pages followed in all: cells can share a chain, so a crafted file could make
        # following each cell's chain quadratic. A real store's notes overflow rarely.
        self.overflow_budget = 4 * self.count + 1024

    def page(self, number: int):
        if number in self.overrides:
            return self.overrides[number]
        if not 1 <= number <= self.count:
            return None
        start = (number - 1) * self.size
        return self.data[start:start + self.size]

    def leaf_records(self) -> Iterator[tuple[int, list]]:
        for number in range(2, self.count + 1):   # page 1 is the schema's
            yield from self.records_of(self.page(number))

    def records_of(self, page) -> Iterator[tuple[int, list]]:
        if page is None or len(page) < self.size or page[0] != _TABLE_LEAF:
            return
        cells = struct.unpack(">H", page[3:5])[0]
        if 8 + 2 * cells > self.usable:
            return
        for i in range(cells):
            pointer = struct.unpack(">H", page[8 + 2 * i:10 + 2 * i])[0]
            try:
                record = self._cell(page, pointer)
            except (IndexError, ValueError, struct.error, UnicodeDecodeError):
                continue            # a damaged cell: the others may still be whole
            if record is not None:
                yield record

    def _cell(self, page, at: int) -> tuple[int, list] | None:
        if not 8 <= at < self.usable:
            return None
        size, at = _varint(page, at)
        rowid, at = _varint(page, at)
        if size > _MAX_PAYLOAD or rowid >= 1 << 63:
            return None
        local = self._local_size(size)
        if at + local > self.usable:
            return None
        head = bytes(page[at:at + local])
        types, body_at = _record_header(head)
        if types is None or len(types) != len(_NOTE_SHAPE) or types[0] != 0:
            return None             # only rows shaped like notes are worth reading further
        payload = head
        if size > local:
            first = struct.unpack(">I", page[at + local:at + local + 4])[0]
            payload = head + self._overflow(first, size - local)
            if len(payload) < size:
                return None
        return rowid, _values(payload, types, body_at)

    def _local_size(self, size: int) -> int:
        """How much of a payload sits on the leaf page (the file format's formula)."""
        u = self.usable
        x = u - 35
        if size <= x:
            return size
        m = ((u - 12) * 32 // 255) - 23
        k = m + (size - m) % (u - 4)
        return k if k <= x else m

    def _overflow(self, number: int, wanted: int) -> bytes:
        out, seen = [], set()
        while wanted > 0 and number and number not in seen and self.overflow_budget > 0:
            seen.add(number)
            self.overflow_budget -= 1
            page = self.page(number)
            if page is None:
                break
            chunk = bytes(page[4:self.usable][:wanted])
            out.append(chunk)
            wanted -= len(chunk)
            number = struct.unpack(">I", page[:4])[0]
        return b"".join(out)


def _log_records(log, page_size: int, reserved: int, pages: _Pages) -> Iterator[tuple[int, list]]:
    """Records of the table leaf pages in the write-ahead log's frames of the current
    generation (their salts match the log's header), in the order they were written."""
    if len(log) < 32 or struct.unpack(">I", log[:4])[0] not in WAL_MAGICS or \
            struct.unpack(">I", log[8:12])[0] != page_size:
        return
    salts = log[16:24]
    frames = []
    at = 32
    while at + 24 + page_size <= len(log):
        number = struct.unpack(">I", log[at:at + 4])[0]
        if log[at + 8:at + 16] == salts and number:
            frames.append((number, bytes(log[at + 24:at + 24 + page_size])))
        at += 24 + page_size
    for number, page in frames:       # overflow chains follow the newest copy of each page
        pages.overrides[number] = page
    for number, page in frames:
        if number != 1:
            yield from pages.records_of(page)


def _varint(buf, at: int) -> tuple[int, int]:
    value = 0
    for i in range(9):
        byte = buf[at + i]
        if i == 8:
            return (value << 8) | byte, at + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    raise ValueError("varint")     # not reached


def _record_header(head: bytes) -> tuple[list[int] | None, int]:
    try:
        size, at = _varint(head, 0)
        if not 1 <= size <= len(head) or size > 200:
            return None, 0
        types = []
        while at < size:
            serial, at = _varint(head, at)
            types.append(serial)
        return (types, size) if at == size else (None, 0)
    except IndexError:
        return None, 0


_INT_WIDTHS = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8}


def _values(payload: bytes, types: list[int], at: int) -> list:
    values: list = []
    for serial in types:
        if serial == 0:
            values.append(None)
        elif serial in _INT_WIDTHS:
            width = _INT_WIDTHS[serial]
            if at + width > len(payload):
                raise ValueError("short record")
            values.append(int.from_bytes(payload[at:at + width], "big", signed=True))
            at += width
        elif serial in (8, 9):
            values.append(serial - 8)
        elif serial == 7:
            values.append(struct.unpack(">d", payload[at:at + 8])[0])
            at += 8
        elif serial >= 12:
            length = (serial - 12) // 2
            if at + length > len(payload):
                raise ValueError("short record")
            raw = payload[at:at + length]
            values.append(raw.decode("utf-8") if serial % 2 else bytes(raw))
            at += length
        else:
            raise ValueError("reserved serial type")
    return values


# -- the rebuild ------------------------------------------------------------------------------

def replace_damaged(db_path: Path, damage: str):
    """Move the damaged store aside and open a new one at `db_path` holding the notes read back
    from it. Returns (connection, Recovery). The caller holds the writer lock.

    Until the notes are in the new store, `<db>.salvage` names the file moved aside: a run that
    stops in between (killed, interrupted, the disk full) is finished by the next one
    (resume_salvage), which would otherwise find a sound, empty store and never look back."""
    from cortex_core.store.store import open_writer
    pending = pending_path(db_path)
    target = _aside_name(db_path)
    _write_pending(pending, target)
    moved = move_aside(db_path, target)
    notes, method = salvage_notes(moved)
    con = open_writer(db_path)
    try:
        with con:
            saved = restore_notes(con, notes)
    except BaseException:
        con.close()
        raise
    _remove(pending)
    return con, Recovery(damage, str(moved), len(notes), saved, method)


def pending_path(db_path: Path) -> Path:
    return Path(f"{db_path}.salvage")


def resume_salvage(db_path: Path, con) -> Recovery | None:
    """Finish a rebuild that moved a damaged store aside and stopped before its notes were in
    the new store (see replace_damaged); None when there is none to finish."""
    pending = pending_path(db_path)
    try:
        name = Path(pending.read_text(encoding="utf-8").strip()).name
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        name = ""
    moved = db_path.with_name(name) if name.startswith(f"{db_path.name}.corrupt-") else None
    if moved is None or not moved.is_file():
        _remove(pending)
        return None
    notes, method = salvage_notes(moved)
    with con:
        saved = restore_notes(con, notes)
    _remove(pending)
    return Recovery("an earlier rebuild stopped before its notes were saved", str(moved),
                    len(notes), saved, method)


def _write_pending(pending: Path, target: Path) -> None:
    temporary = Path(f"{pending}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(target.name + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, pending)
    except OSError as exc:
        raise StoreError(f"cannot write {pending}: {exc.strerror or exc}") from None


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def carry_notes(source: Path, target: Path) -> int:
    """Copy the notes of the store at `source` (one the indexer cannot write: a read-only
    `.cortex`) into the store at `target`; returns how many were added."""
    from cortex_core.store.store import immediate, open_note_writer
    notes, _ = salvage_notes_readonly(source)
    if not notes:
        return 0
    con = open_note_writer(target)
    try:
        with immediate(con):
            return restore_notes(con, notes)
    finally:
        con.close()


def salvage_notes_readonly(db_path: Path) -> tuple[list[dict], str]:
    """salvage_notes for a store on a read-only file system, which SQLite opens only as an
    immutable file (see store._connect_reader)."""
    from cortex_core.memory.notes import export_notes
    from cortex_core.store.store import open_reader
    try:
        con = open_reader(db_path)
    except StoreError:
        return salvage_notes(db_path)
    try:
        return export_notes(con)["notes"], "sql"
    finally:
        con.close()


def restore_notes(con, notes: list[dict]) -> int:
    """Write salvaged notes (ids, bi-temporal fields and anchors kept as they were read); a note
    that does not pass the import's checks (a damaged row) is left out, not the whole lot."""
    from cortex_core.errors import CortexError
    from cortex_core.memory.notes import _checked, import_notes
    whole = []
    for i, note in enumerate(notes):
        try:
            _checked(i, note)
        except CortexError:
            continue
        whole.append(note)
    return import_notes(con, whole) if whole else 0

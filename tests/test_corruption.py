"""A damaged store: real databases with pages overwritten, the real CLI, and what comes back.

The damage is done the way disks and crashes do it: random bytes over whole pages in the middle
of the file (SQLite opens it, then reports corruption), or over the header (it is no database)."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from cortex_core.config import Settings
from cortex_core.index.ingest import index_repository
from cortex_core.memory.notes import add_note, supersede_note
from cortex_core.store.salvage import _notes_by_pages, salvage_notes, store_damage
from cortex_core.store.store import open_note_writer

PROJECT = Path(__file__).resolve().parent.parent


def cortex(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_core", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(PROJECT), CORTEX_MODEL="none"))


@pytest.fixture
def shop(repo):
    for n in range(1, 13):
        repo.write(f"shop/m{n % 4}.py", "".join(
            f"def f{k}(x):\n    return x + {n * k}\n\n" for k in range(8)))
        repo.commit(f"change {n}", days_ago=20 - n)
    return repo


def db_of(repo) -> Path:
    return repo.path / ".cortex" / "cortex.db"


def write_notes(repo, count: int) -> list[str]:
    """`count` notes through the engine (one of them superseded), the store then closed."""
    con = open_note_writer(db_of(repo))
    texts = []
    try:   # each call is its own transaction
        for i in range(count):
            target = f"shop/m{i % 4}.py::f{i % 8}" if i % 3 else f"shop/m{i % 4}.py"
            text = f"note {i}: " + "why this is so " * (i % 5 + 1)
            add_note(con, repo.path, target, text)
            texts.append(text.strip())
        supersede_note(con, repo.path, 1, "note 0, corrected")
    finally:
        con.close()
    return texts + ["note 0, corrected"]


def table_pages(db: Path) -> dict[str, list[int]]:
    """Pages of each table and index, from SQLite's own dbstat (before the damage)."""
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        out: dict[str, list[int]] = {}
        for name, page in con.execute("select name, pageno from dbstat"):
            out.setdefault(name, []).append(page)
        return out
    finally:
        con.close()


def overwrite(db: Path, pages: list[int], seed: int = 7) -> None:
    rng = random.Random(seed)
    size = 4096
    with open(db, "r+b") as f:
        for page in pages:
            f.seek((page - 1) * size)
            f.write(rng.randbytes(size))


def damage_all_but_notes(db: Path) -> None:
    """Garbage over the schema's second pages and over every page of the derived tables: the
    notes' pages are left whole."""
    pages = table_pages(db)
    keep = {1, *pages.get("notes", []), *pages.get("notes_path", [])}
    victims = sorted({p for name, ps in pages.items() for p in ps} - keep)
    overwrite(db, victims)


def test_rebuild_moves_a_damaged_store_aside_and_keeps_its_notes(shop):
    index_repository(shop.path, db_of(shop), Settings(), model="none")
    texts = write_notes(shop, 12)
    before = json.loads(cortex("note", "list", "--all", "--json", cwd=shop.path).stdout)
    damage_all_but_notes(db_of(shop))

    # Every command says what is wrong and what to run, in one line.
    for args in (["history", "shop/m1.py::f1"], ["status"], ["note", "list"], ["index"]):
        out = cortex(*args, cwd=shop.path)
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.count("\n") == 1 and "cortex index --rebuild" in out.stderr, out.stderr

    out = cortex("index", "--rebuild", cwd=shop.path)
    assert out.returncode == 0, out.stderr
    moved = re.search(r"moved aside to (\S+)", out.stdout).group(1)
    assert re.fullmatch(re.escape(str(db_of(shop))) + r"\.corrupt-\d{8}T\d{6}Z", moved)
    assert Path(moved).is_file() and store_damage(Path(moved))
    assert f"{len(before)} notes saved from it" in out.stdout
    assert "rebuilt 12 new commits" in out.stdout

    after = json.loads(cortex("note", "list", "--all", "--json", cwd=shop.path).stdout)
    keep = ("target", "text", "author", "valid_from", "valid_until", "recorded_at")
    assert sorted(tuple(n[k] for k in keep) for n in after) == \
        sorted(tuple(n[k] for k in keep) for n in before)
    assert {n["text"] for n in after} == set(texts)
    # Supersession and anchors come back as they were.
    old = next(n for n in after if n["text"] == texts[0])
    new = next(n for n in after if n["text"] == "note 0, corrected")
    assert old["superseded_by"] == new["id"] and old["valid_until"] is not None
    assert all(a.get("stale") == b.get("stale") for a, b in zip(
        sorted(after, key=lambda n: n["recorded_at"]), sorted(before, key=lambda n: n["recorded_at"])))
    history = cortex("history", "shop/m1.py::f1", cwd=shop.path)
    assert history.returncode == 0 and "3 commits" in history.stdout, history.stdout


def test_a_destroyed_header_still_gives_back_the_notes(shop):
    index_repository(shop.path, db_of(shop), Settings(), model="none")
    write_notes(shop, 5)
    overwrite(db_of(shop), [1])
    assert "not a readable Cortex database" in cortex("history", "shop/m1.py::f1",
                                                      cwd=shop.path).stderr
    out = cortex("index", "--rebuild", cwd=shop.path)
    assert out.returncode == 0, out.stderr
    assert "the index was damaged (file is not a database)" in out.stdout
    assert "6 notes saved from it, read page by page" in out.stdout
    listed = cortex("note", "list", "--all", cwd=shop.path).stdout
    assert "note 4: why this is so" in listed and "(superseded)" in listed


def test_a_rebuild_stopped_after_moving_the_store_aside_keeps_the_notes(shop):
    """The disk fills up (here: a file size limit) once the damaged store is moved aside, while
    the new one is made: one line says so, and the next run still brings the notes back, though
    it finds a sound, empty store in place."""
    import resource
    index_repository(shop.path, db_of(shop), Settings(), model="none")
    write_notes(shop, 5)
    overwrite(db_of(shop), [1])

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (32768, 32768))
    full = subprocess.run([sys.executable, "-m", "cortex_core", "index", "--rebuild"],
                          cwd=shop.path, capture_output=True, text=True, timeout=300,
                          preexec_fn=small_files,
                          env=dict(os.environ, PYTHONPATH=str(PROJECT), CORTEX_MODEL="none"))
    assert full.returncode == 1 and "Traceback" not in full.stderr, full.stderr
    assert full.stderr.count("\n") == 1 and "is the disk full?" in full.stderr
    assert list(db_of(shop).parent.glob("cortex.db.corrupt-*[0-9]Z"))   # it was moved aside

    out = cortex("index", "--rebuild", cwd=shop.path)
    assert out.returncode == 0, out.stderr
    assert "an earlier rebuild stopped before its notes were saved" in out.stdout
    assert "6 notes saved from it, read page by page" in out.stdout
    listed = cortex("note", "list", "--all", cwd=shop.path).stdout
    assert "note 4: why this is so" in listed and "(superseded)" in listed
    again = cortex("index", "--rebuild", cwd=shop.path)   # once only
    assert again.returncode == 0 and "moved aside" not in again.stdout
    assert len(json.loads(cortex("note", "list", "--all", "--json", cwd=shop.path).stdout)) == 6


def test_notes_on_damaged_pages_are_lost_and_the_count_says_so(shop):
    index_repository(shop.path, db_of(shop), Settings(), model="none")
    write_notes(shop, 400)     # several leaf pages of notes
    db = db_of(shop)
    notes_pages = table_pages(db)["notes"]
    assert len(notes_pages) >= 4
    leaves = _leaf_pages(db, notes_pages)
    overwrite(db, [leaves[1]] + [p for p in table_pages(db)["items"]])
    readable = len(_notes_by_pages(db))
    assert 0 < readable < 401
    out = cortex("index", "--rebuild", cwd=shop.path)
    assert out.returncode == 0, out.stderr
    saved = int(re.search(r"(\d+) notes saved from it", out.stdout).group(1))
    listed = json.loads(cortex("note", "list", "--all", "--json", cwd=shop.path).stdout)
    assert saved == len(listed) == readable


def _leaf_pages(db: Path, pages: list[int]) -> list[int]:
    with open(db, "rb") as f:
        data = f.read()
    return [p for p in pages if data[(p - 1) * 4096] == 0x0D]


def test_notes_still_in_the_write_ahead_log_are_read_too(shop, tmp_path):
    """A crash leaves the newest notes in cortex.db-wal; the damaged file's log comes along."""
    index_repository(shop.path, db_of(shop), Settings(), model="none")
    db = db_of(shop)
    con = open_note_writer(db)
    con.execute("pragma wal_autocheckpoint=0")
    add_note(con, shop.path, "shop/m1.py", "only in the log")
    copy = tmp_path / "copy.db"          # the files as a crash would leave them
    copy.write_bytes(db.read_bytes())
    Path(f"{copy}-wal").write_bytes(Path(f"{db}-wal").read_bytes())
    con.close()
    overwrite(copy, [1])
    assert [n["text"] for n in _notes_by_pages(copy)] == ["only in the log"]


def test_salvage_is_safe_on_hostile_files(tmp_path):
    """Pages that claim cells everywhere, records that claim huge lengths, overflow chains that
    loop: nothing raises, nothing hangs, nothing invented."""
    rng = random.Random(3)
    page = bytearray(4096)
    page[0] = 0x0D
    page[3:5] = (2000).to_bytes(2, "big")                    # more cells than fit
    for i in range(2000):
        page[8 + 2 * i:10 + 2 * i] = (8 + (i * 7) % 4000).to_bytes(2, "big")
    looping = bytearray(4096)
    looping[0] = 0x0D
    looping[3:5] = (1).to_bytes(2, "big")
    looping[8:10] = (100).to_bytes(2, "big")
    looping[100:103] = bytes([0x87, 0xFF, 0x7F])             # a payload of ~130 KB ...
    looping[103] = 1                                         # ... rowid 1
    looping[104:117] = bytes([13, 0, 13, 13, 0, 0, 13, 1, 0, 1, 0, 0, 0])   # a notes shape
    hostile = tmp_path / "hostile.db"
    blobs = [bytes(page), bytes(looping)] + [rng.randbytes(4096) for _ in range(50)]
    hostile.write_bytes(b"".join(blobs))
    assert _notes_by_pages(hostile) == []
    assert salvage_notes(hostile) == ([], "pages")
    assert salvage_notes(tmp_path / "missing.db") == ([], "pages")


# -- the servers, finding a damaged store -------------------------------------------------------

from lsprotocol import types  # noqa: E402
from pygls.exceptions import JsonRpcException  # noqa: E402

from ls_harness import Session, plain  # noqa: E402
from test_mcp import error, make_project, ok, server  # noqa: E402


@pytest.fixture
def damaged(tmp_path):
    """The sample project, indexed, with a note, then its derived pages overwritten."""
    project = make_project(tmp_path / "widgets")
    index_repository(project.path, db_of(project), Settings(), model="none")
    con = open_note_writer(db_of(project))
    add_note(con, project.path, "pkg/core.py::compute", "compute must stay pure")
    con.close()
    damage_all_but_notes(db_of(project))
    return project


async def test_the_language_server_names_the_fix_and_keeps_answering(client, damaged):
    lsp = Session(client)
    await lsp.start(damaged.path, options={"indexOnStart": False}, wait_index=False)
    uri = lsp.open(damaged.path / "pkg/core.py")
    assert await lsp.hover(uri, 3, 5) is None            # nothing to show, no error pop-up
    with pytest.raises(JsonRpcException, match=r"cortex index --rebuild"):
        await lsp.request("cortex/symbolHistory", {"target": "pkg/core.py::compute"})
    status = plain(await lsp.request("cortex/status", {}))
    assert "cortex index --rebuild" in status["repositories"][0]["databaseProblem"]
    # The fix, from the editor: a rebuild through the server keeps the note.
    await lsp.command("cortex.reindex", {"rebuild": True})
    await lsp.indexed(1)
    value = await lsp.hover(uri, 3, 5)
    assert "5 changes" in value and "compute must stay pure" in value
    assert not [m for m in lsp.client.messages if m.type == types.MessageType.Error]


async def test_mcp_tools_return_an_error_naming_the_fix(damaged):
    async with server("--repo", str(damaged.path)) as client:
        message = await error(client, "symbol_history", target="pkg/core.py::compute")
        assert "rebuild=true" in message and "cortex index --rebuild" in message, message
        message = await error(client, "status")
        assert "rebuild=true" in message, message
        result = await ok(client, "sync", rebuild=True, wait_seconds=120)
        assert result.structured_content["summary"]["recovery"]["notes_saved"] == 1
        data = (await ok(client, "symbol_history", target="pkg/core.py::compute")
                ).structured_content
        assert [n["text"] for n in data["notes"]] == ["compute must stay pure"]

"""Notes written while an index run writes: neither stops the other (store/turns.py).

Before the turns, a note written during a run waited out its busy timeout and failed ("the
index is busy") when the run's back-to-back transactions kept taking the lock first, and a note
that wrote between the run's read and its write stopped the run ("database is locked")."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time

import apsw
import pytest

from cortex_core.memory.notes import add_note
from cortex_core.store import turns
from cortex_core.store.store import hand_over, open_note_writer, open_writer


@pytest.fixture
def indexed(repo, cortex):
    repo.write("a.py", "x = 1\n")
    repo.commit("one", days_ago=2)
    cortex.index(model="none")
    return cortex


def _notes(db) -> int:
    con = apsw.Connection(str(db))
    try:
        return con.execute("select count(*) from notes").get
    finally:
        con.close()


def test_the_indexers_transactions_take_the_write_lock_first(indexed):
    """A transaction of the writer's connection holds the write lock from its start (a note
    cannot write between its reads and its writes), and still nests and rolls back."""
    con = open_writer(indexed.db)
    other = apsw.Connection(str(indexed.db))
    other.setbusytimeout(0)
    with con:
        before = con.execute("select count(*) from meta").get   # a read first
        with pytest.raises(apsw.BusyError):
            other.execute("begin immediate")                     # a note's write waits
        with pytest.raises(ValueError):
            with con:   # a savepoint inside: its error rolls back only its own writes
                con.execute("insert into meta(key, value) values ('inner', '1')")
                raise ValueError
        con.execute("insert into meta(key, value) values ('outer', '1')")
    assert not con.in_transaction
    other.execute("begin immediate")   # free once the transaction committed
    other.execute("rollback")
    assert con.execute("select count(*) from meta").get == before + 1
    with pytest.raises(KeyError):
        with con:
            con.execute("insert into meta(key, value) values ('gone', '1')")
            raise KeyError
    assert not con.in_transaction
    assert con.execute("select count(*) from meta where key in ('inner', 'gone')").get == 0


def test_a_waiting_note_is_written_before_the_indexers_next_item(indexed, repo):
    """The note holds its turn and waits for the write lock; the indexer's loop, between two
    items (hand_over), commits and lets it write before it begins again. Without the turn the
    indexer took the lock back first (the note's busy handler sleeps between its tries)."""
    con = open_writer(indexed.db)
    note = open_note_writer(indexed.db)
    waiting = threading.Event()

    def busy(tries: int) -> bool:   # SQLite's retry, with a sign that the note now waits
        waiting.set()
        time.sleep(0.001)
        return tries < 10_000

    note.setbusyhandler(busy)
    errors: list[BaseException] = []

    def write() -> None:
        try:
            add_note(note, repo.path, None, "written while the index run writes")
        except BaseException as exc:   # raised in the test's thread below
            errors.append(exc)

    writer = threading.Thread(target=write)
    with con:
        con.execute("insert into meta(key, value) values ('item 1', '1')")
        writer.start()
        assert waiting.wait(10)
        hand_over(con)
        assert con.execute("select count(*) from notes").get == 1
        con.execute("insert into meta(key, value) values ('item 2', '1')")
    writer.join(10)
    assert not errors and not writer.is_alive()
    assert con.execute("select count(*) from meta where key like 'item %'").get == 2


def test_a_stopped_holder_of_a_turn_does_not_stop_the_other_side(indexed, repo, monkeypatch):
    """A note writer stopped while it holds `.note` (SIGSTOP, a debugger), or an indexer while
    it holds `.turn`: the other side goes on after its wait, as before the turns."""
    monkeypatch.setattr(turns, "INDEXER_WAIT_SECONDS", 0.05)
    monkeypatch.setattr(turns, "NOTE_WAIT_SECONDS", 0.05)
    con = open_writer(indexed.db)
    for suffix, side in ((".note", "indexer"), (".turn", "note")):
        held = os.open(f"{indexed.db}{suffix}", os.O_RDWR)
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            if side == "indexer":
                with con:
                    con.execute("insert into meta(key, value) values ('went on', '1')")
            else:
                note = open_note_writer(indexed.db)
                add_note(note, repo.path, None, "went on")
                note.close()
        finally:
            os.close(held)
    assert con.execute("select count(*) from meta where key = 'went on'").get == 1
    assert con.execute("select count(*) from notes where text = 'went on'").get == 1


def _more_history(repo, commits: int) -> None:
    """`commits` more commits on main, each changing a function of one of eight modules, by one
    `git fast-import`: an index run of a few seconds."""
    stream = []
    for n in range(commits):
        stamp = repo.now - 86400 + n
        body = "".join(f"def f{k}():\n    return {n if k == n % 5 else k}\n\n" for k in range(5))
        data = body.encode()
        stream.append(f"commit refs/heads/main\ncommitter Ann <ann@example.com> {stamp} +0000\n"
                      f"data <<EOF\nchange {n}\nEOF\n"
                      + ("from refs/heads/main^0\n" if n == 0 else "")
                      + f"M 100644 inline pkg/m{n % 8}.py\ndata {len(data)}\n{body}\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.path, check=True,
                   input="".join(stream).encode(), capture_output=True)
    repo.git("reset", "-q", "--hard")


def test_notes_written_back_to_back_during_an_index_run_neither_fail_nor_stop_it(indexed, repo):
    """A real `cortex index` in its own process while this one writes notes without a pause:
    before the turns, the run stopped at once ("the index is busy")."""
    _more_history(repo, 400)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cortex_core", "index", "--repo", str(repo.path), "--db",
         str(indexed.db), "--model", "none", "--jobs", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    note = open_note_writer(indexed.db)
    written = during = 0
    try:
        while proc.poll() is None:
            add_note(note, repo.path, None, f"note {written}")
            written += 1
            during += proc.poll() is None
    finally:
        note.close()
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert during >= 1   # the notes were written while the run wrote
    assert _notes(indexed.db) == written
    con = indexed.reader()
    assert con.execute("select count(*) from commits").get == 401


def test_a_note_writer_outwaited_once_is_not_waited_for_again_until_seen_free(indexed,
                                                                             monkeypatch):
    """A review: a note writer stopped (Ctrl-Z, a debugger) while it held `.note` made every
    item of the run a transaction of its own, each after the indexer's full wait: 10 s an
    item. Outwaited once, it is looked for about once a second only (STUCK_LOOK_SECONDS), until
    `.note` is seen free."""
    monkeypatch.setattr(turns, "INDEXER_WAIT_SECONDS", 0.05)
    monkeypatch.setattr(turns, "STUCK_LOOK_SECONDS", 3600.0)
    monkeypatch.setattr(turns, "LOOK_SECONDS", 0.0)
    con = open_writer(indexed.db)
    held = os.open(f"{indexed.db}.note", os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_SH)
        assert con.turns.wanted() and not con.turns.stuck
        with con:   # waits INDEXER_WAIT_SECONDS, then goes on
            con.execute("insert into meta(key, value) values ('one', '1')")
        assert con.turns.stuck and not con.turns.wanted()   # the next look is an hour away
        fcntl.flock(held, fcntl.LOCK_UN)
        with con:   # the next transaction's begin looks
            con.execute("insert into meta(key, value) values ('two', '1')")
        assert not con.turns.stuck   # seen free
    finally:
        os.close(held)


def test_notes_are_written_while_a_stopped_note_writer_holds_its_turn(indexed, repo,
                                                                      monkeypatch):
    """A second review: once the indexer stopped waiting for a stopped note writer, it stopped
    handing over, and every other note failed after its 5 s. It now hands over about once a
    second and waits a moment (STUCK_WAIT_SECONDS), which lets live notes write; notes share
    `.note` and do not wait for the stopped one."""
    monkeypatch.setattr(turns, "INDEXER_WAIT_SECONDS", 0.05)
    monkeypatch.setattr(turns, "STUCK_LOOK_SECONDS", 0.05)
    con = open_writer(indexed.db)
    held = os.open(f"{indexed.db}.note", os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_SH)   # the stopped note writer
    done = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        note = open_note_writer(indexed.db)
        try:
            for n in range(3):
                add_note(note, repo.path, None, f"live note {n}")
        except BaseException as exc:   # raised in the test's thread below
            errors.append(exc)
        finally:
            note.close()
            done.set()

    writer = threading.Thread(target=write)
    try:
        with con:
            con.execute("insert into meta(key, value) values ('item 0', '0')")
        assert con.turns.stuck
        writer.start()
        items, deadline = 0, time.monotonic() + 60
        with con:   # the run's loop: an item, then a look whether a note waits
            while not done.is_set() and time.monotonic() < deadline:
                items += 1
                con.execute("insert or replace into meta(key, value) values ('item', ?)",
                            (str(items),))
                hand_over(con)
        writer.join(10)
    finally:
        os.close(held)
    assert not errors, errors
    assert con.execute("select count(*) from notes where text like 'live note %'").get == 3


def test_a_notes_waits_for_the_turns_and_the_lock_are_one_wait(indexed, monkeypatch):
    """A review: a note waited 5 s for the indexer's `.turn`, 5 s for another note's `.note`,
    then the busy timeout's 5 s. The three now share NOTE_WAIT_SECONDS: what the turns took is
    not left to the lock."""
    monkeypatch.setattr(turns, "NOTE_WAIT_SECONDS", 0.1)
    with turns.note_turn(str(indexed.db)) as left:
        assert 0.0 < left <= 0.1
    held = os.open(f"{indexed.db}.turn", os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)   # an indexer stopped while it waits for a note
        with turns.note_turn(str(indexed.db)) as left:
            assert left == 0.0
    finally:
        os.close(held)


def test_an_index_run_behind_a_long_note_import_is_told_what_holds_the_lock(indexed,
                                                                            monkeypatch):
    """A note import holds the write lock for its whole transaction: an index run that waited
    for it past its waits says that another process holds the lock, not "an indexer"."""
    from cortex_core.errors import StoreBusy
    monkeypatch.setattr(turns, "INDEXER_WAIT_SECONDS", 0.05)
    con = open_writer(indexed.db)
    con.setbusytimeout(50)
    note = open_note_writer(indexed.db)
    with turns.note_turn(str(indexed.db)):
        note.execute("begin immediate")
        try:
            with pytest.raises(StoreBusy, match="another process holds the index's write lock"):
                with con:
                    con.execute("insert into meta(key, value) values ('x', '1')")
        finally:
            note.execute("rollback")
    assert not con.in_transaction
    with con:
        con.execute("insert into meta(key, value) values ('x', '1')")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")
def test_a_note_writer_refused_by_the_store_leaves_no_file_open(indexed):
    """A review: the note writer's busy handler is its own method, a cycle the garbage
    collector cannot break; a connection refused (a store of a newer Cortex) stayed open, with
    its files, for the life of the process (an MCP server's, retrying)."""
    import gc

    from cortex_core.errors import NewerSchema

    def open_files() -> int:
        return sum(os.path.realpath(f"/proc/self/fd/{fd}") == str(indexed.db.resolve())
                   for fd in os.listdir("/proc/self/fd"))

    con = apsw.Connection(str(indexed.db))
    con.execute("update meta set value = '9999' where key = 'schema_version'")
    con.close()
    before = open_files()
    for _ in range(5):
        with pytest.raises(NewerSchema):
            open_note_writer(indexed.db)
    gc.collect()
    assert open_files() == before

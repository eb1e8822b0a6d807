"""The areas step on real stores: exact up to max_items, sampled and streamed in blocks beyond it.

Histories are real git repositories (built with `git fast-import` when they need hundreds of
commits), indexed by the real indexer into real SQLite stores; the areas are then recomputed in
full (as after a change of the [clusters] settings) with a small max_items and block.
"""

from __future__ import annotations

import json
import subprocess
import tracemalloc
from dataclasses import replace

import numpy as np
import pytest

from cortex_core.config import ClusterSettings
from cortex_core.config import Settings
from cortex_core.index.areas import NO_AREA, _links, _vectors, min_areas, update_areas
from cortex_core.index.areas_stream import label_terms, lexical_vectors
from cortex_core.memory.spectral import SpectralSettings, distinctive_terms, spectral_clusters
from cortex_core.store.store import get_meta, open_writer

TOPICS = (["timeout", "deadline", "slow", "hang", "stall", "latency", "waiting", "deadlines"],
          ["cache", "memoize", "lru", "eviction", "stale", "caching", "memo", "caches"])
FILES = ("client.py", "cache.py")


def message(n: int) -> str:
    """A commit subject of three words of one topic (alternating), no numbers: the vocabulary
    stays the same however long the history."""
    words = TOPICS[n % 2]
    return " ".join(words[(n * step) % len(words)] for step in (1, 3, 5)).capitalize()


def fast_history(repo, commits: int) -> None:
    """`commits` commits on main, alternating between the two topics and their files, written
    by one `git fast-import` (one git process instead of three per commit)."""
    out = []
    for n in range(commits):
        text = message(n).encode()
        content = f"value = {n}\n".encode()
        stamp = repo.now - (commits - n) * 3600
        out.append(b"commit refs/heads/main\n")
        out.append(f"mark :{n + 1}\nauthor Ann <ann@example.com> {stamp} +0000\n"
                   f"committer Ann <ann@example.com> {stamp} +0000\n".encode())
        out.append(b"data %d\n%s\n" % (len(text), text))
        if n:
            out.append(f"from :{n}\n".encode())
        out.append(f"M 644 inline {FILES[n % 2]}\n".encode())
        out.append(b"data %d\n%s\n" % (len(content), content))
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.path, input=b"".join(out),
                   check=True, capture_output=True)
    repo.git("reset", "-q", "--hard")


def recompute(db, block: int, max_items: int):
    """A full recompute (the basis forgotten, as after a settings change); the step's labels."""
    con = open_writer(db)
    with con:
        con.execute("delete from meta where key = 'areas_basis'")
    k = update_areas(con, replace(ClusterSettings(), max_items=max_items), None, block=block)
    return con, k


def labels_of(con) -> dict[int, int]:
    return dict(con.execute("select id, cluster from items"))


@pytest.fixture(params=["none", "model"])
def history(request, repo, cortex, tiny_model):
    """48 commits of two topics, indexed without a model (lexical areas) or with the tiny one."""
    fast_history(repo, 48)
    cortex.index(model="none" if request.param == "none" else tiny_model)
    return cortex


def test_up_to_max_items_the_areas_are_those_of_every_item_in_memory(history):
    """Below max_items nothing is sampled: labels, centroids and terms are what clustering all
    the vectors and links at once gives, though the terms are counted in blocks of 5 items."""
    con, k = recompute(history.db, block=5, max_items=1000)
    basis = "lexical" if get_meta(con, "embed_model") is None else "model"
    ids, vectors, df = _vectors(con, basis)
    links = _links(con, {item: n for n, item in enumerate(ids)})
    settings = ClusterSettings()
    expected = spectral_clusters(vectors, links, SpectralSettings(
        knn=settings.knn, min_clusters=min_areas(len(ids), settings),
        max_clusters=settings.max_clusters, max_items=1000))
    texts = dict(con.execute("select id, title || ' ' || body from items"))
    terms = distinctive_terms(expected.labels, [label_terms(texts[i]) for i in ids], top=5)
    assert k == expected.k >= 2
    assert [labels_of(con)[i] for i in ids] == expected.labels.tolist()
    stored = con.execute("select terms, centroid from clusters order by id").fetchall()
    assert [json.loads(t) for t, _ in stored] == terms
    assert all(np.array_equal(np.frombuffer(c, dtype=np.float32), expected.centroids[n])
               for n, (_, c) in enumerate(stored))
    if df is not None:
        assert json.loads(get_meta(con, "areas_df")) == df


def test_beyond_max_items_a_sample_is_clustered_and_the_rest_labelled_in_blocks(history):
    con, k = recompute(history.db, block=5, max_items=12)
    labels = labels_of(con)
    subjects = dict(con.execute("select i.id, c.subject from items i join commits c"
                                " on c.id = i.commit_id"))
    assert k >= 2 and None not in labels.values() and NO_AREA not in labels.values()
    # No area mixes the topics: the commits outside the sample voted like the sampled ones.
    by_topic = [{labels[i] for i, s in subjects.items() if s.split()[0].lower() in TOPICS[t]}
                for t in (0, 1)]
    assert by_topic[0] and by_topic[1] and not by_topic[0] & by_topic[1]
    # Numbered by size, sizes and terms stored for every area.
    sizes = [s for _, s in con.execute("select id, size from clusters order by id")]
    assert sizes == sorted(sizes, reverse=True) and sum(sizes) == len(labels)
    assert sizes == [list(labels.values()).count(c) for c in range(k)]
    words = [set(json.loads(t)) for (t,) in con.execute("select terms from clusters order by id")]
    assert all(w and w <= set(TOPICS[0]) | set(TOPICS[1]) for w in words)


def test_the_sampled_areas_do_not_depend_on_the_block_and_repeat(history):
    """Blocks change the votes by float32 rounding at most (BLAS may sum a block's products in
    another order): labels could differ only on an exact tie, which these items do not have."""
    con, _ = recompute(history.db, block=5, max_items=12)
    first = labels_of(con), con.execute("select * from clusters order by id").fetchall()
    for block in (5, 7, 4096):
        con, _ = recompute(history.db, block=block, max_items=12)
        assert (labels_of(con), con.execute("select * from clusters order by id").fetchall()) \
            == first


def test_the_lexical_document_frequencies_are_counted_over_every_item(repo, cortex):
    fast_history(repo, 30)
    cortex.index(model="none")
    con, _ = recompute(cortex.db, block=4, max_items=10)
    texts = [t for (t,) in con.execute("select title || ' ' || body from items order by id")]
    assert json.loads(get_meta(con, "areas_df")) == lexical_vectors(texts)[1]
    # and a new item placed afterwards is weighted with them: it joins its topic's area
    repo.write("cache.py", "value = 'new'\n")
    repo.commit("Stale lru eviction", days_ago=0)
    same = Settings(clusters=replace(ClusterSettings(), max_items=10))
    assert cortex.index(same).areas is None            # incremental: a block of one
    con = open_writer(cortex.db)
    cluster = dict(con.execute("select c.subject, i.cluster from items i join commits c"
                               " on c.id = i.commit_id"))
    cache = {c for s, c in cluster.items() if s.split()[0].lower() in TOPICS[1]}
    assert cluster["Stale lru eviction"] in cache and len(cache) == 1


def _traced_peak(db, block: int, max_items: int) -> int:
    tracemalloc.start()
    try:
        recompute(db, block=block, max_items=max_items)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_beyond_max_items_memory_does_not_grow_with_the_items(repo, cortex, tmp_path):
    """Python's allocations (numpy's included) during a full recompute, at 150 and 450 items,
    max_items 30, blocks of 32: the larger history adds what its item ids and labels take,
    not its vectors (450 × 512 float32 alone are 0.9 MB, and the in-memory path held several
    copies of them)."""
    fast_history(repo, 450)
    cortex.index(model="none")
    short = tmp_path / "short.db"
    repo.git("checkout", "-q", "HEAD~300")
    type(cortex)(repo, short).index(model="none")
    assert open_writer(short).execute("select count(*) from items").get == 150
    recompute(short, block=32, max_items=30)   # imports and first-call caches, untraced
    small, large = _traced_peak(short, 32, 30), _traced_peak(cortex.db, 32, 30)
    assert large < 1.25 * small and large < 450 * 512 * 4


def test_commit_items_are_made_in_history_order_whatever_the_commit_ids(repo, cortex):
    """A review: commit ids follow the order worker processes deliver commits in, and the
    areas cluster the items in id order (seeded), so two runs of one history gave 2,424 of
    requests' 7,658 items other areas. The items are made in history's order (seq) instead."""
    from cortex_core.index.memory import add_commit_items
    for n in range(4):
        repo.write("a.py", f"def f():\n    return {n}\n")
        repo.commit(f"change {n}", days_ago=10 - n)
    cortex.index(Settings(), model="none")
    con = open_writer(cortex.db)
    # As if the workers had delivered the commits in reverse: seq against id.
    con.execute("update commits set seq = -seq;"
                " delete from items_fts where rowid in (select id from items where commit_id"
                " is not null); delete from items_code where rowid in (select id from items"
                " where commit_id is not null); delete from item_symbols where item_id in"
                " (select id from items where commit_id is not null); delete from item_files"
                " where item_id in (select id from items where commit_id is not null);"
                " delete from items where commit_id is not null")
    add_commit_items(con)
    made = [seq for (seq,) in con.execute(
        "select c.seq from items i join commits c on c.id = i.commit_id order by i.id")]
    con.close()
    assert made == sorted(made) and len(made) == 4


def test_an_areas_files_tied_in_use_are_listed_by_path(repo, cortex):
    """Two files changed by the same commits tie in an area: listed by path, not in the order of
    their ids (z.py was met first), which two index runs need not share."""
    import apsw
    from cortex_core.index.areas import _hot_paths
    repo.write("z.py", "Z = 0\n")
    repo.commit("z", days_ago=30)
    for n in (1, 2):
        repo.write("z.py", f"Z = {n}\n")
        repo.write("a.py", f"A = {n}\n")
        repo.commit(f"a and z {n}", days_ago=20 - n)
    cortex.index()
    con = apsw.Connection(str(cortex.db))
    ids = dict(con.execute("select path, id from files"))
    assert ids["z.py"] < ids["a.py"]
    con.execute("update items set cluster = 0 where commit_id in (select id from commits"
                " where subject like 'a and z%')")
    assert _hot_paths(con, 0) == ["a.py", "z.py"]


def test_an_update_reads_the_new_items_not_every_item(repo, cortex):
    """An incremental update finds the items without an area, and counts each area's items and
    span, through the index items_cluster: no statement of the step steps through the items
    table row by row (SQLite's full-scan counter), as both did on every update (sympy: 67,000
    items, 60 ms). The new item gets the area the index run gave it."""
    import apsw
    fast_history(repo, 48)
    cortex.index(model="none")
    repo.write("cache.py", "value = 'new'\n")
    repo.commit("Stale lru eviction", days_ago=0)
    assert cortex.index(model="none").areas is None      # placed incrementally
    con = open_writer(cortex.db)
    placed = labels_of(con)
    sizes = con.execute("select id, size, first_time, last_time from clusters order by id").fetchall()
    newest = max(placed)
    con.execute("update items set cluster = null where id = ?", (newest,))   # as it was inserted
    scans: dict[str, int] = {}
    con.trace_v2(apsw.SQLITE_TRACE_PROFILE, lambda event: scans.__setitem__(
        event["sql"], scans.get(event["sql"], 0)
        + event["stmt_status"]["SQLITE_STMTSTATUS_FULLSCAN_STEP"]))
    assert update_areas(con, ClusterSettings(), None) is None
    con.trace_v2(0, None)
    assert labels_of(con) == placed
    assert con.execute("select id, size, first_time, last_time from clusters"
                       " order by id").fetchall() == sizes
    assert any("from items" in sql for sql in scans)
    assert {sql: n for sql, n in scans.items() if "from items" in sql and n} == {}


def test_new_items_are_placed_in_python_as_numpy_places_them(repo, cortex):
    """A few new items of the lexical basis are placed in float64 Python, not numpy's float32
    (which an update would import for them): the same centroid for every item of a real store
    where the nearest two are far enough apart to tell, and no answer (numpy's then) where they
    tie, as two equal centroids do."""
    from cortex_core.index.areas import nearest_in_python
    from cortex_core.index.areas_stream import stored_df
    from cortex_core.memory.spectral import assign
    fast_history(repo, 48)
    cortex.index(model="none")
    con = open_writer(cortex.db)
    df = stored_df(con)
    blobs = [blob for (blob,) in con.execute("select centroid from clusters order by id")]
    matrix = np.vstack([np.frombuffer(blob, dtype=np.float32) for blob in blobs])
    texts = [text for (text,) in con.execute("select title || ' ' || body from items order by id")]
    texts.append("...")   # no terms: no vector, no area
    numpy_labels = assign(lexical_vectors(texts, df)[0], matrix).tolist()
    python_labels = [nearest_in_python([text], df, blobs) for text in texts]
    told = [(label, [want]) for label, want in zip(python_labels, numpy_labels) if label]
    assert len(told) > 0.9 * len(texts) and all(label == want for label, want in told)
    assert numpy_labels[-1] == -1 and python_labels[-1] == [-1]
    assert nearest_in_python(texts[:1], df, [blobs[0], blobs[0]]) is None


def test_an_update_without_a_model_places_its_items_without_numpy(repo, cortex):
    """A one-commit update of a lexical store places its item in Python: numpy is not
    imported by the run at all."""
    import sys
    fast_history(repo, 48)
    cortex.index(model="none")
    repo.write("cache.py", "value = 'new'\n")
    repo.commit("Stale lru eviction", days_ago=0)
    script = ("import sys; from pathlib import Path; from cortex_core.config import Settings;"
              " from cortex_core.index.ingest import index_repository;"
              f" r = index_repository(Path({str(repo.path)!r}), Path({str(cortex.db)!r}),"
              " Settings(), model='none'); print(r.areas, 'numpy' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert run.stdout.split() == ["None", "False"]
    con = open_writer(cortex.db)
    assert con.execute("select count(*) from items where cluster is null").get == 0


def test_an_item_written_while_the_areas_are_counted_is_left_out(repo, cortex):
    """A review: a note written while the areas step ran (its item not among the ids the step
    had read) made counting the areas' terms fail with IndexError, and the index run with it."""
    from cortex_core.index.areas_stream import count_terms
    fast_history(repo, 12)
    cortex.index(model="none")
    con = cortex.reader()
    ids = [i for (i,) in con.execute("select id from items order by id")]
    labels = [n % 2 for n in range(len(ids))]
    whole = count_terms(con, ids, labels, block=5)
    late = count_terms(con, ids[:-1], labels[:-1], block=5)   # the newest item not read
    early = count_terms(con, ids[1:], labels[1:], block=5)    # nor the first
    assert sum(whole.sizes) == len(ids) and sum(late.sizes) == sum(early.sizes) == len(ids) - 1


@pytest.mark.parametrize("max_items", [1_000, 24])   # every item clustered; a sample of them
def test_a_note_written_while_the_areas_are_computed_waits_for_the_next_run(repo, cortex,
                                                                             tmp_path, max_items):
    """A review: a note's item written (from another connection) while the areas step read the
    items made it fail with IndexError, or, past max_items, gave its label to the newest item
    read (the code before fails the second case). Written at points of a full recompute
    (SQLite's progress handler, every 50 steps of the step's statements; those in the step's
    own write transaction come after it), the areas are those of the store without the note,
    its item left to the next run."""
    import shutil

    from cortex_core.errors import StoreBusy
    from cortex_core.memory.notes import add_note
    from cortex_core.store.store import open_note_writer
    fast_history(repo, 60)
    cortex.index(model="none")
    with open_writer(cortex.db) as con:
        con.execute("delete from meta where key = 'areas_basis'")
    base = tmp_path / "base.db"
    shutil.copy(cortex.db, base)   # the writer checkpointed and closed: the file is whole
    settings = replace(ClusterSettings(), max_items=max_items)

    def note(db, wait: bool = True) -> None:
        writer = open_note_writer(db)
        if not wait:   # the step's own write transaction holds the lock: the note comes after
            writer.setbusytimeout(0)
        try:
            add_note(writer, repo.path, "client.py", "the deadline is the server's")
        finally:
            writer.close()

    def recompute(at: int | None, before: bool = False) -> tuple[int, dict]:
        db = tmp_path / f"run{at}{before}.db"
        shutil.copy(base, db)
        if before:
            note(db)
        con = open_writer(db)
        calls, waiting = [0], []

        def handler() -> bool:
            calls[0] += 1
            if calls[0] == at:
                try:
                    note(db, wait=False)
                except StoreBusy:
                    waiting.append(at)
            return False   # go on

        con.set_progress_handler(handler, 50)
        update_areas(con, settings, None, block=16)
        con.set_progress_handler(None, 0)
        if waiting:
            note(db)
        return calls[0], dict(con.execute("select id, cluster from items"))

    total, without = recompute(None)
    _, with_note = recompute(None, before=True)
    (note_item,) = with_note.keys() - without.keys()
    left = {**without, note_item: None}
    assert total > 20 and left != with_note
    for at in sorted({1, 2, 3, 5, 8, total // 8, total // 4, total // 2, 3 * total // 4}):
        assert recompute(at)[1] == left, at


def test_an_io_error_in_the_areas_reads_is_the_error_raised(repo, cortex):
    """A review: SQLite rolls a transaction back on an I/O error, even a read's; the step's
    read snapshot then committed a transaction that was gone, and raised `cannot commit - no
    transaction is active` instead of the disk's error (a VFS that fails the reads past a
    point of the step, made the default for the test's connections)."""
    import apsw
    fast_history(repo, 60)
    cortex.index(model="none")
    armed = [False]

    class File(apsw.VFSFile):
        def xRead(self, amount, offset):
            if armed[0]:
                raise apsw.IOError("the disk failed")
            return super().xRead(amount, offset)

    class Failing(apsw.VFS):
        def __init__(self):
            super().__init__("failing-reads", "unix", makedefault=True)

        def xOpen(self, name, flags):
            return File("unix", name, flags)

    vfs = Failing()
    try:
        con = open_writer(cortex.db)
        with con:
            con.execute("delete from meta where key = 'areas_basis'")
        con.execute("pragma cache_size = 1")   # every page read from the file
        calls = [0]

        def handler() -> bool:
            calls[0] += 1
            armed[0] = armed[0] or calls[0] == 3
            return False

        con.set_progress_handler(handler, 50)
        with pytest.raises(apsw.IOError):
            update_areas(con, replace(ClusterSettings(), max_items=24), None, block=16)
        armed[0] = False
        con.set_progress_handler(None, 0)
        assert not con.in_transaction
        con.close()
    finally:
        armed[0] = False
        vfs.unregister()


def test_a_note_superseded_while_the_areas_are_computed_is_left_to_the_next_run(repo, cortex):
    """A note superseded (from another connection) while a full recompute reads the items: its
    item is deleted and its successor's written, which takes the same id when it was the newest
    item. The successor got the area computed for the text it replaced; it is now left to the
    next run's placement, as any item written meanwhile."""
    from cortex_core.memory.notes import add_note, supersede_note
    from cortex_core.store.store import open_note_writer
    fast_history(repo, 60)
    cortex.index(model="none")
    writer = open_note_writer(cortex.db)
    first = add_note(writer, repo.path, "client.py", "the deadline is the server's")
    cortex.index(model="none")   # the note's item placed
    con = open_writer(cortex.db)
    with con:
        con.execute("delete from meta where key = 'areas_basis'")
    old_item = con.execute("select max(id) from items").get
    assert con.execute("select note_id, cluster is not null from items where id = ?",
                       (old_item,)).fetchone() == (first.id, 1)
    calls = [0]

    def handler() -> bool:
        calls[0] += 1
        if calls[0] == 1:   # the step's first read: its snapshot has begun
            supersede_note(writer, repo.path, first.id, "a text of other words entirely")
        return False

    con.set_progress_handler(handler, 50)
    update_areas(con, ClusterSettings(), None, block=16)
    con.set_progress_handler(None, 0)
    writer.close()
    new_item, note_id, cluster = con.execute(
        "select id, note_id, cluster from items where kind = 'note'").fetchone()
    assert note_id != first.id and new_item == old_item   # the id was reused
    assert cluster is None

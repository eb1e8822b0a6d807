"""A first index run stopped before HEAD (Ctrl-C, a kill, a crash) leaves a store holding the
older part of the history, which it answers from. Every answer then says how far that reaches, in
the engine's results, the command line, the language server's words and the MCP server, until a
run reaches HEAD. Real repositories, real stores, the real command line and MCP server."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from cortex_core.features.symbol_info import HeatSettings
from cortex_core.engine import Engine
from cortex_core.errors import NotFound
from cortex_core.query.history import history
from cortex_core.query.status import status
from cortex_core.query.targets import TargetSpec
from cortex_cli import render as cli_render
from cortex_ls import render as ls_render
from cortex_mcp import render as mcp_render
from scripted_repo import DAY, ScriptedRepo


class Stop(Exception):
    """Raised from a progress callback: the run stops there, as a killed one does."""


def build(repo: ScriptedRepo) -> None:
    repo.write("pkg/core.py", "def compute(x):\n    return x\n")
    repo.commit("add compute", days_ago=400)
    for i in range(1, 4):
        repo.write("pkg/core.py", f"def compute(x):\n    return x + {i}\n")
        repo.commit(f"compute: step {i}", days_ago=400 - 30 * i)
    repo.write("pkg/late.py", "def late():\n    return 1\n")
    repo.commit("add late", days_ago=5)


def stop_first_run(cortex, monkeypatch) -> int:
    """Index until the third commit is read, then stop; the batch in flight is rolled back, so
    the store holds the two oldest commits. Returns the author time of the newest of them."""
    import cortex_core.index.ingest as ingest
    monkeypatch.setattr(ingest, "BATCH_SECONDS", 0.0)   # every commit its own transaction

    def stop(done, total, phase="commits"):
        if done == 3:
            raise Stop

    with pytest.raises(Stop):
        cortex.index(progress=stop)
    monkeypatch.undo()
    return int(cortex.repo.now - 370 * DAY)


@pytest.fixture
def stopped(repo, cortex, monkeypatch):
    build(repo)
    return stop_first_run(cortex, monkeypatch)


def month(when: int) -> str:
    return time.strftime("%Y-%m", time.gmtime(when))


def test_every_answer_says_how_far_the_stopped_run_reached(repo, cortex, stopped):
    con = cortex.reader()
    found = history(con, TargetSpec("pkg/core.py", "compute"))
    assert [e.commit.subject for e in found.entries] == ["compute: step 1", "add compute"]
    assert found.history_until == stopped and found.history_from is None
    assert status(con, cortex.db).history_until == stopped
    with Engine.open(repo.path, db=cortex.db) as engine, engine.snapshot() as snap:
        card = snap.symbol_card("pkg/core.py", "compute", limit=5, heat=HeatSettings())
        assert card.history_until == stopped and card.changes == 2
        assert snap.history_until() == stopped

    # A file the run has not reached: the miss says why it may be missing, with the fix.
    with pytest.raises(NotFound) as miss:
        history(con, TargetSpec("pkg/late.py"))
    assert f"history up to {month(stopped)} only" in miss.value.message
    assert miss.value.hint is not None and miss.value.hint.action == "continue"

    text = cli_render.history(found, now=time.time())
    assert text.startswith("pkg/core.py::compute  (function, HEAD not indexed yet)")
    # The MCP server said "gone at HEAD": an agent would take the function for deleted.
    assert mcp_render.history(found, {})[0].startswith(
        "**`pkg/core.py::compute`** · function · HEAD not indexed yet")
    # A file the run met but HEAD's table does not list yet is not gone either, nor is a line.
    whole = history(con, TargetSpec("pkg/core.py"))
    assert whole.target.alive and whole.moved_to is None
    line = history(con, TargetSpec("pkg/core.py", line=2))
    assert line.note.startswith("no symbol is known to enclose line 2: no index run has reached")
    assert text.endswith(f"note: history up to {month(stopped)} only: no index run has "
                         "reached HEAD (`cortex index` continues it, or is doing so)")
    assert ls_render.index_note(False, None, stopped) == (
        f"history up to {month(stopped)} only; newer commits not indexed yet (Cortex: Reindex)")
    assert ls_render.index_note(True, None, stopped).endswith("; indexing newer commits")


def test_a_run_that_reaches_head_ends_the_note(repo, cortex, stopped):
    cortex.index()
    con = cortex.reader()
    found = history(con, TargetSpec("pkg/core.py", "compute"))
    assert len(found.entries) == 4 and found.history_until is None
    assert status(con, cortex.db).history_until is None
    assert "reached HEAD" not in cli_render.history(found, now=time.time())
    assert history(con, TargetSpec("pkg/late.py")).history_until is None


def test_the_command_line_says_it_and_how_to_continue(repo, cortex, stopped):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "cortex_cli.cli", *args, "--repo",
                               str(repo.path), "--db", str(cortex.db)],
                              capture_output=True, text=True, timeout=120)

    shown = cli("history", "pkg/core.py::compute")
    assert shown.returncode == 0, shown.stderr
    assert f"history up to {month(stopped)} only" in shown.stdout
    missing = cli("history", "pkg/late.py")
    assert missing.returncode == 1
    assert missing.stderr.strip().endswith("run `cortex index` to continue it")
    listed = cli("status")
    assert f"note: history up to {month(stopped)} only" in listed.stdout

    # The commands whose results do not carry the reach say it on stderr, --json included, so
    # that their answers from the older part are not taken for the whole history's.
    note = f"cortex: note: history up to {month(stopped)} only: no index run has reached"
    for args in (("hotspots",), ("blast", "pkg/core.py::compute"),
                 ("related", "pkg/core.py"), ("search", "compute"), ("what",),
                 ("context", "pkg/core.py::compute", "--budget", "400")):
        for json_flag in ((), ("--json",)):
            answered = cli(*args, *json_flag)
            assert answered.returncode == 0, (args, answered.stderr)
            assert note in answered.stderr, (args, json_flag, answered.stderr)
            assert "reached HEAD" not in answered.stdout, args
            if json_flag:
                json.loads(answered.stdout)


def test_the_command_line_drops_the_note_once_a_run_reaches_head(repo, cortex, stopped):
    cortex.index()
    for args in (("hotspots",), ("related", "pkg/core.py"), ("search", "compute")):
        answered = subprocess.run([sys.executable, "-m", "cortex_cli.cli", *args, "--repo",
                                   str(repo.path), "--db", str(cortex.db)],
                                  capture_output=True, text=True, timeout=120)
        assert answered.returncode == 0, answered.stderr
        assert "history up to" not in answered.stderr, args


def test_a_rebuild_stopped_early_claims_nothing_gone(repo, cortex, monkeypatch):
    """A rebuild empties the store in place, then reads the history again: stopped before its
    first commit, the store's notes said their code was "gone from HEAD" and its status said
    it had "never" been indexed."""
    from cortex_core.memory.notes import add_note, list_notes
    from cortex_core.store.store import open_note_writer
    build(repo)
    cortex.index()
    writer = open_note_writer(cortex.db)
    add_note(writer, repo.path, "pkg/core.py::compute", "keep it pure")
    writer.close()

    def stop(done, total, phase="commits"):
        raise Stop
    with pytest.raises(Stop):
        cortex.index(rebuild=True, progress=stop)
    con = cortex.reader()
    [note] = list_notes(con, repo.path)
    assert note.text == "keep it pure" and not note.stale and note.stale_reason is None
    text = cli_render.status(status(con, cortex.db), repo.path, time.time())
    assert "no index run has completed since the store was made or rebuilt" in text
    assert "(never)" not in text
    cortex.index()                                     # the next run restores it all
    [note] = list_notes(cortex.reader(), repo.path)
    assert not note.stale and len(history(cortex.reader(), TargetSpec(
        "pkg/core.py", "compute")).entries) == 4


def _long_history(path, commits: int) -> None:
    """`commits` commits of `app.py` made with one `git fast-import`: enough that `--jobs 2`
    reads them in worker processes (ingest.PARALLEL_MIN_COMMITS)."""
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    stream = []
    for n in range(1, commits + 1):
        data = f"def step():\n    return {n}\n".encode()
        stream.append(f"commit refs/heads/main\nmark :{n}\n"
                      f"committer Ann <ann@example.com> {1_600_000_000 + n * 60} +0000\n"
                      f"data <<EOF\nchange {n}\nEOF\n" + (f"from :{n - 1}\n" if n > 1 else "")
                      + f"M 100644 inline app.py\ndata {len(data)}\n{data.decode()}\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, check=True,
                   input="".join(stream).encode())
    subprocess.run(["git", "checkout", "-q", "main"], cwd=path, check=True)


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid`, from /proc."""
    from pathlib import Path
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, uses pidfd")
def test_a_killed_run_leaves_no_worker_behind(tmp_path):
    """`kill -9` of `cortex index` (or the OOM killer) while worker processes read the history:
    the workers waited on their task queue for ever, each holding its memory and the packs
    open; each killed run left them behind. They exit with the parent, and the next run
    finishes the history."""
    import json
    import os
    import select
    import signal
    from pathlib import Path
    project = Path(__file__).resolve().parent.parent
    repo = tmp_path / "long"
    _long_history(repo, 600)
    run = subprocess.Popen([sys.executable, "-m", "cortex_cli.cli", "index", "--jobs", "2",
                            "--model", "none", "--progress-json"], cwd=repo,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           env=dict(os.environ, PYTHONPATH=str(project)))
    try:
        assert run.stdout is not None
        for line in run.stdout:   # the first commit read back from a worker
            event = json.loads(line)
            if event.get("phase") == "commits" and event.get("done", 0) > 0:
                break
        workers = [pid for pid in _children(run.pid)
                   if b"multiprocessing" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        assert workers
        handles = [os.pidfd_open(pid) for pid in workers]
    finally:
        run.kill()
        run.wait()
    try:
        waiting, deadline = set(handles), time.monotonic() + 60
        while waiting and time.monotonic() < deadline:   # woken as each one exits
            ready, _, _ = select.select(list(waiting), [], [], deadline - time.monotonic())
            waiting -= set(ready)
        left = [pid for pid, fd in zip(workers, handles) if fd in waiting]
        for pid in left:
            os.kill(pid, signal.SIGKILL)   # not left running after a failure
        assert not left, "worker processes outlived the killed run"
    finally:
        for fd in handles:
            os.close(fd)
    done = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "index", "--json", "-q",
                           "--model", "none"], cwd=repo, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=str(project)))
    assert done.returncode == 0, done.stderr
    answered = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "status", "--json"],
                              cwd=repo, capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, PYTHONPATH=str(project)))
    assert json.loads(answered.stdout)["commits"] == 600

"""The working copy as ranking sees it, read with `git status`, checked against libgit2's view of
the same repository (pygit2 is the oracle: the reader used it before)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace

import pygit2
import pytest
from pygit2.enums import FileStatus

from cortex_core.git.workspace import (PendingWorkspace, Workspace, operation_in_progress,
                                        parse_status, read_workspace, with_renames)
from tests.scripted_repo import ScriptedRepo

INDEX = (FileStatus.INDEX_NEW | FileStatus.INDEX_MODIFIED | FileStatus.INDEX_DELETED
         | FileStatus.INDEX_RENAMED | FileStatus.INDEX_TYPECHANGE)
TREE = (FileStatus.WT_MODIFIED | FileStatus.WT_DELETED | FileStatus.WT_RENAMED
        | FileStatus.WT_TYPECHANGE)


def libgit2_view(root) -> Workspace:
    repo = pygit2.Repository(str(root))
    branch = None if repo.head_is_unborn or repo.head_is_detached else repo.head.shorthand
    unborn = None
    if repo.head_is_unborn:   # HEAD names the branch its first commit will make
        unborn = repo.references["HEAD"].target.removeprefix("refs/heads/")
    status = sorted((os.fsencode(p).decode("utf-8", "backslashreplace"), f)   # as the index
                    for p, f in repo.status(untracked_files="normal", ignored=False).items())
    return Workspace(branch, tuple(p for p, f in status if f & TREE or f & FileStatus.CONFLICTED),
                     tuple(p for p, f in status if f & INDEX),
                     tuple(p for p, f in status if f & FileStatus.WT_NEW), unborn=unborn)


@pytest.fixture
def repo(tmp_path):
    r = ScriptedRepo(tmp_path / "r", branch="fix/retry-budget")
    r.write("a.py", "a = 1\n")
    r.write("b.py", "b = 1\n")
    r.write("dir/c.py", "c = 1\n")
    r.write("gone.py", "g = 1\n")
    r.write(".gitignore", "*.log\n")
    r.commit("start")
    return r


def test_a_busy_working_copy_reads_as_libgit2_reads_it(repo):
    repo.write("a.py", "a = 2\n")                       # staged
    (repo.path / "b.py").write_text("b = 2\n")          # modified, not staged
    repo.write("dir/c.py", "c = 2\n")
    (repo.path / "dir/c.py").write_text("c = 3\n")      # staged and modified again
    (repo.path / "gone.py").unlink()                    # deleted, not staged
    repo.move("dir/c.py", "dir/moved c.py")             # a rename, with a space
    (repo.path / "new.py").write_text("n = 1\n")        # untracked
    (repo.path / "fresh").mkdir()
    (repo.path / "fresh/x.py").write_text("x = 1\n")    # an untracked folder
    (repo.path / "debug.log").write_text("ignored\n")   # ignored
    raw = b"bad\xff\xfename.py"
    (repo.path / raw.decode("utf-8", "surrogateescape")).write_text("x = 1\n")
    repo.git("add", "--", raw.decode("utf-8", "surrogateescape"))
    ws = read_workspace(repo.path)
    assert ws == libgit2_view(repo.path)   # c.py changed too much for git to call it a rename
    assert ws.branch == "fix/retry-budget" and ws.branch_terms == ["retry", "budget"]
    assert "bad\\xff\\xfename.py" in ws.staged and "debug.log" not in ws.untracked
    assert "fresh/" in ws.untracked and "new.py" in ws.untracked


def test_detached_unborn_and_conflicted(repo, tmp_path):
    repo.git("checkout", "-q", "--detach")
    assert read_workspace(repo.path).branch is None and libgit2_view(repo.path).branch is None
    empty = ScriptedRepo(tmp_path / "empty")
    (empty.path / "first.py").write_text("x = 1\n")
    assert read_workspace(empty.path) == libgit2_view(empty.path) == Workspace(
        None, (), (), ("first.py",), unborn="main")
    # An orphan branch in a repository with history: on a branch with no commit, not detached.
    repo.git("checkout", "-q", "--orphan", "fresh")
    assert read_workspace(repo.path).unborn == "fresh" == libgit2_view(repo.path).unborn
    assert read_workspace(repo.path).branch is None
    repo.git("checkout", "-q", "-f", "fix/retry-budget")
    repo.git("checkout", "-q", "-b", "other")
    repo.write("a.py", "a = 'theirs'\n")
    repo.commit("theirs")
    repo.git("checkout", "-q", "fix/retry-budget")
    repo.write("a.py", "a = 'ours'\n")
    repo.commit("ours")
    with pytest.raises(subprocess.CalledProcessError):      # the merge stops on the conflict
        repo.git("merge", "-q", "other")
    ws = read_workspace(repo.path)
    assert ws == libgit2_view(repo.path) and "a.py" in ws.modified


def test_not_a_repository_no_git_and_a_foreign_git_dir(repo, tmp_path, monkeypatch):
    (tmp_path / "plain").mkdir()
    assert read_workspace(tmp_path / "plain") == Workspace(
        None, (), (), (), unread="git status failed (exit status 128)")
    assert read_workspace(tmp_path / "missing").unread.startswith("git could not be started")
    (repo.path / "b.py").write_text("b = 2\n")
    other = ScriptedRepo(tmp_path / "other")
    monkeypatch.setenv("GIT_DIR", str(other.path / ".git"))   # as inside another repo's hook
    assert read_workspace(repo.path).modified == ("b.py",)
    monkeypatch.setenv("PATH", str(tmp_path / "plain"))       # no git at all
    nothing = read_workspace(repo.path)
    assert nothing.changed == () and nothing.unread.startswith("git could not be started")


def test_the_reader_never_takes_the_index_lock(repo):
    (repo.path / "b.py").write_text("b = 2\n")
    lock = repo.path / ".git" / "index.lock"
    lock.write_text("")                                       # the user's git is mid-command
    assert read_workspace(repo.path).modified == ("b.py",)
    assert lock.read_text() == ""


def test_odd_output_does_not_break_the_parser():
    assert parse_status(b"") == Workspace(None, (), (), ())
    assert parse_status(b"1 \0u \0? \0# branch.head \xff\0junk\0u XY 1 2") == Workspace(
        "\ufffd", (), (), ("",))
    renamed = b"2 R. N... 100644 100644 100644 1 1 R100 new name.py\0old.py\0? x.py\0"
    assert parse_status(renamed) == Workspace(None, (), ("new name.py", "old.py"), ("x.py",),
                                              (("new name.py", "old.py"),))


def test_a_staged_rename_is_read_with_both_its_paths(repo):
    repo.write("dir/c.py", "".join(f"c{i} = {i}\n" for i in range(20)))
    repo.commit("longer c")
    repo.move("dir/c.py", "dir/moved c.py")
    ws = with_renames(read_workspace(repo.path), repo.path)
    # libgit2's view without rename detection: the same paths, the old one as deleted.
    assert replace(ws, renamed=()) == libgit2_view(repo.path) == read_workspace(repo.path)
    assert ws.staged == ("dir/c.py", "dir/moved c.py")
    assert ws.renamed == (("dir/moved c.py", "dir/c.py"),)
    assert ws.renamed_from("dir/moved c.py") == "dir/c.py" and ws.renamed_from("a.py") is None


def test_a_pending_read_gives_the_same_answer_and_leaves_no_process(repo, tmp_path):
    (repo.path / "b.py").write_text("b = 2\n")
    with PendingWorkspace(repo.path) as pending:
        assert pending.result() == read_workspace(repo.path) == libgit2_view(repo.path)
        assert pending.result() is pending.result()               # read once
    with PendingWorkspace(repo.path) as unread:                   # left before it was read
        proc = unread._proc
    assert proc is not None and proc.poll() is not None            # git was stopped and reaped
    with PendingWorkspace(tmp_path / "missing") as nowhere:        # no folder: no git at all
        answer = nowhere.result()
        assert answer.changed == answer.untracked == () and answer.branch is None
        assert answer.unread is not None and "git could not be started" in answer.unread
    (tmp_path / "plain").mkdir()
    with PendingWorkspace(tmp_path / "plain") as outside:          # not a repository
        assert outside.result().unread == "git status failed (exit status 128)"
    assert read_workspace(repo.path).unread is None


def test_a_search_lifts_what_touches_the_working_copys_changes(repo):
    """The engine reads the working copy while it searches the index; the context still counts."""
    from cortex_core.engine import Engine
    from cortex_core.operations import IndexRequest
    repo.write("a.py", "a = 2\n")
    repo.commit("retry the budget check in a")
    repo.write("b.py", "b = 2\n")
    repo.commit("retry the budget check in b")
    with Engine.open(repo.path, db=repo.path.parent / "cortex.db") as engine:
        engine.run(IndexRequest(model="none"))
        (repo.path / "b.py").write_text("b = 3\n")                 # being edited
        with engine.snapshot() as snap:
            hits = snap.search("budget check", mode="lexical").hits
            assert "touches a file you changed" in hits[0].why.context_reasons
            assert hits[0].files == ("b.py",)
            plain = snap.search("budget check", mode="lexical", workspace=False).hits
            assert all(not h.why.context_reasons for h in plain)


def test_a_git_that_does_not_answer_is_given_up_with_what_it_started(repo, tmp_path,
                                                                     monkeypatch):
    """A wrapper script in place of git (some version managers install one) that keeps a child
    running: the reader gives up at its timeout, kills the child too, and says why."""
    import time
    alive = tmp_path / "alive"
    os.mkfifo(alive)    # the wrapper's child holds it open for writing while it lives
    reader = os.open(alive, os.O_RDONLY | os.O_NONBLOCK)
    wrappers = tmp_path / "bin"
    wrappers.mkdir()
    (wrappers / "git").write_text(f"#!/bin/sh\nsleep 60 > {alive} &\nwait\n")
    (wrappers / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrappers}:{os.environ['PATH']}")
    started = time.monotonic()
    with PendingWorkspace(repo.path, timeout=0.5) as pending:
        assert pending.result() == Workspace(
            None, (), (), (), unread="git status gave no answer within 0.5 s")
    os.set_blocking(reader, True)
    try:
        assert os.read(reader, 1) == b""        # end of file: the child is gone
    finally:
        os.close(reader)
    assert time.monotonic() - started < 30      # not the child's 60 s


def test_a_servers_kept_status_is_reused_then_forgotten(repo):
    """WorkspaceCache: searches typed one after another share one `git status`; a save (forget)
    or the end of its seconds reads it again; an answer that a change overtook is not kept."""
    from cortex_core.git.workspace import WorkspaceCache
    cache = WorkspaceCache(3600)
    with cache.pending(repo.path) as first:
        assert first.result().untracked == ()
    (repo.path / "new.py").write_text("n = 1\n")
    with cache.pending(repo.path) as again:               # kept: git is not asked
        assert again.result().untracked == () and not isinstance(again, PendingWorkspace)
    cache.forget()
    with cache.pending(repo.path) as fresh:
        assert fresh.result().untracked == ("new.py",)
    # A change while git runs: its answer is not kept, the next search asks git again.
    overtaken = cache.pending(repo.path)
    cache.forget()                      # a save while git runs
    with overtaken:
        assert overtaken.result().untracked == ("new.py",)
    with cache.pending(repo.path) as after:
        assert isinstance(after, PendingWorkspace)
        after.result()
    expired = WorkspaceCache(1e-9)
    with expired.pending(repo.path) as one:
        one.result()
    with expired.pending(repo.path) as two:
        assert isinstance(two, PendingWorkspace) and two.result().untracked == ("new.py",)


def test_what_git_is_in_the_middle_of(repo, tmp_path):
    """A rebase, a merge and a cherry-pick stopped on conflicts, in the main working copy and a
    linked worktree (`what` showed only "branch: (detached)")."""
    assert operation_in_progress(repo.path) is None
    repo.git("checkout", "-q", "-b", "topic")
    for n in (1, 2):
        repo.write("a.py", f"a = 'topic {n}'\n")
        repo.commit(f"topic {n}")
    repo.git("checkout", "-q", "fix/retry-budget")
    repo.write("a.py", "a = 'main'\n")
    main = repo.commit("main")
    repo.git("checkout", "-q", "topic")
    with pytest.raises(subprocess.CalledProcessError):
        repo.git("rebase", "fix/retry-budget")
    assert operation_in_progress(repo.path) == f"rebasing topic onto {main[:10]} (step 1 of 2)"
    repo.git("rebase", "--abort")
    with pytest.raises(subprocess.CalledProcessError):
        repo.git("merge", "-q", "fix/retry-budget")
    assert operation_in_progress(repo.path) == f"merging {main[:10]}"
    repo.git("merge", "--abort")
    with pytest.raises(subprocess.CalledProcessError):
        repo.git("cherry-pick", main)
    assert operation_in_progress(repo.path) == f"cherry-picking {main[:10]}"
    repo.git("cherry-pick", "--abort")
    assert operation_in_progress(repo.path) is None
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", "-b", "other", str(linked), "topic")
    with pytest.raises(subprocess.CalledProcessError):
        repo.git("-C", str(linked), "merge", "-q", "fix/retry-budget")
    assert operation_in_progress(linked) == f"merging {main[:10]}"
    assert operation_in_progress(repo.path) is None            # each worktree its own state
    assert operation_in_progress(tmp_path / "nowhere") is None
    # A FIFO, a folder or a huge file where git keeps its state: read as nothing, at once.
    os.mkfifo(repo.path / ".git" / "MERGE_HEAD")
    assert operation_in_progress(repo.path) is None
    os.remove(repo.path / ".git" / "MERGE_HEAD")
    (repo.path / ".git" / "REVERT_HEAD").mkdir()
    (repo.path / ".git" / "CHERRY_PICK_HEAD").write_bytes(b"\x1b[31m" + b"f" * 10_000_000)
    assert operation_in_progress(repo.path) == "cherry-picking \x1b[31mfffff"


def test_what_touches_the_symbols_an_edit_is_in_also_after_a_staged_rename(repo, cortex):
    """`what`'s hot spots you are touching: the symbols whose lines at the indexed HEAD an
    uncommitted edit holds (an insertion at a body's end too), read through a staged rename
    (a review: `git mv m.py n.py` and a one-line edit listed every symbol of the file), and by
    one diff per file (pairing both sides' symbols took 26 s on 40 files of 3,000 functions)."""
    from cortex_core.features.what import what
    source = ("class K:\n    def a(self):\n        return 1\n\n    def b(self):\n"
              "        return 2\n\n\ndef c():\n    return 3\n\n\ndef d():\n    return 4\n")
    for n in range(3):
        repo.write("m.py", source + f"\n\nVERSION = {n}\n")
        repo.commit(f"change {n}", days_ago=5 - n)
    cortex.index()
    repo.git("mv", "m.py", "n.py")
    edited = source + "\n\nVERSION = 2\n"
    (repo.path / "n.py").write_text(edited.replace("return 3", "return 33"))
    hot = {h.qualname for h in what(cortex.reader(), repo.path).hotspots if h.qualname}
    assert hot == {"c"}
    (repo.path / "n.py").write_text(edited.replace("        return 2\n", "        return 2\n"
                                                                        "        # more\n"))
    hot = {h.qualname for h in what(cortex.reader(), repo.path).hotspots if h.qualname}
    assert hot == {"K", "K.b"}


def test_what_reads_a_python_insertion_after_a_definition_by_its_indentation(repo, cortex):
    """A third review: appending a function after a Python file's last one touched that last
    function, and a method added after a class's last one touched neither the class nor its
    method before. An insertion right after a definition's last line (blank lines between)
    extends it when its code is indented deeper than the definition's first line."""
    from cortex_core.features.what import what
    source = ("class A:\n    def f(self):\n        return 1\n\n    def g(self):\n"
              "        return 2\n\n\ndef h():\n    return 3\n")
    for n in range(3):
        repo.write("a.py", source.replace("return 3", f"return {3 + n}"))
        repo.commit(f"change {n}", days_ago=5 - n)
    cortex.index()
    head = source.replace("return 3", "return 5")

    def touched(text: str) -> set[str]:
        (repo.path / "a.py").write_text(text)
        return {h.qualname for h in what(cortex.reader(), repo.path, top_k=50).hotspots
                if h.qualname}
    assert touched(head + "\n\ndef z():\n    return 0\n") == set()
    assert touched(head + "    print(3)\n") == {"h"}
    method = head.replace("        return 2\n", "        return 2\n\n    def k(self):\n"
                                               "        return 9\n")
    assert touched(method) == {"A"}
    # A fourth review: code written on a blank line after a body, a comment at column 0 between
    # the body and the new line, and a decorator added above a method.
    assert touched(head.replace("        return 2\n\n", "        return 2\n        x = 1\n", 1)) \
        == {"A", "A.g"}
    assert touched(head + "# note\n    print(3)\n") == {"h"}
    assert touched(head.replace("    def g(self):", "    @property\n    def g(self):")) == {
        "A", "A.g"}
    # A symlink in its place: its target is other text, so nothing says which were touched.
    (repo.path / "other.py").write_text("def h():\n    return 0\n")
    (repo.path / "a.py").unlink()
    (repo.path / "a.py").symlink_to("other.py")
    hot = {h.qualname for h in what(cortex.reader(), repo.path, top_k=50).hotspots
           if h.qualname}
    assert hot == {"A", "A.f", "A.g", "h"}

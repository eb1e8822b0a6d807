"""`cortex hooks`: git hooks that keep the index fresh, on real repositories with real git.

Hooks that must index run it before git returns (CORTEX_HOOK_FOREGROUND=1), so a test can commit
and then look in the index. Tests about chaining install hooks whose "interpreter" is /bin/true:
the chain is the same script, and no indexer outlives the test.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cortex_cli import hooks
from cortex_core.errors import CortexError, IndexerBusy, NotARepository
from cortex_core.store.store import open_reader, queue_slot, writer_lock

PROJECT = Path(__file__).resolve().parent.parent
TRUE = shutil.which("true") or "/bin/true"


def cortex(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_core", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(PROJECT), CORTEX_MODEL="none",
                                   **(env or {})))


def git(repo, *args: str, foreground: bool = True, env: dict | None = None,
        check: bool = True) -> subprocess.CompletedProcess:
    """git in `repo` (a ScriptedRepo or a folder) as a user runs it: hooks fire; with
    `foreground`, their indexer runs before git returns."""
    where = getattr(repo, "path", repo)
    full = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=str(where), GIT_TERMINAL_PROMPT="0",
                PYTHONPATH=str(PROJECT), CORTEX_MODEL="none", GIT_AUTHOR_NAME="Ann",
                GIT_AUTHOR_EMAIL="ann@example.com", GIT_COMMITTER_NAME="Ann",
                GIT_COMMITTER_EMAIL="ann@example.com", **(env or {}))
    full.pop(hooks.FOREGROUND_ENV, None)
    if foreground:
        full[hooks.FOREGROUND_ENV] = "1"
    proc = subprocess.run(["git", *args], cwd=where, env=full, capture_output=True,
                          text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc
    return proc


def indexed_shas(root: Path) -> set[str]:
    con = open_reader(root / ".cortex" / "cortex.db")
    try:
        return {sha for (sha,) in con.execute("select sha from commits where reachable = 1")}
    finally:
        con.close()


def snapshot(folder: Path) -> dict:
    """Every entry of a folder: bytes, mode, link target — what uninstall must give back."""
    out = {}
    for entry in sorted(folder.iterdir()):
        st = os.lstat(entry)
        if stat.S_ISLNK(st.st_mode):
            out[entry.name] = ("link", os.readlink(entry))
        else:
            out[entry.name] = ("file", stat.S_IMODE(st.st_mode), entry.read_bytes())
    return out


def write_hook(path: Path, body: str, mode: int = 0o755) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    os.chmod(path, mode)


def recorder(record: Path, status: int) -> str:
    """A hook that appends its name, arguments and stdin to `record`, then exits `status`."""
    return (f'echo "$(basename "$0") args: $*" >> "{record}"\n'
            f'case "$(basename "$0")" in post-rewrite*) cat >> "{record}" ;; esac\n'
            f"exit {status}\n")


@pytest.fixture
def small(repo):
    repo.write("app.py", "def run():\n    return 1\n")
    repo.commit("feat: run")
    return repo


def hooks_dir(repo) -> Path:
    return repo.path / ".git" / "hooks"


# -- indexing ---------------------------------------------------------------------------------

def test_the_hooks_never_run_the_repositorys_code(small, tmp_path):
    # git runs hooks at the top of the working tree: `python -m` would import from there first.
    marker = tmp_path / "PWNED"
    small.write("cortex_core/__init__.py", "")
    small.write("cortex_core/__main__.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    small.write("json.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    hooks.install(small.path)
    small.write("app.py", "def run():\n    return 2\n")
    git(small, "add", "-A")
    git(small, "commit", "-q", "-m", "feat: shadow modules")
    assert not marker.exists()
    assert small.head() in indexed_shas(small.path)


def test_commit_merge_and_checkout_index_the_repository(small):
    report = hooks.install(small.path)
    assert [(h.name, h.action) for h in report.hooks] == [
        (name, "installed") for name in hooks.HOOKS]
    assert not (small.path / ".cortex").exists()   # no index yet: the hooks make one

    small.write("app.py", "def run():\n    return 2\n")
    proc = git(small, "commit", "-q", "-m", "fix: two")
    assert proc.stdout == "" and proc.stderr == ""      # nothing in git's output
    assert indexed_shas(small.path) == {small.head(), small.git("rev-parse", "HEAD~1")}

    # A partial commit runs the hook with GIT_INDEX_FILE on a temporary index: unset for cortex.
    (small.path / "app.py").write_text("def run():\n    return 3\n")
    git(small, "commit", "-q", "-m", "fix: three", "--", "app.py")
    assert small.head() in indexed_shas(small.path)

    # A branch made with hooks off, then merged (post-merge) and checked out (post-checkout).
    off = ("-c", "core.hooksPath=/dev/null")
    git(small, *off, "checkout", "-q", "-b", "side")
    small.write("side.py", "def side():\n    pass\n")
    git(small, *off, "commit", "-q", "-m", "feat: side")
    side = small.head()
    git(small, *off, "checkout", "-q", "main")
    assert side not in indexed_shas(small.path)
    git(small, "merge", "-q", "--ff-only", "side")
    assert side in indexed_shas(small.path)

    git(small, *off, "checkout", "-q", "-b", "other", "HEAD~1")
    small.write("other.py", "x = 1\n")
    git(small, *off, "commit", "-q", "-m", "feat: other")
    other = small.head()
    git(small, *off, "checkout", "-q", "main")
    log = Path(hooks.status(small.path).log)
    lines = len(log.read_text().splitlines())
    git(small, "checkout", "-q", "--", "app.py")        # a file checkout: nothing to index
    assert len(log.read_text().splitlines()) == lines
    git(small, "checkout", "-q", "other")
    assert other in indexed_shas(small.path)
    assert "post-checkout:" in log.read_text() and "--coalesce" in log.read_text()


def test_the_indexer_runs_detached_and_git_returns_at_once(small):
    hooks.install(small.path)
    git(small, "commit", "-q", "--allow-empty", "-m", "first index")   # foreground: makes the db
    db = small.path / ".cortex" / "cortex.db"
    log = small.path / ".git" / hooks.LOG_NAME
    # While this test holds the writer lock, an indexer that git waited for would block git
    # for an hour; git returns, with nothing in its output.
    with writer_lock(db, 0):
        proc = git(small, "commit", "-q", "--allow-empty", "-m", "chore: empty", foreground=False)
        assert proc.stdout == "" and proc.stderr == ""
        head = small.head()
        assert head not in indexed_shas(small.path)
        # The detached indexer is no child of ours: its log is all there is to wait on.
        _wait_for(lambda: "queued behind the running indexer" in log.read_text())
    _wait_for(lambda: head in indexed_shas(small.path))
    with writer_lock(db, 60):   # and it is done: nothing outlives the test
        pass


def test_a_rebase_indexes_once_at_its_end(small):
    base = small.head()
    for i in range(3):
        small.write("app.py", f"def run():\n    return {i + 10}\n")
        small.commit(f"fix: step {i}")
    small.git("checkout", "-q", "-b", "upstream", base)
    small.write("up.py", "def up():\n    pass\n")
    small.commit("feat: upstream")
    small.git("checkout", "-q", "main")
    hooks.install(small.path)
    log = small.path / ".git" / hooks.LOG_NAME
    git(small, "rebase", "-q", "upstream")
    # Each pick fired post-commit: not indexed; the start (post-checkout) and the end are.
    assert _fired(log) == ["post-checkout:", "post-rewrite:"]
    assert small.head() in indexed_shas(small.path)
    assert len(indexed_shas(small.path)) == 5

    # A fast-forward rebase fires post-checkout alone.
    off = ("-c", "core.hooksPath=/dev/null")
    git(small, *off, "checkout", "-q", "-b", "ahead")
    small.write("ahead.py", "x = 1\n")
    git(small, *off, "commit", "-q", "-m", "feat: ahead")
    git(small, *off, "checkout", "-q", "main")
    log.unlink()
    git(small, "rebase", "-q", "ahead")
    assert _fired(log) == ["post-checkout:"]
    assert small.head() in indexed_shas(small.path)


def _fired(log: Path) -> list[str]:
    return [line.split()[3] for line in log.read_text().splitlines() if line.startswith("--- ")]


def _wait_for(condition, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_git_works_when_cortex_cannot_run(small, tmp_path):
    chained = hooks_dir(small) / "post-commit"
    write_hook(chained, "exit 0\n")
    gone = tmp_path / "removed-venv" / "bin" / "python"
    hooks.install(small.path, interpreter=str(gone))
    no_cortex = f"{os.path.dirname(shutil.which('git'))}:/usr/bin:/bin"   # git, but no cortex
    status = cortex("hooks", "status", cwd=small.path, env={"PATH": no_cortex})
    assert f"interpreter: {gone} (missing, and no `cortex` on PATH" in status.stdout
    assert json.loads(cortex("hooks", "status", "--json", cwd=small.path).stdout)[
        "interpreter_exists"] is False
    # No interpreter and no `cortex` on PATH: the hook exits quietly with the chained status.
    proc = git(small, "commit", "-q", "--allow-empty", "-m", "x", env={"PATH": no_cortex})
    assert proc.stderr == "" and not (small.path / ".cortex").exists()

    # An interpreter that runs but fails (here: not Python at all): git does not notice either.
    shutil.rmtree(small.path / ".git" / "hooks")
    hooks.install(small.path, interpreter=shutil.which("false") or "/bin/false")
    proc = git(small, "commit", "-q", "--allow-empty", "-m", "y")
    assert proc.stdout == "" and proc.stderr == ""
    assert "post-commit:" in (small.path / ".git" / hooks.LOG_NAME).read_text()


# -- chaining and restoring -----------------------------------------------------------------------

def test_chains_to_existing_hooks_and_restores_them_exactly(small, tmp_path):
    folder = hooks_dir(small)
    record = tmp_path / "record.txt"
    write_hook(folder / "post-commit", recorder(record, 0))
    write_hook(folder / "post-rewrite", recorder(record, 4))
    elsewhere = tmp_path / "shared-hooks" / "checkout-hook"
    write_hook(elsewhere, recorder(record, 5))
    os.symlink(elsewhere, folder / "post-checkout")           # a symbolic link stays one
    write_hook(folder / "post-merge", recorder(record, 0), mode=0o640)   # git does not run it
    before = snapshot(folder)

    first = hooks.install(small.path, interpreter=TRUE)
    assert {h.name: h.action for h in first.hooks} == {
        "post-commit": "chained to the existing hook",
        "post-merge": "installed; the existing hook is kept but not executable, so it still "
                      "does not run",
        "post-checkout": "chained to the existing hook",
        "post-rewrite": "chained to the existing hook"}
    installed = snapshot(folder)
    again = hooks.install(small.path, interpreter=TRUE)       # idempotent
    assert [h.action for h in again.hooks] == ["already installed"] * 4
    assert snapshot(folder) == installed
    assert os.readlink(folder / "post-checkout.cortex-chained") == str(elsewhere)

    # Same arguments, same stdin (post-rewrite's list), exit status kept.
    old = small.head()
    proc = git(small, "commit", "-q", "--amend", "-m", "feat: run (amended)")
    new = small.head()
    assert proc.stderr == ""
    assert record.read_text().splitlines() == [
        "post-commit.cortex-chained args: ", "post-rewrite.cortex-chained args: amend",
        f"{old} {new}"]
    record.unlink()
    checkout = git(small, "checkout", "-q", "-b", "topic", check=False)
    assert checkout.returncode == 1        # post-checkout failed, so does git checkout
    assert record.read_text() == f"post-checkout.cortex-chained args: {new} {new} 1\n"
    direct = subprocess.run([folder / "post-checkout", old, new, "1"], cwd=small.path,
                            capture_output=True)
    assert direct.returncode == 5 and direct.stdout == direct.stderr == b""   # the very status
    git(small, "checkout", "-q", "main", check=False)
    record.unlink()
    git(small, "merge", "-q", "topic")
    assert not record.exists()             # the non-executable post-merge still does not run

    out = cortex("hooks", "uninstall", cwd=small.path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("restored the hook from before") == 4
    assert snapshot(folder) == before      # bytes, modes, the link: exactly as before
    assert not any(".cortex" in p.name for p in folder.iterdir())
    again = cortex("hooks", "uninstall", cwd=small.path)
    assert again.returncode == 0 and again.stdout.count("left alone: not Cortex's") == 4


def test_install_into_an_empty_hooks_folder_and_uninstall_removes_only_its_hooks(small):
    folder = hooks_dir(small)
    before = snapshot(folder)
    assert before   # git's *.sample files
    hooks.install(small.path, interpreter=TRUE)
    for name in hooks.HOOKS:
        text = (folder / name).read_text()
        assert text.startswith("#!/bin/sh\n" + hooks.MARKER)
        assert stat.S_IMODE(os.lstat(folder / name).st_mode) == 0o755
    hooks.uninstall(small.path)
    assert snapshot(folder) == before


@pytest.mark.parametrize("setting", ["relative", "absolute", "tilde"])
def test_follows_core_hooks_path(small, tmp_path, setting):
    if setting == "relative":
        value, expected = ".githooks", small.path / ".githooks"
    elif setting == "absolute":
        value, expected = str(tmp_path / "abs-hooks"), tmp_path / "abs-hooks"
    else:
        value, expected = "~/my-hooks", small.path / "my-hooks"   # HOME is the repository here
    small.git("config", "core.hooksPath", value)
    record = tmp_path / "record.txt"
    if setting == "absolute":   # an existing folder with a hook of its own
        write_hook(expected / "post-commit", recorder(record, 0))
    env = {"HOME": str(small.path)}
    out = cortex("hooks", "install", "--json", cwd=small.path, env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["hooks_dir"] == str(expected) and data["hooks_path"] == value
    assert any("core.hooksPath is set" in note for note in data["notes"])
    assert any("`git status` shows" in note for note in data["notes"]) == (setting != "absolute")
    assert (expected / "post-commit").read_text().splitlines()[1].startswith(hooks.MARKER)
    assert not (small.path / ".git" / "hooks" / "post-commit").exists()

    small.write("more.py", "def more():\n    pass\n")
    (small.path / "sub").mkdir()
    git(small, "-C", "sub", "commit", "-q", "-m", "feat: more")   # from a subfolder too
    assert small.head() in indexed_shas(small.path)
    if setting == "absolute":
        assert record.read_text() == "post-commit.cortex-chained args: \n"

    text = cortex("hooks", "status", cwd=small.path, env=env).stdout
    assert f"hooks directory: {expected}  (core.hooksPath = {value})" in text
    out = cortex("hooks", "uninstall", cwd=small.path, env=env)
    assert out.returncode == 0, out.stderr
    if setting == "absolute":
        assert sorted(p.name for p in expected.iterdir()) == ["post-commit"]
    else:   # Cortex created the folder: it goes too
        assert not expected.exists() and "Cortex had created it" in out.stdout


def test_linked_worktree_uses_the_common_hooks_folder(small, tmp_path):
    worktree = tmp_path / "wt"
    small.git("worktree", "add", "-q", "-b", "wt", str(worktree))
    report = hooks.install(worktree)
    assert report.hooks_dir == str(small.path / ".git" / "hooks")
    assert report.log == str(small.path / ".git" / hooks.LOG_NAME)
    (worktree / "wt.py").write_text("def wt():\n    pass\n")
    git(worktree, "add", "wt.py")
    git(worktree, "commit", "-q", "-m", "feat: in the worktree")
    head = git(worktree, "rev-parse", "HEAD").stdout.strip()
    assert head in indexed_shas(worktree)   # the worktree's own index
    assert [h.state for h in hooks.status(small.path).hooks] == ["installed"] * 4


# -- status, conflicts, errors ----------------------------------------------------------------------

def test_status_text_and_json(small, tmp_path):
    folder = hooks_dir(small)
    write_hook(folder / "post-merge", "exit 0\n")
    text = cortex("hooks", "status", cwd=small.path).stdout
    assert text.splitlines() == [
        f"hooks directory: {folder}",
        "  post-commit    absent",
        "  post-merge     foreign hook (not Cortex's)",
        "  post-checkout  absent",
        "  post-rewrite   absent"]
    out = cortex("hooks", "install", cwd=small.path)
    assert out.returncode == 0 and out.stderr == ""
    assert "  post-merge     chained to the existing hook" in out.stdout
    assert f"interpreter: {os.path.abspath(sys.executable)} (exists)" in out.stdout
    data = json.loads(cortex("hooks", "status", "--json", cwd=small.path).stdout)
    assert data["hooks_dir"] == str(folder) and data["hooks_path"] is None
    assert data["interpreter"] == os.path.abspath(sys.executable) and data["interpreter_exists"]
    assert data["log"] == str(small.path / ".git" / hooks.LOG_NAME)
    assert {h["name"]: (h["state"], h["chained"]) for h in data["hooks"]} == {
        "post-commit": ("installed", None),
        "post-merge": ("chained", str(folder / "post-merge.cortex-chained")),
        "post-checkout": ("installed", None), "post-rewrite": ("installed", None)}
    assert "post-merge     installed by cortex, chained to post-merge.cortex-chained" in \
        cortex("hooks", "status", cwd=small.path).stdout
    # A newer interpreter: install refreshes the hooks.
    refreshed = hooks.install(small.path, interpreter=TRUE)
    assert [h.action for h in refreshed.hooks] == ["updated"] * 4
    assert "CORTEX_HOOK_FOREGROUND" in cortex("hooks", "--help", cwd=small.path).stdout


def test_a_hook_replaced_by_another_tool_is_left_alone(small):
    folder = hooks_dir(small)
    write_hook(folder / "post-commit", "echo original\n")
    hooks.install(small.path, interpreter=TRUE)
    write_hook(folder / "post-commit", "echo another tool\n")   # replaces Cortex's hook
    state = {h.name: h for h in hooks.status(small.path).hooks}["post-commit"]
    assert state.state == "foreign" and "replaced by another tool" in state.problem

    again = cortex("hooks", "install", cwd=small.path)
    assert again.returncode == 1 and "post-commit    skipped" in again.stdout
    out = cortex("hooks", "uninstall", cwd=small.path)
    assert out.returncode == 1
    assert "post-commit    left alone" in out.stdout and "sort them out by hand" in out.stdout
    assert (folder / "post-commit").read_text() == "#!/bin/sh\necho another tool\n"
    assert (folder / "post-commit.cortex-chained").read_text() == "#!/bin/sh\necho original\n"
    assert not (folder / "post-merge").exists()   # the others were removed


def test_a_leftover_chained_hook_is_not_overwritten(small):
    folder = hooks_dir(small)
    write_hook(folder / "post-rewrite", "echo mine\n")
    hooks.install(small.path, interpreter=TRUE)
    (folder / "post-rewrite").unlink()            # someone deleted Cortex's hook by hand
    report = hooks.install(small.path, interpreter=TRUE)
    rewrite = {h.name: h for h in report.hooks}["post-rewrite"]
    assert rewrite.action == "skipped" and "`cortex hooks uninstall` puts it back" in rewrite.problem
    assert not (folder / "post-rewrite").exists()
    hooks.uninstall(small.path)
    assert (folder / "post-rewrite").read_text() == "#!/bin/sh\necho mine\n"
    assert not (folder / "post-rewrite.cortex-chained").exists()


def test_errors(small, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    out = cortex("hooks", "install", cwd=plain)
    assert out.returncode == 1 and out.stderr.startswith("cortex: ") and \
        "is not inside a git repository" in out.stderr and "Traceback" not in out.stderr
    with pytest.raises(NotARepository):
        hooks.status(plain)

    (hooks_dir(small) / "post-merge").mkdir()
    out = cortex("hooks", "install", cwd=small.path)
    assert out.returncode == 1 and "post-merge     skipped" in out.stdout
    assert "is a directory, not a hook" in out.stdout
    assert (hooks_dir(small) / "post-commit").is_file()   # the other slots are installed

    small.git("config", "core.hooksPath", str(tmp_path / "missing" / "hooks"))
    with pytest.raises(CortexError, match="missing does not exist"):
        hooks.install(small.path)


# -- coalescing -----------------------------------------------------------------------------------

def test_index_coalesce_keeps_one_run_waiting_at_most(small):
    db = small.path / ".cortex" / "cortex.db"
    args = ("index", "--coalesce", "--quiet", "--wait", "60")
    with writer_lock(db, 0):                  # as a running indexer holds it
        # A run already waits in line (held here): a new one has nothing to add.
        with queue_slot(db):
            extra = cortex(*args, cwd=small.path)
        assert extra.returncode == 0 and "already queued" in extra.stdout, extra
        assert not db.exists()

        waiting = subprocess.Popen(
            [sys.executable, "-m", "cortex_core", *args], cwd=small.path, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=str(PROJECT), CORTEX_MODEL="none"))
        try:
            # Its first words: it holds the place in line and waits for the writer lock.
            assert waiting.stderr.readline().startswith("cortex: queued behind the running indexer")
            extra = cortex(*args, cwd=small.path)
            assert extra.returncode == 0 and "already queued" in extra.stdout
            with pytest.raises(IndexerBusy, match="already queued"):
                with queue_slot(db):
                    pass
            head = small.commit("feat: made while the first run waits", allow_empty=True)
        except BaseException:
            waiting.kill()
            raise
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    assert "indexed 2 new commits" in out
    assert head in indexed_shas(small.path)
    with queue_slot(db):                      # the place in line is free again
        pass

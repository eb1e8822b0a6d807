"""Where the store lives when `<repo>/.cortex` cannot be used: the real CLI on real repositories,
with `.cortex` a file, the repository on a read-only bind mount (in a mount namespace of its
own), a folder we may not write (as an unprivileged user), and `--db`."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cortex_core.store.store_location import store_location, unusable_reason, user_db_path

PROJECT = Path(__file__).resolve().parent.parent


def env_for(cache: Path) -> dict:
    return dict(os.environ, PYTHONPATH=str(PROJECT), XDG_CACHE_HOME=str(cache),
                CORTEX_MODEL="none")


def cortex(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_core", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=env_for(cache))


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def shop(repo):
    repo.write("shop/cart.py", "class Cart:\n    def total(self):\n        return 0\n")
    repo.commit("feat: a cart", days_ago=3)
    repo.write("shop/cart.py", "class Cart:\n    def total(self):\n        return 1\n")
    repo.commit("fix: totals are off by one", days_ago=1)
    return repo


def user_db(repo_path: Path, cache: Path) -> Path:
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    try:
        return user_db_path(repo_path)
    finally:
        if old is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = old


# -- .cortex is a file -------------------------------------------------------------------------


def test_cortex_as_a_file_falls_back_to_the_user_folder(shop, cache):
    (shop.path / ".cortex").write_text("not a folder\n")
    out = cortex("index", cwd=shop.path, cache=cache)
    assert out.returncode == 0, out.stderr
    expected = user_db(shop.path, cache)
    assert expected.parent.parent == cache / "cortex"
    assert expected.parent.name.startswith("repo-")
    # One line on stderr says where and why; no traceback.
    assert out.stderr.splitlines() == [
        f"cortex: the index is at {expected}: .cortex is not a folder"]
    assert expected.is_file() and f"store: {expected}" in out.stdout
    assert stat.S_IMODE(expected.parent.stat().st_mode) == 0o700   # notes are private
    assert (shop.path / ".cortex").read_text() == "not a folder\n"

    history = cortex("history", "shop/cart.py::Cart.total", cwd=shop.path, cache=cache)
    assert history.returncode == 0, history.stderr
    assert "2 commits" in history.stdout and "totals are off by one" in history.stdout

    status = cortex("status", cwd=shop.path, cache=cache)
    assert status.stdout.splitlines()[:2] == [
        status.stdout.splitlines()[0], "  location: .cortex is not a folder"]
    assert str(expected) in status.stdout.splitlines()[0]
    data = json.loads(cortex("status", "--json", cwd=shop.path, cache=cache).stdout)
    assert data["db_path"] == str(expected) and data["store_reason"] == ".cortex is not a folder"


def test_db_option_wins_over_every_rule(shop, cache, tmp_path):
    (shop.path / ".cortex").write_text("x")
    db = tmp_path / "elsewhere" / "my.db"
    out = cortex("index", "--db", str(db), cwd=shop.path, cache=cache)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert db.is_file() and not (cache / "cortex").exists()
    data = json.loads(cortex("status", "--json", "--db", str(db), cwd=shop.path,
                             cache=cache).stdout)
    assert data["db_path"] == str(db) and data["store_reason"] is None


def test_an_index_in_the_user_folder_stays_in_use_when_cortex_becomes_usable(shop, cache):
    (shop.path / ".cortex").write_text("x")
    assert cortex("index", cwd=shop.path, cache=cache).returncode == 0
    added = cortex("note", "add", "shop/cart.py", "carts are per session", cwd=shop.path,
                   cache=cache)
    assert added.returncode == 0, added.stderr
    (shop.path / ".cortex").unlink()          # usable again: but the index (and note) is there
    shop.write("shop/cart.py", "class Cart:\n    def total(self):\n        return 2\n")
    shop.commit("fix: again", days_ago=0)
    out = cortex("index", cwd=shop.path, cache=cache)
    assert out.returncode == 0 and "indexed 1 new commit " in out.stdout, out.stdout
    assert not (shop.path / ".cortex" / "cortex.db").exists()
    assert "could not be used; it stays in use until you move it" in out.stderr
    notes = cortex("note", "list", cwd=shop.path, cache=cache)
    assert "carts are per session" in notes.stdout
    # Moved into .cortex as the message says: that one is used from then on.
    (shop.path / ".cortex").mkdir()
    shutil.move(user_db(shop.path, cache), shop.path / ".cortex" / "cortex.db")
    status = json.loads(cortex("status", "--json", cwd=shop.path, cache=cache).stdout)
    assert status["db_path"] == str(shop.path / ".cortex" / "cortex.db")
    assert status["store_reason"] is None and status["commits"] == 3


def test_the_decision_on_real_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "r"
    root.mkdir()
    # Nothing yet: .cortex, to be created; the lock probe is a real flock and lockf on the folder.
    assert unusable_reason(root / ".cortex") is None
    assert store_location(root).path == root / ".cortex" / "cortex.db"
    (root / ".cortex").write_text("")
    loc = store_location(root)
    assert loc.fallback and loc.path == user_db_path(root) and loc.reason == ".cortex is not a folder"
    # A relative XDG_CACHE_HOME is ignored (the XDG specification): ~/.cache is used.
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store_location(root).path.is_relative_to(tmp_path / "home" / ".cache" / "cortex")
    # Two clones with the same name get two stores.
    other = tmp_path / "x" / "r"
    other.mkdir(parents=True)
    assert user_db_path(other) != user_db_path(root)


def test_a_symbolic_link_is_still_refused_not_bypassed(shop, cache, tmp_path):
    (tmp_path / "target").mkdir()
    (shop.path / ".cortex").symlink_to(tmp_path / "target")
    out = cortex("index", cwd=shop.path, cache=cache)
    assert out.returncode == 1 and "symbolic link" in out.stderr and "Traceback" not in out.stderr
    assert not any((tmp_path / "target").iterdir()) and not (cache / "cortex").exists()


# -- a folder we may not write: an unprivileged user -----------------------------------------

@pytest.mark.parametrize("what", ["folder", "fifo"])
def test_a_database_that_is_not_a_file_is_named_with_the_fix(shop, cache, what):
    db = shop.path / ".cortex" / "cortex.db"
    db.parent.mkdir()
    if what == "folder":
        db.mkdir()
    else:
        os.mkfifo(db)
    kind = "a folder" if what == "folder" else "not a regular file"
    for command in (["index", "--quiet"], ["status"], ["note", "add", "shop/cart.py", "hi"]):
        done = cortex(*command, cwd=shop.path, cache=cache)
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.strip() == (f"cortex: cannot use {db}: it is {kind}; remove it (or "
                                       "give the index another place with --db)"), command


def _run_as_nobody() -> list[str] | None:
    """A command prefix that runs as an unprivileged user, or None where there is none (we run
    as root here, and as root permission bits never stop a write)."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        return None
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


@pytest.fixture
def open_folder():
    """A folder others may read (pytest's own are private to root), removed afterwards."""
    import tempfile
    folder = Path(tempfile.mkdtemp(prefix="cortex-shared-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_folder_we_may_not_write(open_folder):
    from scripted_repo import ScriptedRepo
    prefix = _run_as_nobody()
    if prefix is None:
        pytest.skip("needs root and setpriv to run the CLI as another user")
    repo = ScriptedRepo(open_folder / "shop")
    repo.write("cart.py", "def total():\n    return 0\n")
    repo.commit("a cart")
    # The other user reads the repository (git would refuse it as someone else's: allowed in
    # its own git config) and writes only its home.
    home = open_folder / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[safe]\n\tdirectory = *\n")
    os.chown(home, 65534, 65534)
    env = dict(env_for(home / ".cache"), HOME=str(home))
    # The other user must be able to read this Python, its packages and this checkout: a venv
    # in a private folder (mktemp -d) is not readable to it.
    can = subprocess.run([*prefix, sys.executable, "-c", "import apsw, pygit2, cortex_cli.cli"],
                         cwd=repo.path, capture_output=True, text=True, timeout=60, env=env)
    if can.returncode != 0:
        pytest.skip("the unprivileged user cannot import Cortex from this venv and checkout: "
                    + (can.stderr.strip().splitlines() or ["?"])[-1][:200])
    out = subprocess.run([*prefix, sys.executable, "-m", "cortex_core", "index"], cwd=repo.path,
                         capture_output=True, text=True, timeout=300, env=env)
    if out.returncode != 0 and "Permission denied" in out.stderr and "cortex:" not in out.stderr:
        pytest.skip(f"the unprivileged user cannot run this Python: {out.stderr[:200]}")
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith(f"cortex: the index is at {home / '.cache' / 'cortex'}/shop-")
    assert out.stderr.rstrip().endswith(".cortex is not writable (permission denied)")
    assert not (repo.path / ".cortex").exists()
    history = subprocess.run([*prefix, sys.executable, "-m", "cortex_core", "history",
                              "cart.py::total"], cwd=repo.path, capture_output=True, text=True,
                             timeout=300, env=env)
    assert history.returncode == 0 and "1 commit" in history.stdout, history.stderr


# -- a read-only file system: a bind mount in a mount namespace of our own -------------------

def _read_only_mount_works(tmp_path: Path) -> str | None:
    """None when `unshare -m` plus a read-only bind mount works here; else why not."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "no unshare(1)"
    probe = tmp_path / "probe"
    probe.mkdir()
    out = subprocess.run([unshare, "-m", "sh", "-c",
                          f"mount --bind '{probe}' '{probe}' && "
                          f"mount -o remount,ro,bind '{probe}' && touch '{probe}/x'"],
                         capture_output=True, text=True, timeout=60)
    if "Read-only file system" in out.stderr:
        return None
    return f"cannot make a read-only bind mount here: {out.stderr.strip()[:200]}"


def read_only(repo: Path, *commands: list[str]) -> list[subprocess.CompletedProcess]:
    """Run cortex commands, each with `repo` mounted read-only in a private mount namespace (the
    mount goes away with the process)."""
    results = []
    for args in commands:
        script = ('mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && '
                  'exec "$@"')
        results.append(subprocess.run(
            ["unshare", "-m", "sh", "-c", script, "sh", str(repo), sys.executable, "-m",
             "cortex_core", *args], cwd=repo, capture_output=True, text=True, timeout=300,
            env=env_for(Path(os.environ["XDG_CACHE_HOME"]))))
    return results


@pytest.fixture
def ro(tmp_path, cache, monkeypatch):
    why = _read_only_mount_works(tmp_path)
    if why:
        pytest.skip(why)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return read_only


def test_a_read_only_repository_is_indexed_in_the_user_folder(shop, cache, ro):
    index, history, status = ro(shop.path, ["index"], ["history", "shop/cart.py::Cart.total"],
                                ["status", "--json"])
    assert index.returncode == 0, index.stderr
    expected = user_db(shop.path, cache)
    assert index.stderr.splitlines() == [f"cortex: the index is at {expected}: .cortex is not "
                                         "writable (read-only file system)"]
    assert history.returncode == 0 and "2 commits" in history.stdout, history.stderr
    data = json.loads(status.stdout)
    assert data["db_path"] == str(expected)
    assert data["store_reason"] == ".cortex is not writable (read-only file system)"
    assert not (shop.path / ".cortex").exists()


def test_an_index_on_a_file_system_now_read_only_is_read_then_replaced(shop, cache, ro):
    assert cortex("index", cwd=shop.path, cache=cache).returncode == 0
    assert cortex("note", "add", "shop/cart.py", "totals in cents", cwd=shop.path,
                  cache=cache).returncode == 0
    before, index, after, notes = ro(shop.path, ["status", "--json"], ["index"],
                                     ["status", "--json"], ["note", "list"])
    # Read as it is (SQLite cannot open a WAL database there unless told it is immutable) ...
    assert before.returncode == 0, before.stderr
    seen = json.loads(before.stdout)
    assert seen["db_path"] == str(shop.path / ".cortex" / "cortex.db") and seen["commits"] == 2
    assert "read as it is and cannot be updated" in seen["store_reason"]
    # ... and the indexer, which must write, builds the per-user store with its notes.
    assert index.returncode == 0, index.stderr
    expected = user_db(shop.path, cache)
    assert f"cortex: 1 notes copied from {shop.path / '.cortex' / 'cortex.db'}" in index.stderr
    assert json.loads(after.stdout)["db_path"] == str(expected)
    assert "totals in cents" in notes.stdout


# -- the servers find the same store -------------------------------------------------------------

import tempfile  # noqa: E402

import pytest_lsp  # noqa: E402
from lsprotocol import types  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from ls_harness import CONFIG, Session, finish, plain  # noqa: E402
from test_mcp import make_project, ok  # noqa: E402

# The language server's environment is fixed when the fixture is made: one cache folder for the
# module (each test's repository has its own path, so its own store in it).
SERVER_CACHE = Path(tempfile.mkdtemp(prefix="cortex-cache-"))
LS_CONFIG = ClientServerConfig(server_command=CONFIG.server_command,
                               server_env=dict(CONFIG.server_env,
                                               XDG_CACHE_HOME=str(SERVER_CACHE)))


@pytest.fixture(scope="module", autouse=True)
def _remove_server_cache():
    yield
    shutil.rmtree(SERVER_CACHE, ignore_errors=True)


@pytest_lsp.fixture(config=LS_CONFIG)
async def client(lsp_client: LanguageClient):
    yield
    await finish(lsp_client)


async def test_the_language_server_uses_and_names_the_user_folder(client, tmp_path):
    project = make_project(tmp_path / "widgets")
    (project.path / ".cortex").write_text("x")
    lsp = Session(client)
    await lsp.start(project.path)
    expected = user_db(project.path, SERVER_CACHE)
    assert expected.is_file()
    told = [m.message for m in lsp.client.messages if "the index of widgets is at" in m.message]
    assert told == [f"Cortex: the index of widgets is at {expected}: .cortex is not a folder"]
    assert all(m.type == types.MessageType.Warning for m in lsp.client.messages)
    uri = lsp.open(project.path / "pkg/core.py")
    assert "5 changes" in await lsp.hover(uri, 3, 5)
    status = plain(await lsp.request("cortex/status", {}))["repositories"][0]
    assert status["database"] == str(expected)
    assert status["databaseReason"] == ".cortex is not a folder"
    # A second run (a reindex) keeps the same place and says nothing more.
    await lsp.command("cortex.reindex")
    await lsp.indexed(2)
    assert len([m for m in lsp.client.messages if "is at" in m.message]) == 1


async def test_mcp_uses_and_names_the_user_folder(tmp_path):
    project = make_project(tmp_path / "widgets")
    (project.path / ".cortex").write_text("x")
    cache = tmp_path / "cache"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cortex_core", "mcp", "--repo", str(project.path)],
        # PYTHONPATH: the indexer it starts from "/" runs this tree, not an installed copy.
        env={"CORTEX_MODEL": "none", "PYTHONIOENCODING": "utf-8", "XDG_CACHE_HOME": str(cache),
             "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
             **{k: v for k, v in os.environ.items() if k.startswith(("GIT_", "VIRTUAL_ENV"))}})
    async with Client(params, read_timeout_seconds=60) as mcp_client:
        result = await ok(mcp_client, "sync", wait_seconds=120)
        assert result.structured_content["ok"] is True
        expected = user_db(project.path, cache)
        assert expected.is_file() and not (project.path / ".cortex").is_dir()
        status = await ok(mcp_client, "status")
        text = status.content[0].text
        assert str(expected) in text and "not in `.cortex`: .cortex is not a folder" in text
        assert status.structured_content["store_reason"] == ".cortex is not a folder"
        history = await ok(mcp_client, "symbol_history", target="pkg/core.py::compute")
        assert history.structured_content["total"] == 5

"""The repository's own clock (cortex_core/clock.py): windows and recency count back from the
indexed HEAD's date by default, from today with the wall-clock setting; every front end says which.

The repository here is real git whose every commit is three years old, like an archived project or
an old release branch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from ls_harness import Session, plain  # noqa: E402
from scripted_repo import ScriptedRepo, sample_core, sample_use  # noqa: E402

from cortex_core.clock import clock, repository_time  # noqa: E402
from cortex_core.config import Settings, load_settings  # noqa: E402
from cortex_core.errors import CortexError  # noqa: E402
from cortex_core.query.hotspots import hotspots  # noqa: E402
from cortex_core.index.ingest import index_repository  # noqa: E402
from cortex_core.store.store import open_reader  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent
AGE = 3 * 365    # days: every commit of the repository is this old, or older


def old_project(path: Path, age: float = AGE) -> ScriptedRepo:
    """compute changed five times in a month that ended `age` days ago."""
    repo = ScriptedRepo(path)
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", sample_core(1))
    repo.write("pkg/use.py", sample_use())
    repo.commit("add the core", days_ago=age + 30)
    for n in (2, 3, 4, 5):
        repo.write("pkg/core.py", sample_core(n))
        repo.commit(f"tune compute to {n}", author="Bob <bob@example.com>" if n % 2 else
                    "Ann <ann@example.com>", days_ago=age + 30 - 6 * n)
    return repo


def utc_day(repo: ScriptedRepo) -> str:
    stamp = int(repo.git("log", "-1", "--format=%ct"))
    return datetime.fromtimestamp(stamp, timezone.utc).strftime("%Y-%m-%d")


def index(repo: ScriptedRepo) -> Path:
    db = repo.path / ".cortex" / "cortex.db"
    index_repository(repo.path, db, Settings(), model="none")
    return db


@pytest.fixture
def old(tmp_path: Path) -> ScriptedRepo:
    return old_project(tmp_path / "widgets")


def cortex(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_core", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(PROJECT), CORTEX_MODEL="none"))


# -- the engine ----------------------------------------------------------------------------------


def test_the_repository_clock_is_the_indexed_heads_date(old: ScriptedRepo):
    con = open_reader(index(old))
    head_time = int(old.git("log", "-1", "--format=%ct"))
    assert repository_time(con) == head_time
    assert clock(con) .kind == "repository" and clock(con).now == head_time
    wall = clock(con, "wall")
    assert wall.kind == "wall" and abs(wall.now - time.time()) < 3600
    with pytest.raises(CortexError, match="unknown clock"):
        clock(con, "sundial")
    # Co-change decays on the same clock: one definition of the repository's now.
    from cortex_core.query.coupling import _history_sets
    assert _history_sets(con, 30).now == head_time


def test_hotspots_count_back_from_the_repository_unless_told_otherwise(old: ScriptedRepo):
    con = open_reader(index(old))
    mine = hotspots(con, since_days=90)
    assert [h.qualname for h in mine.symbols][:1] == ["compute"]
    assert mine.symbols[0].changes == 5 and mine.clock.kind == "repository"
    wall = hotspots(con, since_days=90, clock="wall")
    assert wall.symbols == [] and wall.files == [] and wall.clock.kind == "wall"
    # Without a window the ranking is the same on either clock; the scores are not.
    both = [hotspots(con, clock=c).symbols for c in ("repository", "wall")]
    assert [h.qualname for h in both[0]] == [h.qualname for h in both[1]]
    assert both[0][0].score > 100 * both[1][0].score


def test_a_head_dated_in_the_future_does_not_empty_the_windows(repo: ScriptedRepo):
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("add f", days_ago=2)
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("from a machine whose clock was wrong", days_ago=-3650)
    con = open_reader(index(repo))
    assert abs(repository_time(con) - time.time()) < 3600     # capped at today
    assert [h.changes for h in hotspots(con, since_days=30).symbols] == [2]


def test_dates_beyond_any_calendar_are_shown_not_a_crash(repo: ScriptedRepo):
    # A commit's date is what its author wrote: year 3 billion is a valid object, and gmtime
    # refuses it (OSError). Dates are shown within years 1 to 9999.
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("add f", days_ago=2)
    tree = repo.git("write-tree")
    stamp = "99999999999999999 +0000"
    raw = (f"tree {tree}\nparent {repo.head()}\nauthor A <a@b> {stamp}\n"
           f"committer A <a@b> {stamp}\n\nfrom the far future\n")
    sha = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo.path,
                         input=raw.encode(), check=True, capture_output=True).stdout.decode()
    repo.git("update-ref", "HEAD", sha.strip())
    index(repo)
    for args in (("status",), ("history", "a.py"), ("context", "--at", "a.py::f"),
                 ("hotspots",)):
        done = cortex(*args, cwd=repo.path)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert " to 9999-12-31" in cortex("status", cwd=repo.path).stdout


def test_an_empty_index_falls_back_to_the_wall_clock(tmp_path: Path):
    from cortex_core.store.store import open_writer
    con = open_writer(tmp_path / "cortex.db")
    assert repository_time(con) is None
    assert clock(con).kind == "wall"


def test_the_clock_setting_is_checked(old: ScriptedRepo):
    config = old.path / ".cortex" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    config.write_text('[time]\nclock = "wall"\n')
    assert load_settings(config).time.clock == "wall"
    config.write_text('[time]\nclock = " Wall"\n')    # as the language server's setting reads
    assert load_settings(config).time.clock == "wall"
    config.write_text('[time]\nclock = "sundial"\n')
    with pytest.raises(CortexError, match='time.clock must be "repository" or "wall"'):
        load_settings(config)


# -- the command line ----------------------------------------------------------------------------


def test_cli_hotspots_what_and_search_say_which_clock(old: ScriptedRepo):
    index(old)
    day = utc_day(old)
    text = cortex("hotspots", "--since", "90", cwd=old.path)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0] == (
        f"hotspots in the last 90 days of this repository's activity (to {day}); half-life 90 days")
    assert "pkg/core.py::compute" in text.stdout
    wall = cortex("hotspots", "--since", "90", "--clock", "wall", "--json", cwd=old.path)
    data = json.loads(wall.stdout)
    assert data["symbols"] == [] and data["clock"]["kind"] == "wall"

    # [time] clock = "wall" in the repository's settings does the same; --clock wins over it.
    (old.path / ".cortex" / "config.toml").write_text('[time]\nclock = "wall"\n')
    data = json.loads(cortex("hotspots", "--since", "90", "--json", cwd=old.path).stdout)
    assert data["symbols"] == [] and data["clock"]["kind"] == "wall"
    data = json.loads(cortex("hotspots", "--since", "90", "--json", "--clock", "repository",
                             cwd=old.path).stdout)
    assert data["symbols"][0]["qualname"] == "compute"
    (old.path / ".cortex" / "config.toml").unlink()

    # `what`: the hot spot being edited is found on the repository's clock.
    (old.path / "pkg" / "core.py").write_text(sample_core(6))
    what = json.loads(cortex("what", "--json", cwd=old.path).stdout)
    assert what["clock"]["kind"] == "repository"
    assert "compute" in [h["qualname"] for h in what["hotspots"]]
    wall = json.loads(cortex("what", "--json", "--clock", "wall", cwd=old.path).stdout)
    assert wall["clock"]["kind"] == "wall"
    assert wall["hotspots"][0]["score"] < what["hotspots"][0]["score"] / 100
    assert f"hot spots you are touching (on this repository's clock, its HEAD of {day})" in \
        cortex("what", cwd=old.path).stdout

    # search --since N: N days back on the same clock.
    found = json.loads(cortex("search", "tune compute", "--since", "60", "--mode", "lexical",
                              "--json", cwd=old.path).stdout)
    assert found["hits"] and found["clock"]["kind"] == "repository"
    none = json.loads(cortex("search", "tune compute", "--since", "60", "--mode", "lexical",
                             "--clock", "wall", "--json", cwd=old.path).stdout)
    assert none["hits"] == []
    bad = cortex("hotspots", "--clock", "sundial", cwd=old.path)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


# -- the language server -------------------------------------------------------------------------


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


async def test_lenses_and_hover_on_an_old_repository(lsp: Session, old: ScriptedRepo):
    await lsp.start(old.path)
    text = (old.path / "pkg/core.py").read_text()
    uri = lsp.open(old.path / "pkg/core.py")
    lenses = await lsp.lenses(uri)
    assert [lens.range.start.line for lens in lenses] == [line_of(text, "def compute")]
    resolved = await lsp.client.code_lens_resolve_async(lenses[0])
    assert resolved.command.title.startswith("changed 5× in 90d")
    day = utc_day(old)
    window = f"last 90 days of this repository's activity (to {day})"
    assert resolved.command.tooltip == f"changes to its own code in the {window}"
    value = await lsp.hover(uri, line_of(text, "def compute"), 6)
    assert f"**hotspot**: 5× in the {window}" in value
    hot = plain(await lsp.request("cortex/hotspots", {"sinceDays": 90}))
    assert hot["clock"]["kind"] == "repository" and hot["symbols"][0]["qualname"] == "compute"


async def test_the_wall_clock_setting_empties_them(lsp: Session, old: ScriptedRepo):
    await lsp.start(old.path, options={"clock": "wall"})
    text = (old.path / "pkg/core.py").read_text()
    uri = lsp.open(old.path / "pkg/core.py")
    assert list(await lsp.lenses(uri)) == []
    value = await lsp.hover(uri, line_of(text, "def compute"), 6)
    assert value.startswith("**`compute`**") and "hotspot" not in value
    hot = plain(await lsp.request("cortex/hotspots", {"sinceDays": 90}))
    assert hot["clock"]["kind"] == "wall" and hot["symbols"] == []

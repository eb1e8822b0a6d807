"""The spare indexer (`python -P -m cortex_core --spare`, cortex_cli/spare.py) in real processes:
it waits, loaded, for a run's arguments on stdin, runs `index` with them, and runs nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from cortex_core.child_process import CLI_ARGS, SPARE_ARGS, index_command, spare_arguments

ROOT = Path(__file__).resolve().parent.parent


def _spare(stdin: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *SPARE_ARGS], input=stdin, capture_output=True,
                          cwd="/", timeout=120)


def test_a_spare_runs_the_index_it_is_given(repo, tmp_path: Path) -> None:
    """The run is the one `python -P -m cortex_core index ...` would be: its progress events on
    stdout, the store written, the status of the run."""
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("add f")
    db = tmp_path / "index.db"
    command = index_command(repo.path, db=db, progress_json=True, model="none")
    args = spare_arguments(command)
    assert args is not None and args[0] == "index"
    done = _spare(json.dumps(args).encode() + b"\n")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert events[-1]["event"] == "done" and events[-1]["summary"]["new_commits"] == 1
    con = apsw.Connection(str(db))
    assert con.execute("select count(*) from commits").get == 1
    con.close()


@pytest.mark.parametrize("given", [
    "",                                         # a server closing a spare it no longer needs
    "not json\n",
    '["status", "--repo", "{repo}", "--db", "{db}"]\n',     # only `index`
    '{{"argv": ["index", "--repo", "{repo}", "--db", "{db}"]}}\n',
    '["index", "--repo", "{repo}", "--db", "{db}", 3]\n',
])
def test_a_spare_given_no_run_exits_without_doing_anything(given: str, repo,
                                                            tmp_path: Path) -> None:
    repo.write("a.py", "x = 1\n")
    repo.commit("add a")
    db = tmp_path / "index.db"
    done = _spare(given.format(repo=repo.path, db=db).encode())
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not db.exists()


def test_only_this_interpreters_index_commands_go_to_a_spare(repo) -> None:
    """A command for another interpreter, or not an index, is started as before."""
    command = index_command(repo.path)
    assert spare_arguments(command) == command[1 + len(CLI_ARGS):]
    assert spare_arguments(index_command(repo.path, python="/usr/bin/python3-other")) is None
    assert spare_arguments([sys.executable, "-P", "-m", "cortex_core", "history"]) is None
    assert spare_arguments(["git", "log"]) is None


def _waiting(proc: subprocess.Popen) -> None:
    """Until the spare blocks reading its input: loaded (the only pipe it reads is stdin).
    Read from /proc as the state of the process, with a deadline."""
    import time
    wchan = Path(f"/proc/{proc.pid}/wchan")
    deadline = time.monotonic() + 60
    while "pipe_read" not in wchan.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, "the spare never waited"
        time.sleep(0.01)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_code_changed_while_a_spare_waits_runs_as_a_fresh_start(repo, tmp_path: Path) -> None:
    """Cortex's files edited (or upgraded) under a waiting spare: the run is the files as they
    are now (the spare replaces itself by a fresh `index`), not the code it had loaded."""
    import shutil
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("add f")
    code = tmp_path / "code"
    for part in ("cortex_core", "cortex_cli"):
        shutil.copytree(ROOT / part, code / part, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(code))
    db = tmp_path / "index.db"
    args = ["index", "--repo", str(repo.path), "--db", str(db), "--model", "none", "--quiet"]
    with subprocess.Popen([sys.executable, *SPARE_ARGS], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/",
                          env=env) as proc:
        _waiting(proc)
        cli = code / "cortex_cli" / "cli.py"
        cli.write_text(cli.read_text() + "\nsys.stderr.write('edited\\n')\n")
        out, err = proc.communicate(json.dumps(args).encode() + b"\n", timeout=120)
    assert proc.returncode == 0, err
    assert err.startswith(b"edited\n"), err      # the edited file ran
    con = apsw.Connection(str(db))
    assert con.execute("select count(*) from commits").get == 1
    con.close()

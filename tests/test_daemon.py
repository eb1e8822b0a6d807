"""`cortex daemon`: queries typed at the command line answered by a process kept running
(cortex_cli/daemon.py), through the `cortex` script's client (cortex_cli/quick.py).

Every test runs the real script, a real daemon in a folder of its own and a real indexed
repository; an answer through the daemon must be byte for byte the answer of the command run
in its own process (CORTEX_DAEMON=off), exit status and standard error included."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scripted_repo import ScriptedRepo, sample_core, sample_use  # noqa: E402

from cortex_core.config import Settings  # noqa: E402
from cortex_core.index.ingest import index_repository  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent
SCRIPT = PROJECT / "cortex_cli" / "bin" / "cortex"

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix sockets here")


class Daemon:
    """A daemon folder and the environment every command of a test runs with."""

    def __init__(self, folder: Path, code: Path = PROJECT, **env: str):
        self.folder = folder
        self.env = {k: v for k, v in os.environ.items() if k not in ("CORTEX_DAEMON", "COLUMNS")}
        self.env.update({"PYTHONPATH": str(code), "CORTEX_DAEMON_DIR": str(folder),
                         "CORTEX_MODEL": "none", **env})
        self.script = code / "cortex_cli" / "bin" / "cortex"

    def run(self, *args: str, cwd: Path, here: bool = False, timeout: float = 120, **env: str):
        """The script run with this environment; `here`: with CORTEX_DAEMON=off."""
        extra = dict(env, CORTEX_DAEMON="off") if here else env
        return subprocess.run([sys.executable, str(self.script), *args], cwd=cwd,
                              capture_output=True, timeout=timeout, env=dict(self.env, **extra))

    def status(self, cwd: Path) -> dict:
        proc = self.run("daemon", "status", "--json", cwd=cwd)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)


@pytest.fixture
def indexed(tmp_path: Path) -> ScriptedRepo:
    repo = ScriptedRepo(tmp_path / "widgets")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", sample_core(1))
    repo.write("pkg/use.py", sample_use())
    repo.commit("add the core")
    repo.write("pkg/core.py", sample_core(2))
    repo.write("pkg/use.py", sample_use() + "\n# tuned\n")
    repo.commit("tune compute", days_ago=2)
    index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(), model="none")
    return repo


@pytest.fixture
def daemon(tmp_path: Path):
    folder = tmp_path / "d"
    folder.mkdir(mode=0o700)
    d = Daemon(folder)
    yield d
    _stop(d, tmp_path)


def _stop(d: Daemon, cwd: Path) -> None:
    d.run("daemon", "stop", cwd=cwd)
    pid = _pid_holding(d.folder / "daemon.lock")
    if pid:    # a test that failed midway: no process outlives it
        os.kill(pid, signal.SIGKILL)


def _pid_holding(lock: Path) -> int | None:
    """The daemon that holds its lock, from /proc/locks; None if none does (or no /proc)."""
    try:
        inode = lock.stat().st_ino
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) > 5 and parts[5].endswith(f":{inode}"):
            return int(parts[4])
    return None


def _copied_code(tmp_path: Path) -> Path:
    """Cortex's packages copied (no bytecode), for a daemon whose code a test may change."""
    code = tmp_path / "code"
    for part in ("cortex_core", "cortex_cli"):
        shutil.copytree(PROJECT / part, code / part,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return code


def _started(d: Daemon, cwd: Path) -> dict:
    proc = d.run("daemon", "start", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert b"started (pid" in proc.stdout, proc.stdout
    return d.status(cwd)


def line_of(path: Path, needle: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_answers_through_the_daemon_are_the_commands_own(indexed: ScriptedRepo, daemon: Daemon):
    root = indexed.path
    line = line_of(root / "pkg/core.py", "def compute")
    commands = [
        ("history", f"pkg/core.py:{line}"),
        ("history", "pkg/core.py::compute", "--json"),
        ("history", "core.py::compute"),                    # relative to the working folder
        ("blast", "pkg/core.py::compute"),
        ("callers", "pkg/core.py::compute", "--json"),
        ("related", "pkg/core.py"),
        ("hotspots",),
        ("search", "tune", "--mode", "lexical"),
        ("status",),
        ("context", "pkg/core.py::compute", "--budget", "600"),
        ("history", "pkg/nothing.py::gone"),                # an error: exit 1, on stderr
        ("history", "--no-such-option"),                    # a usage error: exit 2
        ("blast", "--help"),
    ]
    def cwd(c):
        return root / "pkg" if c[1:2] == ("core.py::compute",) else root

    here = {c: daemon.run(*c, cwd=cwd(c), here=True) for c in commands}
    assert here[("history", "pkg/nothing.py::gone")].returncode == 1
    assert here[("history", "--no-such-option")].returncode == 2
    assert b"tune compute" in here[commands[0]].stdout

    status = _started(daemon, root)
    # `daemon status --json` says "running" either way (false, with the folder, when not).
    assert (status["running"], status["folder"], status["served"]) == (
        True, str(daemon.folder), 0)
    for c in commands:
        there = daemon.run(*c, cwd=cwd(c))
        assert (there.returncode, there.stdout, there.stderr) == (
            here[c].returncode, here[c].stdout, here[c].stderr), c
    status = daemon.status(root)
    assert status["served"] == len(commands), status     # all of them went through it
    assert status["refused"] == {}
    assert status["repositories"] == [str(root)]


def test_the_client_loads_no_cortex_beyond_itself(indexed: ScriptedRepo, daemon: Daemon):
    _started(daemon, indexed.path)
    proc = subprocess.run([sys.executable, "-X", "importtime", str(SCRIPT), "history",
                           "pkg/core.py::compute"], cwd=indexed.path, capture_output=True,
                          text=True, timeout=120, env=daemon.env)
    assert proc.returncode == 0 and "tune compute" in proc.stdout, proc.stderr[-2000:]
    modules = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
               if line.startswith("import time:") and "self [us]" not in line}
    assert "cortex_cli.quick" in modules
    assert modules.isdisjoint({"cortex_cli.cli", "cortex_core", "apsw", "re", "argparse",
                               "json", "socket"}), sorted(modules)


def test_the_width_of_the_terminal_is_the_clients(indexed: ScriptedRepo, daemon: Daemon):
    _started(daemon, indexed.path)
    helps = []
    for columns in ("50", "130"):
        there = daemon.run("history", "--help", cwd=indexed.path, COLUMNS=columns)
        here = daemon.run("history", "--help", cwd=indexed.path, here=True, COLUMNS=columns)
        assert there.stdout == here.stdout
        helps.append(there.stdout)
    assert helps[0] != helps[1]           # argparse wrapped them to each width
    assert daemon.status(indexed.path)["served"] == 2


def test_another_environment_is_refused_and_answered_here(indexed: ScriptedRepo,
                                                          daemon: Daemon):
    root = indexed.path
    _started(daemon, root)
    here = daemon.run("history", "pkg/core.py::compute", cwd=root, here=True)
    for env in ({"CORTEX_TEST_MARK": "3"}, {"HOME": str(root)}, {"GIT_DIR": str(root / ".git")},
                {"HUGGINGFACE_HUB_CACHE": str(root)}):   # where a model is looked for
        there = daemon.run("history", "pkg/core.py::compute", cwd=root, **env)
        assert (there.returncode, there.stdout) == (0, here.stdout), env
    status = daemon.status(root)
    assert status["served"] == 0
    assert status["refused"] == {"the environment differs in CORTEX_TEST_MARK": 1,
                                 "the environment differs in HOME": 1,
                                 "the environment differs in GIT_DIR": 1,
                                 "the environment differs in HUGGINGFACE_HUB_CACHE": 1}
    # What a command only reads for itself (PATH: which git) is set for it alone.
    there = daemon.run("history", "pkg/core.py::compute", cwd=root,
                       PATH=os.pathsep.join([str(root), os.environ.get("PATH", "")]))
    assert there.stdout == here.stdout and daemon.status(root)["served"] == 1


def test_what_writes_or_is_not_a_query_runs_here(indexed: ScriptedRepo, daemon: Daemon):
    root = indexed.path
    _started(daemon, root)
    indexed.write("pkg/more.py", "def more():\n    return 1\n")
    indexed.commit("add more")
    proc = daemon.run("index", "--jobs", "2", cwd=root)    # workers import the script too
    assert proc.returncode == 0, proc.stderr
    assert b"add more" in daemon.run("history", "pkg/more.py", cwd=root).stdout
    assert b"added" in daemon.run("note", "add", "pkg/core.py", "keep it small",
                                       cwd=root).stdout
    status = daemon.status(root)
    assert status["served"] == 1 and status["refused"] == {}   # index and note never asked


def test_a_search_keeps_its_model_and_answers_the_same(tmp_path: Path, tiny_model):
    repo = ScriptedRepo(tmp_path / "w")
    repo.write("client.py", "def fetch(url):\n    return get(url, timeout=30)\n")
    repo.commit("Fix timeout in fetch")
    repo.write("server.py", "def serve(port):\n    return listen(port)\n")
    repo.commit("Listen on the given port")
    index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(), model=tiny_model)
    folder = tmp_path / "d"
    folder.mkdir(mode=0o700)
    d = Daemon(folder, CORTEX_MODEL=tiny_model)
    try:
        _started(d, repo.path)
        for query in ("deadline", "port number", "deadline"):
            here = d.run("search", query, "--json", cwd=repo.path, here=True)
            there = d.run("search", query, "--json", cwd=repo.path)
            assert here.returncode == 0 and b'"mode": "hybrid"' in here.stdout, here.stderr
            import difflib
            assert there.stdout == here.stdout, "".join(difflib.unified_diff(
                here.stdout.decode().splitlines(True), there.stdout.decode().splitlines(True)))
            assert (there.returncode, there.stderr) == (here.returncode, here.stderr)
        assert d.status(repo.path)["served"] == 3
    finally:
        _stop(d, tmp_path)


def test_changed_code_is_refused_and_stops_the_daemon(indexed: ScriptedRepo, tmp_path: Path):
    code = _copied_code(tmp_path)
    folder = tmp_path / "d"
    folder.mkdir(mode=0o700)
    d = Daemon(folder, code=code)
    try:
        _started(d, indexed.path)
        here = d.run("history", "pkg/core.py::compute", cwd=indexed.path, here=True)
        render = code / "cortex_cli" / "render.py"
        render.write_text(render.read_text().replace(
            'f"{terminal(t.label)}"', 'f"{terminal(t.label)} (edited)"'))
        there = d.run("history", "pkg/core.py::compute", cwd=indexed.path)
        assert there.returncode == 0
        assert b"(edited)" in there.stdout and there.stdout != here.stdout   # the new code's
        status = d.run("daemon", "status", "--json", cwd=indexed.path)
        assert json.loads(status.stdout).get("running") is False
    finally:
        _stop(d, tmp_path)


def test_a_killed_daemon_leaves_nothing_in_the_way(indexed: ScriptedRepo, daemon: Daemon):
    root = indexed.path
    pid = _started(daemon, root)["pid"]
    again = daemon.run("daemon", "start", cwd=root)
    assert b"already running (pid %d)" % pid in again.stdout
    os.kill(pid, signal.SIGKILL)    # its lock goes with it; its socket file stays
    assert (daemon.folder / "daemon.sock").exists()        # left behind
    here = daemon.run("history", "pkg/core.py::compute", cwd=root, here=True)
    there = daemon.run("history", "pkg/core.py::compute", cwd=root)
    assert (there.returncode, there.stdout, there.stderr) == (0, here.stdout, here.stderr)
    assert b"not running" in daemon.run("daemon", "status", cwd=root).stdout
    assert _started(daemon, root)["pid"] != pid


def test_a_folder_others_can_use_is_not(indexed: ScriptedRepo, tmp_path: Path):
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o755)
    d = Daemon(folder)
    proc = d.run("daemon", "start", cwd=indexed.path)
    assert proc.returncode == 1
    assert b"can be entered by other users (mode 755)" in proc.stderr
    assert not (folder / "daemon.sock").exists()
    # A socket someone else put there is not asked.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / "daemon.sock"))
    listener.listen(1)
    listener.settimeout(0)
    try:
        there = d.run("history", "pkg/core.py::compute", cwd=indexed.path)
        assert there.returncode == 0 and b"tune compute" in there.stdout
        with pytest.raises(BlockingIOError):
            listener.accept()                               # nobody connected
    finally:
        listener.close()


def test_a_malformed_request_is_refused_and_the_daemon_goes_on(indexed: ScriptedRepo,
                                                               daemon: Daemon):
    root = indexed.path
    _started(daemon, root)
    for junk in (b"", b"hello", b"cortex-daemon/1 run\0x", b"\xff" * 70000,
                 b"cortex-daemon/1 run\0a\0b\0utf-8\0strict\0" + b"80\0" + b"99\0A=1"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(str(daemon.folder / "daemon.sock"))
            s.sendall(junk)
            s.shutdown(socket.SHUT_WR)
            answer = b"".join(iter(lambda: s.recv(65536), b""))
        assert answer[:1] == b"r" and b"malformed" in answer, (junk[:40], answer)
    there = daemon.run("history", "pkg/core.py::compute", cwd=root)
    assert there.returncode == 0 and b"tune compute" in there.stdout
    assert daemon.status(root)["served"] == 1


def _wait_for_exit(d: Daemon) -> None:
    """Until the daemon has let go of its lock: its last step, after its socket is gone."""
    import fcntl
    with open(d.folder / "daemon.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)     # blocks; the test's timeout guards a hang


def test_sigterm_stops_it_and_leaves_a_clean_folder(indexed: ScriptedRepo, daemon: Daemon):
    pid = _started(daemon, indexed.path)["pid"]
    os.kill(pid, signal.SIGTERM)
    _wait_for_exit(daemon)
    assert not (daemon.folder / "daemon.sock").exists()
    assert b"stopped by a signal" in (daemon.folder / "daemon.log").read_bytes()
    assert b"not running" in daemon.run("daemon", "status", cwd=indexed.path).stdout


def test_an_idle_daemon_stops_by_itself(indexed: ScriptedRepo, daemon: Daemon):
    proc = daemon.run("daemon", "start", "--idle-minutes", "0.005", cwd=indexed.path)
    assert proc.returncode == 0 and b"started" in proc.stdout, proc.stderr
    _wait_for_exit(daemon)
    assert b"idle for 0.005 minutes: stopping" in (daemon.folder / "daemon.log").read_bytes()
    assert not (daemon.folder / "daemon.sock").exists()


def test_an_output_that_cannot_be_encoded_is_as_here_and_the_daemon_goes_on(
        indexed: ScriptedRepo, daemon: Daemon):
    """stderr's error handler is its own (backslashreplace where stdout's is strict); a command
    that fails on its output (the em dash of a history in ASCII) ends with Python's traceback,
    from the client (the daemon, which died of it, once wrote it to its log)."""
    root = indexed.path
    _started(daemon, root)
    cases = [("history", "pkg/caf\u00e9.py", "ascii"),      # the error names it: \xe9
             ("history", "pkg/core.py::compute", "ascii")]  # stdout strict: UnicodeEncodeError
    for command, target, encoding in cases:
        args = (command, target)
        here = daemon.run(*args, cwd=root, here=True, PYTHONIOENCODING=encoding)
        there = daemon.run(*args, cwd=root, PYTHONIOENCODING=encoding)
        assert (there.returncode, there.stdout, there.stderr) == (
            here.returncode, here.stdout, here.stderr), (args, encoding)
    assert b"UnicodeEncodeError" in daemon.run(
        "history", "pkg/core.py::compute", cwd=root, PYTHONIOENCODING="ascii").stderr
    status = daemon.status(root)                  # still running
    assert status["served"] == 1
    assert status["refused"] == {"the command failed in the daemon (UnicodeEncodeError)": 2}


def test_the_writes_are_replayed_on_the_clients_own_streams(indexed: ScriptedRepo,
                                                             daemon: Daemon, tmp_path: Path):
    """stdout and stderr in one pipe show what the command's own process shows (its stdout is
    block-buffered there: a note on stderr comes first); an encoding with a byte-order mark
    writes it as that process would (not once per write)."""
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", indexed.path.as_uri(), str(shallow)],
                   check=True, capture_output=True)
    index_repository(shallow, shallow / ".cortex" / "cortex.db", Settings(), model="none")
    _started(daemon, shallow)

    def merged(here: bool):
        env = dict(daemon.env, PYTHONUNBUFFERED="", **({"CORTEX_DAEMON": "off"} if here else {}))
        return subprocess.run([sys.executable, str(daemon.script), "blast", "pkg/core.py::compute"],
                              cwd=shallow, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=120, env=env)
    here, there = merged(True), merged(False)
    assert here.returncode == 0 and b"cortex: note: a shallow clone" in here.stdout
    assert there.stdout == here.stdout
    for encoding in ("utf-16", "utf-8-sig"):
        here = daemon.run("hotspots", cwd=shallow, here=True, PYTHONIOENCODING=encoding)
        there = daemon.run("hotspots", cwd=shallow, PYTHONIOENCODING=encoding)
        assert (there.returncode, there.stdout, there.stderr) == (
            here.returncode, here.stdout, here.stderr), encoding
    assert daemon.status(shallow)["served"] == 3


def test_a_closed_stdout_or_a_removed_folder_is_as_here(indexed: ScriptedRepo, daemon: Daemon,
                                                        tmp_path: Path):
    """`cortex history X >&-` (what the command prints goes nowhere) and a working folder
    removed under the shell (`--repo` still names the repository): the command's own answer,
    not a traceback of the client."""
    root = indexed.path
    _started(daemon, root)
    gone = tmp_path / "gone"
    cases = {"closed stdout": ('exec "$@" >&-', root),
             "removed folder": ('cd "$GONE" && rmdir "$GONE" && exec "$@"', tmp_path)}
    for name, (shell, cwd) in cases.items():
        results = []
        for here in (True, False):
            gone.mkdir()
            env = dict(daemon.env, GONE=str(gone), **({"CORTEX_DAEMON": "off"} if here else {}))
            proc = subprocess.run(["sh", "-c", shell, "sh", sys.executable, str(daemon.script),
                                   "status", "--repo", str(root)], cwd=cwd, env=env,
                                  capture_output=True, timeout=120)
            results.append((proc.returncode, proc.stdout, proc.stderr))
            if gone.exists():
                gone.rmdir()
        assert results[0][0] == 0, (name, results[0])
        assert results[1] == results[0], name


def test_ctrl_c_while_the_daemon_answers_ends_as_the_command_would(indexed: ScriptedRepo,
                                                                   tmp_path: Path):
    """A daemon that has the request but has not answered yet (here a socket that never
    answers): Ctrl-C ends the command as cli.main does, not with a traceback of the client."""
    folder = tmp_path / "d"
    folder.mkdir(mode=0o700)
    d = Daemon(folder)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(folder / "daemon.sock"))
        listener.listen(1)
        proc = subprocess.Popen([sys.executable, str(d.script), "history", "pkg/core.py"],
                                cwd=indexed.path, env=d.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            listener.settimeout(60)
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(60)
                while conn.recv(65536):    # the whole request: the client now waits
                    pass
                proc.send_signal(signal.SIGINT)
                out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert (proc.returncode, out, err) == (
        130, b"", b"cortex: interrupted (the index stays consistent; run again to continue)\n")


def test_a_daemon_run_in_a_terminal_answers_with_the_clients_width(indexed: ScriptedRepo,
                                                                   tmp_path: Path):
    """`cortex daemon run` in a terminal 200 columns wide, a command piped without COLUMNS: its
    help is wrapped at 80 columns as in its own process, not at the daemon's 200."""
    import fcntl
    import pty
    import struct
    import termios
    folder = tmp_path / "d"
    folder.mkdir(mode=0o700)
    d = Daemon(folder)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    proc = subprocess.Popen([sys.executable, str(d.script), "daemon", "run"], cwd=tmp_path,
                            env=d.env, stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=subprocess.PIPE)
    os.close(slave)
    try:
        assert proc.stderr is not None
        assert b"listening" in proc.stderr.readline()
        here = d.run("history", "--help", cwd=indexed.path, here=True)
        there = d.run("history", "--help", cwd=indexed.path)
        wide = d.run("history", "--help", cwd=indexed.path, here=True, COLUMNS="200")
        assert wide.stdout != here.stdout
        assert there.stdout == here.stdout
        assert d.status(indexed.path)["served"] == 1
    finally:
        _stop(d, tmp_path)
        proc.wait(timeout=60)
        os.close(master)


def test_the_bytecode_an_import_writes_is_no_change_of_code(indexed: ScriptedRepo,
                                                            tmp_path: Path):
    """A fresh checkout (no __pycache__) where Python writes bytecode: the commands' imports
    make __pycache__ folders, which change their folders' times; the daemon goes on. A module
    added is a change."""
    code = _copied_code(tmp_path)
    folder = tmp_path / "d"
    folder.mkdir(mode=0o700)
    d = Daemon(folder, code=code, PYTHONDONTWRITEBYTECODE="")
    try:
        _started(d, indexed.path)
        here = d.run("history", "pkg/core.py::compute", cwd=indexed.path, here=True)
        for command in (("history", "pkg/core.py::compute"), ("hotspots",), ("status",),
                        ("history", "pkg/core.py::compute")):
            there = d.run(*command, cwd=indexed.path)
            assert there.returncode == 0, there.stderr
        assert there.stdout == here.stdout
        assert any((code / "cortex_core").rglob("__pycache__"))
        status = d.status(indexed.path)
        assert (status["served"], status["refused"]) == (4, {})
        (code / "cortex_core" / "query" / "added.py").write_text("")
        d.run("history", "pkg/core.py::compute", cwd=indexed.path)
        assert d.run("daemon", "status", "--json", cwd=indexed.path).stdout.count(
            b'"running": false') == 1
    finally:
        _stop(d, tmp_path)


def test_another_python_with_the_same_cortex_is_refused(indexed: ScriptedRepo, daemon: Daemon,
                                                        tmp_path: Path):
    """A virtual environment without Cortex's dependencies runs the same code (PYTHONPATH): in
    its own process the command fails to import them, and so it does through the daemon."""
    import venv
    root = indexed.path
    _started(daemon, root)
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False, symlinks=True)
    python = str(bare / "bin" / "python")

    def run(here: bool):
        env = dict(daemon.env, **({"CORTEX_DAEMON": "off"} if here else {}))
        return subprocess.run([python, str(daemon.script), "history", "pkg/core.py::compute"],
                              cwd=root, env=env, capture_output=True, timeout=120)
    here, there = run(True), run(False)
    assert here.returncode == 1 and b"ModuleNotFoundError" in here.stderr, here.stderr
    assert (there.returncode, there.stdout, there.stderr) == (
        here.returncode, here.stdout, here.stderr)
    status = daemon.status(root)
    assert status["served"] == 0
    assert status["refused"] == {
        "another Python, or one that imports from other places, asked": 1}


def test_a_model_written_again_is_loaded_again(tmp_path: Path):
    """The model folder a search loaded is written again with other weights, and the index
    embedded again with it: the daemon's search is the new model's, as in its own process."""
    from tiny_model import build_tiny_model
    model = tmp_path / "model"
    build_tiny_model(model, seed=7)
    repo = ScriptedRepo(tmp_path / "w")
    for message, name in (("Fix timeout in fetch", "client.py"), ("Listen on the port", "server.py"),
                          ("cache the session token", "auth.py"), ("parser crash", "parse.py")):
        repo.write(name, f"x = {message!r}\n")
        repo.commit(message)
    index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(), model=str(model))
    folder = tmp_path / "d"
    folder.mkdir(mode=0o700)
    d = Daemon(folder, CORTEX_MODEL=str(model))
    queries = ("deadline", "login password", "lexer")
    try:
        _started(d, repo.path)
        for query in queries:
            assert d.run("search", query, "--json", cwd=repo.path).returncode == 0
        shutil.rmtree(model)
        build_tiny_model(model, seed=3)      # other weights, the same sizes
        for entry in model.iterdir():        # a time the index's fingerprint tells apart
            os.utime(entry, (entry.stat().st_mtime + 100,) * 2)
        index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(),
                         model=str(model))
        for query in queries:
            here = d.run("search", query, "--json", cwd=repo.path, here=True)
            there = d.run("search", query, "--json", cwd=repo.path)
            assert here.returncode == 0 and b'"mode": "hybrid"' in here.stdout, here.stderr
            assert (there.returncode, there.stdout, there.stderr) == (
                here.returncode, here.stdout, here.stderr), query
        assert d.status(repo.path)["served"] == 2 * len(queries)
    finally:
        _stop(d, tmp_path)


def test_a_file_written_or_a_process_own_path_is_for_the_commands_process(
        indexed: ScriptedRepo, daemon: Daemon, tmp_path: Path):
    """`context -o FILE` with umask 077 (the daemon's umask would make it readable by all),
    `-o /dev/stdout` (the daemon's stdout is its log) and `--db /dev/stdout` run in the
    command's own process."""
    root = indexed.path
    _started(daemon, root)

    def run(here: bool, umask: str, *args: str, to: str = ""):
        env = dict(daemon.env, **({"CORTEX_DAEMON": "off"} if here else {}))
        return subprocess.run(["sh", "-c", f'umask {umask}; exec "$@" {to}', "sh",
                               sys.executable, str(daemon.script), *args], cwd=root, env=env,
                              capture_output=True, timeout=120)
    for here in (True, False):
        pack = tmp_path / f"pack-{here}.md"
        proc = run(here, "077", "context", "pkg/core.py::compute", "-o", str(pack))
        assert proc.returncode == 0, proc.stderr
        assert pack.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "pack-True.md").read_bytes() == (tmp_path / "pack-False.md").read_bytes()
    out = tmp_path / "out.txt"      # /dev/stdout is the same file in both
    for args in (("context", "pkg/core.py::compute", "-o", "/dev/stdout"),
                 ("status", "--db", "/dev/stdout")):
        answers = []
        for here in (True, False):
            proc = run(here, "022", *args, to=f"> {out}")
            answers.append((proc.returncode, out.read_bytes(), proc.stderr))
        assert answers[1] == answers[0], args
    assert b"# " in run(False, "022", "context", "pkg/core.py::compute", "-o",
                        "/dev/stdout").stdout
    log = (daemon.folder / "daemon.log").read_bytes()
    assert b"listening since" in log and b"compute" not in log     # not truncated, not written
    status = daemon.status(root)
    assert status["served"] == 0
    assert status["refused"] == {"a command that writes a file (--output)": 3,
                                 "an index under /dev or /proc (--db)": 1}


def test_starts_at_once_start_one_daemon_and_all_say_so(indexed: ScriptedRepo, daemon: Daemon):
    procs = [subprocess.Popen([sys.executable, str(daemon.script), "daemon", "start"],
                              cwd=indexed.path, env=daemon.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(6)]
    outputs = [p.communicate(timeout=120) for p in procs]
    answers = [(p.returncode, out, err) for p, (out, err) in zip(procs, outputs)]
    assert all(code == 0 for code, _, _ in answers), answers
    pid = daemon.status(indexed.path)["pid"]
    assert sum(b"started (pid %d)" % pid in out for _, out, _ in answers) == 1, answers
    assert sum(b"already running (pid %d)" % pid in out for _, out, _ in answers) == 5, answers


def _first_daemon(d: Daemon, *options: str) -> subprocess.Popen:
    """A daemon started as `cortex daemon start` starts it, once it listens."""
    proc = subprocess.Popen([sys.executable, "-m", "cortex_cli.daemon", *options],
                            cwd=d.folder, env=d.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith(b"ready")
    return proc


def test_a_daemon_whose_folder_was_made_again_spares_the_next_ones_socket(
        indexed: ScriptedRepo, daemon: Daemon):
    """The daemon's folder removed (the end of a session removes $XDG_RUNTIME_DIR) and made
    again, another daemon started there: the first one, stopped, leaves the second's socket."""
    root = indexed.path
    first = _first_daemon(daemon)
    try:
        shutil.rmtree(daemon.folder)
        daemon.folder.mkdir(mode=0o700)
        second = _started(daemon, root)["pid"]
        first.terminate()
        first.communicate(timeout=60)
        assert daemon.status(root)["pid"] == second       # its socket is still there
        there = daemon.run("history", "pkg/core.py::compute", cwd=root)
        assert there.returncode == 0 and daemon.status(root)["served"] == 1
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


def test_a_daemon_whose_folder_was_removed_stops_by_itself(indexed: ScriptedRepo,
                                                           daemon: Daemon):
    """Nobody can reach or stop it any more: it asks (here every 50 ms) and stops."""
    first = _first_daemon(daemon, "--check-seconds", "0.05")
    try:
        shutil.rmtree(daemon.folder)
        _, err = first.communicate(timeout=60)
        assert b"its socket is gone or another's: stopping" in err
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


def test_a_client_that_does_not_read_its_answer_keeps_no_other_waiting(
        indexed: ScriptedRepo, daemon: Daemon):
    """A client that asked for a large answer (here an error that quotes a 1 MB symbol) and
    does not read it, as one stopped with Ctrl-Z: the next command is answered by the daemon
    at once, not once the first one's 60 s are up (the run's timeout guards that)."""
    root = indexed.path
    _started(daemon, root)
    # The request as the client would send it (an argument of 1 MB is more than exec takes).
    request = ("import os, sys\n"
               "from cortex_cli import quick\n"
               "argv = ['history', 'pkg/core.py::' + 'x' * 1_000_000]\n"
               "sys.stdout.buffer.write(quick.encode_request(\n"
               "    'run', argv, os.getcwd(), quick.encodings(), 0, dict(os.environ)))\n")
    proc = subprocess.run([sys.executable, "-c", request], cwd=root, env=daemon.env,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stalled:
        stalled.settimeout(30)
        stalled.connect(str(daemon.folder / "daemon.sock"))
        stalled.sendall(proc.stdout)
        stalled.shutdown(socket.SHUT_WR)                 # and never reads
        there = daemon.run("history", "pkg/core.py::compute", cwd=root, timeout=30)
        assert there.returncode == 0 and b"tune compute" in there.stdout
        assert daemon.status(root)["served"] == 2


def test_a_request_sent_byte_by_byte_is_dropped_after_5_seconds(indexed: ScriptedRepo,
                                                                daemon: Daemon):
    """5 s for the whole request (docs/commands.md), not for each read: a client sending a
    byte a second would hold the daemon for ever. It is dropped, and the daemon goes on."""
    _started(daemon, indexed.path)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as slow:
        slow.connect(str(daemon.folder / "daemon.sock"))
        slow.settimeout(1.0)
        dropped = False
        for _ in range(15):
            try:
                slow.sendall(b"c")
                dropped = slow.recv(1) == b""
            except socket.timeout:   # a second went by: the next byte
                continue
            except OSError:          # dropped while sending
                dropped = True
            if dropped:
                break
        assert dropped
    there = daemon.run("history", "pkg/core.py::compute", cwd=indexed.path)
    assert there.returncode == 0 and daemon.status(indexed.path)["served"] == 1


def test_a_relative_folder_is_the_current_folders(indexed: ScriptedRepo, daemon: Daemon,
                                                  tmp_path: Path):
    """CORTEX_DAEMON_DIR=d typed in tmp_path: the daemon, which runs in its folder, listens in
    tmp_path/d (not in tmp_path/d/d, where no client looks, said "does not answer" and ran on)."""
    root = indexed.path
    relative = Daemon(daemon.folder, CORTEX_DAEMON_DIR="d")
    proc = relative.run("daemon", "start", cwd=tmp_path)
    assert proc.returncode == 0 and b"started" in proc.stdout, proc.stderr
    assert (daemon.folder / "daemon.sock").exists()
    there = daemon.run("history", "pkg/core.py::compute", cwd=root)    # d as an absolute path
    assert there.returncode == 0 and daemon.status(root)["served"] == 1
    assert b"stopped" in relative.run("daemon", "stop", cwd=tmp_path).stdout

"""`cortex daemon`: one process per user that keeps Cortex imported and its stores open, and
answers the command line's queries (cortex_cli/quick.py is the other end).

A `cortex history` that starts its own Python spends about 50 ms importing and opening before a
query of under a millisecond; through the daemon it costs a bare interpreter's start and one
round trip (docs/numbers.md, "Command start"). A search keeps its model loaded.

It answers as the command would have: the same code (`cli.main`) runs in the client's working
folder with its terminal's width, encoding, PATH and time zone, and what it prints comes back
in order. It refuses, and the client answers itself, when it could answer otherwise:
- another installation of Cortex asks (its package folder differs), or another Python (another
  version, another virtual environment: other packages), or one that imports from elsewhere;
- Cortex's own files changed since the daemon started (it exits after saying so);
- the environment differs where Cortex reads it (HOME, the cache folders, CORTEX_*, GIT_*,
  PYTHONPATH): settings, store places and models come from there;
- a command that writes (index, note), or that is not a query (model, mcp, hooks, daemon).
- a query that writes a file (context -o) or names a process's own file (--db /dev/stdout):
  cli.RunHere.
- the command fails with an error it did not expect (output it cannot encode, say): it is
  logged, and the client's own run reports it as Python would.
Refusals are counted by reason in `cortex daemon status`.

One request at a time, in this process's main thread: commands change the working folder and
the standard streams, which are the process's.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import signal
import socket
import sys
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortex_cli import quick
from cortex_core.api import CortexError

# What must be the same in the client's environment and the daemon's (settings, where stores,
# caches and models are, which code is imported); CORTEX_* and GIT_* too, but for these two.
IDENTITY = ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "HF_HOME", "HF_HUB_CACHE",
            "HUGGINGFACE_HUB_CACHE", "PYTHONPATH")   # HUGGINGFACE_: the hub's legacy name
IDENTITY_PREFIXES = ("CORTEX_", "GIT_")
NOT_IDENTITY = ("CORTEX_DAEMON", "CORTEX_DAEMON_DIR")
# What a command takes from its own environment, set for it alone: which git runs, the time
# zone dates are shown in, the language of git's messages, the terminal.
PER_REQUEST = ("PATH", "TZ", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "NO_COLOR")
MAX_REQUEST = 4 << 20          # bytes; arguments and environment are far smaller
REQUEST_SECONDS = 5.0          # for a client to send its request
ENGINES = 8                    # stores kept open, the least recently used closed first
CHECK_SECONDS = 60.0           # how often an idle daemon asks whether its socket is still there
LOG_NAME = "daemon.log"
LOCK_NAME = "daemon.lock"
START_LOCK_NAME = "start.lock"   # held by a `cortex daemon start` until its daemon listens


class DaemonError(CortexError):
    pass


class _Refused(Exception):
    """A request the client is to run itself, for this reason."""


class _Stop(BaseException):
    """SIGTERM, or Ctrl-C in `cortex daemon run`: through a command too (cli.main turns a
    KeyboardInterrupt into an answer, "interrupted"), and out of the loop."""


@dataclass
class Request:
    kind: str
    package: str
    interpreter: str
    cwd: str
    streams: tuple[str, str, str, str]   # stdout's encoding and error handler, then stderr's
    columns: int
    env: dict[str, str]
    argv: list[str]


def decode_request(data: bytes) -> Request:
    """The fields of quick.encode_request; ValueError when they are not that (LookupError
    when an encoding or an error handler is unknown here)."""
    fields = data.split(b"\0")
    head = fields[0].split(b" ")
    if len(fields) < 10 or len(head) != 2 or head[0] != quick.MAGIC:
        raise ValueError("not a request of this version")
    count = int(fields[9])
    if count < 0 or 10 + count > len(fields):
        raise ValueError("a wrong count of environment entries")
    env = {}
    for entry in fields[10:10 + count]:
        key, sep, value = entry.partition(b"=")
        if not sep:
            raise ValueError("an environment entry without '='")
        env[os.fsdecode(key)] = os.fsdecode(value)
    streams = tuple(field.decode("ascii") for field in fields[4:8])
    for encoding, errors in (streams[:2], streams[2:]):
        codecs.lookup(encoding)
        codecs.lookup_error(errors)
    return Request(head[1].decode("ascii"), os.fsdecode(fields[1]), os.fsdecode(fields[2]),
                   os.fsdecode(fields[3]), (streams[0], streams[1], streams[2], streams[3]),
                   int(fields[8]), env, [os.fsdecode(word) for word in fields[10 + count:]])


class _Stream(io.TextIOBase):
    """A standard stream of one command: each write goes to the shared list of frames, in the
    order written, as text (UTF-8, lone surrogates kept), which the client writes to its own
    stream as this one was written (quick.forward): its buffering, hence the order of stdout
    and stderr in one pipe, and its encoding, with one byte-order mark at most, are the
    command's own. The text is encoded here too, as the client's stream will, so that what
    cannot be raises here, where the command runs (stdout's handler is not stderr's)."""

    def __init__(self, kind: bytes, out: list, encoding: str, errors: str):
        self._kind, self._out, self._encoding, self._errors = kind, out, encoding, errors
        self._encoder = codecs.getincrementalencoder(encoding)(errors)
        self.buffer = _Bytes(kind.upper(), out)

    @property
    def encoding(self) -> str:   # type: ignore[override]
        return self._encoding

    @property
    def errors(self) -> str:     # type: ignore[override]
        return self._errors

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        self._encoder.encode(text)
        self._out.append((self._kind, text.encode("utf-8", "surrogatepass")))
        return len(text)


class _Bytes(io.RawIOBase):
    """A standard stream's `buffer`: bytes, written as they are (frames O and E)."""

    def __init__(self, kind: bytes, out: list):
        self._kind, self._out = kind, out

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._out.append((self._kind, bytes(data)))
        return len(data)


class _Kept:
    """An engine for one command that stays open after it (cli._opened)."""

    def __init__(self, engine):
        self.engine = engine

    def __enter__(self):
        return self.engine

    def __exit__(self, *exc) -> None:
        pass


class Pool:
    """The engines of the stores asked about, by repository root and explicit --db."""

    def __init__(self, size: int = ENGINES):
        self.size = size
        self._engines: OrderedDict[tuple, Any] = OrderedDict()

    def __call__(self, args) -> _Kept:
        from cortex_core.engine import Engine
        root = Engine.find_root(args.repo)
        db = Path(args.db).expanduser().resolve() if args.db else None
        key = (root, db)
        engine = self._engines.pop(key, None)
        if engine is None:
            engine = Engine.open(root, db=db, source="the command line")
        else:
            engine.relocate()   # an index run may have made the per-user store since
        self._engines[key] = engine
        while len(self._engines) > self.size:
            self._engines.popitem(last=False)[1].close()
        return _Kept(engine)

    def roots(self) -> list[str]:
        return [str(root) for root, _ in self._engines]

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()
        self._engines.clear()


class CodeStamp:
    """When Cortex's own files last changed: a daemon whose code was edited or upgraded under
    it would answer with the old code. The files found at the start are stat-ed again at each
    request (a fraction of a millisecond), their folders too: a folder whose time changed is
    listed again, and a module or a sub-folder added or removed there is a change; what else
    changes a folder's time is not (the `__pycache__` an import makes in a fresh checkout, an
    editor's swap file)."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.folders: dict[str, tuple[int | None, frozenset[str] | None]] = {}
        for package in ("cortex_core", "cortex_cli"):
            top = os.path.dirname(sys.modules[package].__file__ or "")
            for folder, names, files in os.walk(top):
                names[:] = [n for n in names if n != "__pycache__"]
                self.folders[folder] = (_mtime(folder), _modules(folder))
                self.paths += [os.path.join(folder, n) for n in files if n.endswith(".py")]
        self.first = self.now()

    def now(self) -> tuple:
        stamps: list[tuple[int, int] | None] = []
        for path in self.paths:
            try:
                st = os.stat(path)
            except OSError:
                stamps.append(None)
                continue
            stamps.append((st.st_mtime_ns, st.st_size))
        return tuple(stamps)

    def changed(self) -> bool:
        if self.now() != self.first:
            return True
        for folder, (mtime, modules) in self.folders.items():
            now = _mtime(folder)
            if now != mtime:
                if now is None or _modules(folder) != modules:
                    return True
                self.folders[folder] = (now, modules)
        return False


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _modules(folder: str) -> frozenset[str] | None:
    """The modules and sub-folders of a folder of Cortex's code."""
    try:
        with os.scandir(folder) as entries:
            return frozenset(e.name for e in entries if e.name.endswith(".py") or (
                e.name != "__pycache__" and e.is_dir()))
    except OSError:
        return None


@dataclass
class Daemon:
    place: str
    idle_seconds: float = 0.0
    pool: Pool = field(default_factory=Pool)
    started: float = field(default_factory=time.time)
    served: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    stamp: CodeStamp = field(default_factory=CodeStamp)
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    stopping: bool = False
    models: dict[str, tuple | None] = field(default_factory=dict)   # their files when loaded

    # -- one request --------------------------------------------------------------------------

    def answer(self, data: bytes) -> bytes:
        if self.stamp.changed():   # first: a client of a newer protocol stops this daemon too
            self.stopping = True
            print("cortex daemon: Cortex's files changed: stopping", file=sys.stderr,
                  flush=True)
            return self._refuse("Cortex's files changed since the daemon started (it stopped)")
        try:
            request = decode_request(data)
        except (ValueError, LookupError, IndexError) as exc:
            return self._refuse(f"a malformed request ({exc})")
        if request.kind == "status":
            return quick.frame(b"s", json.dumps(self.status()).encode()) + quick.frame(b"x", b"0")
        if request.kind == "stop":
            self.stopping = True
            return quick.frame(b"x", b"0")
        if request.kind != "run":
            return self._refuse(f"an unknown request ({request.kind[:40]})")
        why = self._why_not(request)
        if why:
            return self._refuse(why)
        self._forget_changed_models()
        try:
            answer = self._run(request)
        except _Refused as exc:
            return self._refuse(str(exc))
        finally:
            self._forget_changed_models()   # notes the models this command loaded
        self.served += 1
        return answer

    def _refuse(self, why: str) -> bytes:
        self.refused[why] = self.refused.get(why, 0) + 1
        return quick.frame(b"r", why.encode())

    def _why_not(self, request: Request) -> str | None:
        if request.package != quick.package_dir():
            return "another installation of Cortex asked"
        if request.interpreter != quick.interpreter():
            return "another Python, or one that imports from other places, asked"
        if not request.argv or request.argv[0] not in quick.SERVED:
            return "not a query the daemon answers"
        keys = {k for k in (*self.env, *request.env)
                if k in IDENTITY or (k.startswith(IDENTITY_PREFIXES) and k not in NOT_IDENTITY)}
        differ = sorted(k for k in keys if self.env.get(k) != request.env.get(k))
        if differ:
            return "the environment differs in " + ", ".join(differ[:5])
        return None

    def _run(self, request: Request) -> bytes:
        from cortex_cli import cli
        out: list[tuple[bytes, bytes]] = []
        saved = {k: os.environ.get(k) for k in (*PER_REQUEST, "COLUMNS")}
        streams, original = (sys.stdout, sys.stderr), sys.__stdout__
        try:
            os.chdir(request.cwd)
        except OSError as exc:
            raise _Refused(f"cannot enter the working folder ({exc.strerror})") from None
        try:
            for key in PER_REQUEST:
                _set_env(key, request.env.get(key))
            _set_env("COLUMNS", str(request.columns) if request.columns > 0 else None)
            time.tzset()
            sys.stdout = _Stream(b"o", out, *request.streams[:2])
            sys.stderr = _Stream(b"e", out, *request.streams[2:])
            # The terminal's width is the client's (COLUMNS above), or none: not the one of a
            # daemon run in a terminal (cli._columns and shutil ask sys.__stdout__).
            sys.__stdout__ = sys.stdout   # type: ignore[misc,assignment]
            cli.POOL = self.pool
            try:
                status = cli.main(request.argv)
            except cli.RunHere as exc:
                raise _Refused(str(exc)) from None
            except SystemExit as exc:   # argparse: --help (0), a usage error (2)
                status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
                if isinstance(exc.code, str):
                    sys.stderr.write(exc.code + "\n")
            except Exception as exc:
                # An error the command did not expect (one its output cannot be encoded in,
                # say): the client runs it, and Python ends it with its own traceback there.
                print(f"cortex daemon: `{request.argv[0]}` failed; its client runs it itself:\n"
                      + "".join(traceback.format_exception(exc)), file=streams[1], flush=True)
                raise _Refused(f"the command failed in the daemon ({type(exc).__name__})") from None
        finally:
            cli.POOL = None
            sys.stdout, sys.stderr = streams
            sys.__stdout__ = original     # type: ignore[misc]
            for key, value in saved.items():
                _set_env(key, value)
            time.tzset()
            os.chdir(self.place)
        return b"".join(quick.frame(kind, body) for kind, body in out) + \
            quick.frame(b"x", str(status).encode())

    def _forget_changed_models(self) -> None:
        """A search's model whose files changed is loaded again, by engines opened again."""
        embeddings = sys.modules.get("cortex_core.memory.embeddings")   # none loaded without
        if embeddings is not None and embeddings.forget_changed_models(self.models):
            self.pool.close()

    def status(self) -> dict:
        return {"running": True, "folder": self.place, "pid": os.getpid(),
                "socket": os.path.join(self.place, quick.SOCKET_NAME),
                "started": self.started, "served": self.served, "refused": self.refused,
                "repositories": self.pool.roots(), "memory_mb": _resident_mb(),
                "idle_minutes": self.idle_seconds / 60, "package": quick.package_dir()}

    # -- the loop -----------------------------------------------------------------------------

    def serve(self, listener: socket.socket, mine=None,
              check_seconds: float = CHECK_SECONDS) -> None:
        """Answer until stopped or idle; and, when `mine()` (whether the socket's path is still
        this daemon's socket) says no, asked every `check_seconds`: a folder removed (at the
        end of the user's last session, say) leaves no way to reach or stop this daemon, and
        another one may run there."""
        last = time.monotonic()
        while not self.stopping:
            wait = check_seconds if mine is not None else None
            if self.idle_seconds:
                left = max(0.0, last + self.idle_seconds - time.monotonic())
                wait = left if wait is None else min(wait, left)
            listener.settimeout(None if wait is None else max(wait, 0.01))   # 0: non-blocking
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                if self.idle_seconds and time.monotonic() - last >= self.idle_seconds:
                    print(f"cortex daemon: idle for {self.idle_seconds / 60:g} minutes: "
                          "stopping", file=sys.stderr, flush=True)
                    return
                if mine is not None and not mine():
                    print("cortex daemon: its socket is gone or another's: stopping",
                          file=sys.stderr, flush=True)
                    return
                continue
            self._one(conn)     # which closes it, or hands it to a thread that will
            last = time.monotonic()

    def _one(self, conn: socket.socket) -> None:
        if not _same_user(conn):
            conn.close()
            return
        chunks, size = [], 0
        deadline = time.monotonic() + REQUEST_SECONDS    # for the whole request, not each read
        try:
            while size <= MAX_REQUEST:
                conn.settimeout(max(0.001, deadline - time.monotonic()))
                chunk = conn.recv(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError:    # a client that sends nothing, too slowly, or left
            conn.close()
            return
        try:
            answer = self._refuse("a request too large") if size > MAX_REQUEST \
                else self.answer(b"".join(chunks))
        except Exception as exc:   # a fault of the daemon's own: logged; it goes on
            traceback.print_exc(file=sys.stderr)
            answer = self._refuse(f"the daemon failed ({type(exc).__name__})")
        _send(conn, answer)


def _send(conn: socket.socket, answer: bytes) -> None:
    """Send the answer and close the connection: what the socket takes at once here (every
    answer but a large one), the rest from a thread of its own, so that a client that does
    not read it (stopped with Ctrl-Z, say) keeps no other waiting. A client that left (Ctrl-C)
    leaves nothing to undo: commands only read."""
    try:
        conn.setblocking(False)
        sent = conn.send(answer)
    except BlockingIOError:
        sent = 0
    except OSError:
        conn.close()
        return
    if sent == len(answer):
        conn.close()
        return
    import threading
    threading.Thread(target=_send_rest, args=(conn, answer[sent:]), daemon=True).start()


def _send_rest(conn: socket.socket, rest: bytes) -> None:
    try:
        conn.settimeout(quick.ANSWER_SECONDS)
        conn.sendall(rest)
    except OSError:
        pass
    finally:
        conn.close()


def _set_env(key: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value


def _same_user(conn: socket.socket) -> bool:
    """The peer runs as this user (Linux tells; elsewhere the folder's mode keeps others out)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    import struct
    try:
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option,
                                                              struct.calcsize("3i")))
    except OSError:
        return False
    return uid == os.getuid()


def _resident_mb() -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


# -- the place ----------------------------------------------------------------------------------

def prepare(place: str) -> None:
    """Make the daemon's folder (mode 0700), or say why it cannot be used."""
    if not hasattr(socket, "AF_UNIX"):
        raise DaemonError("the daemon needs Unix sockets, which this system does not have")
    if len(os.fsencode(os.path.join(place, quick.SOCKET_NAME))) > quick.MAX_SOCKET_PATH:
        raise DaemonError(f"the daemon's folder {place} is too long a path for a socket; set "
                          "CORTEX_DAEMON_DIR to a shorter one")
    try:
        os.makedirs(place, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise DaemonError(f"cannot make the daemon's folder {place}: {exc.strerror}") from None
    why = quick.private(place)
    if why:
        raise DaemonError(f"the daemon's folder cannot be used: {why}; set CORTEX_DAEMON_DIR "
                          "to a folder of your own (mode 700)")


def ask(kind: str) -> list[tuple[bytes, bytes]] | None:
    """A control request (status, stop) to the running daemon; None when none answers."""
    request = quick.encode_request(kind, [], "/", ("utf-8", "strict", "utf-8", "strict"), 0, {})
    return quick.exchange(request, timeout=REQUEST_SECONDS + quick.ANSWER_SECONDS)


def running_status() -> dict | None:
    answer = ask("status")
    for kind, body in answer or ():
        if kind == b"s":
            return json.loads(body)
    return None


def run(idle_minutes: float, ready=None, check_seconds: float = CHECK_SECONDS) -> int:
    """Serve in this process until stopped, idle for `idle_minutes` (0: never), killed, or
    its socket is gone (asked every `check_seconds`). `ready(pid)` is called once the socket
    listens."""
    import fcntl
    place = quick.folder()
    prepare(place)
    lock = open(os.path.join(place, LOCK_NAME), "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        raise DaemonError(f"a daemon is already running for this user ({place})") from None
    path = os.path.join(place, quick.SOCKET_NAME)
    try:
        os.unlink(path)     # a daemon that was killed left it; the lock says none runs
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    own = _identity(path)

    def mine() -> bool:
        return _identity(path) == own
    signal.signal(signal.SIGTERM, _stop_on_signal)
    signal.signal(signal.SIGINT, _stop_on_signal)
    daemon = Daemon(place, idle_seconds=idle_minutes * 60)
    os.chdir(place)
    try:
        if ready is not None:
            ready(os.getpid())
        daemon.serve(listener, mine, check_seconds)
    except _Stop:
        print("cortex daemon: stopped by a signal", file=sys.stderr, flush=True)
    finally:
        if mine():    # not the socket of a daemon started since in a folder made again
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        listener.close()
        daemon.pool.close()
        lock.close()
    return 0


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _stop_on_signal(signum, frame) -> None:
    raise _Stop


def start(idle_minutes: float, wait_seconds: float = 60.0) -> dict:
    """Start a daemon in the background and wait until it listens; the running one's status
    if there is one already."""
    import fcntl
    status = running_status()
    if status is not None:
        return dict(status, already=True)
    place = quick.folder()
    prepare(place)
    # Two starts at once: the second waits for the first's daemon, and says it runs.
    with open(os.path.join(place, START_LOCK_NAME), "a") as starting:
        fcntl.flock(starting, fcntl.LOCK_EX)
        status = running_status()
        if status is not None:
            return dict(status, already=True)
        return _spawn(place, idle_minutes, wait_seconds)


def _spawn(place: str, idle_minutes: float, wait_seconds: float) -> dict:
    import select
    import subprocess
    log = open(os.path.join(place, LOG_NAME), "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cortex_cli.daemon", "--idle-minutes", str(idle_minutes)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, cwd=place,
        start_new_session=True, env=dict(os.environ, CORTEX_DAEMON_DIR=place))
    log.close()
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], wait_seconds)
    line = proc.stdout.readline().decode(errors="replace") if ready else ""
    proc.stdout.close()
    if not line.startswith("ready"):
        if proc.poll() is None and not ready:
            proc.kill()
        tail = _log_tail(os.path.join(place, LOG_NAME))
        raise DaemonError("the daemon did not start" + (f": {tail}" if tail else ""))
    status = running_status()
    if status is None:
        proc.terminate()    # not left running where nothing will find it
        raise DaemonError("the daemon started but does not answer")
    return dict(status, already=False)


def stop(wait_seconds: float = 30.0) -> bool:
    """Stop the running daemon and wait until it has let go of its lock (so that a `start`
    right after starts a new one); False when none was running."""
    import fcntl
    answer = ask("stop")
    if answer is None:
        return False
    if answer[-1][0] == b"r" and b"not a request of this version" in answer[-1][1]:
        # A daemon of the first protocol, which refuses this one's requests: its own stop.
        quick.exchange(b"\0".join([b"cortex-daemon/1 stop", b"", b"/", b"utf-8", b"strict",
                                    b"0", b"0"]), timeout=REQUEST_SECONDS + quick.ANSWER_SECONDS)
    try:
        lock = open(os.path.join(quick.folder(), LOCK_NAME), "a")
    except OSError:
        return True
    with lock:
        deadline = time.monotonic() + wait_seconds
        while time.monotonic() < deadline:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except OSError:    # still closing its stores
                time.sleep(0.02)
    return True


def _log_tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            lines = f.read().decode(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _main() -> int:
    """`python -m cortex_cli.daemon --idle-minutes N`: what `cortex daemon start` runs. It says
    `ready PID` on stdout once it listens; from then on stdout is the log too."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m cortex_cli.daemon")
    parser.add_argument("--idle-minutes", type=float, default=0.0)
    parser.add_argument("--check-seconds", type=float, default=CHECK_SECONDS,
                        help=argparse.SUPPRESS)   # how often it asks whether its socket is there
    args = parser.parse_args()

    def ready(pid: int) -> None:
        sys.stdout.write(f"ready {pid}\n")
        sys.stdout.flush()
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
        print(f"cortex daemon {pid}: listening since {time.strftime('%Y-%m-%d %H:%M:%S')}",
              file=sys.stderr, flush=True)

    try:
        return run(args.idle_minutes, ready, args.check_seconds)
    except CortexError as exc:
        print(f"cortex daemon: {exc}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(_main())

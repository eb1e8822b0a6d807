"""What `cortex` runs first: hand the command to a running `cortex daemon` when one is there,
else run it here (cortex_cli/cli.py).

A Python process that imports what a query needs starts at about 6x a bare `python -c pass`
(docs/numbers.md, "Command start"); the daemon (cortex_cli/daemon.py) has it all imported and
its stores open, so a command it answers costs this process's start and one round trip. This
module is that client, and it imports nothing a bare interpreter has not loaded but `_socket`:
no `re`, no argparse, no json.

The exchange, over a Unix socket in a folder only this user can enter (`folder()`): the
request is NUL-separated fields (`encode_request`); the answer is frames, a kind byte, eight
hex digits of length and the bytes (`frame`): each write to stdout (o) and stderr (e) in the
order made, as UTF-8 text that this process writes to its own streams (O and E: bytes written
to a stream's buffer), then the exit status (x); or a refusal with its reason (r), after which
this process answers itself.
Nothing is printed before the whole answer has arrived, so a refusal or a lost daemon never
shows half an answer.
"""


import os
import sys

MAGIC = b"cortex-daemon/2"
# The commands the daemon answers: the read-only queries. `index`, `note`, `model`, `mcp`,
# `hooks` and `daemon` always run in the process they were typed in.
SERVED = frozenset(("history", "hotspots", "related", "status", "search", "what",
                    "related-commits", "areas", "context", "blast", "callers", "callees"))
# Ask no more of a daemon than this between two reads: then the command runs here.
ANSWER_SECONDS = 60.0
SOCKET_NAME = "daemon.sock"
# What a command interrupted by Ctrl-C says (cli.main too), with exit status 130.
INTERRUPTED = "cortex: interrupted (the index stays consistent; run again to continue)"
# sun_path is 108 bytes on Linux, 104 on macOS.
MAX_SOCKET_PATH = 100


def folder() -> str:
    """The daemon's folder: CORTEX_DAEMON_DIR, else $XDG_RUNTIME_DIR/cortex, else
    $TMPDIR/cortex-UID (/tmp without TMPDIR). One daemon per user serves every repository.
    A relative path is the current folder's (`daemon start` hands the daemon the absolute
    one)."""
    env = os.environ
    if env.get("CORTEX_DAEMON_DIR"):
        place = env["CORTEX_DAEMON_DIR"]
    elif env.get("XDG_RUNTIME_DIR"):
        place = os.path.join(env["XDG_RUNTIME_DIR"], "cortex")
    else:
        place = os.path.join(env.get("TMPDIR") or "/tmp", f"cortex-{os.getuid()}")
    return os.path.abspath(place)


def private(path: str) -> str | None:
    """Why `path` is not a folder only this user can use (None when it is). Another user's
    folder could hold a socket whose answers are made up."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    if (st.st_mode & 0o170000) != 0o040000:
        return f"{path} is not a folder"
    if st.st_uid != os.getuid():
        return f"{path} belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o077:
        return f"{path} can be entered by other users (mode {st.st_mode & 0o777:o})"
    return None


def package_dir() -> str:
    """This installation of Cortex: a daemon of another one refuses the command."""
    return os.path.dirname(os.path.abspath(__file__))


def interpreter() -> str:
    """This Python and where it imports from (but the script's own folder, sys.path[0]): a
    daemon of another one (another virtual environment with the same Cortex, another version,
    other packages) refuses the command."""
    return "\n".join((sys.version, sys.prefix, *sys.path[1:]))


def encode_request(kind: str, argv: list[str], cwd: str, streams: tuple[str, str, str, str],
                   columns: int, env: dict[str, str]) -> bytes:
    """`streams`: the encoding and error handler of stdout, then of stderr (whose handler is
    backslashreplace where stdout's is strict)."""
    fields = [MAGIC + b" " + kind.encode(), os.fsencode(package_dir()),
              os.fsencode(interpreter()), os.fsencode(cwd),
              *(word.encode() for word in streams), str(columns).encode(),
              str(len(env)).encode()]
    fields += [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()]
    fields += [os.fsencode(word) for word in argv]
    return b"\0".join(fields)


def frame(kind: bytes, payload: bytes) -> bytes:
    return kind + b"%08x" % len(payload) + payload


def frames(data: bytes) -> list[tuple[bytes, bytes]] | None:
    """The frames of an answer; None when it is cut short or malformed."""
    out, at = [], 0
    while at < len(data):
        head = data[at:at + 9]
        if len(head) < 9:
            return None
        try:
            size = int(head[1:], 16)
        except ValueError:
            return None
        body = data[at + 9:at + 9 + size]
        if len(body) != size:
            return None
        out.append((head[:1], body))
        at += 9 + size
    return out


def encodings() -> tuple[str, str, str, str]:
    """The encoding and error handler of stdout and of stderr, as this process writes them."""
    words: list[str] = []
    for stream in (sys.stdout, sys.stderr):
        words += [getattr(stream, "encoding", None) or "utf-8",
                  getattr(stream, "errors", None) or "strict"]
    return words[0], words[1], words[2], words[3]


def columns() -> int:
    """The terminal's width as cli._columns reads it (COLUMNS, else the terminal), 0 if none."""
    try:
        value = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        value = 0
    if value <= 0:
        try:
            value = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            value = 0
    return value


def exchange(request: bytes, timeout: float = ANSWER_SECONDS) -> list[tuple[bytes, bytes]] | None:
    """Send a request to the daemon and read its whole answer; None when there is no daemon
    (no folder, a folder others can use, no socket, nobody listening) or it failed midway."""
    try:
        import _socket
    except ImportError:
        return None
    if not hasattr(_socket, "AF_UNIX"):
        return None
    place = folder()
    if private(place) is not None:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(1.0)
        sock.connect(os.path.join(place, SOCKET_NAME))
        sock.settimeout(timeout)
        sock.sendall(request)
        sock.shutdown(_socket.SHUT_WR)
        chunks = []
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:    # no socket, nobody listening, the daemon gone or too slow
        return None
    finally:
        sock.close()
    return frames(b"".join(chunks))


def forward(argv: list[str]) -> int | None:
    """The exit status of the command as the daemon ran it, its output written here; None
    when this process is to run it itself."""
    if not argv or argv[0] not in SERVED or os.environ.get("CORTEX_DAEMON") == "off":
        return None
    if sys.stdout is None or sys.stderr is None:
        return None    # a closed stream (`>&-`): what the command writes there goes nowhere
    try:
        cwd = os.getcwd()
    except OSError:    # a folder removed under the shell: the command says what it can
        return None
    try:
        return _forward(argv, cwd)
    except KeyboardInterrupt:   # Ctrl-C while the daemon answers: as cli.main ends a command
        sys.stderr.write(INTERRUPTED + "\n")
        return 130


def _forward(argv: list[str], cwd: str) -> int | None:
    answer = exchange(encode_request("run", argv, cwd, encodings(), columns(), dict(os.environ)))
    if not answer or answer[-1][0] != b"x" or not answer[-1][1].isdigit():
        return None    # no daemon, a refusal (its reason is in `cortex daemon status`)
    try:
        for kind, body in answer[:-1]:
            # Each write as the command made it, to a stream like the one it would have made
            # it to: the same buffering (what a pipe of stdout and stderr shows first), the
            # same encoding.
            stream = sys.stdout if kind in b"oO" else sys.stderr
            if kind in b"oe":
                stream.write(body.decode("utf-8", "surrogatepass"))
            else:
                stream.buffer.write(body)
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:   # `cortex history ... | head`, as cli.main ends it
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return int(answer[-1][1])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    status = forward(argv)
    if status is not None:
        return status
    from cortex_cli.cli import main as run_here
    return run_here(argv)


if __name__ == "__main__":
    sys.exit(main())

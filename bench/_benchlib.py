"""Helpers shared by the benchmark scripts: running and timing processes, private clones,
percentiles, paired intervals and p-values, the description of the machine and of the code
under test, progress on stderr and the report (JSON or text) on stdout. What only the history
benchmarks need (git's funcname lines, `git log -L` patches, agreement of commit sets) is in
`_linelog.py`.

Standard library only (plus the project, imported by the scripts themselves, and numpy, one of
its dependencies, for the intervals).
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_DIR = BENCH_DIR.parent
WORK_DIR = BENCH_DIR / ".work"  # gitignored: private clones and temporary databases


def _code_under_test() -> Path:
    """The folder of the cortex_core this process imports, put first on PYTHONPATH for its
    child processes. `python -m X` and `python -c` also put their working directory first on
    sys.path, ahead of PYTHONPATH: a child started inside a checkout ran that checkout's code
    whatever PYTHONPATH named (bench_versions.py, started from the project's folder, compared
    this tree with itself until 2026-12-05). So children are started with `-P` (python_module),
    which leaves the working directory out; not with PYTHONSAFEPATH in the environment, which
    would also leave a bench script's own folder out of the sys.path of a script run as a child.
    A caller that sets PYTHONPATH for a child (another version) still can."""
    spec = importlib.util.find_spec("cortex_core")
    if spec is None or spec.origin is None:
        return PROJECT_DIR
    code = Path(spec.origin).resolve().parent.parent
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(code)]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(code), *rest])
    return code


def python_module(name: str) -> list[str]:
    """`python -P -m name`: the module as PYTHONPATH (or the install) has it, never the working
    directory's copy."""
    return [sys.executable, "-P", "-m", name]


CODE_DIR = _code_under_test()


@dataclass
class Run:
    """One finished process: wall time, its own peak RSS and CPU, its output."""
    seconds: float
    returncode: int
    stdout: bytes
    stderr: bytes
    max_rss_kib: int
    user_seconds: float
    system_seconds: float
    tree_peak_rss_kib: int | None = None  # sampled sum (PSS) over the process and descendants
    tree_peak_processes: int | None = None
    tree_measure: str | None = None


def run(cmd: list[str], *, cwd: str | Path | None = None, capture: bool = True,
        stdout_path: str | None = None, check: bool = True, env: dict | None = None,
        sample_tree: bool = False) -> Run:
    """Run `cmd`, timing it from before the fork to after it is reaped (process start included).

    Waits with os.wait4, which gives the resource usage of this child and of the descendants
    it reaped (CPU summed, peak RSS the largest single process), unlike
    getrusage(RUSAGE_CHILDREN), which accumulates every child reaped so far. With
    `sample_tree`, a thread also samples the summed memory of the process and all its
    descendants (worker processes) every 50 ms from /proc: PSS, where pages shared between
    forked processes count once in all, else RSS. A peak shorter than 50 ms may be missed."""
    out_target = subprocess.PIPE if capture else subprocess.DEVNULL
    out_file = None
    if stdout_path is not None:
        out_file = open(stdout_path, "wb")
        out_target = out_file
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out_target,
                                stderr=subprocess.PIPE if capture else subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, env=env)
        stdout, stderr = b"", b""
        sampler = _TreeSampler(proc.pid) if sample_tree else None
        if capture and stdout_path is None:
            # Read both pipes before reaping; communicate() would reap with waitpid and lose
            # the rusage, so read them by hand.
            stdout, stderr = _drain(proc)
        elif capture:
            stderr = proc.stderr.read()
        if sampler is not None:
            sampler.wait_exit()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if out_file is not None:
            out_file.close()
    result = Run(seconds, proc.returncode, stdout, stderr, usage.ru_maxrss, usage.ru_utime,
                 usage.ru_stime)
    if sampler is not None:
        result.tree_peak_rss_kib = sampler.peak_kib
        result.tree_peak_processes = sampler.peak_processes
        result.tree_measure = sampler.measure
    if check and result.returncode != 0:
        raise RuntimeError(f"command failed ({result.returncode}): {' '.join(map(str, cmd))}\n"
                           f"{stderr.decode('utf-8', 'replace')[-2000:]}")
    return result


def descendants(root: int) -> list[tuple[int, int]]:
    """(pid, parent pid) of every live descendant of `root` (not root itself), from
    /proc/*/stat."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [(pid, root) for pid in children.get(root, ())]
    while todo:
        pid, ppid = todo.pop()
        out.append((pid, ppid))
        todo.extend((child, pid) for child in children.get(pid, ()))
    return out

class _TreeSampler:
    """Samples the summed RSS of a process tree until the root exits (without reaping it)."""

    def __init__(self, pid: int, interval: float = 0.05):
        import threading
        self.pid, self.interval = pid, interval
        self.peak_kib = 0
        self.peak_processes = 0
        self.measure = "PSS"
        self._page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _tree(self) -> list[int]:
        return [self.pid] + [pid for pid, _ in descendants(self.pid)]

    def _alive(self) -> bool:
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            return False
        return stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3] != b"Z"

    def _loop(self) -> None:
        while self._alive():
            total = count = 0
            for pid in self._tree():
                kib = self._pss_kib(pid)
                if kib is not None:
                    total += kib
                    count += 1
            if total > self.peak_kib:
                self.peak_kib = total
            self.peak_processes = max(self.peak_processes, count)
            time.sleep(self.interval)

    def _pss_kib(self, pid: int) -> int | None:
        """Proportional set size (shared pages split between their users, so that a sum over
        forked workers does not count the pages they share several times); RSS if the kernel
        has no smaps_rollup."""
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
                for line in f:
                    if line.startswith(b"Pss:"):
                        self.measure = "PSS"
                        return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            pass
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                self.measure = "RSS"
                return int(f.read().split()[1]) * self._page_kib
        except (OSError, ValueError, IndexError):
            return None

    def wait_exit(self) -> None:
        self._thread.join()


def _drain(proc: subprocess.Popen) -> tuple[bytes, bytes]:
    """Read stdout and stderr to their ends without deadlocking and without reaping."""
    import selectors
    sel = selectors.DefaultSelector()
    chunks = {proc.stdout: [], proc.stderr: []}
    for stream in chunks:
        sel.register(stream, selectors.EVENT_READ)
    open_streams = 2
    while open_streams:
        for key, _ in sel.select():
            data = os.read(key.fileobj.fileno(), 1 << 16)
            if data:
                chunks[key.fileobj].append(data)
            else:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                open_streams -= 1
    return b"".join(chunks[proc.stdout]), b"".join(chunks[proc.stderr])


def git(repo: str | Path, *args: str, check: bool = True, strip: bool = True) -> str:
    """git's stdout in `repo` (decoded, stripped unless `strip` is false); a failure raises
    unless `check` is false."""
    out = run(["git", "-C", str(repo), *args], check=check).stdout.decode("utf-8", "replace")
    return out.strip() if strip else out


def cortex_command() -> list[str]:
    """The `cortex` entry point of the running interpreter's environment (the venv's)."""
    script = Path(sys.executable).parent / "cortex"
    if script.exists():
        return [str(script)]
    return python_module("cortex_cli.quick")


def work_dir(prefix: str, keep: bool) -> Path:
    """A fresh private folder under bench/.work/ (gitignored). SIGTERM is turned into SystemExit
    so that the callers' `finally` removes it when the run is stopped."""
    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=WORK_DIR))


def index_store(repo: Path, db: Path | None, work: Path | None) -> tuple[Path, dict]:
    """The store to measure and what the report says of it: `db` when given (resolved), else
    REPO indexed with `--model none` into `work`/cortex.db, timed."""
    if db is not None:
        db = db.resolve()
        return db, {"db": str(db), "seconds": None}
    assert work is not None, "no store given and no folder to index one into"
    db = work / "cortex.db"
    progress(f"indexing {repo} into {db} ...")
    r = run([*cortex_command(), "index", "--repo", str(repo), "--db", str(db), "--model", "none",
             "--quiet"])
    return db, {"db": str(db), "seconds": r.seconds}


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def private_clone(repo: Path, dest: Path, *, checkout: bool) -> Path:
    """A local clone (objects hard-linked: cheap) that the benchmark may alter freely."""
    args = ["git", "clone", "-q"]
    if not checkout:
        args.append("--no-checkout")
    run([*args, str(repo), str(dest)])
    return dest


def copy_db(src: Path, dst: Path) -> None:
    """Copy a store (its WAL and shared-memory files too, never its lock) over `dst`, flushed
    to disk: a copy left in the page cache made the first fsync of the run timed next (SQLite's
    checkpoint when the store closes) write the whole file, 0.4 s of a 300 MB store's update."""
    remove_db(dst)
    for f in src.parent.glob(src.name + "*"):
        if f.is_file() and not f.name.endswith(".lock"):
            target = dst.parent / (dst.name + f.name[len(src.name):])
            shutil.copy2(f, target)
            with open(target, "rb+") as copied:
                os.fsync(copied.fileno())


def store_head(db: Path) -> str:
    """The HEAD a store records as indexed (exits when it records none)."""
    # Read as a plain SQLite file: the store may be of a schema older or newer than the
    # cortex_core this script imports (each version is timed on what it can open).
    import apsw
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        head = (con.execute("select value from meta where key = 'head'").fetchone() or [None])[0]
    except apsw.Error as exc:
        raise SystemExit(f"{db} is no Cortex store: {exc}") from None
    finally:
        con.close()
    if not head:
        raise SystemExit(f"{db} records no indexed HEAD")
    return head


def remove_db(db: Path) -> None:
    for f in db.parent.glob(db.name + "*"):
        f.unlink(missing_ok=True)


def db_size(db: Path) -> int:
    return sum(f.stat().st_size for f in db.parent.glob(db.name + "*")
               if not f.name.endswith(".lock") and f.is_file())


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def best_of(fn, runs: int = 3) -> float:
    """The fastest of `runs` calls of `fn`, in seconds: the least disturbed by a shared machine."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def ratio(baseline: float, value: float) -> float:
    return baseline / value if value > 0 else float("inf")


def fmt_seconds(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GiB"


def table(rows: list[list[str]], header: list[str]) -> str:
    """A plain text table, columns left-aligned except numbers."""
    cells = [header, *rows]
    widths = [max(len(str(r[i])) for r in cells) for i in range(len(header))]

    def line(r):
        out = []
        for i, c in enumerate(r):
            c = str(c)
            numeric = c[:1].isdigit() or c[:1] in "-+." and c[1:2].isdigit()
            out.append(c.rjust(widths[i]) if numeric and r is not header else c.ljust(widths[i]))
        return "  ".join(out).rstrip()
    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def environment(repo: Path | None = None) -> dict:
    """What a reader needs to compare runs: when, where, which code, which repository."""
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).astimezone().isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "cpu_model": _cpu_model(),
            "load_average_1m_5m_15m": [round(x, 2) for x in os.getloadavg()],
            "platform": platform.platform(),
            "note": "shared machine: timings are noisy",
        },
        "python": platform.python_version(),
        "git": run(["git", "--version"]).stdout.decode().strip(),
        "cortex": _cortex_code(),
    }
    if repo is not None:
        info["repository"] = {
            "path": str(repo),
            "head": git(repo, "rev-parse", "HEAD"),
            "commits": int(git(repo, "rev-list", "--count", "HEAD")),
        }
    return info


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cortex_code() -> dict:
    """The commit of the code under test (the folder of the cortex_core imported) and whether
    its cortex_core/ has uncommitted edits (benchmarks measure the working tree, which another
    engineer may be changing)."""
    try:
        import cortex_core
        version = cortex_core.__version__
    except Exception:  # noqa: BLE001 - a report field, never fatal
        version = None
    out = {"version": version, "folder": str(CODE_DIR)}
    try:
        out["commit"] = git(CODE_DIR, "rev-parse", "HEAD")
        dirty = run(["git", "-C", str(CODE_DIR), "status", "--porcelain", "--", "cortex_core"])
        out["cortex_core_uncommitted"] = [l[3:] for l in dirty.stdout.decode().splitlines()]
    except Exception:  # noqa: BLE001
        pass
    return out


def environment_lines(env: dict) -> list[str]:
    m = env["machine"]
    lines = [f"date: {env['date']}",
             f"machine: {m['cpus']} CPUs ({m['cpu_model']}), load {m['load_average_1m_5m_15m']},"
             f" {m['note']}",
             f"{env['git']}, python {env['python']}"]
    c = env["cortex"]
    dirty = c.get("cortex_core_uncommitted")
    lines.append(f"cortex {c.get('version')} at {str(c.get('commit'))[:10]}"
                 + (f" + uncommitted edits in {', '.join(dirty)}" if dirty else ""))
    if "repository" in env:
        r = env["repository"]
        lines.append(f"repository: {r['path']} at {r['head'][:10]} ({r['commits']} commits)")
    return lines


def dump_json(data) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def emit(report: dict, as_json: bool, render, *render_args) -> None:
    """The report on stdout: as JSON (`--json`), else the text `render(report, *render_args)`."""
    if as_json:
        dump_json(report)
    else:
        print(render(report, *render_args))


def progress(*parts) -> None:
    """A line of progress on stderr (stdout holds the report)."""
    print(*parts, file=sys.stderr, flush=True)


def config(args, leave_out: tuple[str, ...] = ()) -> dict:
    """The command line's options for a report's "config" (paths as strings)."""
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
            if k not in leave_out}


def stdout_bytes(cmd: list[str]) -> int:
    """Bytes a command writes on stdout (read through a pipe; not timed)."""
    total = 0
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        while chunk := proc.stdout.read(1 << 20):
            total += len(chunk)
    return total


def mib(kib) -> str:
    """KiB as whole MiB; "-" when unknown (None or 0)."""
    return f"{kib / 1024:.0f} MiB" if kib else "-"


def clip(text: str | None, width: int = 70) -> str:
    text = (text or "").strip()
    return text if len(text) <= width else text[:width - 1] + "…"


def _group_sums(a: list[float], b: list[float], groups: list) -> tuple:
    """Per group: the sum of the paired differences a − b, and the number of queries."""
    import numpy as np
    if not len(a) == len(b) == len(groups):
        raise ValueError(f"paired scores and groups differ in length: {len(a)}, {len(b)}, "
                         f"{len(groups)}")
    ids = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    diff = np.zeros(len(ids))
    size = np.zeros(len(ids))
    for x, y, g in zip(a, b, groups):
        diff[ids[g]] += x - y
        size[ids[g]] += 1
    return diff, size


def paired_interval(a: list[float], b: list[float], groups: list, draws: int = 10_000,
                    seed: int = 0) -> tuple[float, float] | None:
    """The 95% interval of mean(a) − mean(b) over paired per-query scores, in points, by a
    bootstrap that draws whole groups: the queries of one group (the test transaction they come
    from) are drawn together, since they share their gold and are not independent; give each
    query a group of its own when they are. Percentile interval, fixed seed. None under two
    groups (a bootstrap of one group says nothing). Percentile intervals run narrow when only a
    few groups differ: read them with `sign_flip_p`."""
    import numpy as np
    diff, size = _group_sums(a, b, groups)
    if len(diff) < 2:
        return None
    rng = np.random.default_rng(seed)
    means = []
    for start in range(0, draws, 1000):   # in chunks: memory bounded whatever the groups
        pick = rng.integers(0, len(diff), size=(min(1000, draws - start), len(diff)))
        means.append(diff[pick].sum(axis=1) / size[pick].sum(axis=1) * 100)
    low, high = np.percentile(np.concatenate(means), [2.5, 97.5])
    return round(float(low), 2), round(float(high), 2)


def sign_flip_p(a: list[float], b: list[float], groups: list, draws: int = 100_000,
                seed: int = 0) -> float | None:
    """Two-sided p-value of no difference between paired scores, by a sign-flip test over the
    groups: with no difference, each group's summed difference a − b is as likely negated.
    Exact (every sign pattern) up to 16 groups that differ, else from `draws` random patterns.
    With one query per group and scores of 0 or 1 it is the exact McNemar test. None without
    queries."""
    import numpy as np
    diff, _ = _group_sums(a, b, groups)
    if not len(diff):
        return None
    differ = diff[diff != 0]
    if not len(differ):
        return 1.0
    observed = abs(differ.sum()) - 1e-9   # ties with the observed sum count as extreme
    k = len(differ)
    if k <= 16:
        patterns = (np.arange(2 ** k)[:, None] >> np.arange(k)) & 1
        sums = np.abs((patterns * 2 - 1) @ differ)
        return round(float((sums >= observed).mean()), 4)
    rng = np.random.default_rng(seed)
    extreme = 0
    for start in range(0, draws, 2000):   # in chunks, as above
        signs = rng.integers(0, 2, size=(min(2000, draws - start), k)) * 2 - 1
        extreme += int((np.abs(signs @ differ) >= observed).sum())
    return round((extreme + 1) / (draws + 1), 4)

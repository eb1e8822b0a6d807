"""The memory of processes, from /proc: a process's status (VmRSS, VmHWM), PSS and command line,
and two samplers of a process tree run in a thread: ChildSampler (bench_lsp.py: a server's
descendants, each one's peak and the summed PSS) and TreeMemory (bench_scale.py: the same with the
main process told from its workers, the peak's breakdown and a timeline).
"""

from __future__ import annotations

import threading
import time

import _benchlib as bl


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM, ... of /proc/<pid>/status in KiB (empty when the process is gone)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith((b"Vm", b"Rss")):
                    key, _, rest = line.partition(b":")
                    parts = rest.split()
                    if parts and parts[0].isdigit():
                        out[key.decode()] = int(parts[0])
    except OSError:
        pass
    return out


def proc_pss(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


class ChildSampler:
    """Samples the server's descendants every 50 ms: each one's peak RSS (VmHWM, the kernel's
    own high-water mark) and the summed PSS of all of them at once."""

    def __init__(self, root: int, interval: float = 0.05):
        self.root, self.interval = root, interval
        self.processes: dict[int, dict] = {}
        self.peak_tree_pss_kib = 0
        self.peak_tree_processes = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            pids = bl.descendants(self.root)
            total = count = 0
            for pid, ppid in pids:
                status = proc_status(pid)
                if not status:
                    continue
                entry = self.processes.get(pid)
                if entry is None:
                    entry = self.processes[pid] = {"pid": pid, "ppid": ppid,
                                                   "cmdline": cmdline(pid)[:300],
                                                   "peak_rss_kib": 0, "samples": 0}
                else:
                    _exec_seen(entry, pid, 300)
                entry["peak_rss_kib"] = max(entry["peak_rss_kib"], status.get("VmHWM", 0))
                entry["samples"] += 1
                pss = proc_pss(pid)
                if pss is not None:
                    total += pss
                    count += 1
            self.peak_tree_pss_kib = max(self.peak_tree_pss_kib, total)
            self.peak_tree_processes = max(self.peak_tree_processes, count)
            self.samples += 1
            self._stop.wait(self.interval)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        procs = sorted(self.processes.values(), key=lambda p: -p["peak_rss_kib"])
        # The indexer is the server's own child; its worker processes are its children.
        indexer = next((p for p in procs if p["ppid"] == self.root and "cortex_core" in
                        p["cmdline"] and " index" in p["cmdline"]), None)
        return {"processes": procs, "indexer": indexer,
                "peak_tree_pss_kib": self.peak_tree_pss_kib,
                "peak_tree_processes": self.peak_tree_processes, "samples": self.samples,
                "interval_seconds": self.interval}


def _exec_seen(entry: dict, pid: int, limit: int) -> None:
    """Read a known process's command line again: one first seen between its fork and its exec
    showed its parent's (the index run's main process, once, in a test), and it is cheap."""
    now = cmdline(pid)[:limit]
    if now:
        entry["cmdline"] = now


# -- memory of a process tree ------------------------------------------------------------------

SAMPLE_INTERVAL = 0.1        # seconds between /proc samples
TIMELINE_INTERVAL = 2.0      # seconds between timeline points kept in the report


class TreeMemory:
    """Samples every descendant of `root` (this script: the one child it runs and that child's
    workers) every 100 ms: the summed PSS, and at its peak which process held what; each
    process's VmHWM; a coarse timeline of the main process (the direct child) and the rest."""

    def __init__(self, root: int, interval: float = SAMPLE_INTERVAL):
        self.root, self.interval = root, interval
        self.start = time.perf_counter()
        self.processes: dict[int, dict] = {}
        self.peak = {"total_kib": 0}
        self.timeline: list[dict] = []
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        next_point = 0.0
        while not self._stop.is_set():
            main = workers = count = 0
            for pid, ppid in bl.descendants(self.root):
                pss = proc_pss(pid)
                status = proc_status(pid)
                if pss is None or not status:
                    continue
                entry = self.processes.get(pid)
                if entry is None:
                    entry = self.processes[pid] = {
                        "pid": pid, "ppid": ppid, "cmdline": cmdline(pid)[:200],
                        "role": "main" if ppid == self.root else "worker",
                        "peak_rss_kib": 0, "peak_pss_kib": 0, "first_seen_s": self._now()}
                else:
                    _exec_seen(entry, pid, 200)
                entry["peak_rss_kib"] = max(entry["peak_rss_kib"], status.get("VmHWM", 0))
                entry["peak_pss_kib"] = max(entry["peak_pss_kib"], pss)
                count += 1
                if ppid == self.root:
                    main += pss
                else:
                    workers += pss
            self.samples += 1
            now = self._now()
            if main + workers > self.peak["total_kib"]:
                self.peak = {"total_kib": main + workers, "main_kib": main,
                             "others_kib": workers, "processes": count, "at_s": now}
            if count and now >= next_point:
                self.timeline.append({"s": round(now, 1), "main_kib": main,
                                      "others_kib": workers, "processes": count})
                next_point = now + TIMELINE_INTERVAL
            self._stop.wait(self.interval)

    def _now(self) -> float:
        return time.perf_counter() - self.start

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        procs = sorted(self.processes.values(), key=lambda p: -p["peak_rss_kib"])
        return {"peak": self.peak, "processes": procs, "timeline": self.timeline,
                "samples": self.samples, "measure": "PSS summed over the tree (shared pages "
                f"once); VmHWM per process; every {self.interval * 1000:.0f} ms"}

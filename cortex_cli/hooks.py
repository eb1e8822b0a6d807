"""Git hooks that keep the index fresh: `cortex hooks install | uninstall | status`.

post-commit, post-merge, post-checkout and post-rewrite each get a small POSIX sh script that
first runs the hook that was there before (renamed to `<hook>.cortex-chained`: same arguments,
same stdin, its exit status kept), then starts `cortex index --coalesce` in the background and
exits at once. The indexer's output goes to `<git common dir>/cortex-hook.log`, never to git's.

The hooks directory is the one git uses: `git rev-parse --git-path hooks`, which follows
`core.hooksPath` (absolute, `~`, or relative to the working tree's root) and, from a linked
worktree, the common git directory. Uninstalling renames the chained hook back — the same inode,
so its bytes, mode and symbolic links come back exactly — and removes only what Cortex wrote.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from cortex_core.child_process import CLI_ARGS, index_arguments
from cortex_core.api import CortexError, NotARepository

HOOKS = ("post-commit", "post-merge", "post-checkout", "post-rewrite")
MARKER = "# cortex-hook v1"
MARKER_PREFIX = "# cortex-hook v"       # any version of Cortex's hook is Cortex's
CHAINED_SUFFIX = ".cortex-chained"
CREATED_DIR_MARKER = ".cortex-created-this-directory"
LOG_NAME = "cortex-hook.log"
LOG_MAX_BYTES = 256 * 1024              # the log is emptied when it grows past this
WAIT_SECONDS = 3600                     # how long a queued hook run waits for the running one
FOREGROUND_ENV = "CORTEX_HOOK_FOREGROUND"
_TOP = "$top"                           # the repository, as the hook's shell knows it


@dataclass(frozen=True)
class HookState:
    """One hook slot. `state`: "installed" (Cortex's hook), "chained" (Cortex's hook, running the
    hook that was there before), "foreign" (not Cortex's), "absent", or "blocked" (a directory)."""
    name: str
    path: str
    state: str
    chained: str | None = None          # the hook Cortex runs first, when there is one
    chained_runs: bool = False          # whether it is executable (git would have run it)
    interpreter: str | None = None      # recorded in Cortex's hook
    action: str | None = None           # what install / uninstall did
    problem: str | None = None          # why it was left alone, or what looks wrong


@dataclass(frozen=True)
class HooksReport:
    repo: str
    hooks_dir: str
    hooks_path: str | None              # core.hooksPath as configured, when set
    log: str
    interpreter: str | None             # the Python the installed hooks run
    interpreter_exists: bool
    fallback: str | None                # `cortex` on PATH, used when the interpreter is gone
    hooks: list[HookState] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(h.problem for h in self.hooks)


@dataclass(frozen=True)
class _Location:
    root: Path
    hooks_dir: Path
    hooks_path: str | None
    common_dir: Path


# -- where ------------------------------------------------------------------------------------

def _git(root: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {
        "GIT_TERMINAL_PROMPT": "0"}
    try:
        out = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True,
                             timeout=60)
    except FileNotFoundError:
        raise CortexError("git is not on PATH; hooks need git") from None
    if out.returncode != 0:
        raise NotARepository(f"{root} is not a git repository ({out.stderr.strip()})")
    return out.stdout


def locate(root: Path) -> _Location:
    """The hooks directory git uses for the repository at `root`, resolved to an absolute path."""
    lines = _git(root, "rev-parse", "--is-bare-repository", "--git-path", "hooks",
                 "--git-common-dir").splitlines()
    if len(lines) != 3:
        raise CortexError(f"unexpected answer from git rev-parse in {root}: {lines!r}")
    if lines[0] == "true":
        raise NotARepository(f"{root} is a bare repository; hooks keep a working copy's index")
    configured = _git_config(root, "core.hooksPath")
    # Relative answers are relative to the current directory, here the root (a relative
    # core.hooksPath is relative to the working tree's root, where git runs hooks).
    hooks_dir = Path(os.path.normpath(root / lines[1]))   # git expanded a leading ~
    common = Path(os.path.normpath(root / lines[2]))
    return _Location(root, hooks_dir, configured, common)


def _git_config(root: Path, key: str) -> str | None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    out = subprocess.run(["git", "config", "--get", key], cwd=root, env=env,
                         capture_output=True, text=True, timeout=60)
    return (out.stdout.strip() or None) if out.returncode == 0 else None


# -- the script ---------------------------------------------------------------------------------

def hook_script(name: str, interpreter: str) -> str:
    """Cortex's hook `name`: the hook from before, then the indexer in the background."""
    return f"""#!/bin/sh
{MARKER}: keeps the Cortex index fresh. `cortex hooks uninstall` removes it and puts back
# the hook that was here before (kept as {name}{CHAINED_SUFFIX}). Output: <git dir>/{LOG_NAME}.
hook={name}
py={shlex.quote(interpreter)}

# The hook that was here before: same arguments, same stdin; its exit status is this hook's.
status=0
chained="$(dirname "$0")/$hook{CHAINED_SUFFIX}"
if [ -f "$chained" ] && [ -x "$chained" ]; then
    "$chained" "$@"
    status=$?
fi

# A checkout of files (not of a branch), or of the commit HEAD already is: nothing to index.
if [ "$hook" = post-checkout ] && {{ [ "$3" = 0 ] || [ "$1" = "$2" ]; }}; then
    exit "$status"
fi

# Then `cortex index`, detached: git returns at once and its output stays clean.
top=$(git rev-parse --show-toplevel 2>/dev/null) || exit "$status"
[ -n "$top" ] || exit "$status"
# Inside a rebase every pick fires post-commit: post-rewrite, at its end, indexes once for all.
# (Not post-checkout: it fires once, at the start, and is all a fast-forward rebase fires.)
gitdir=$(git rev-parse --git-dir 2>/dev/null) || exit "$status"
if [ "$hook" = post-commit ] && {{ [ -d "$gitdir/rebase-merge" ] || [ -d "$gitdir/rebase-apply" ]; }}; then
    exit "$status"
fi
log=$(git rev-parse --git-common-dir 2>/dev/null) || exit "$status"
case $log in /*) ;; *) log="$PWD/$log" ;; esac
log="$log/{LOG_NAME}"
# The variables git sets for its hooks (GIT_DIR, GIT_INDEX_FILE...) must not steer the indexer.
unset $(git rev-parse --local-env-vars 2>/dev/null) GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE \\
    GIT_PREFIX GIT_COMMON_DIR GIT_OBJECT_DIRECTORY 2>/dev/null
if [ -x "$py" ]; then
    set -- "$py" {" ".join(CLI_ARGS)}    # -P: the repository's own files are never imported
elif command -v cortex >/dev/null 2>&1; then
    set -- cortex
else
    exit "$status"
fi
set -- "$@" {_index_words()}
# The log stays small: emptied once past {LOG_MAX_BYTES // 1024} KB. (Redirections in {{ }}: a failed one must not
# end the script or print.)
size=$({{ wc -c <"$log"; }} 2>/dev/null)
if [ "$size" -gt {LOG_MAX_BYTES} ] 2>/dev/null; then
    {{ : >"$log"; }} 2>/dev/null
fi
{{ echo "--- $(date '+%Y-%m-%d %H:%M:%S') $hook: $*"; }} 2>/dev/null >>"$log" || log=/dev/null
if [ "${{{FOREGROUND_ENV}:-}}" = 1 ]; then   # for tests and scripts: index before git returns
    {{ "$@"; }} </dev/null >>"$log" 2>&1
else
    command -v nice >/dev/null 2>&1 && set -- nice -n 10 "$@"
    (trap '' HUP INT QUIT; exec "$@") </dev/null >>"$log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
fi
exit "$status"
"""


def _index_words() -> str:
    """The indexer's arguments as the hook passes them: the repository is the shell's "$top"."""
    words = index_arguments(_TOP, quiet=True, coalesce=True, wait=WAIT_SECONDS)
    return " ".join('"$top"' if word == _TOP else shlex.quote(word) for word in words)


def _interpreter() -> str:
    if not sys.executable:
        raise CortexError("cannot tell which Python runs Cortex (sys.executable is empty)")
    return os.path.abspath(sys.executable)   # not resolved: a venv's python is a symbolic link


def _recorded_interpreter(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("py="):
            try:
                words = shlex.split(line[3:])
            except ValueError:
                return None
            return words[0] if len(words) == 1 else None
    return None


# -- reading a slot ---------------------------------------------------------------------------

def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CortexError(f"cannot read {path}: {exc.strerror or exc}") from None


def _ours(path: Path, st: os.stat_result | None) -> str | None:
    """The text of Cortex's hook at `path`; None when it is not Cortex's (links never are)."""
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > 64 * 1024:
        return None
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
    lines = text.splitlines()
    return text if len(lines) > 1 and lines[1].startswith(MARKER_PREFIX) else None


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _state(hooks_dir: Path, name: str) -> tuple[HookState, str | None]:
    """The slot `name` as it is, and the text of Cortex's hook in it (None if not Cortex's)."""
    slot = hooks_dir / name
    chained = hooks_dir / (name + CHAINED_SUFFIX)
    st, cst = _lstat(slot), _lstat(chained)
    text = _ours(slot, st)
    if st is None:
        state = "absent"
    elif stat.S_ISDIR(st.st_mode):
        state = "blocked"
    elif text is None:
        state = "foreign"
    else:
        state = "chained" if cst is not None else "installed"
    problem = None
    if state == "blocked":
        problem = f"{slot} is a directory, not a hook; move it away first"
    elif cst is not None and _ours(chained, cst) is not None:
        problem = f"{chained.name} is a copy of Cortex's own hook, not a hook to chain to"
    elif cst is not None and state == "absent":
        problem = (f"{chained.name} is the hook from before Cortex, but Cortex's {name} is gone: "
                   f"`cortex hooks uninstall` puts it back as {name}; or delete it")
    elif cst is not None and state == "foreign":
        problem = (f"{name} is not Cortex's hook (replaced by another tool?) and {chained.name} "
                   f"is the hook from before Cortex: left alone, sort them out by hand")
    return HookState(name=name, path=str(slot), state=state,
                     chained=str(chained) if cst is not None else None,
                     chained_runs=cst is not None and _executable(chained),
                     interpreter=_recorded_interpreter(text) if text else None,
                     problem=problem), text


# -- the commands -------------------------------------------------------------------------------

def status(root: Path) -> HooksReport:
    where = locate(root)
    states = [_state(where.hooks_dir, name)[0] for name in HOOKS] \
        if where.hooks_dir.is_dir() else [HookState(n, str(where.hooks_dir / n), "absent")
                                          for n in HOOKS]
    notes = [] if where.hooks_dir.exists() else [f"{where.hooks_dir} does not exist"]
    return _report(where, states, notes)


def install(root: Path, interpreter: str | None = None) -> HooksReport:
    """Install (or refresh) Cortex's hooks, to run `interpreter -m cortex_core` (default: this
    Python). Slots with a problem are left alone and reported; nothing is changed when the
    directory cannot be used at all."""
    where = locate(root)
    created = _prepare_dir(where)
    interpreter = interpreter or _interpreter()
    results = []
    for name in HOOKS:
        state, text = _state(where.hooks_dir, name)
        if state.problem:
            results.append(_with(state, action="skipped"))
            continue
        script = hook_script(name, interpreter)
        slot = Path(state.path)
        if text is not None:
            if text == script:
                results.append(_with(state, action="already installed"))
                continue
            _write_hook(slot, script)
            results.append(_with(state, action="updated", interpreter=interpreter))
            continue
        if state.state == "foreign":
            chained = slot.with_name(name + CHAINED_SUFFIX)
            _rename(slot, chained)
            try:
                _write_hook(slot, script)
            except CortexError:
                _rename(chained, slot)   # as it was
                raise
            runs = _executable(chained)
            results.append(HookState(
                name=name, path=str(slot), state="chained", chained=str(chained),
                chained_runs=runs, interpreter=interpreter,
                action="chained to the existing hook" if runs else "installed; the existing "
                "hook is kept but not executable, so it still does not run"))
            continue
        _write_hook(slot, script)
        results.append(HookState(name=name, path=str(slot), state="installed",
                                 interpreter=interpreter, action="installed"))
    notes = [f"created {where.hooks_dir}"] if created else []
    if where.hooks_path:
        notes.append(f"core.hooksPath is set ({where.hooks_path}): a tool that manages that "
                     "directory (husky, lefthook...) may overwrite these hooks")
    if _in_status(where):
        notes.append(f"{where.hooks_dir} is in the working tree: `git status` shows Cortex's "
                     "hooks there (ignore them in .git/info/exclude if you like)")
    return _report(where, results, notes)


def uninstall(root: Path) -> HooksReport:
    """Remove Cortex's hooks and put back the hooks they chained to, exactly."""
    where = locate(root)
    if not where.hooks_dir.is_dir():
        return _report(where, [HookState(n, str(where.hooks_dir / n), "absent",
                                         action="not installed") for n in HOOKS], [])
    results = []
    for name in HOOKS:
        state, text = _state(where.hooks_dir, name)
        slot = Path(state.path)
        chained = slot.with_name(name + CHAINED_SUFFIX)
        chained_is_ours = state.chained is not None and _ours(chained, _lstat(chained)) is not None
        if state.state in ("absent", "installed", "chained") and chained_is_ours:
            if text is not None:
                _unlink(slot)
            _unlink(chained)   # Cortex's own files, both
            results.append(HookState(name, str(slot), "absent", action="removed"))
        elif state.state == "absent" and state.chained:
            # Cortex's hook was deleted by hand: the hook from before goes back where it was.
            _rename(chained, slot)
            results.append(_restored(slot))
        elif state.state == "chained":
            _rename(chained, slot)   # over Cortex's hook: never a moment without a hook
            results.append(_restored(slot))
        elif state.state == "installed":
            _unlink(slot)
            results.append(HookState(name, str(slot), "absent", action="removed"))
        else:
            action = "not installed" if state.state == "absent" else \
                "left alone: not Cortex's" if state.state == "foreign" else "left alone"
            results.append(_with(state, action=action))
    notes = []
    if _remove_created_dir(where.hooks_dir):
        notes.append(f"removed {where.hooks_dir} (Cortex had created it)")
    return _report(where, results, notes)


def _restored(slot: Path) -> HookState:
    st = _lstat(slot)
    state = "foreign" if st is not None else "absent"
    return HookState(slot.name, str(slot), state, action="restored the hook from before")


def _with(state: HookState, **changes) -> HookState:
    return replace(state, **changes)


def _report(where: _Location, hooks: list[HookState], notes: list[str]) -> HooksReport:
    recorded = next((h.interpreter for h in hooks if h.interpreter), None)
    exists = recorded is not None and os.path.isfile(recorded) and os.access(recorded, os.X_OK)
    for hook in hooks:
        if hook.interpreter and hook.interpreter != recorded:
            notes.append(f"{hook.name} runs another interpreter ({hook.interpreter}); "
                         "`cortex hooks install` makes them all the same")
    return HooksReport(repo=str(where.root), hooks_dir=str(where.hooks_dir),
                       hooks_path=where.hooks_path, log=str(where.common_dir / LOG_NAME),
                       interpreter=recorded, interpreter_exists=exists,
                       fallback=shutil.which("cortex"), hooks=hooks, notes=notes)


# -- file operations ------------------------------------------------------------------------------

def _prepare_dir(where: _Location) -> bool:
    """Make sure the hooks directory exists and can be written; True when this created it."""
    folder = where.hooks_dir
    created = False
    if not folder.exists():
        if folder.is_symlink():
            raise CortexError(f"the hooks directory {folder} is a broken symbolic link")
        if not folder.parent.is_dir():
            origin = f" (core.hooksPath = {where.hooks_path})" if where.hooks_path else ""
            raise CortexError(f"cannot create the hooks directory {folder}{origin}: "
                              f"{folder.parent} does not exist")
        try:
            folder.mkdir()
            (folder / CREATED_DIR_MARKER).write_text(
                "Cortex created this hooks directory; `cortex hooks uninstall` removes it when "
                "nothing else is in it.\n", encoding="utf-8")
        except OSError as exc:
            raise CortexError(f"cannot create the hooks directory {folder}: "
                              f"{exc.strerror or exc}") from None
        created = True
    if not folder.is_dir():
        raise CortexError(f"the hooks directory {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CortexError(f"cannot write to the hooks directory {folder} (permission denied)")
    return created


def _remove_created_dir(folder: Path) -> bool:
    """Remove the hooks directory if Cortex created it and nothing else lives there now."""
    marker = folder / CREATED_DIR_MARKER
    try:
        if not marker.is_file() or set(os.listdir(folder)) != {CREATED_DIR_MARKER}:
            return False
        marker.unlink()
        folder.rmdir()
    except OSError:
        return False
    return True


def _write_hook(slot: Path, script: str) -> None:
    """Write Cortex's hook atomically: git never sees a half-written hook."""
    tmp = slot.with_name(f".{slot.name}.cortex-new")
    try:
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(script)
        os.chmod(tmp, 0o755)   # whatever the umask
        os.replace(tmp, slot)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CortexError(f"cannot write the hook {slot}: {exc.strerror or exc}") from None


def _rename(source: Path, target: Path) -> None:
    try:
        os.rename(source, target)
    except OSError as exc:
        raise CortexError(f"cannot rename {source} to {target.name}: {exc.strerror or exc}") \
            from None


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise CortexError(f"cannot remove {path}: {exc.strerror or exc}") from None


def _in_status(where: _Location) -> bool:
    """Whether `git status` shows changes in the hooks directory (a core.hooksPath inside the
    working tree, tracked or not)."""
    folder = where.hooks_dir
    if where.root not in folder.parents or where.common_dir in (folder, *folder.parents):
        return False
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    out = subprocess.run(["git", "status", "--porcelain", "--", str(folder)], cwd=where.root,
                         env=env, capture_output=True, text=True, timeout=60)
    return out.returncode == 0 and bool(out.stdout.strip())


# -- text -------------------------------------------------------------------------------------------

_STATES = {"installed": "installed by cortex", "chained": "installed by cortex, chained to {c}",
           "foreign": "foreign hook (not Cortex's)", "absent": "absent",
           "blocked": "blocked (a directory)"}


def render(report: HooksReport, verb: str) -> str:
    """Plain text for `cortex hooks install | uninstall | status`."""
    origin = f"  (core.hooksPath = {report.hooks_path})" if report.hooks_path else ""
    lines = [f"hooks directory: {report.hooks_dir}{origin}"]
    for hook in report.hooks:
        chained = Path(hook.chained).name if hook.chained else ""
        if verb == "status" or hook.action is None:
            text = _STATES[hook.state].format(c=chained)
            if hook.state == "chained" and not hook.chained_runs:
                text += " (not executable: it does not run)"
        else:
            text = hook.action
            if hook.action == "already installed" and hook.state == "chained":
                text += f", chained to {chained}"
        if hook.problem:
            text += f"\n      {hook.problem}"
        lines.append(f"  {hook.name:<14} {text}")
    if verb != "uninstall" and any(h.interpreter for h in report.hooks):
        where = "exists" if report.interpreter_exists else (
            f"missing: the hooks run `{report.fallback}`" if report.fallback
            else "missing, and no `cortex` on PATH: the hooks index nothing; "
                 "run `cortex hooks install` again")
        lines.append(f"interpreter: {report.interpreter} ({where})")
        lines.append(f"log: {report.log}")
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines)

"""cortex-ls: the language server, a thin pygls adapter over cortex_core.

Requests are answered on a small thread pool from the index as it is; they never wait for
indexing, which runs in a child process (cortex_ls.indexer) and says when an answer may be
partial. The protocol is documented in docs/protocol.md.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
import stat
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from cortex_core import __version__
from cortex_core.api import CortexError, NotFound, TargetSpec, parse_target
from cortex_core.text.sanitize import replace_surrogates
from cortex_cli.render import earlier_reader

from cortex_ls import queries
from cortex_ls.documents import Buffer, encoding_name
from cortex_ls.indexer import IndexRun, Outcome, Progress, head_state, index_command
from cortex_ls.protocol import CortexProtocol, raw_json_converter
from cortex_ls.repos import WORDS, Repo, Repos
from cortex_ls.settings import Settings
from cortex_ls.spare import Spare

log = logging.getLogger(__name__)

MAX_DISK_BYTES = 8_000_000   # an unopened file larger than this is not read for a hover
MAX_MESSAGE = 500            # error messages quote user input: keep them short
REQUEST_FAILED = -32803   # LSP's RequestFailed: a valid request that cannot be answered
MAX_RESULTS = 200


class Failed(JsonRpcException):
    CODE = REQUEST_FAILED


class CortexServer(LanguageServer):
    def __init__(self):
        super().__init__("cortex-ls", __version__, protocol_cls=CortexProtocol,
                         converter_factory=raw_json_converter)
        self.repos = Repos()
        self.docs: dict[str, Buffer] = {}
        self.settings = Settings()
        self.setting_errors: list[str] = []
        # Two workers: a slow answer (a context pack, a search) leaves one for hovers.
        self.pool = ThreadPoolExecutor(2, thread_name_prefix="cortex-query")
        self.runs: dict[Path, IndexRun] = {}
        self.spare = Spare()   # one spare indexer for every repository (cortex_ls/spare.py)
        self.poller: asyncio.Task | None = None
        self.progress_tokens: dict[Path, str] = {}
        self.closing = False

    # -- plumbing ----------------------------------------------------------------------------

    @property
    def encoding(self) -> str:
        try:
            return encoding_name(self.workspace.position_encoding)
        except RuntimeError:
            return "utf-16"

    async def work(self, fn, *args, **kwargs):
        """Run a blocking core call on the pool; a cancelled request stops waiting for it."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self.pool, functools.partial(fn, *args, **kwargs))
        except (JsonRpcException, CortexError, asyncio.CancelledError):
            raise
        except Exception:
            # pygls' own report of request errors is silenced (expected errors are frequent):
            # a real bug is logged here, with its traceback.
            log.exception("internal error in %s", getattr(fn, "__name__", fn))
            raise

    def report_server_error(self, error, source):
        # Quiet: failures in notifications go to the log, not to a pop-up per keystroke.
        log.warning("error in server: %s", error)

    def capability(self, *names) -> object | None:
        node = self.client_capabilities
        for name in names:
            node = getattr(node, name, None) if node is not None else None
        return node

    # -- repositories and documents ----------------------------------------------------------

    def add_folders(self, uris: list[str]) -> list[Repo]:
        added = []
        for uri in uris:
            path = _fs_path(uri) if uri else None
            if path:
                repo = self.repos.add_folder(Path(path))
                if repo is not None and repo not in added:
                    added.append(repo)
        return added

    def file_of(self, uri: str) -> tuple[Repo, str] | None:
        """The repository and repository-relative path of a file URI; None outside them."""
        if not isinstance(uri, str):
            return None
        fs = _fs_path(uri)
        if not fs:
            return None
        path = Path(fs)
        try:
            path = path.resolve()
        except (OSError, RuntimeError, ValueError):
            return None
        repo = self.repos.for_path(path)
        if repo is None or path == repo.root or ".git" in path.relative_to(repo.root).parts:
            return None
        return repo, path.relative_to(repo.root).as_posix()

    def buffer(self, uri: str) -> Buffer | None:
        """The open document (a snapshot, for a worker to read), or the file as on disk when the
        editor has not opened it."""
        buf = self.docs.get(uri)
        if buf is not None:
            return buf.snapshot()
        fs = _fs_path(uri)
        if not fs:
            return None
        try:
            # Regular files only (a FIFO would block the server), and not huge ones.
            st = os.stat(fs)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_DISK_BYTES:
                return None
            data = Path(fs).read_bytes()
        except (OSError, ValueError):
            return None
        return Buffer(uri, Path(fs), data.decode("utf-8", "surrogateescape"))

    def dirty_paths(self, repo: Repo) -> list[str]:
        out = []
        for uri, buf in self.docs.items():
            if buf.dirty:
                found = self.file_of(uri)
                if found and found[0] is repo:
                    out.append(found[1])
        return out

    def repo_for(self, params: dict) -> Repo:
        """The repository a request is about: that of its document or `uri`, else the only one."""
        uri = _uri(params)
        if uri is not None:
            found = self.file_of(uri)
            if found is not None:
                return found[0]
            fs = _fs_path(uri)
            try:
                repo = self.repos.for_path(Path(fs).resolve()) if fs else None
            except (OSError, RuntimeError, ValueError):
                repo = None
            if repo is None:
                raise Failed(f"{uri} is not in a git repository of this workspace")
            return repo
        repos = self.repos.all()
        if not repos:
            raise Failed("no git repository in this workspace")
        if len(repos) > 1:
            raise JsonRpcInvalidParams("several repositories are open: give `uri` (a file or "
                                       "folder in the one you mean)")
        return repos[0]

    # -- indexing ----------------------------------------------------------------------------

    def index(self, repo: Repo, rebuild: bool = False) -> bool:
        if self.closing:   # shutting down: no new run (close() stops the ones there are)
            return False
        if repo.refused:
            repo.index.error = repo.refused
            return False
        run = self.runs.get(repo.root)
        if run is None:
            run = IndexRun(repo, index_command(repo, lambda: self.settings.model),
                           self._index_progress, self._index_done, self._index_started,
                           self.spare)
            self.runs[repo.root] = run
        return run.request(rebuild)

    async def _index_started(self, repo: Repo) -> None:
        self.notify_status(repo)
        if not self.capability("window", "work_done_progress"):
            return
        token = f"cortex-index-{uuid.uuid4()}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), 5)
        except Exception as exc:   # the client refused or did not answer: no progress bar
            log.info("no progress token: %s", exc)
            return
        self.progress_tokens[repo.root] = token
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=f"Cortex: indexing {repo.name}", message="starting", percentage=0))

    def _index_progress(self, repo: Repo, progress: Progress) -> None:
        token = self.progress_tokens.get(repo.root)
        if token is not None:
            self.work_done_progress.report(token, types.WorkDoneProgressReport(
                message=progress.message, percentage=progress.percentage))
        self.notify_status(repo)

    async def _index_done(self, repo: Repo, outcome: Outcome) -> None:
        token = self.progress_tokens.pop(repo.root, None)
        if outcome.ok:
            s = outcome.summary or {}
            message = (f"{s.get('new_commits', 0)} new commits, {s.get('total_commits', 0)} in all")
        else:
            message = ("waiting for another indexer" if outcome.busy
                       else f"failed: {outcome.error}")
        if token is not None:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
        self.notify_status(repo)
        if outcome.ok:
            self._relocate(repo)
            self._tell_reader(repo, (outcome.summary or {}).get("earlier_reader"))
            repo.engine.preload_lexicon()   # searches find the new postings ready
            self.protocol.notify("cortex/indexUpdated", {
                "repository": str(repo.root), "newCommits": (outcome.summary or {}).get(
                    "new_commits", 0), "head": (outcome.summary or {}).get("head"),
                "warm": outcome.warm})
            self.refresh_lenses()
        elif not outcome.busy and not self.closing:
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Warning,
                message=f"Cortex: indexing {repo.root} failed: {outcome.error}"))

    def _relocate(self, repo: Repo) -> None:
        """After a run: the indexer may have built the per-user store (see store_location)."""
        try:
            notice = repo.relocate()
        except CortexError as exc:
            notice = f"Cortex: {exc.phrased(WORDS)}"
        if notice:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                             message=notice))

    def _tell_reader(self, repo: Repo, reader: dict | None) -> None:
        """Once per repository and server: another version of Cortex's reader read some of the
        store (reader_version), so its answers mix two readings until it is rebuilt."""
        if not reader or repo.reader_told:
            return
        repo.reader_told = True
        try:
            note = earlier_reader(SimpleNamespace(**reader),
                                  "`cortex index --rebuild` there (notes are kept)")
        except (TypeError, ValueError):
            return
        self.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Warning, message=_clip(f"Cortex ({repo.root.name}): {note}")))

    def notify_status(self, repo: Repo) -> None:
        s = repo.index
        self.protocol.notify("cortex/indexStatus", {
            "repository": str(repo.root), "state": repo.state(), "percentage": s.percentage,
            "message": s.message, "error": s.error})

    def refresh_lenses(self) -> None:
        if self.capability("workspace", "code_lens", "refresh_support"):
            try:
                future = self.workspace_code_lens_refresh(None)
            except Exception as exc:   # a client that advertised it but fails: nothing to do
                log.info("codeLens/refresh failed: %s", exc)
                return
            future.add_done_callback(_quiet)

    async def check_heads(self) -> None:
        """Start an incremental run for each repository whose HEAD moved since last seen."""
        loop = asyncio.get_running_loop()
        for repo in self.repos.all():
            state = await loop.run_in_executor(None, head_state, repo.engine)
            if state is not None and state != repo.seen_head:
                log.info("HEAD moved in %s: %s", repo.root, state)
                repo.seen_head = state
                self.index(repo)

    async def poll(self) -> None:
        while not self.closing:
            interval = self.settings.poll_interval
            await asyncio.sleep(interval if interval > 0 else 5.0)
            if interval > 0:
                try:
                    await self.check_heads()
                except Exception:   # never let the poller die
                    log.exception("HEAD poll failed")

    async def close(self) -> None:
        self.closing = True
        if self.poller is not None:
            self.poller.cancel()
        for run in list(self.runs.values()):   # each close awaits: the dict may change
            await run.close()
        await self.spare.close()
        self.pool.shutdown(wait=False, cancel_futures=True)

    def kill_children(self) -> None:
        """After the connection is gone (exit, or the client died without a shutdown): stop any
        indexer still running. It keeps what it stored; the next run continues."""
        from cortex_core.child_process import signal_group
        for run in self.runs.values():
            proc = run.proc
            if proc is not None and proc.returncode is None:
                signal_group(proc.pid, signal.SIGKILL)
        self.spare.kill()

    # -- answering ---------------------------------------------------------------------------

    async def query(self, repo: Repo, fn, *args, **kwargs):
        """A question to a snapshot of the repository's index (`fn(snapshot, ...)`), with
        errors made JSON-RPC errors, their fix in this server's words (repos.WORDS)."""
        settings = self.settings

        def call():
            with repo.snapshot(settings) as snap:
                if snap is None:
                    raise Failed(_no_index(repo), data={"indexState": repo.state()})
                return fn(snap, *args, **kwargs)
        try:
            return await self.work(call)
        except JsonRpcException:
            raise
        except NotFound as exc:
            raise Failed(_clip(exc.phrased(WORDS)), data={"indexState": repo.state()}) from None
        except CortexError as exc:
            raise Failed(_clip(exc.phrased(WORDS))) from None
        except OverflowError as exc:   # a number SQLite cannot hold
            raise JsonRpcInvalidParams(_clip(f"invalid params: {exc}")) from None
        finally:
            self.tell_config(repo)

    def tell_config(self, repo: Repo) -> None:
        """Warn once of a `.cortex/config.toml` that cannot be used (answers use the defaults)."""
        problem = repo.config_problem
        if problem != repo.config_told:
            fixed = repo.config_told is not None and problem is None
            repo.config_told = problem
            if problem:
                self.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Warning, message=_clip(problem)))
            elif fixed:   # the indexer refused the broken file: catch up now, not at the next commit
                self.index(repo)

    def target(self, params: dict) -> tuple[Repo, TargetSpec]:
        """The target of a custom request: a document position, or `target` = PATH[::SYMBOL]."""
        repo = self.repo_for(params)
        text = params.get("target")
        if text is not None:
            if not isinstance(text, str) or "\0" in text or len(text) > 4096:
                raise JsonRpcInvalidParams("`target` must be a string: PATH, PATH::SYMBOL or "
                                           "PATH:LINE")
            try:
                return repo, parse_target(replace_surrogates(text))
            except CortexError as exc:
                raise JsonRpcInvalidParams(_clip(str(exc))) from None
        uri = _uri(params)
        if uri is None:
            raise JsonRpcInvalidParams("give `textDocument` and `position`, or `target`")
        found = self.file_of(uri)
        if found is None:
            raise Failed(f"{uri} is not a file in a git repository of this workspace")
        return repo, TargetSpec(found[1])

    async def located(self, params: dict):
        """A document position resolved to its innermost symbol (None outside repositories)."""
        uri = _uri(params)
        position = _position(params.get("position")) if isinstance(params, dict) else None
        if uri is None or position is None:
            return None
        found = self.file_of(uri)
        if found is None:
            return None
        repo, path = found
        buf = self.buffer(uri)
        if buf is None:
            return None
        settings = self.settings

        def locate():
            with repo.snapshot(settings) as snap:
                return queries.locate(repo, path, buf, position, self.encoding, snap)
        return await self.work(locate)

    async def spec_of(self, params: dict) -> tuple[Repo, TargetSpec]:
        if isinstance(params, dict) and params.get("target") is None and "position" in params:
            if _position(params.get("position")) is None:
                raise JsonRpcInvalidParams("`position` must be {line, character} with "
                                           "non-negative integers")
            loc = await self.located(params)
            if loc is None:
                raise Failed("the position is not in a file of a git repository of this "
                             "workspace")
            repo, spec = loc.repo, loc.spec
        else:
            repo, spec = self.target(params)
        return repo, await self.work(self._as_indexed, repo, spec)

    def _as_indexed(self, repo: Repo, spec: TargetSpec) -> TargetSpec:
        """The target under the path the index knows (the old one of a staged rename); as
        given when there is no index to ask (the request then says so)."""
        try:
            with repo.snapshot(self.settings) as snap:
                path = snap.indexed_path(spec.path) if snap is not None else spec.path
        except CortexError:
            return spec
        return spec if path == spec.path else TargetSpec(path, spec.symbol, spec.line)


def _clip(text: str) -> str:
    """A message for the client: its lines inert (they quote paths and config keys, which are
    repository text) and its length bounded."""
    from cortex_core.text.sanitize import terminal
    text = "\n".join(terminal(line) for line in text.split("\n"))
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 1] + "…"


def _quiet(future) -> None:
    """Read a fire-and-forget request's outcome, so that a client's error is not reported."""
    if not future.cancelled() and future.exception() is not None:
        log.info("the client answered with an error: %s", future.exception())


def _fs_path(uri: str) -> str | None:
    """The file system path of a `file:` URI; None for any other URI or a malformed one."""
    try:
        return to_fs_path(uri) if uri.startswith("file:") else None
    except Exception:   # pygls parses with urllib: odd URIs must not fail a request
        return None


def _uri(params) -> str | None:
    """The request's document or `uri`; a present one of the wrong type is an error (it would
    otherwise quietly widen the request to every repository)."""
    if not isinstance(params, dict):
        return None
    doc = params.get("textDocument")
    if doc is not None and not isinstance(doc, dict):
        raise JsonRpcInvalidParams("`textDocument` must be {uri}")
    uri = doc.get("uri") if isinstance(doc, dict) else params.get("uri")
    if uri is not None and not isinstance(uri, str):
        raise JsonRpcInvalidParams("`uri` must be a string")
    return uri


def _position(value) -> types.Position | None:
    if isinstance(value, types.Position):
        return value
    if not isinstance(value, dict):
        return None
    line, char = value.get("line"), value.get("character")
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31
               for v in (line, char)):
        return None
    return types.Position(line, char)


def _no_index(repo: Repo) -> str:
    if repo.index.running:
        return f"no index yet for {repo.root}: indexing ({repo.index.percentage}%)"
    if repo.index.error:
        return f"no index for {repo.root}: {repo.index.error}"
    if repo.problem:
        return repo.problem
    return f"no index yet for {repo.root}: run the command Cortex: Reindex"


def params_dict(params) -> dict:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise JsonRpcInvalidParams("params must be an object")
    return params


def int_param(params: dict, name: str, default: int, lo: int, hi: int) -> int:
    value = params.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise JsonRpcInvalidParams(f"`{name}` must be an integer from {lo} to {hi}")
    return value


def str_param(params: dict, name: str, required: bool = False, limit: int = 10_000) -> str | None:
    value = params.get(name)
    if value is None:
        if required:
            raise JsonRpcInvalidParams(f"`{name}` is required")
        return None
    if not isinstance(value, str) or len(value) > limit or "\0" in value:
        raise JsonRpcInvalidParams(f"`{name}` must be a string of at most {limit} characters "
                                   "(no NUL)")
    # Each lone surrogate (JSON can escape half a pair) as U+FFFD, as the CLI's arguments are.
    return replace_surrogates(value)

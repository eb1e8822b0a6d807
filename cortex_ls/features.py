"""The LSP methods, custom requests and commands of cortex-ls, registered on one server."""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from cortex_core.api import ENCODINGS, CortexError, encoding_name

from cortex_ls import queries
from cortex_ls.documents import Buffer
from cortex_ls.server import (MAX_RESULTS, CortexServer, Failed, _fs_path, _uri, int_param,
                              params_dict, str_param)
from cortex_ls.settings import parse_settings

log = logging.getLogger(__name__)

HEAD_GLOBS = ("**/.git/HEAD", "**/.git/refs/**", "**/.git/packed-refs")
PACK_FORMATS = ("markdown", "json")
_SHA = re.compile(r"[0-9a-fA-F]{4,40}")
SEARCH_MODES = ("hybrid", "lexical", "vector")


def register(server: CortexServer) -> CortexServer:
    _lifecycle(server)
    _documents(server)
    _editor_features(server)
    _custom_requests(server)
    _commands(server)
    return server


# -- lifecycle -----------------------------------------------------------------------------------


def _lifecycle(server: CortexServer) -> None:

    @server.feature(types.INITIALIZE)
    def initialize(ls: CortexServer, params: types.InitializeParams):
        ls.settings, ls.setting_errors = parse_settings(params.initialization_options)
        folders = [f.uri for f in params.workspace_folders or []]
        if not folders and params.root_uri:
            folders = [params.root_uri]
        elif not folders and params.root_path and Path(params.root_path).is_absolute():
            folders = [Path(params.root_path).as_uri()]
        ls.add_folders(folders)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: CortexServer, params):
        for message in ls.setting_errors:
            _warn(ls, message)
        for repo in ls.repos.all():
            if repo.refused:
                repo.index.error = repo.refused
                _warn(ls, f"Cortex: {repo.refused}")
                ls.notify_status(repo)
            elif repo.notice:
                _warn(ls, repo.notice)
                repo.notice = None
        watch = ls.capability("workspace", "did_change_watched_files", "dynamic_registration")
        if watch:
            await _register_watchers(ls)
        loop = asyncio.get_running_loop()
        for repo in ls.repos.all():
            repo.seen_head = await loop.run_in_executor(None, _head, repo)
            if ls.settings.index_on_start:
                ls.index(repo)
        ls.poller = asyncio.ensure_future(ls.poll())

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: CortexServer, params):
        await ls.close()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def folders_changed(ls: CortexServer, params: types.DidChangeWorkspaceFoldersParams):
        for folder in params.event.removed or []:
            path = _fs_path(folder.uri)
            if path:
                ls.repos.remove_folder(Path(path))
        loop = asyncio.get_running_loop()
        for repo in ls.add_folders([f.uri for f in params.event.added or []]):
            if repo.seen_head is None:
                repo.seen_head = await loop.run_in_executor(None, _head, repo)
                if ls.settings.index_on_start:
                    ls.index(repo)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration(ls: CortexServer, params: types.DidChangeConfigurationParams):
        raw = params.settings
        if raw is None and ls.capability("workspace", "configuration"):
            try:
                got = await asyncio.wait_for(ls.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(section="cortex")])),
                    5)
                raw = got[0] if got else None
            except Exception as exc:
                log.info("workspace/configuration failed: %s", exc)
        before = ls.settings
        ls.settings, errors = parse_settings(raw, before)
        for message in errors:
            _warn(ls, message)
        if ls.settings.model != before.model:
            for repo in ls.repos.all():
                ls.index(repo)
        if ls.settings != before:
            ls.refresh_lenses()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def watched(ls: CortexServer, params: types.DidChangeWatchedFilesParams):
        if any("/.git/" in (c.uri or "") for c in params.changes or []):
            _forget_workspaces(ls)
            await ls.check_heads()


async def _register_watchers(ls: CortexServer) -> None:
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern=g) for g in HEAD_GLOBS])
    try:
        await asyncio.wait_for(ls.client_register_capability_async(types.RegistrationParams(
            registrations=[types.Registration(id=str(uuid.uuid4()),
                                              method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                              register_options=options)])), 5)
    except Exception as exc:   # the poll still notices HEAD moves
        log.info("file watchers not registered: %s", exc)


def _forget_workspaces(ls: CortexServer) -> None:
    for repo in ls.repos.all():
        repo.engine.forget_workspace()


def _head(repo):
    from cortex_ls.indexer import head_state
    return head_state(repo.engine)


def _warn(ls: CortexServer, message: str) -> None:
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                   message=message))


# -- documents -----------------------------------------------------------------------------------


def _documents(server: CortexServer) -> None:

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: CortexServer, params: types.DidOpenTextDocumentParams):
        doc = params.text_document
        path = _fs_path(doc.uri)
        ls.docs[doc.uri] = Buffer(doc.uri, Path(path) if path else None, doc.text, doc.version,
                                  doc.language_id)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: CortexServer, params: types.DidChangeTextDocumentParams):
        buf = ls.docs.get(params.text_document.uri)
        if buf is None:       # a change to a document never opened: nothing to apply it to
            return
        for change in params.content_changes:
            buf.apply(change, ls.encoding)
        buf.version = params.text_document.version
        buf.dirty = True

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=True))
    def did_save(ls: CortexServer, params: types.DidSaveTextDocumentParams):
        buf = ls.docs.get(params.text_document.uri)
        if buf is None:
            return
        if params.text is not None and params.text != buf.text:
            buf.apply(types.TextDocumentContentChangeWholeDocument(text=params.text), ls.encoding)
        buf.dirty = False
        _forget_workspaces(ls)    # the file on disk changed: git's status with it

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CortexServer, params: types.DidCloseTextDocumentParams):
        ls.docs.pop(params.text_document.uri, None)


# -- hover and code lens -------------------------------------------------------------------------


def _editor_features(server: CortexServer) -> None:

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: CortexServer, params: types.HoverParams):
        if not ls.settings.hover:
            return None
        loc = await ls.located({"textDocument": {"uri": params.text_document.uri},
                                "position": {"line": params.position.line,
                                             "character": params.position.character}})
        if loc is None:
            return None
        settings = ls.settings

        def answer():
            try:
                with loc.repo.snapshot(settings) as snap:
                    return queries.hover(snap, loc, settings) if snap is not None else None
            except CortexError as exc:   # a damaged index: nothing to show
                log.info("no hover: %s", exc)
                return None
        text = await ls.work(answer)
        ls.tell_config(loc.repo)
        if not text:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                        value=text))

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(ls: CortexServer, params: types.CodeLensParams):
        if not ls.settings.code_lens:
            return []
        uri = params.text_document.uri
        found = ls.file_of(uri)
        buf = ls.buffer(uri) if found else None
        if buf is None:
            return []
        repo, path = found
        settings = ls.settings

        def answer():
            with repo.snapshot(settings) as snap:
                return queries.lenses(snap, repo, path, buf, settings) if snap is not None else []
        lenses = await ls.work(answer)
        ls.tell_config(repo)
        encoding = ls.encoding
        out = []
        for lens in lenses:
            line = buf.position(lens.offset, encoding).line
            out.append(types.CodeLens(
                range=types.Range(buf.line_start_position(line),
                                  buf.line_end_position(line, encoding)),
                data={"uri": uri, "path": path, "qualname": lens.qualname}))
        return out

    @server.feature(types.CODE_LENS_RESOLVE)
    async def resolve_lens(ls: CortexServer, lens: types.CodeLens):
        data = lens.data if isinstance(lens.data, dict) else {}
        uri, path, qualname = data.get("uri"), data.get("path"), data.get("qualname")
        if not all(isinstance(v, str) for v in (uri, path, qualname)):
            raise JsonRpcInvalidParams("this code lens was not made by cortex-ls")
        found = ls.file_of(uri)
        if found is None:
            raise Failed(f"{uri} is not in a git repository of this workspace")
        repo = found[0]
        title, tooltip = await ls.query(repo, queries.lens_title, repo, path, qualname,
                                        ls.settings)
        lens.command = types.Command(title=title, command="cortex.showHistory", tooltip=tooltip,
                                     arguments=[{"uri": uri, "target": f"{path}::{qualname}"}])
        return lens


# -- custom requests -----------------------------------------------------------------------------


def _custom_requests(server: CortexServer) -> None:

    @server.feature("cortex/symbolHistory")
    async def symbol_history(ls: CortexServer, params):
        return await _history(ls, params_dict(params))

    @server.feature("cortex/blastRadius")
    async def blast_radius(ls: CortexServer, params):
        p = params_dict(params)
        repo, spec = await ls.spec_of(p)
        depth = int_param(p, "depth", 2, 1, 5)
        confidence = p.get("minConfidence")
        if confidence is not None and (isinstance(confidence, bool) or not isinstance(
                confidence, (int, float)) or not 0 <= confidence <= 1):
            raise JsonRpcInvalidParams("`minConfidence` must be a number from 0 to 1")
        return await ls.query(repo, queries.blast_radius, repo, spec, depth, confidence)

    @server.feature("cortex/related")
    async def related(ls: CortexServer, params):
        p = params_dict(params)
        top_k = int_param(p, "limit", 10, 1, MAX_RESULTS)
        changed = p.get("changed")
        if changed is not None and (not isinstance(changed, list) or len(changed) > 1000 or not
                                    all(isinstance(c, str) and 0 < len(c) <= 4096
                                        for c in changed)):
            raise JsonRpcInvalidParams("`changed` must be a list of at most 1000 targets "
                                       "(PATH or PATH::SYMBOL)")
        if "position" in p or p.get("target"):
            repo, spec = await ls.spec_of(p)
            return await ls.query(repo, queries.related, repo, spec, top_k)
        repo = ls.repo_for(p)
        if changed:
            specs = [ls.target({**p, "target": c})[1] for c in changed]
            return await ls.query(repo, queries.related_to_changed, repo, specs, top_k)
        # Unsaved buffers are part of the working tree's changes, as the editor shows them.
        overlay = {}
        for uri, buf in ls.docs.items():
            found = ls.file_of(uri) if buf.dirty else None
            if found is not None and found[0] is repo:
                overlay[found[1]] = buf.text.encode("utf-8", "replace")
        return await ls.query(repo, queries.related_to_working_tree, repo, overlay, top_k)

    @server.feature("cortex/relatedCommits")
    async def related_commits(ls: CortexServer, params):
        p = params_dict(params)
        top_k = int_param(p, "limit", 10, 1, MAX_RESULTS)
        commit = str_param(p, "commit", limit=64)
        if commit is not None and not _SHA.fullmatch(commit):
            raise JsonRpcInvalidParams("`commit` must be a commit id: 4 to 40 hex digits")
        if commit is not None:
            repo, label = ls.repo_for(p), commit
        else:
            repo, spec = await ls.spec_of(p)
            label = spec.label
        return await ls.query(repo, queries.related_commits, repo, label, top_k)

    @server.feature("cortex/contextPack")
    async def context_pack(ls: CortexServer, params):
        return await _pack(ls, params_dict(params))

    @server.feature("cortex/search")
    async def search(ls: CortexServer, params):
        p = params_dict(params)
        query = str_param(p, "query", required=True, limit=2000)
        if not query.strip():
            raise JsonRpcInvalidParams("`query` is empty")
        repo = ls.repo_for(p)
        kinds = p.get("kinds") or []
        if not isinstance(kinds, list) or not all(k in ("commit", "doc", "note") for k in kinds):
            raise JsonRpcInvalidParams('`kinds` must be a list of "commit", "doc", "note"')
        mode = str_param(p, "mode") or "hybrid"
        if mode not in SEARCH_MODES:
            raise JsonRpcInvalidParams(f"`mode` must be one of {', '.join(SEARCH_MODES)}")
        since = p.get("since")
        if since is not None and (isinstance(since, bool) or not isinstance(since, int)
                                  or abs(since) > 2**53):
            raise JsonRpcInvalidParams("`since` must be a time in seconds since the epoch")
        at = None
        if "position" in p or p.get("target"):
            _, spec = await ls.spec_of(p)
            at = spec.label
        top_k = int_param(p, "limit", 10, 1, MAX_RESULTS)
        path = str_param(p, "path", limit=4096)
        dirty = ls.dirty_paths(repo)
        return await ls.query(repo, queries.search, repo, query, at=at, kinds=tuple(kinds),
                              since=since, path=path, top_k=top_k, mode=mode, dirty=dirty)

    @server.feature("cortex/hotspots")
    async def hotspots(ls: CortexServer, params):
        p = params_dict(params)
        repo = ls.repo_for(p)
        since = p.get("sinceDays")
        if since is not None and (isinstance(since, bool) or not isinstance(since, (int, float))
                                  or not 0 < since <= 100_000):   # also refuses NaN, infinity
            raise JsonRpcInvalidParams("`sinceDays` must be a number of days from 0 to 100000")
        return await ls.query(repo, queries.hotspots, repo, path=str_param(p, "path", limit=4096),
                              top_k=int_param(p, "limit", 10, 1, MAX_RESULTS), since_days=since)

    @server.feature("cortex/status")
    async def status(ls: CortexServer, params):
        p = params_dict(params)
        repos = [ls.repo_for(p)] if _uri(p) else ls.repos.all()

        settings = ls.settings

        def answer(repo):
            with repo.snapshot(settings) as snap:
                return queries.status(snap, repo)
        out = [await ls.work(answer, repo) for repo in repos]
        return {"version": ls.version, "positionEncoding": ls.encoding,
                "settings": _settings_json(ls), "repositories": out}


async def _history(ls: CortexServer, p: dict):
    repo, spec = await ls.spec_of(p)
    limit = int_param(p, "limit", 0, 0, 100_000) or None
    return await ls.query(repo, queries.symbol_history, repo, spec, limit)


async def _pack(ls: CortexServer, p: dict):
    query = str_param(p, "query", limit=2000)
    at = None
    if "position" in p or p.get("target"):
        repo, spec = await ls.spec_of(p)
        at = spec.label
    else:
        repo = ls.repo_for(p)
    if not at and not (query and query.strip()):
        raise JsonRpcInvalidParams("give a position or `target`, a `query`, or both")
    budget = int_param(p, "budget", ls.settings.token_budget, 200, 1_000_000)
    fmt = str_param(p, "format") or "markdown"
    if fmt not in PACK_FORMATS:
        raise JsonRpcInvalidParams("`format` must be markdown or json")
    encoding = str_param(p, "encoding", limit=40)   # None: the settings' (queries.engine)
    try:
        encoding = encoding_name(encoding) if encoding else None
    except CortexError:
        raise JsonRpcInvalidParams(f"`encoding` must be one of {', '.join(ENCODINGS)}") from None
    return await ls.query(repo, queries.context_pack, repo, query=query, at=at, budget=budget,
                          fmt=fmt, encoding=encoding)


def _settings_json(ls: CortexServer) -> dict:
    from cortex_core.plain import plain
    return plain(ls.settings)


# The engine operations each custom request and command runs (cortex_core/operations.py; a
# request without one answers from the server's own state). tests/test_operations.py checks them.
REQUESTS = {
    "cortex/symbolHistory": ("history",), "cortex/blastRadius": ("blast",),
    "cortex/related": ("related", "changes_related"), "cortex/relatedCommits": ("related_commits",),
    "cortex/contextPack": ("context_pack",), "cortex/search": ("search",),
    "cortex/hotspots": ("hotspots",), "cortex/status": ("status",),
    "cortex.exportContext": ("context_pack",), "cortex.showHistory": ("history",),
    "cortex.reindex": ("index",), "cortex.addNote": ("add_note",),
}


# -- commands ------------------------------------------------------------------------------------


def _command_args(args: tuple) -> dict:
    """Commands take one object (or nothing)."""
    if not args:
        return {}
    if len(args) > 1 or not isinstance(args[0], dict):
        raise JsonRpcInvalidParams("this command takes one object argument")
    return args[0]


def _commands(server: CortexServer) -> None:

    @server.command("cortex.exportContext")
    async def export_context(ls: CortexServer, *args):
        """The markdown pack and its token count; clients put the text on the clipboard."""
        out = await _pack(ls, _command_args(args))
        return {"text": out["text"], "tokens": out["tokens"], "budget": out["budget"],
                "tokenizer": out["tokenizer"], "note": out["note"],
                "items": len(out["items"]), "leftOut": out["left_out"],
                "subject": out["subject"], "partial": out["partial"]}

    @server.command("cortex.showHistory")
    async def show_history(ls: CortexServer, *args):
        """The symbol's full history, for the client to show (a list, a panel)."""
        return await _history(ls, _command_args(args))

    @server.command("cortex.reindex")
    async def reindex(ls: CortexServer, *args):
        p = _command_args(args)
        rebuild = p.get("rebuild", False)
        if not isinstance(rebuild, bool):
            raise JsonRpcInvalidParams("`rebuild` must be true or false")
        repos = [ls.repo_for(p)] if _uri(p) else ls.repos.all()
        if not repos:
            raise Failed("no git repository in this workspace")
        started = [str(r.root) for r in repos if ls.index(r, rebuild)]
        return {"started": started, "queued": [str(r.root) for r in repos
                                               if str(r.root) not in started]}

    @server.command("cortex.addNote")
    async def add_note(ls: CortexServer, *args):
        p = _command_args(args)
        text = str_param(p, "text", required=True, limit=20_000)
        if not text.strip():
            raise JsonRpcInvalidParams("`text` is empty")
        if p.get("target") is None and "position" not in p and _uri(p) is None:
            repo, label = ls.repo_for(p), None       # a note on the repository
        else:
            repo, spec = await ls.spec_of(p)
            label = spec.label
        return await ls.query(repo, queries.add_note, repo, label, text)


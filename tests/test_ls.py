"""cortex-ls end to end: a real server over stdio, a real repository, pytest-lsp's client."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from cortex_core.features.token_count import count_tokens

sys.path.insert(0, str(Path(__file__).parent))

from ls_harness import Session, plain  # noqa: E402
from scripted_repo import ScriptedRepo, sample_core, sample_use  # noqa: E402

USE = sample_use()


@pytest.fixture
def project(tmp_path: Path) -> ScriptedRepo:
    repo = ScriptedRepo(tmp_path / "widgets")
    repo.git("remote", "add", "origin", "git@github.com:acme/widgets.git")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", sample_core(1))
    repo.write("pkg/use.py", USE)
    repo.commit("add the core\n\nThe engine needs one place to compute values.", days_ago=30)
    for n, author in ((2, "Bob <bob@example.com>"), (3, "Ann <ann@example.com>"),
                      (4, "Bob <bob@example.com>")):
        repo.write("pkg/core.py", sample_core(n))
        repo.commit(f"tune compute to {n}\n\nCallers rely on compute growing by {n} now.",
                    author=author, days_ago=30 - n)
    repo.write("pkg/core.py", sample_core(5))
    repo.commit("fix: [click me](command:workbench.action.terminal.new) <img src=x> **loud**",
                days_ago=5)
    return repo


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


# -- start and indexing ------------------------------------------------------------------------


async def test_start_indexes_in_background_with_progress(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    (reports,) = lsp.client.progress_reports.values()
    kinds = [type(r).__name__ for r in reports]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    percentages = [r.percentage for r in reports[:-1]]
    assert percentages == sorted(percentages) and percentages[0] == 0
    assert any("commits" in (r.message or "") for r in reports[1:-1])
    assert "5 new commits" in reports[-1].message
    states = [s["state"] for s in plain(lsp.statuses)]
    assert states[0] == "indexing" and states[-1] == "ready"
    # Code lenses are refreshed once the index is there (asked right after indexUpdated).
    await lsp.until(lambda: lsp.refreshes >= 1, "a code lens refresh")
    assert (project.path / ".cortex" / "cortex.db").is_file()


# -- hover -------------------------------------------------------------------------------------


async def test_hover_shows_the_symbols_history_with_reasons(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path, options={"hotspotThreshold": 3, "historyLength": 3})
    text = (project.path / "pkg/core.py").read_text()
    uri = lsp.open(project.path / "pkg/core.py")
    value = await lsp.hover(uri, line_of(text, "def compute"), 6)
    assert value.startswith("**`compute`** · function")
    assert "5 changes · 2 authors" in value
    assert "**hotspot**: 5× in the last 90 days of this repository's activity (to " in value
    # Engine.run calls it, pkg/use.py imports it and its main calls it.
    assert "3 dependents" in value
    assert "Callers rely on compute growing by 4 now" in value
    assert value.count("\n- ") == 4        # 3 commits, then "… 2 more"
    assert "2 more" in value
    sha = project.git("rev-parse", "HEAD")
    assert f"(https://github.com/acme/widgets/commit/{sha})" in value


async def test_hover_escapes_commit_text(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    text = (project.path / "pkg/core.py").read_text()
    uri = lsp.open(project.path / "pkg/core.py")
    value = await lsp.hover(uri, line_of(text, "return x +"), 8)
    assert "click me" in value
    ours = re.sub(r"\[`[0-9a-f]{10}`\]\(https://github\.com/acme/widgets/commit/[0-9a-f]{40}\)",
                  "", value)                        # the commit links the server makes
    assert not re.search(r"(?<!\\)\]\(", ours)       # no other `](` that could close a link
    assert "<img" not in value and "**loud**" not in value
    assert "\\[click me\\](command" in value and "&lt;img" in value


async def test_hover_outside_symbols_names_the_last_commit_of_the_line(lsp: Session,
                                                                       project: ScriptedRepo):
    await lsp.start(project.path)
    uri = lsp.open(project.path / "pkg/core.py")
    value = await lsp.hover(uri, 0, 3)                  # "import os"
    first = project.git("rev-list", "--max-parents=0", "HEAD")
    assert value.startswith("**line 1** last changed")
    assert first[:10] in value and "add the core" in value


async def test_hover_on_an_edited_buffer_matches_symbols_by_name(lsp: Session,
                                                                 project: ScriptedRepo):
    await lsp.start(project.path)
    path = project.path / "pkg/core.py"
    text = path.read_text()
    uri = lsp.open(path)
    # Insert a new function at the top: every line below moves down by 4.
    added = "def brand_new():\n    return 0\n\n\n"
    lsp.client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(0, 0), types.Position(0, 0)), text=added)]))
    value = await lsp.hover(uri, line_of(text, "def helper") + 4, 5)
    assert value.startswith("**`helper`**") and "1 change" in value
    new = await lsp.hover(uri, 0, 5)
    assert new.startswith("**`brand_new`**") and "no commits yet" in new
    # A line added in the buffer is not committed yet.
    edited = await lsp.hover(uri, 2, 0)
    assert edited == "**line 3**: not committed yet"


async def test_hover_lists_live_notes(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    text = (project.path / "pkg/core.py").read_text()
    uri = lsp.open(project.path / "pkg/core.py")
    position = {"line": line_of(text, "def helper"), "character": 5}
    note = plain(await lsp.command("cortex.addNote", {"textDocument": {"uri": uri},
                                                      "position": position,
                                                      "text": "keep helper pure: [x](y)"}))
    assert note["target"] == "pkg/core.py::helper" and note["id"] >= 1
    value = await lsp.hover(uri, position["line"], 5)
    assert f"note \\#{note['id']}: keep helper pure: \\[x\\](y)" in value


# -- code lens ---------------------------------------------------------------------------------


async def test_code_lens_on_hotspots_resolves_lazily(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path, options={"hotspotThreshold": 3})
    text = (project.path / "pkg/core.py").read_text()
    uri = lsp.open(project.path / "pkg/core.py")
    lenses = await lsp.lenses(uri)
    assert [lens.range.start.line for lens in lenses] == [line_of(text, "def compute")]
    assert lenses[0].command is None              # titles are computed on resolve
    resolved = await lsp.client.code_lens_resolve_async(lenses[0])
    assert resolved.command.title == "changed 5× in 90d · 2 authors · 3 dependents"
    assert resolved.command.command == "cortex.showHistory"
    history = plain(await lsp.command("cortex.showHistory", *resolved.command.arguments))
    assert history["total"] == 5 and history["target"]["qualname"] == "compute"


async def test_a_staged_rename_keeps_hovers_and_lenses(lsp: Session, project: ScriptedRepo):
    """`git mv` (not committed): the file the editor shows is the new path, the index knows the
    old one. Hover, lenses and their history command read through the rename."""
    await lsp.start(project.path, options={"hotspotThreshold": 3})
    project.move("pkg/core.py", "pkg/engine_core.py")
    text = (project.path / "pkg/engine_core.py").read_text()
    uri = lsp.open(project.path / "pkg/engine_core.py")
    value = await lsp.hover(uri, line_of(text, "def compute"), 6)
    assert value.startswith("**`compute`** · function") and "5 changes · 2 authors" in value
    lenses = await lsp.lenses(uri)
    assert [lens.range.start.line for lens in lenses] == [line_of(text, "def compute")]
    resolved = await lsp.client.code_lens_resolve_async(lenses[0])
    assert resolved.command.title == "changed 5× in 90d · 2 authors · 3 dependents"
    history = plain(await lsp.command("cortex.showHistory", *resolved.command.arguments))
    assert history["total"] == 5 and history["target"]["path"] == "pkg/core.py"


async def test_settings_change_the_threshold_and_bad_values_are_reported(lsp: Session,
                                                                         project: ScriptedRepo):
    await lsp.start(project.path, options={"hotspotThreshold": "many"})
    assert any("hotspotThreshold" in m.message for m in lsp.client.messages)
    uri = lsp.open(project.path / "pkg/core.py")
    assert len(await lsp.lenses(uri)) == 1         # the default, 4 changes
    refreshes = lsp.refreshes
    lsp.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"cortex": {"hotspotThreshold": 6}}))
    await lsp.until(lambda: lsp.refreshes > refreshes, "a lens refresh after the change")
    assert not await lsp.lenses(uri)
    shown = lsp.client.protocol.wait_for_notification_async(types.WINDOW_SHOW_MESSAGE)
    lsp.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"cortex": {"historyLength": -1}}))
    message = await asyncio.wait_for(shown, 30)
    assert "historyLength" in message.message and "using 5" in message.message


def _commit_a_sixth_change(lsp: Session, project: ScriptedRepo) -> None:
    """A sixth change of compute, committed, and the client's watcher telling of the ref."""
    project.write("pkg/core.py", sample_core(6))
    project.commit("tune compute once more", days_ago=1)
    lsp.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=(project.path / ".git/refs/heads/main").as_uri(),
                        type=types.FileChangeType.Changed)]))


async def test_a_new_commit_is_indexed_and_lenses_refreshed(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    assert lsp.registrations, "watchers on .git/HEAD and refs are registered dynamically"
    refreshes = lsp.refreshes
    _commit_a_sixth_change(lsp, project)
    await lsp.indexed(2)
    await lsp.until(lambda: lsp.refreshes > refreshes, "a code lens refresh")
    assert plain(lsp.updates[-1])["newCommits"] == 1
    uri = lsp.open(project.path / "pkg/core.py")
    text = (project.path / "pkg/core.py").read_text()
    assert "6 changes" in await lsp.hover(uri, line_of(text, "def compute"), 5)


def _spares(parent: int) -> list[int]:
    """The pids of the spare indexers (`... -m cortex_core --spare`) that `parent` started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):   # gone meanwhile
            continue
        if ppid == parent and b"--spare" in argv and b"cortex_core" in argv:
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_an_update_is_run_by_the_spare_indexer_and_it_ends_with_the_server(
        lsp: Session, project: ScriptedRepo):
    """After a run the server starts a spare indexer, imported and waiting: the next run is
    that process (`warm` in indexUpdated) and gives what a fresh one gives; a new spare waits
    for the run after; the server's shutdown ends the spare without running it."""
    import os
    import select
    await lsp.start(project.path)
    assert plain(lsp.updates[0])["warm"] is False   # the first run: no spare yet
    server = lsp.client._server.pid
    first = _spares(server)
    assert len(first) == 1, "a spare waits once the first run has ended"
    _commit_a_sixth_change(lsp, project)
    await lsp.indexed(2)
    assert plain(lsp.updates[1])["warm"] is True and plain(lsp.updates[1])["newCommits"] == 1
    uri = lsp.open(project.path / "pkg/core.py")
    text = (project.path / "pkg/core.py").read_text()
    assert "6 changes" in await lsp.hover(uri, line_of(text, "def compute"), 5)
    second = _spares(server)
    assert len(second) == 1 and second != first, "the spare ran; another waits"
    exited = os.pidfd_open(second[0])
    try:
        await lsp.client.shutdown_session()
        lsp.client.cortex_started = False
        ready, _, _ = await asyncio.to_thread(select.select, [exited], [], [], 30)
        assert ready, "the spare ends with the server"
    finally:
        os.close(exited)


def _waiting(pid: int) -> None:
    """Until the process blocks reading a pipe (a spare loaded, waiting for its arguments):
    read from /proc as the state of the process, with a deadline."""
    import time
    wchan = Path(f"/proc/{pid}/wchan")
    deadline = time.monotonic() + 60
    while "pipe_read" not in wchan.read_text():
        assert time.monotonic() < deadline, "the spare never waited"
        time.sleep(0.01)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_a_spare_that_restarts_for_changed_code_is_not_a_warm_run(
        project: ScriptedRepo, tmp_path: Path):
    """Cortex's files changed under a waiting spare: it runs as a fresh process (os.execv), and
    indexUpdated must not call that run warm."""
    import shutil
    from pytest_lsp import ClientServerConfig
    from ls_harness import CONFIG, finish
    root = Path(__file__).resolve().parent.parent
    code = tmp_path / "code"
    for part in ("cortex_core", "cortex_cli", "cortex_ls"):
        shutil.copytree(root / part, code / part, ignore=shutil.ignore_patterns("__pycache__"))
    config = ClientServerConfig(server_command=CONFIG.server_command,
                                server_env=dict(CONFIG.server_env or {}, PYTHONPATH=str(code)))
    client = await config.start()
    lsp = Session(client)
    try:
        await lsp.start(project.path)
        (spare,) = _spares(client._server.pid)
        _waiting(spare)
        cli = code / "cortex_cli" / "cli.py"
        cli.write_text(cli.read_text() + "\n# edited while the spare waited\n")
        project.write("pkg/core.py", sample_core(6))
        project.commit("tune compute once more", days_ago=1)
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=(project.path / ".git/refs/heads/main").as_uri(),
                            type=types.FileChangeType.Changed)]))
        await lsp.indexed(2)
        update = plain(lsp.updates[1])
        assert update["newCommits"] == 1 and update["warm"] is False
    finally:
        await finish(client)


async def test_head_moves_are_polled_without_watchers(lsp: Session, project: ScriptedRepo):
    # Neovim on Linux registers no file watchers: the poll notices the commit.
    await lsp.start(project.path, caps="neovim", options={"pollInterval": 0.2})
    project.write("pkg/use.py", USE + "\n\ndef more():\n    return 1\n")
    project.commit("add more", days_ago=1)
    await lsp.indexed(2)
    status = plain(await lsp.request("cortex/status", {}))
    assert status["repositories"][0]["commits"] == 6


# -- custom requests and commands --------------------------------------------------------------


async def test_custom_requests(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    text = (project.path / "pkg/core.py").read_text()
    uri = lsp.open(project.path / "pkg/core.py")
    at = {"textDocument": {"uri": uri}, "position": {"line": line_of(text, "def compute"),
                                                     "character": 4}}
    history = plain(await lsp.request("cortex/symbolHistory", dict(at, limit=2)))
    assert history["total"] == 5 and len(history["entries"]) == 2
    entry = history["entries"][0]["commit"]
    assert entry["url"] == f"https://github.com/acme/widgets/commit/{entry['sha']}"
    assert history["indexState"] == "ready" and history["partial"] is False
    by_target = plain(await lsp.request("cortex/symbolHistory", {"target": "pkg/core.py::compute"}))
    assert by_target["total"] == 5

    blast = plain(await lsp.request("cortex/blastRadius", at))
    assert {(d["path"], d["qualname"]) for d in blast["dependents"]} >= {
        ("pkg/use.py", "main"), ("pkg/core.py", "Engine.run")} or \
        ("pkg/use.py", "main") in {(d["path"], d["qualname"]) for d in blast["dependents"]}
    assert blast["summary"]["risk"] in ("low", "medium", "high")

    related = plain(await lsp.request("cortex/relatedCommits", at))
    assert related["touching"] and related["touching"][0]["commit"]["sha"]

    pack = plain(await lsp.request("cortex/contextPack", dict(at, budget=600)))
    assert pack["tokens"] <= 600 and "compute" in pack["text"]
    assert pack["tokenizer"] == "o200k" and pack["tokens"] == count_tokens(pack["text"])
    pack = plain(await lsp.request("cortex/contextPack", dict(at, budget=600,
                                                               encoding="cl100k")))
    assert pack["tokenizer"] == "cl100k" and pack["tokens"] == count_tokens(pack["text"],
                                                                            "cl100k") <= 600

    found = plain(await lsp.request("cortex/search", {"query": "engine compute values"}))
    assert found["hits"] and found["hits"][0]["title"] == "add the core"
    assert found["note"]                       # says why semantic search is off

    hot = plain(await lsp.request("cortex/hotspots", {"limit": 3}))
    assert hot["symbols"][0]["qualname"] == "compute"

    status = plain(await lsp.request("cortex/status", {}))
    (repo,) = status["repositories"]
    assert repo["commits"] == 5 and repo["indexState"] == "ready"
    assert status["positionEncoding"] == "utf-16"


async def test_a_saved_file_reaches_the_next_searchs_context(lsp: Session,
                                                               project: ScriptedRepo):
    """Searches reuse the working copy's status for a moment (WorkspaceCache); a save forgets it,
    so the file just saved counts as changed at once."""
    await lsp.start(project.path)
    first = plain(await lsp.request("cortex/search", {"query": "compute values",
                                                      "mode": "lexical"}))
    assert first["hits"] and not any(h["why"]["context_reasons"] for h in first["hits"])
    path = project.path / "pkg/core.py"
    uri = lsp.open(path)
    path.write_text(sample_core(6))
    lsp.client.text_document_did_save(types.DidSaveTextDocumentParams(
        types.TextDocumentIdentifier(uri), text=sample_core(6)))
    after = plain(await lsp.request("cortex/search", {"query": "compute values",
                                                      "mode": "lexical"}))
    assert any("touches a file you changed" in h["why"]["context_reasons"]
               for h in after["hits"]), after["hits"]


async def test_commands(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    uri = lsp.open(project.path / "pkg/core.py")
    text = (project.path / "pkg/core.py").read_text()
    at = {"textDocument": {"uri": uri}, "position": {"line": line_of(text, "def compute"),
                                                     "character": 4}}
    pack = plain(await lsp.command("cortex.exportContext", dict(at, budget=500)))
    assert 0 < pack["tokens"] <= 500 and pack["text"].startswith("#")
    assert pack["subject"] == "pkg/core.py::compute"

    before = len(lsp.updates)
    out = plain(await lsp.command("cortex.reindex"))
    assert out["started"] == [str(project.path)] or out["queued"] == [str(project.path)]
    await lsp.indexed(before + 1)

    note = plain(await lsp.command("cortex.addNote", {"text": "the whole project note"}))
    assert note["target"] == ""
    with pytest.raises(JsonRpcException, match="text"):
        await lsp.command("cortex.addNote", {"target": "pkg/core.py"})


# -- robustness --------------------------------------------------------------------------------


async def test_invalid_params_get_errors_and_the_server_lives_on(lsp: Session,
                                                                 project: ScriptedRepo):
    await lsp.start(project.path)
    uri = lsp.open(project.path / "pkg/core.py")
    bad = [
        ("textDocument/hover", {"textDocument": {"uri": uri}}),                 # no position
        ("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": "x"}}),
        ("cortex/symbolHistory", {"textDocument": {"uri": uri}, "position": {"line": -1}}),
        ("cortex/symbolHistory", {"target": 42}),
        ("cortex/symbolHistory", []),
        ("cortex/search", {"query": ""}),
        ("cortex/search", {"query": "x", "limit": 10**9}),
        ("cortex/contextPack", {"query": "x", "format": "pdf"}),
        ("cortex/contextPack", {"query": "x", "encoding": "gpt2"}),
        ("cortex/contextPack", {"query": "x", "encoding": 7}),
        ("cortex/blastRadius", {"target": "pkg/core.py", "minConfidence": 7}),
        ("codeLens/resolve", {"range": {"start": {"line": 0, "character": 0},
                                        "end": {"line": 0, "character": 0}}, "data": None}),
    ]
    for method, params in bad:
        with pytest.raises(JsonRpcException) as caught:
            await lsp.raw_request(method, params)
        assert caught.value.code == -32602, (method, params, caught.value)
    with pytest.raises(JsonRpcException) as caught:
        await lsp.request("cortex/symbolHistory", {"target": "pkg/nope.py::f"})
    assert caught.value.code == -32803 and "no file" in caught.value.message
    with pytest.raises(JsonRpcException):
        await lsp.command("cortex.nothing")
    assert "compute" in await lsp.hover(uri, 3, 5)       # still answering
    assert not [m for m in lsp.client.messages if "Error" in m.message]


async def test_positions_past_the_end_are_clamped(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    uri = lsp.open(project.path / "pkg/core.py")
    text = (project.path / "pkg/core.py").read_text()
    row = line_of(text, "def compute")
    assert "compute" in await lsp.hover(uri, row, 500)       # past the end of the line
    last = await lsp.hover(uri, 10_000, 3)                    # past the end of the file
    assert last is None or "Engine" in last or "run" in last


async def test_files_outside_repositories_get_empty_answers(lsp: Session, project: ScriptedRepo,
                                                            tmp_path: Path):
    await lsp.start(project.path)
    outside = tmp_path / "loose.py"
    outside.write_text("def f():\n    return 1\n")
    uri = lsp.open(outside)
    assert await lsp.hover(uri, 0, 4) is None
    assert not await lsp.lenses(uri)
    assert await lsp.hover("untitled:Untitled-1", 0, 0) is None
    assert not lsp.client.messages


async def test_non_utf8_and_large_files(lsp: Session, project: ScriptedRepo):
    project.write("latin.py", "# caf\xe9\ndef legacy():\n    return '\xe9'\n".encode("latin-1"))
    project.write("big.py", "".join(f"def f{i}():\n    return {i}\n\n" for i in range(60_000)))
    project.commit("add a latin-1 file and a big one", days_ago=2)
    await lsp.start(project.path)
    latin = (project.path / "latin.py").as_uri()           # not opened: read from disk
    assert (await lsp.hover(latin, 1, 5)).startswith("**`legacy`**")
    big = project.path / "big.py"
    assert big.stat().st_size > 1_000_000
    uri = lsp.open(big)
    value = await lsp.hover(uri, 3, 5)      # too large to parse live: the index's spans answer
    assert value.startswith("**`f1`**") and "not parsed live" in value
    assert not await lsp.lenses(uri)


async def test_database_deleted_while_running(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    uri = lsp.open(project.path / "pkg/core.py")
    assert "compute" in await lsp.hover(uri, 3, 5)
    for suffix in ("", "-wal", "-shm"):
        Path(str(project.path / ".cortex/cortex.db") + suffix).unlink(missing_ok=True)
    assert await lsp.hover(uri, 3, 5) is None
    with pytest.raises(JsonRpcException, match="no index"):
        await lsp.request("cortex/symbolHistory", {"target": "pkg/core.py::compute"})
    await lsp.command("cortex.reindex")
    await lsp.indexed(2)
    assert "5 changes" in await lsp.hover(uri, 3, 5)


async def test_indexing_waits_for_another_indexer(lsp: Session, project: ScriptedRepo):
    from cortex_core.store.store import writer_lock
    await lsp.start(project.path)
    uri = lsp.open(project.path / "pkg/core.py")
    db = project.path / ".cortex" / "cortex.db"
    with writer_lock(db, 0):               # as a `cortex index` in a terminal would hold it
        out = plain(await lsp.command("cortex.reindex"))
        assert out["started"]
        await lsp.until(lambda: plain(lsp.statuses[-1])["state"] == "indexing", "indexing")
        value = await lsp.hover(uri, 3, 5)             # requests never wait for it ...
        assert "compute" in value and "index still building" in value   # ... and say so
        history = plain(await lsp.request("cortex/symbolHistory",
                                          {"target": "pkg/core.py::compute"}))
        assert history["partial"] is True and history["indexState"] == "indexing"
    await lsp.indexed(2)


async def test_cancelled_requests_do_not_break_the_server(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    uri = lsp.open(project.path / "pkg/core.py")
    proto = lsp.client.protocol
    pack = {"query": "compute engine values", "budget": 5000}
    # Whether a cancel arrives before the answer is a race the client cannot win on purpose (on
    # this small repository a pack takes about as long as reading the next message): each request
    # gets its pack or RequestCancelled, never another error, and the server goes on answering.
    futures = []
    for n in range(12):
        futures.append(proto.send_request("cortex/contextPack", pack, msg_id=f"pack-{n}"))
        lsp.client.cancel_request(types.CancelParams(id=f"pack-{n}"))
    for future in futures:
        try:
            assert plain(await asyncio.wrap_future(future))["tokens"] > 0
        except JsonRpcException as exc:
            assert exc.code == -32800, exc
    assert "compute" in await lsp.hover(uri, 3, 5)
    assert not lsp.client.messages


# -- encodings and multi-root ------------------------------------------------------------------


TS = 'const s = "é😀𝄞"; function target() { return s }\nfunction other() { return 1 }\n'


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
async def test_positions_in_each_encoding(lsp: Session, project: ScriptedRepo, encoding: str):
    project.write("web/app.ts", TS)
    project.commit("add the app", days_ago=3)
    await lsp.start(project.path, encodings=[encoding])
    status = plain(await lsp.request("cortex/status", {}))
    assert status["positionEncoding"] == encoding
    uri = lsp.open(project.path / "web/app.ts", language="typescript")
    line = TS.splitlines()[0]
    index = line.index("target")
    before = line[:index]
    units = {"utf-16": len(before.encode("utf-16-le")) // 2, "utf-8": len(before.encode()),
             "utf-32": len(before)}[encoding]
    assert (await lsp.hover(uri, 0, units + 2)).startswith("**`target`**")
    # The first character of `const` is outside both functions: the line's last commit.
    assert (await lsp.hover(uri, 0, 0)).startswith("**line 1**")


async def test_multi_root_workspaces(lsp: Session, project: ScriptedRepo, tmp_path: Path):
    other = ScriptedRepo(tmp_path / "other")
    other.write("tool.py", "def tool():\n    return 1\n")
    other.commit("add the tool", days_ago=2)
    await lsp.start(project.path, other.path)
    status = plain(await lsp.request("cortex/status", {}))
    assert sorted(r["repository"] for r in status["repositories"]) == sorted(
        [str(project.path), str(other.path)])
    uri = lsp.open(other.path / "tool.py")
    assert "add the tool" in await lsp.hover(uri, 0, 5)
    with pytest.raises(JsonRpcException, match="several repositories"):
        await lsp.request("cortex/hotspots", {})
    hot = plain(await lsp.request("cortex/hotspots", {"uri": other.path.as_uri()}))
    assert hot["repository"] == str(other.path)

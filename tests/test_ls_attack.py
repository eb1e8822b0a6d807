"""cortex-ls against hostile repositories and buggy or hostile clients: a real server over stdio.

Each test asserts what the server must do (docs/protocol.md and the rules: bad input gets a clear
JSON-RPC error or an empty answer, never a crash, a hang, a pop-up or a corrupt store; repository
text is inert markdown; secrets are redacted; positions are exact; nothing is written outside the
repository). Waits are on events, never on sleeps.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import apsw
import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

sys.path.insert(0, str(Path(__file__).parent))

from ls_harness import Session, plain  # noqa: E402
from scripted_repo import ScriptedRepo  # noqa: E402

CORE = '''import os


def compute(x):
    return x + 1


def helper():
    return 2
'''

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture
def project(tmp_path: Path) -> ScriptedRepo:
    repo = ScriptedRepo(tmp_path / "widgets")
    repo.git("remote", "add", "origin", "git@github.com:acme/widgets.git")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", CORE)
    repo.commit("add the core\n\nThe engine needs one place to compute values.", days_ago=30)
    return repo


def popups(lsp: Session) -> list[str]:
    return [m.message for m in lsp.client.messages]


async def settled(lsp: Session, runs: int = 1):
    """Wait until `runs` index runs ended, whatever their outcome (ready or error)."""
    def ended():
        states = [plain(s)["state"] for s in lsp.statuses]
        return sum(1 for a, b in itertools.pairwise(states)
                   if a == "indexing" and b != "indexing") >= runs
    await lsp.until(ended, f"{runs} index runs to end")


async def send_raw(lsp: Session, msg_id: str, method: str, params):
    """A request sent as given, with a chosen id (pygls' client checks nothing)."""
    from concurrent.futures import Future

    from pygls.protocol import JsonRPCRequestMessage
    proto = lsp.client.protocol
    future: Future = Future()
    proto._request_futures[msg_id] = future
    proto._send_data(JsonRPCRequestMessage(id=msg_id, method=method, params=params, jsonrpc="2.0"))
    return await asyncio.wait_for(asyncio.wrap_future(future), 20)


async def error_of(awaitable, timeout: float = 20) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(awaitable, timeout)
    return caught.value


def hover_params(uri: str, line: int, character: int) -> dict:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


# == hostile repositories: the store lives in the work tree, which the repository controls ========


@pytest.mark.parametrize("planted", ["lock-and-gitignore", "store-folder"])
async def test_symlinks_planted_in_the_store_folder_are_not_followed(lsp: Session, tmp_path: Path,
                                                                     project: ScriptedRepo,
                                                                     planted: str):
    # A cloned repository may commit `.cortex/...` as symlinks; opening it indexes at once.
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    store = project.path / ".cortex"
    if planted == "store-folder":
        os.symlink(outside, store)
    else:
        store.mkdir()
        os.symlink(victim, store / "cortex.db.lock")
        os.symlink(outside / "planted", store / ".gitignore")
    project.git("add", "-f", ".cortex")
    project.commit("tooling", days_ago=1)
    await lsp.start(project.path, wait_index=False)
    # The repository tracks files under .cortex/: its store is refused, and the user told why.
    await lsp.until(lambda: any(plain(s)["state"] == "error" for s in lsp.statuses),
                    "the store to be refused")
    assert any(".cortex" in m.message for m in lsp.client.messages)
    assert victim.read_text() == "precious\n", "a file outside the repository was overwritten"
    assert sorted(os.listdir(outside)) == [], "files were created outside the repository"


async def test_a_fifo_in_the_work_tree_does_not_hang_the_server(lsp: Session,
                                                                project: ScriptedRepo):
    fifo = project.path / "pkg" / "pipe.py"
    os.mkfifo(fifo)
    await lsp.start(project.path)
    # Not opened by the editor: the server reads it from disk.
    hover = asyncio.ensure_future(lsp.hover(fifo.as_uri(), 0, 0))
    done, _ = await asyncio.wait({hover}, timeout=10)
    try:
        assert done, "a hover on a named pipe blocked the server"
        assert hover.result() is None
        assert not await asyncio.wait_for(lsp.lenses(fifo.as_uri()), 10)
        status = plain(await asyncio.wait_for(lsp.request("cortex/status", {}), 10))
        assert status["repositories"]
    finally:
        # Unblock a server stuck reading the pipe (it reads an empty file), so that the hover
        # is answered and the server can be shut down.
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        await asyncio.wait({hover}, timeout=10)


@pytest.fixture
def hostile(project: ScriptedRepo) -> ScriptedRepo:
    """Commit subjects, bodies and author names written to inject markdown, HTML and commands."""
    project.git("remote", "set-url", "origin",
                "https://deploy:s3cretPassw0rd@github.com/acme/widgets.git")
    texts = [
        (("bidi \u202eevil\u202c rlm\u200f alm\u061c lrm\u200e zw\u200bsp zwj\u200d bom\ufeff "
          "wj\u2060 nel\x85 end"), "B\u202eob\u200f <bob@example.com>"),
        ("see <https://evil.example/x> and https://evil.example/y www.evil.example m@evil.example",
         "Mal](javascript:alert(1)) <mal@example.com>"),
        ("&#x3C;script&#x3E; <a href=x>a</a> `code` <img src=x onerror=alert(1)> \\[esc\\]",
         "Ann <ann@example.com>"),
        ("[x]: https://evil.example/ref", "Ann <ann@example.com>"),
        ("![img](https://evil.example/p.png) [cmd](command:workbench.action.terminal.new?%5B%5D)",
         "[Eve](command:evil) <eve@example.com>"),
    ]
    for n, (subject, author) in enumerate(texts):
        # Each commit changes the first line too: its line hover names the last one.
        project.write("pkg/core.py", CORE.replace("x + 1", f"x + {n + 2}").replace(
            "import os", f"import os  # {n}"))
        project.commit(f"{subject}\n\n[why](command:evil) <b>bold</b> ![i](https://evil.example/i) "
                       "and more words here.", author=author, days_ago=20 - n)
    return project


async def test_hostile_commit_text_and_remote_stay_inert_in_hovers(lsp: Session,
                                                                   hostile: ScriptedRepo):
    await lsp.start(hostile.path, options={"historyLength": 50})
    uri = hostile.path.joinpath("pkg/core.py").as_uri()
    value = await lsp.hover(uri, 3, 5)           # compute: every commit
    line = await lsp.hover(uri, 0, 1)            # "import os": the last commit, its author
    assert "Eve" in line and "cmd" in line
    for text in (value, line):
        assert text
        # The only links: commit pages of the validated origin, credentials dropped.
        targets = re.findall(r"(?<!\\)\]\((.*?)\)", text)
        assert targets and all(re.fullmatch(
            r"https://github\.com/acme/widgets/commit/[0-9a-f]{40}", t) for t in targets), targets
        assert "s3cret" not in text and "deploy" not in text
        assert "<" not in text.replace("&lt;", "")         # no raw HTML
        assert not re.search(r"(?<!\\)!(?<!\\)\[", text)   # no image
        # `command:` and `javascript:` links cannot form: every `]` is escaped (checked above).
        bare = text.replace("https://github.com/acme/widgets/commit/", "")
        assert not re.search(r"(?<!\\)://", bare)         # no autolink (`https\\://`)
        assert not re.search(r"(?<!\\)@", text)           # no e-mail autolink
        assert "www.evil" not in text                     # GFM autolinks need the literal dot
    assert not popups(lsp)


async def test_hover_strips_invisible_and_bidi_controls(lsp: Session, hostile: ScriptedRepo):
    await lsp.start(hostile.path, options={"historyLength": 50})
    value = await lsp.hover(hostile.path.joinpath("pkg/core.py").as_uri(), 3, 5)
    assert "bidi" in value and "evil" in value
    # Unicode's Bidi_Control characters, zero-width characters and C1 controls (NEL).
    hidden = "\u061c\u200b\u200c\u200d\u200e\u200f\u2060\ufeff\x85\u202a\u202b\u202c\u202d" \
             "\u202e\u2066\u2067\u2068\u2069"
    assert [hex(ord(ch)) for ch in value if ch in hidden] == []


async def test_secrets_in_author_names_are_redacted(lsp: Session, project: ScriptedRepo):
    project.write("pkg/core.py", CORE.replace("x + 1", "x + 2").replace("import os", "import sys"))
    project.commit("tune compute\n\nfor the deploy of the engine", days_ago=3,
                   author=f"Eve {TOKEN} <eve@example.com>")
    await lsp.start(project.path)
    uri = project.path.joinpath("pkg/core.py").as_uri()
    answers = {
        "hover": await lsp.hover(uri, 3, 5),
        "line hover": await lsp.hover(uri, 0, 1),
        "history": plain(await lsp.request("cortex/symbolHistory",
                                           {"target": "pkg/core.py::compute"})),
        "search": plain(await lsp.request("cortex/search", {"query": "deploy engine"})),
        "related": plain(await lsp.request("cortex/relatedCommits",
                                           {"target": "pkg/core.py::compute"})),
        "pack": plain(await lsp.request("cortex/contextPack",
                                        {"target": "pkg/core.py::compute"})),
    }
    leaked = [name for name, answer in answers.items() if TOKEN[:12] in json.dumps(answer)]
    assert leaked == [], f"the token in an author name left the server in: {leaked}"


# == URIs, paths and workspace folders ===========================================================


async def test_uris_outside_the_repository_get_empty_answers(lsp: Session, project: ScriptedRepo,
                                                             tmp_path: Path):
    secret = tmp_path / "secret.py"
    secret.write_text("def secret():\n    return 1\n")
    os.symlink(secret, project.path / "pkg/out.py")        # a symlink out of the repository
    os.symlink("core.py", project.path / "pkg/alias.py")   # and one inside it
    project.git("add", "pkg/out.py", "pkg/alias.py")
    project.commit("links", days_ago=2)
    await lsp.start(project.path)
    root = project.path.as_uri()
    for uri in ["untitled:Untitled-1", "http://example.com" + project.path.as_posix()
                + "/pkg/core.py", root + "/pkg/../.git/config", root + "/pkg/%2e%2e/.git/HEAD",
                root + "/.git/HEAD", root + "/pkg/out.py", root + "/pkg", root,
                "file:///etc/passwd", root + "/pkg/%2e%2e/%2e%2e/secret.py"]:
        assert await lsp.hover(uri, 0, 1) is None, uri
        assert not await lsp.lenses(uri), uri
        error = await error_of(lsp.request("cortex/symbolHistory", hover_params(uri, 0, 1)))
        assert error.code in (-32602, -32803), (uri, error)
    assert "compute" in await lsp.hover(root + "/pkg/alias.py", 3, 5)
    assert not popups(lsp)


async def test_uris_with_nul_bytes_get_empty_answers_or_clear_errors(lsp: Session,
                                                                     project: ScriptedRepo):
    await lsp.start(project.path)
    uri = project.path.as_uri() + "/pkg/co%00re.py"
    problems = []
    for what, call, empty in [
            ("hover", lambda: lsp.hover(uri, 0, 0), None),
            ("codeLens", lambda: lsp.lenses(uri), ())]:
        try:
            answer = await asyncio.wait_for(call(), 20)
            if answer != empty:
                problems.append((what, answer))
        except JsonRpcException as exc:
            problems.append((what, exc.code, exc.message))
    for method, params in [("cortex/symbolHistory", hover_params(uri, 0, 0)),
                           ("cortex/hotspots", {"uri": uri}),
                           ("cortex/status", {"uri": uri})]:
        error = await error_of(lsp.request(method, params))
        if error.code not in (-32602, -32803):     # not -32603 with a Python traceback
            problems.append((method, error.code, error.message))
    assert problems == []


@pytest.mark.parametrize("bad", ["nul-folder", "relative-root-path"])
async def test_initialize_survives_malformed_workspace_folders(lsp: Session, project: ScriptedRepo,
                                                               bad: str):
    if bad == "nul-folder":
        params = types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=project.path.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri="file:///tmp/a%00b", name="bad"),
                               types.WorkspaceFolder(uri=project.path.as_uri(), name="good")])
    else:
        params = types.InitializeParams(capabilities=types.ClientCapabilities(),
                                        root_path="relative/folder")
    await asyncio.wait_for(lsp.client.initialize_session(params), 20)
    lsp.client.cortex_started = True
    status = plain(await lsp.request("cortex/status", {}))
    expected = [str(project.path)] if bad == "nul-folder" else []
    assert [r["repository"] for r in status["repositories"]] == expected


async def test_removing_one_of_two_folders_of_a_repository_keeps_it(lsp: Session,
                                                                   project: ScriptedRepo):
    project.write("docs/readme.md", "# widgets\n")
    project.commit("docs", days_ago=3)
    await lsp.start(project.path / "pkg", project.path / "docs", wait_index=False)
    await lsp.indexed(1)
    lsp.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[], removed=[types.WorkspaceFolder(
            uri=(project.path / "docs").as_uri(), name="docs")])))
    status = plain(await lsp.request("cortex/status", {}))   # handled after the notification
    assert [r["repository"] for r in status["repositories"]] == [str(project.path)]
    assert "compute" in await lsp.hover(project.path.joinpath("pkg/core.py").as_uri(), 3, 5)


# == parameters ==================================================================================


async def test_out_of_range_numbers_are_invalid_params(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    problems = []
    for method, params in [
            ("cortex/search", {"query": "engine", "since": 10**30}),
            ("cortex/symbolHistory", {"target": "pkg/core.py:" + "9" * 30}),
            ("cortex/blastRadius", {"target": "pkg/core.py:" + "9" * 30})]:
        error = await error_of(lsp.raw_request(method, params))
        if error.code != -32602:
            problems.append((method, error.code, error.message))
    # 1e400 is a valid JSON number (infinite once parsed): the answer must still be valid JSON.
    try:
        result = plain(await lsp.raw_request("cortex/hotspots", {"sinceDays": float("inf")}))
    except JsonRpcException as exc:
        if exc.code != -32602:
            problems.append(("cortex/hotspots", exc.code, exc.message))
    else:
        try:
            json.dumps(result, allow_nan=False)
        except ValueError:
            problems.append(("cortex/hotspots", "answered with Infinity, which JSON cannot hold",
                             result.get("since_days")))
    assert problems == []


async def test_a_uri_of_the_wrong_type_is_invalid_params(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    error = await error_of(lsp.command("cortex.reindex", {"uri": 5}))
    assert error.code == -32602, error
    error = await error_of(lsp.raw_request("cortex/search", {"query": "engine", "uri": ["x"]}))
    assert error.code == -32602, error


async def test_commands_and_requests_of_the_wrong_shape(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    uri = lsp.open(project.path / "pkg/core.py")
    bad = [
        ("workspace/executeCommand", {"command": "cortex.showHistory", "arguments": "abc"}),
        ("workspace/executeCommand", {"command": "cortex.showHistory", "arguments": [{}, {}]}),
        ("workspace/executeCommand", {"command": "cortex.showHistory", "arguments": [1]}),
        ("workspace/executeCommand", {"command": "cortex.addNote", "arguments": [{"text": 5}]}),
        ("workspace/executeCommand", {"command": "cortex.reindex",
                                      "arguments": [{"rebuild": "yes"}]}),
        ("workspace/executeCommand", {"command": "cortex.nope", "arguments": []}),
        ("textDocument/hover", "abc"),
        ("textDocument/hover", None),
        ("textDocument/hover", hover_params(uri, -1, 0)),
        ("textDocument/hover", hover_params(uri, 2**40, 0)),
        ("textDocument/codeLens", {"textDocument": [uri]}),
        ("cortex/search", {"query": "x", "kinds": "commit"}),
        ("cortex/search", {"query": "x", "kinds": [{}]}),
        ("cortex/search", {"query": "x", "mode": ["lexical"]}),
        ("cortex/search", {"query": {"nested": ["junk"]}}),
        ("cortex/hotspots", {"limit": 0}),
        ("cortex/hotspots", {"limit": 1.5}),
        ("cortex/hotspots", {"sinceDays": -1}),
        ("cortex/blastRadius", {"target": "pkg/core.py", "depth": True}),
        ("cortex/contextPack", {"query": "x", "budget": 10}),
        ("cortex/symbolHistory", {"target": "  "}),
        ("cortex/symbolHistory", {"target": "pkg/core.py::"}),
        ("cortex/symbolHistory", hover_params(uri, 3, "x")),
        ("cortex/relatedCommits", {"commit": "a" * 65}),
    ]
    for method, params in bad:
        error = await error_of(lsp.raw_request(method, params))
        assert error.code == -32602, (method, params, error)
    # Unknown keys are ignored; a valid request with junk beside it is answered.
    history = plain(await lsp.raw_request("cortex/symbolHistory", {
        "target": "pkg/core.py::compute", "junk": {"a": [1, None, {"b": 2}]}}))
    assert history["total"] == 1
    assert "compute" in await lsp.hover(uri, 3, 5)
    assert not popups(lsp)


async def test_lone_surrogates_in_strings_are_answered(lsp: Session, project: ScriptedRepo):
    # JSON may escape half a surrogate pair ("\ud800"), which UTF-8, SQLite and the BPE count
    # refuse: every request below was an internal error (UnicodeEncodeError).
    await lsp.start(project.path)
    half = "\ud800"
    for encoding in ("o200k", "cl100k", "estimate"):
        pack = plain(await lsp.raw_request("cortex/contextPack", {
            "query": f"compute {half} values", "budget": 400, "encoding": encoding}))
        assert pack["subject"] == "compute \ufffd values" and pack["tokens"] <= 400
        pack["text"].encode("utf-8")
    hits = plain(await lsp.raw_request("cortex/search", {"query": "engine", "path": f"pkg{half}"}))
    assert hits["hits"] == []
    assert plain(await lsp.raw_request("cortex/hotspots", {"path": f"pkg{half}"}))["files"] == []
    for method, params in (("cortex/symbolHistory", {"target": f"pkg/co{half}re.py"}),
                           ("cortex/blastRadius", {"target": f"pkg/core.py::{half}"}),
                           ("cortex/contextPack", {"target": f"pkg/core.py::x{half}"})):
        error = await error_of(lsp.raw_request(method, params))
        assert "\ufffd" in error.message and "UnicodeEncodeError" not in error.message, error
    note = plain(await lsp.command("cortex.addNote", {"target": "pkg/core.py::compute",
                                                      "text": f"check {half} this"}))
    assert note["text"] == "check \ufffd this"
    assert not popups(lsp)


async def test_settings_reject_a_poll_interval_that_spins(lsp: Session, project: ScriptedRepo):
    # 1e-9 s between HEAD checks keeps a core busy for nothing.
    await lsp.start(project.path, options={"pollInterval": 1e-9}, wait_index=False)
    # Setting messages are sent as `initialized` is handled: before this answer.
    assert plain(await lsp.request("cortex/status", {}))["settings"]["poll_interval"] != 1e-9
    assert any("pollInterval" in m for m in popups(lsp))


# == the JSON-RPC layer ==========================================================================


async def test_a_json_rpc_shaped_object_inside_params_is_only_data(lsp: Session,
                                                                   project: ScriptedRepo):
    await lsp.start(project.path)
    # pygls decodes every nested object with its message hook; the server's own hook answers a
    # nested "request" that does not decode -- under the id it names, here the outer request's.
    msg_id = f"outer-{uuid.uuid4()}"
    result = plain(await send_raw(lsp, msg_id, "cortex/search", {
        "query": "engine values", "context": {"jsonrpc": "2.0", "id": msg_id,
                                              "method": "textDocument/hover", "params": {}}}))
    assert result["hits"] and result["hits"][0]["title"] == "add the core"


async def test_requests_after_shutdown_get_an_error(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    await lsp.client.shutdown_async(None)
    try:
        error = await error_of(lsp.request("cortex/status", {}), timeout=5)
        assert error.code == -32600, error        # InvalidRequest, as LSP asks
    finally:
        lsp.client.cortex_started = False
        lsp.client.exit(None)


# == documents and positions =====================================================================


def change(uri: str, version: int, text: str, start=None, end=None):
    if start is None:
        content = types.TextDocumentContentChangeWholeDocument(text=text)
    else:
        content = types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(*start), types.Position(*end)), text=text)
    return types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[content])


async def test_hostile_edits_keep_the_buffer_in_step(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    path = project.path / "pkg/core.py"
    uri = path.as_uri()
    send = lsp.client.text_document_did_change
    send(change(project.path.joinpath("pkg/never.py").as_uri(), 2, "x", (0, 0), (0, 0)))
    text = "# 😀 é\r\n" + CORE                   # CRLF and an astral character on line 0
    lsp.open(path, text)
    send(change(uri, 2, "", (0, 4), (0, 3)))                  # reversed range: "😀" half
    send(change(uri, 3, "", (0, 3), (0, 3)))                  # inside the surrogate pair
    send(change(uri, 4, "!", (0, 10_000), (0, 10_000)))       # past the end of the line
    send(change(uri, 5, "", (10_000, 0), (10_000, 5)))        # past the end of the document
    # A notification whose params do not decode: dropped quietly.
    from pygls.protocol import JsonRPCNotification
    lsp.client.protocol._send_data(JsonRPCNotification(
        method=types.TEXT_DOCUMENT_DID_CHANGE, jsonrpc="2.0", params={
            "textDocument": {"uri": uri, "version": "x"}, "contentChanges": [{"range": 5}]}))
    value = await lsp.hover(uri, 4, 5)                        # "def compute" moved down by 1
    assert value.startswith("**`compute`**"), value
    assert (await lsp.hover(uri, 8, 5)).startswith("**`helper`**")
    send(change(uri, 6, CORE))
    assert (await lsp.hover(uri, 3, 5)).startswith("**`compute`**")
    assert not popups(lsp)


async def test_lines_split_by_a_lone_cr_are_blamed_exactly(lsp: Session, project: ScriptedRepo):
    # LSP breaks lines at \r; git and tree-sitter do not.
    project.write("cr.py", b"a = 1\r# cr\nb = 2\nc = 3\n")
    project.commit("first", days_ago=5)
    project.write("cr.py", b"a = 1\r# cr\nb = 2\nc = 4\n")
    project.commit("change c", days_ago=2)
    await lsp.start(project.path)
    uri = project.path.joinpath("cr.py").as_uri()
    b_line = await lsp.hover(uri, 2, 1)                # "b = 2": from the first commit
    c_line = await lsp.hover(uri, 3, 1)                # "c = 4": changed by the second
    assert b_line and "first" in b_line and "change c" not in b_line, b_line
    assert c_line and "change c" in c_line, c_line


async def test_an_unopened_non_utf8_file_blames_its_unchanged_lines(lsp: Session,
                                                                    project: ScriptedRepo):
    project.write("latin.py", "# caf\xe9\nX = 1\n".encode("latin-1"))
    project.commit("add a latin-1 file", days_ago=2)
    await lsp.start(project.path)
    value = await lsp.hover(project.path.joinpath("latin.py").as_uri(), 0, 1)
    assert value and "add a latin-1 file" in value, value     # not "not committed yet"


async def test_a_symbol_in_a_file_indexed_as_binary_is_not_called_new(lsp: Session,
                                                                      project: ScriptedRepo):
    project.write("nul.py", b"# a\x00b\n\n\ndef with_nul():\n    return 1\n")
    project.commit("add a file with a NUL byte", days_ago=2)
    await lsp.start(project.path)
    value = await lsp.hover(project.path.joinpath("nul.py").as_uri(), 3, 5)
    assert value and "no commits yet" not in value, value
    assert "add a file with a NUL byte" in value, value


async def test_edits_on_a_long_line_do_not_block_the_server(lsp: Session, project: ScriptedRepo):
    # A minified bundle: one 4 MB line. Each keystroke at its end is one didChange.
    await lsp.start(project.path)
    path = project.path / "dist/app.min.js"
    text = "var a=1;" * 500_000
    uri = lsp.open(path, text, language="javascript")
    for n in range(20):
        lsp.client.text_document_did_change(change(uri, n + 2, "x", (0, len(text) + n),
                                                   (0, len(text) + n)))
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.wait_for(lsp.request("cortex/status", {}), 60)
    assert loop.time() - started < 4.0, f"20 keystrokes took {loop.time() - started:.1f}s"


# == lifecycle ===================================================================================


def make_long_history(path: Path, commits: int) -> None:
    """A repository with many commits, fast (git fast-import)."""
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    out = []
    for c in range(commits):
        message = f"change {c}\n"
        out.append(f"commit refs/heads/main\nmark :{c + 1}\n"
                   f"author A{c % 7} <a{c % 7}@example.com> {1_700_000_000 + c * 60} +0000\n"
                   f"committer A <a@example.com> {1_700_000_000 + c * 60} +0000\n"
                   f"data {len(message)}\n{message}" + (f"from :{c}\n" if c else ""))
        for f in range(3):
            n = (c * 3 + f) % 40
            body = "".join(f"def f{n}_{k}(x):\n    return x + {c if k == c % 20 else k}\n\n\n"
                           for k in range(20))
            out.append(f"M 100644 inline pkg/m{n}.py\ndata {len(body)}\n{body}")
        out.append("\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input="".join(out).encode(),
                   check=True)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=path, check=True)


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_shutdown_while_indexing_stops_the_indexer(lsp: Session, tmp_path: Path):
    repo = tmp_path / "long"
    make_long_history(repo, 3000)
    await lsp.start(repo, wait_index=False)

    def indexing_commits():
        for reports in lsp.client.progress_reports.values():
            if any("commits" in (getattr(r, "message", None) or "") for r in reports):
                return True
        return False
    await lsp.until(indexing_commits, "the indexer to report commits")
    server = lsp.client._server
    indexers = children(server.pid)
    assert indexers, "the indexer runs in a child process"
    await asyncio.wait_for(lsp.client.shutdown_async(None), 15)
    assert not [pid for pid in indexers if alive(pid)], "shutdown left the indexer running"
    lsp.client.exit(None)
    assert await asyncio.wait_for(server.wait(), 15) == 0
    lsp.client.cortex_started = False
    # The interrupted run left a consistent store.
    con = apsw.Connection(str(repo / ".cortex/cortex.db"), flags=apsw.SQLITE_OPEN_READONLY)
    assert con.execute("pragma integrity_check").fetchall() == [("ok",)]


async def test_git_folder_deleted_while_running(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path, options={"pollInterval": 0.2})
    uri = lsp.open(project.path / "pkg/core.py")
    shutil.rmtree(project.path / ".git")
    assert "compute" in await lsp.hover(uri, 3, 5)          # the index still answers
    assert (await lsp.hover(uri, 0, 1)).startswith("**line 1**")
    logged = lsp.client.protocol.wait_for_notification_async(types.WINDOW_LOG_MESSAGE)
    await lsp.command("cortex.reindex")
    message = await asyncio.wait_for(logged, 30)
    assert "failed" in message.message and "not inside a git repository" in message.message
    assert not popups(lsp)                                   # a log line, not a pop-up
    assert plain(await lsp.request("cortex/status", {}))["repositories"]


async def test_unborn_head_then_a_first_commit(lsp: Session, tmp_path: Path):
    repo = ScriptedRepo(tmp_path / "fresh")
    await lsp.start(repo.path, caps="neovim", options={"pollInterval": 0.2}, wait_index=False)
    await settled(lsp)
    assert plain(lsp.statuses[-1])["state"] == "error"
    (repo.path / "a.py").write_text("def f():\n    return 1\n")
    assert await lsp.hover(repo.path.joinpath("a.py").as_uri(), 0, 5) is None
    error = await error_of(lsp.request("cortex/symbolHistory", {"target": "a.py::f"}))
    assert error.code == -32803 and plain(error.data)["indexState"] == "error"
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("first", days_ago=1)
    await lsp.indexed(1)                                     # the poll noticed HEAD being born
    assert "first" in await lsp.hover(repo.path.joinpath("a.py").as_uri(), 0, 5)
    assert not popups(lsp)


async def test_request_storm_with_configuration_spam(lsp: Session, project: ScriptedRepo):
    await lsp.start(project.path)
    uri = lsp.open(project.path / "pkg/core.py")
    futures = []
    for n in range(240):
        method, params = [
            ("textDocument/hover", hover_params(uri, 3, 5)),
            ("cortex/symbolHistory", {"target": "pkg/core.py::compute"}),
            ("cortex/search", {"query": "engine"}),
            ("textDocument/codeLens", {"textDocument": {"uri": uri}}),
        ][n % 4]
        futures.append(asyncio.ensure_future(lsp.raw_request(method, params)))
        if n % 10 == 0:
            lsp.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
                settings={"cortex": {"hotspotThreshold": n % 7 + 1, "model": f"model-{n}"}}))
    results = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 60)
    assert not [r for r in results if isinstance(r, Exception)]
    status = plain(await lsp.request("cortex/status", {}))
    assert status["settings"]["model"] == "model-230"
    assert not popups(lsp)


async def test_a_store_an_earlier_reader_read_is_told_once(lsp: Session, project: ScriptedRepo):
    """A store whose commits an earlier version of Cortex read (no reader recorded) keeps that
    reading until it is rebuilt: the server says so once, after its first index run."""
    store = project.path / ".cortex" / "cortex.db"
    built = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "index", "--repo",
                            str(project.path), "--model", "none", "-q"],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    con = apsw.Connection(str(store))
    con.execute("update commits set reader = null")   # as an earlier Cortex left it
    con.close()
    project.write("pkg/more.py", "def more():\n    return 1\n")
    project.commit("more", days_ago=1)
    await lsp.start(project.path)
    told = [m for m in popups(lsp) if "earlier version of Cortex" in m]
    assert len(told) == 1 and "reader 1" in told[0] and "cortex index --rebuild" in told[0]
    await lsp.command("cortex.reindex")
    await lsp.indexed(2)
    assert len([m for m in popups(lsp) if "earlier version of Cortex" in m]) == 1

"""cortex mcp end to end: a real server over stdio, the MCP SDK's own client, real repositories."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

sys.path.insert(0, str(Path(__file__).parent))

from scripted_repo import ScriptedRepo, sample_core, sample_use  # noqa: E402

from cortex_core.config import Settings  # noqa: E402
from cortex_core.features.token_count import count_tokens  # noqa: E402
from cortex_core.index.ingest import index_repository  # noqa: E402
from cortex_core.store.store import writer_lock  # noqa: E402

USE = sample_use()

TOOLS = {"search_memory", "symbol_history", "blast_radius", "related", "hotspots", "context_pack",
         "status", "sync", "record_note", "supersede_note"}


def make_project(path: Path) -> ScriptedRepo:
    repo = ScriptedRepo(path)
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", sample_core(n=1))
    repo.write("pkg/use.py", USE)
    repo.write("README.md", "# Widgets\n\n## Retries\n\nThe engine retries compute on failure.\n")
    repo.commit("add the core\n\nThe engine needs one place to compute values.", days_ago=30)
    for n, author in ((2, "Bob <bob@example.com>"), (3, "Ann <ann@example.com>"),
                      (4, "Bob <bob@example.com>")):
        repo.write("pkg/core.py", sample_core(n=n))
        repo.write("pkg/use.py", USE + f"\n# tuned {n}\n")
        repo.commit(f"tune compute to {n}\n\nCallers rely on compute growing by {n} now.",
                    author=author, days_ago=30 - n)
    repo.write("pkg/core.py", sample_core(n=5))
    repo.commit("fix: [click me](javascript:alert(1)) <img src=x> **loud**", days_ago=5)
    return repo


def index(repo: ScriptedRepo, **kwargs):
    return index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(),
                            model="none", **kwargs)


# The indexer a server starts runs from "/" (child_process.spawn_options): this tree on its
# path, so that it is the code under test and not an installed copy.
CODE_UNDER_TEST = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)}


@pytest.fixture
def project(tmp_path: Path) -> ScriptedRepo:
    return make_project(tmp_path / "widgets")


@pytest.fixture
def indexed(project: ScriptedRepo) -> ScriptedRepo:
    index(project)
    return project


@asynccontextmanager
async def server(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cortex_core", "mcp", *args],
        env={"CORTEX_MODEL": "none", "PYTHONIOENCODING": "utf-8", **CODE_UNDER_TEST,
             **{k: v for k, v in os.environ.items() if k.startswith(("GIT_", "VIRTUAL_ENV"))},
             **(env or {})},
        cwd=str(cwd) if cwd else None)
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


class RawServer:
    """A server over stdio, driven line by line: what a client other than the SDK's may send.
    Its stderr goes to a file, read when it has stopped."""

    INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}}

    def __init__(self, repo: Path, stderr: Path, initialize: bool = True):
        self.stderr, self.initialize = stderr, initialize
        with stderr.open("wb") as errors:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "cortex_core", "mcp", "--repo", str(repo)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                env={**os.environ, "CORTEX_MODEL": "none"})

    def __enter__(self) -> RawServer:
        if not self.initialize:
            return self
        try:
            self.send(self.INITIALIZE)
            assert self.answer()["id"] == 0
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()

    def send(self, message: str | dict) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self) -> dict:
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        assert ready, "no answer within a minute"
        return json.loads(self.proc.stdout.readline())

    def log(self) -> str:
        """What the server wrote on stderr (once it has stopped)."""
        return self.stderr.read_text(errors="replace")


def process_state(pid: int) -> str | None:
    """The state letter of a process (R, S, Z...) from /proc, None when there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def text(result) -> str:
    assert result.content and result.content[0].type == "text"
    return result.content[0].text


async def ok(client, tool: str, **arguments):
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    return result


async def error(client, tool: str, **arguments) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, text(result)
    message = text(result)
    assert "Traceback" not in message
    return message


# -- the catalogue -------------------------------------------------------------------------------


async def test_lists_every_tool_resource_and_prompt(indexed: ScriptedRepo):
    async with server("--repo", str(indexed.path)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.description and len(tool.description) > 40
            if tool.name not in ("supersede_note",):
                assert "repo" in tool.input_schema["properties"], tool.name
        assert tools["symbol_history"].input_schema["required"] == ["target"]
        assert tools["hotspots"].annotations.read_only_hint is True
        assert tools["record_note"].annotations.read_only_hint is False
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert uris == {"cortex://status", "cortex://hotspots"}
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(prompts) == {"explain-symbol", "before-edit"}
        assert [a.name for a in prompts["before-edit"].arguments if a.required] == ["target"]


# -- the read tools ------------------------------------------------------------------------------


async def test_symbol_history_gives_the_symbols_commits_with_reasons(indexed: ScriptedRepo):
    async with server("--repo", str(indexed.path)) as client:
        result = await ok(client, "symbol_history", target="pkg/core.py::compute", limit=3)
        md = text(result)
        assert md.startswith("**`pkg/core.py::compute`** · function · lines 4–5 · 5 commits "
                             "(newest 3)")
        assert "why: Callers rely on compute growing by 4 now." in md
        assert md.count("\n- `") == 3
        data = result.structured_content
        assert data["total"] == 5 and len(data["entries"]) == 3
        assert data["entries"][1]["why"] == "Callers rely on compute growing by 4 now."
        assert data["index"]["up_to_date"] is True
        # helper never changed after it was added: one commit, not the file's five.
        md = text(await ok(client, "symbol_history", target="pkg/core.py::helper"))
        assert "1 commit" in md and md.count("\n- `") == 1
        # PATH:LINE finds the innermost symbol at HEAD; an absolute path inside the repository works.
        md = text(await ok(client, "symbol_history",
                           target=f"{indexed.path / 'pkg' / 'core.py'}:14"))
        assert md.startswith("**`pkg/core.py::Engine.run`**")


async def test_commit_text_is_escaped(indexed: ScriptedRepo):
    async with server("--repo", str(indexed.path)) as client:
        md = text(await ok(client, "symbol_history", target="pkg/core.py::compute", limit=1))
        assert "click me" in md
        assert "](" not in md.replace("\\](", "")       # no link can form
        assert "<img" not in md and "**loud**" not in md
        assert "\\[click me\\]" in md and "&lt;img" in md


async def test_blast_radius_related_and_hotspots(indexed: ScriptedRepo):
    async with server("--repo", str(indexed.path)) as client:
        result = await ok(client, "blast_radius", target="pkg/core.py::compute")
        md = text(result)
        assert md.startswith("**Blast radius of `pkg/core.py::compute`**")
        assert "caller `pkg/core.py::Engine.run`" in md and "`pkg/use.py::main`" in md
        labels = {(d["path"], d["qualname"]) for d in result.structured_content["dependents"]}
        assert ("pkg/use.py", "main") in labels and ("pkg/core.py", "Engine.run") in labels

        result = await ok(client, "related", target="pkg/core.py::compute")
        md = text(result)
        files = {f["path"]: f for f in result.structured_content["files"]}
        assert files["pkg/use.py"]["support"] == 4           # added, then tuned three times
        assert "`pkg/use.py` score" in md and "changed together in 4 commits" in md
        both = await error(client, "related", target="pkg/core.py", changed=["pkg/use.py"])
        assert "give a `target` or the `changed` files and symbols, not both" in both

        result = await ok(client, "hotspots", top_k=2)
        md = text(result)
        assert md.startswith("**Hotspots**")
        assert result.structured_content["symbols"][0]["qualname"] == "compute"
        assert "1. `pkg/core.py::compute` line 4" in md
        assert len(result.structured_content["files"]) <= 2
        md = text(await ok(client, "hotspots", path="pkg/use.py"))
        assert "pkg/core.py" not in md


async def test_search_memory_finds_commits_docs_and_filters(indexed: ScriptedRepo):
    async with server("--repo", str(indexed.path)) as client:
        result = await ok(client, "search_memory", query="callers rely on compute growing")
        md = text(result)
        hits = result.structured_content["hits"]
        assert hits and hits[0]["kind"] == "commit"
        assert "tune compute" in hits[0]["title"]
        assert f"[{hits[0]['citation']}] commit" in md
        # Without a model, the answer says why the search is lexical only.
        assert "semantic search off" in md
        docs = await ok(client, "search_memory", query="retries", kind=["doc"])
        assert {h["kind"] for h in docs.structured_content["hits"]} == {"doc"}
        recent = await ok(client, "search_memory", query="compute", since="10")
        assert all("tune" not in h["title"] for h in recent.structured_content["hits"])


async def test_context_pack_stays_within_its_budget(indexed: ScriptedRepo):
    async with server("--repo", str(indexed.path)) as client:
        for budget in (50, 120, 300, 800, 4000):
            for args in ({"focus": "pkg/core.py::compute"}, {"query": "why compute grows"},
                         {"focus": "pkg/core.py", "query": "engine"}):
                result = await client.call_tool("context_pack", {**args, "budget": budget})
                if result.is_error:   # only a budget below the pack's own header may fail
                    assert budget == 50 and "budget" in text(result), text(result)
                    continue
                pack = result.structured_content["text"]
                assert count_tokens(pack) <= budget
                assert result.structured_content["tokens"] == count_tokens(pack)
                assert text(result).startswith("# Context: ")
        for encoding in ("o200k", "cl100k", "estimate"):   # the whole answer, in its encoding
            for budget in (120, 800):
                result = await ok(client, "context_pack", focus="pkg/core.py::compute",
                                  budget=budget, encoding=encoding)
                assert result.structured_content["tokenizer"] == encoding
                assert count_tokens(text(result), encoding) <= budget
                assert f"tokens ({encoding})_" in text(result)
        assert "encoding" in await error(client, "context_pack", query="x", encoding="gpt2")
        big = await ok(client, "context_pack", focus="pkg/core.py::compute", budget=4000)
        sections = {item["section"] for item in big.structured_content["items"]}
        assert {"focus", "history"} <= sections
        assert "def compute(x):" in text(big)


async def test_status_says_whether_the_index_is_up_to_date(indexed: ScriptedRepo):
    async with server("--repo", str(indexed.path)) as client:
        result = await ok(client, "status")
        md = text(result)
        assert "6 commits" not in md and "5 commits by 2 authors" in md
        assert "up to date with HEAD" in md
        assert result.structured_content["commits"] == 5
        indexed.write("pkg/core.py", sample_core(n=6))
        indexed.commit("tune compute to 6", days_ago=1)
        md = text(await ok(client, "status"))
        assert f"HEAD is `{indexed.head()[:10]}`: call `sync`" in md
        # Every answer says so too, so an agent knows the newest commits are missing.
        md = text(await ok(client, "symbol_history", target="pkg/core.py::compute"))
        assert "call `sync` for the newest commits" in md


async def test_a_stopped_first_run_is_said_in_every_answer(project: ScriptedRepo, monkeypatch):
    import cortex_core.index.ingest as ingest
    monkeypatch.setattr(ingest, "BATCH_SECONDS", 0.0)   # every commit its own transaction

    def stop(done, total, phase="commits"):
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):   # the batch in flight is rolled back: two stay
        index(project, progress=stop)
    monkeypatch.undo()
    async with server("--repo", str(project.path)) as client:
        result = await ok(client, "symbol_history", target="pkg/core.py::compute")
        assert "only; no index run has reached HEAD yet: call `sync` to continue" \
            in text(result)
        assert "has no commits yet" not in text(result)
        until = result.structured_content["index"]["history_until"]
        assert until == int(project.now - 28 * 86400)
        missing = await error(client, "symbol_history", target="pkg/nowhere.py")
        assert missing.endswith("call `sync` to continue it")


# -- bad input -----------------------------------------------------------------------------------


async def test_bad_arguments_get_clear_tool_errors(indexed: ScriptedRepo, tmp_path: Path):
    elsewhere = tmp_path / "not-a-repo"
    elsewhere.mkdir()
    async with server("--repo", str(indexed.path)) as client:
        assert "no symbol" in await error(client, "symbol_history", target="pkg/core.py::nope")
        assert "no file 'nope.py' in the index" in await error(client, "symbol_history",
                                                                target="nope.py::x")
        assert "not inside a git repository" in await error(
            client, "blast_radius", target="a.py", repo=str(elsewhere))
        assert "does not exist" in await error(client, "status", repo=str(tmp_path / "missing"))
        assert "outside the repository" in await error(client, "symbol_history",
                                                        target="/etc/passwd")
        assert "NUL" in await error(client, "symbol_history", target="pkg/core.py\x00::x")
        assert "give a target" in await error(client, "related", target="  ")
        assert "top_k" in await error(client, "hotspots", top_k=0)
        assert "target" in await error(client, "symbol_history")        # missing argument
        assert "since" in await error(client, "search_memory", query="x", since="last tuesday")
        assert "kind" in await error(client, "search_memory", query="x", kind=["emails"])
        assert "give a `query`, a `focus`, or both" in await error(client, "context_pack")
        assert "no note #999" in await error(client, "supersede_note", note_id=999, text="x")
        assert "budget" in await error(client, "context_pack", query="x", budget=10)
        assert "drop_tables" in await error(client, "drop_tables")
        # After all that, the server still answers.
        await ok(client, "status")


async def test_without_a_repository_every_call_names_its_own(indexed: ScriptedRepo,
                                                             tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    async with server(cwd=outside) as client:
        assert "no repository: pass `repo`" in await error(client, "status")
        with pytest.raises(MCPError, match="no repository"):
            await client.read_resource("cortex://status")
        md = text(await ok(client, "symbol_history", target="pkg/core.py::helper",
                           repo=str(indexed.path / "pkg")))
        assert md.startswith("**`pkg/core.py::helper`**")


async def test_refused_arguments_are_named_one_line_each(indexed: ScriptedRepo):
    """The SDK answered with pydantic's report: "1 validation error for symbol_historyArguments
    ... For further information visit https://errors.pydantic.dev/...". Each refused argument
    is one line now: its name, what it must be (as its schema says), what it was."""
    tool = "Error executing tool {}: ".format
    cases = [
        ("symbol_history", {"target": "pkg/core.py::compute", "limit": "abc"},
         '`limit` must be an integer from 1 to 500; got "abc"'),
        ("symbol_history", {}, "`target` is required: a string of at most 4096 characters"),
        ("symbol_history", {"target": 123},
         "`target` must be a string of at most 4096 characters; got 123"),
        ("search_memory", {"query": "x", "top_k": 0, "since": 5},
         "`top_k` must be an integer from 1 to 100; got 0\n`since` must be a string; got 5"),
        ("search_memory", {"query": "x" * 5000},
         "`query` must be a non-empty string of at most 2000 characters; got a string of 5000 "
         "characters"),
        ("search_memory", {"query": "x", "kind": ["emails", "doc", 3]},
         '`kind` must be a list, each one of `commit`, `doc`, `note`; got ["emails", "doc", 3]'),
        ("related", {"changed": "pkg/use.py"},
         "`changed` must be a list of at most 1000 items, each a string of at most 4096 "
         'characters; got "pkg/use.py"'),
        ("hotspots", {"since_days": -5}, "`since_days` must be a number > 0 and ≤ 100000; got -5"),
        ("blast_radius", {"target": "pkg/core.py", "min_confidence": "high"},
         '`min_confidence` must be a number from 0 to 1; got "high"'),
        ("context_pack", {"query": "x", "encoding": "utf-9"},
         '`encoding` must be one of `o200k`, `cl100k`, `estimate`; got "utf-9"'),
    ]
    async with server("--repo", str(indexed.path)) as client:
        for name, arguments, expected in cases:
            assert await error(client, name, **arguments) == tool(name) + expected


def test_lines_that_are_not_messages_get_json_rpc_errors(indexed: ScriptedRepo, tmp_path: Path):
    """The SDK dropped these lines without an answer, or read a request with a bad id as a
    notification: a client waiting on its id waited forever. Each gets the error JSON-RPC
    prescribes, with its id when it has a valid one, else null; valid traffic goes on."""
    cases = [
        ("{not json", PARSE_ERROR, None, "the line is not JSON"),
        ('{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": NaN}}', PARSE_ERROR,
         None, "NaN is not a JSON value"),
        ("[]", INVALID_REQUEST, None, "a batch (a JSON array) is not supported by MCP"),
        (json.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]), INVALID_REQUEST, None,
         "a batch (a JSON array) is not supported by MCP"),
        ('"ping"', INVALID_REQUEST, None, "a message is a JSON object, not a string"),
        ('{"jsonrpc": "1.0", "id": 3, "method": "ping"}', INVALID_REQUEST, 3,
         '"jsonrpc" must be "2.0"'),
        ('{"jsonrpc": "2.0", "id": 4}', INVALID_REQUEST, 4, 'no "method"'),
        ('{"jsonrpc": "2.0", "id": "5", "method": 5}', INVALID_REQUEST, "5",
         '"method" must be a string'),
        ('{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": "str"}', INVALID_REQUEST,
         6, '"params" must be an object, not a string'),
        ('{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": [1]}', INVALID_PARAMS, 7,
         '"params" must be an object'),
        ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', INVALID_REQUEST, None,
         '"id" must be a string or an integer, not null'),
        ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', INVALID_REQUEST, None,
         "not an object"),
        ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', INVALID_REQUEST, None,
         "not the number 1.5"),
        ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST, None,
         "not a boolean"),
    ]
    with RawServer(indexed.path, tmp_path / "stderr") as raw:
        for line, code, request_id, words in cases:
            raw.send(line)
            got = raw.answer()
            assert set(got) == {"jsonrpc", "id", "error"} and got["id"] == request_id, line
            assert got["error"]["code"] == code and words in got["error"]["message"], got
        # A blank line is no message: nothing is answered. The next request is.
        raw.send("   ")
        raw.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
        assert raw.answer() == {"jsonrpc": "2.0", "id": 8, "result": {}}
        raw.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                  "params": {"name": "status", "arguments": {}}})
        got = raw.answer()
        assert got["id"] == 9 and not got["result"]["isError"]
    assert "Traceback" not in raw.log()


def test_a_request_before_initialize_is_told_so(indexed: ScriptedRepo, tmp_path: Path):
    """The SDK answered "Invalid request parameters" to a tool call before the handshake,
    which sent a client's author looking at the call's parameters."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "status", "arguments": {}}}
    with RawServer(indexed.path, tmp_path / "stderr", initialize=False) as raw:
        raw.send(call)
        got = raw.answer()
        assert got["id"] == 1 and got["error"]["code"] == INVALID_REQUEST
        assert got["error"]["message"] == (
            'Invalid Request: "tools/call" before "initialize": a session starts with an '
            '"initialize" request, then the "notifications/initialized" notification (or, '
            'from protocol 2026-07-28 on, each request carries '
            '"io.modelcontextprotocol/protocolVersion" in "_meta")')
        for n, (method, params) in enumerate((
                ("no/such", {}), ("logging/setLevel", {"level": "info"}),
                ("completion/complete", {"ref": {"type": "ref/prompt", "name": "x"},
                                         "argument": {"name": "a", "value": "b"}})), 20):
            raw.send({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
            assert raw.answer()["error"]["code"] == -32601, method   # not served: not found
        raw.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})        # allowed before
        assert raw.answer() == {"jsonrpc": "2.0", "id": 3, "result": {}}
        raw.send(RawServer.INITIALIZE)
        assert "result" in raw.answer()
        raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        raw.send({**call, "id": 4})
        got = raw.answer()
        assert got["id"] == 4 and not got["result"]["isError"]
    assert "Traceback" not in raw.log()
    # What else opens a session as the SDK counts it: a request of the protocol without a
    # handshake (its version in `_meta`, as the SDK's own client sends), a bare "initialized".
    modern = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                        "io.modelcontextprotocol/clientCapabilities": {}}}
    with RawServer(indexed.path, tmp_path / "stderr", initialize=False) as raw:
        raw.send({**call, "params": {**call["params"], **modern}})
        assert not raw.answer()["result"]["isError"]
        raw.send({**call, "id": 6})     # the connection is the SDK's to answer from now on
        assert "before \"initialize\"" not in json.dumps(raw.answer())
    with RawServer(indexed.path, tmp_path / "stderr", initialize=False) as raw:
        raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        raw.send({**call, "id": 5})
        assert not raw.answer()["result"]["isError"]


def test_a_prompt_call_missing_an_argument_is_invalid_params(indexed: ScriptedRepo,
                                                             tmp_path: Path):
    """The SDK answered an internal error ("code": 0) and wrote two tracebacks on stderr."""
    takes = "it takes `target`, `repo` (optional), `budget` (optional)"
    cases = [
        ({"name": "explain-symbol", "arguments": {}},
         f"prompt explain-symbol needs `target`; {takes}"),
        ({"name": "before-edit"}, f"prompt before-edit needs `target`; {takes}"),
        ({"name": "explain-symbol", "arguments": {"target": "pkg/core.py", "budgt": "500"}},
         f"prompt explain-symbol takes no `budgt`; {takes}"),
        ({"name": "no-such-prompt"},
         "no prompt 'no-such-prompt': the prompts are before-edit, explain-symbol"),
    ]
    with RawServer(indexed.path, tmp_path / "stderr") as raw:
        for n, (params, message) in enumerate(cases, 1):
            raw.send({"jsonrpc": "2.0", "id": n, "method": "prompts/get", "params": params})
            assert raw.answer() == {"jsonrpc": "2.0", "id": n, "error": {
                "code": INVALID_PARAMS, "message": message}}
    assert "Traceback" not in raw.log()


# -- notes ---------------------------------------------------------------------------------------


async def test_notes_are_recorded_superseded_and_flagged_stale(indexed: ScriptedRepo):
    async with server("--repo", str(indexed.path)) as client:
        result = await ok(client, "record_note", target="pkg/core.py::compute",
                          text="compute must stay pure: Engine.run caches its results.")
        first = result.structured_content["id"]
        assert result.structured_content["target"] == "pkg/core.py::compute"
        assert text(result).startswith(f"Recorded note #{first} on `pkg/core.py::compute` (live")
        assert result.structured_content["author"].endswith("(agent)")
        repo_note = await ok(client, "record_note", text="Releases are cut from main only.")
        assert repo_note.structured_content["target"] == ""

        md = text(await ok(client, "symbol_history", target="pkg/core.py::compute"))
        assert f"- note #{first}" in md and "compute must stay pure" in md
        found = await ok(client, "search_memory", query="pure caches results", kind=["note"])
        assert found.structured_content["hits"][0]["note_id"] == first

        result = await ok(client, "supersede_note", note_id=first,
                          text="compute must stay pure and fast: Engine.run calls it in a loop.")
        second = result.structured_content["id"]
        assert f"It supersedes #{first}." in text(result)
        assert "already superseded" in await error(client, "supersede_note", note_id=first,
                                                   text="again")
        data = (await ok(client, "symbol_history", target="pkg/core.py::compute")
                ).structured_content
        ids = [n["id"] for n in data["notes"]]     # with the repository's own notes
        assert second in ids and first not in ids

        # The code changes: the note is flagged stale, and says by which commit.
        indexed.write("pkg/core.py", sample_core(n=7))
        sha = indexed.commit("tune compute to 7", days_ago=0)
        await ok(client, "sync", wait_seconds=120)
        md = text(await ok(client, "symbol_history", target="pkg/core.py::compute"))
        assert f"- note #{second}" in md and "possibly stale" in md and sha[:10] in md


# -- indexing while the server runs --------------------------------------------------------------


async def test_a_repository_indexed_while_the_server_runs(project: ScriptedRepo):
    async with server("--repo", str(project.path)) as client:
        md = text(await ok(client, "status"))
        assert "No index" in md and "call `sync`" in md
        assert "call the `sync` tool" in await error(client, "symbol_history",
                                                     target="pkg/core.py::compute")
        # Reads and writes name the same fix (the hint of NoIndex, in this server's words).
        assert "call the `sync` tool" in await error(client, "record_note", text="x")
        progress = []

        async def on_progress(done, total, message):
            progress.append((done, total, message))

        result = await client.call_tool("sync", {"wait_seconds": 120},
                                        progress_callback=on_progress)
        assert not result.is_error, text(result)
        assert text(result).startswith("Index up to date at ")
        assert result.structured_content["summary"]["new_commits"] == 5
        assert result.structured_content["running"] is False
        md = text(await ok(client, "symbol_history", target="pkg/core.py::compute"))
        assert "5 commits" in md

        # A commit, indexed by a `cortex index` outside the server: the next answer has it.
        project.write("pkg/core.py", sample_core(n=8))
        project.commit("tune compute to 8\n\nEight is the new normal.", days_ago=0)
        index(project)
        md = text(await ok(client, "symbol_history", target="pkg/core.py::compute", limit=1))
        assert "6 commits" in md and "Eight is the new normal." in md
        # A rebuild (in place: the same file) while the server keeps its connections.
        index(project, rebuild=True)
        md = text(await ok(client, "symbol_history", target="pkg/core.py::compute", limit=1))
        assert "6 commits" in md
        # sync with nothing new: still a success, nothing added.
        result = await ok(client, "sync")
        assert result.structured_content["summary"]["new_commits"] == 0


async def test_sync_returns_while_a_long_run_goes_on(project: ScriptedRepo):
    db = project.path / ".cortex" / "cortex.db"
    async with server("--repo", str(project.path)) as client:
        with writer_lock(db, 0):      # a `cortex index` in a terminal: the run waits its turn
            started = await ok(client, "sync", wait_seconds=0)
            assert started.structured_content["running"] is True
            assert "goes on in the background" in text(started)
            again = await ok(client, "sync", wait_seconds=0)      # joins it, starts no other
            assert again.structured_content["pid"] == started.structured_content["pid"]
            assert text(again).startswith("Indexing is running")
            assert "indexer: running" in text(await ok(client, "status"))
        result = await ok(client, "sync", wait_seconds=120)
        assert result.structured_content["running"] is False
        assert result.structured_content["ok"] is True
        assert result.structured_content["summary"]["new_commits"] == 5


async def test_stopping_the_server_interrupts_its_indexer(project: ScriptedRepo):
    db = project.path / ".cortex" / "cortex.db"
    with writer_lock(db, 0):
        async with server("--repo", str(project.path)) as client:
            started = await ok(client, "sync", wait_seconds=0)
            pid = started.structured_content["pid"]
            assert process_state(pid) in ("R", "S")     # alive, waiting for the lock
        # The server stopped it before exiting: it is gone, not orphaned (or a zombie that the
        # container's init has not reaped yet: dead all the same).
        assert process_state(pid) in (None, "Z", "X")


def mcp_servers() -> list[int]:
    """This process's children that are `cortex mcp` servers."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and b"mcp" in cmd:
            found.append(int(entry.name))
    return found


def spares_of(server: int) -> list[int]:
    """The live spare indexers a server started: `--spare` processes told it is their parent."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--spare" in cmd and f"CORTEX_PARENT_PID={server}".encode() in env and \
                process_state(int(entry.name)) not in (None, "Z", "X"):
            found.append(int(entry.name))
    return found


async def test_the_next_sync_is_run_by_the_spare_indexer(project: ScriptedRepo):
    """After a run, a spare indexer waits loaded; the next run is handed to it (no process
    start), answers as a run started afresh does, and leaves another spare; none outlives the
    server."""
    async with server("--repo", str(project.path)) as client:
        first = await ok(client, "sync", wait_seconds=120)
        assert first.structured_content["ok"] and first.structured_content["warm"] is False
        (pid,) = mcp_servers()
        (spare,) = spares_of(pid)       # started before the run was told it ended
        project.write("pkg/core.py", sample_core(n=8))
        project.commit("tune compute to 8\n\nEight is the new normal.", days_ago=0)
        second = await ok(client, "sync", wait_seconds=120)
        assert (second.structured_content["pid"], second.structured_content["warm"]) == (spare,
                                                                                          True)
        assert second.structured_content["summary"]["new_commits"] == 1
        md = text(await ok(client, "symbol_history", target="pkg/core.py::compute", limit=1))
        assert "6 commits" in md and "Eight is the new normal." in md
        assert spares_of(pid) not in ([], [spare])
        status = await ok(client, "status")
        assert "indexer: last run finished" in text(status)
        assert status.structured_content["indexer"]["warm"] is True
    assert spares_of(pid) == []


def test_a_spare_that_could_not_start_leaves_the_next_one_to_start(project: ScriptedRepo,
                                                                   monkeypatch):
    """A spare's start failing once (its errors' file: a full or missing temporary folder)
    leaves that run's successor cold, not the server without spares: the next is warm again."""
    import tempfile
    import threading

    from cortex_core.engine import Engine
    from cortex_mcp import sync as mcp_sync
    real, failed = tempfile.TemporaryFile, []

    def once_in_the_starter(*args, **kwargs):
        if threading.current_thread().name == "spare indexer" and not failed:
            failed.append(True)
            raise OSError(24, "Too many open files")
        return real(*args, **kwargs)
    monkeypatch.setattr(mcp_sync.tempfile, "TemporaryFile", once_in_the_starter)
    monkeypatch.setenv("CORTEX_MODEL", "none")
    engine, indexers = Engine(project.path), mcp_sync.Indexers()

    def synced() -> mcp_sync.Run:
        run, _ = indexers.start(engine)
        while not run.finished:
            indexers.wait(run, run.events, 60)
        assert run.ok, run.error
        return run
    try:
        warm = [synced().warm]
        assert failed
        for n in (7, 8):
            project.write("pkg/core.py", sample_core(n=n))
            project.commit(f"tune compute to {n}", days_ago=0)
            warm.append(synced().warm)
        assert warm == [False, False, True]
    finally:
        indexers.close()


async def test_sync_reports_a_failed_run_as_a_tool_error(tmp_path: Path):
    empty = ScriptedRepo(tmp_path / "empty")          # no commit yet
    async with server("--repo", str(empty.path)) as client:
        message = await error(client, "sync", wait_seconds=60)
        assert message.startswith("Error executing tool sync: Indexing failed:")


async def test_sync_says_why_semantic_search_is_off_as_the_command_line_does(
        project: ScriptedRepo, tmp_path: Path):
    """The summary lost its "semantic search" and escaped the quotes of the command that fixes
    it: "in 1.7 s. off: model ... is not downloaded (offline); run \\`cortex model pull ...\\`"."""
    model = "cortex-test/not-downloaded"
    offline = {"CORTEX_MODEL": model, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    why = (f"semantic search off: model {model} is not downloaded (offline); run "
           f"`cortex model pull {model}` once, online")
    async with server("--repo", str(project.path), env=offline) as client:
        md = text(await ok(client, "sync", wait_seconds=120))
        assert re.fullmatch(r"Index up to date at `\w{10}`: 5 new commits \(5 in all\), "
                            r"\d+ symbol changes, in [\d.]+ s; " + re.escape(why) + r"\.", md), md
        assert f"- {why}; lexical search only" in text(await ok(client, "status"))
    async with server("--repo", str(project.path)) as client:      # CORTEX_MODEL=none
        md = text(await ok(client, "sync", wait_seconds=120, rebuild=True))
        assert md.endswith(" s; semantic search off: model = none."), md


async def test_an_indexer_error_comes_with_the_fix_in_this_servers_words(tmp_path: Path):
    """The indexer runs as `cortex index`, whose own words name its flags: its error event
    carries the fix as a hint, which the server phrases."""
    repo = ScriptedRepo(tmp_path / "r")
    repo.write("a.py", "a = 1\n")
    repo.commit("start")
    (repo.path / ".cortex" / "cortex.db-wal").mkdir(parents=True)     # in the store's way
    async with server("--repo", str(repo.path)) as client:
        message = await error(client, "sync", wait_seconds=60)
    assert "it is a folder; remove it (or start the server with `cortex mcp --db FILE`)" in message
    assert "another place with --db" not in message


# -- resources and prompts -----------------------------------------------------------------------


async def test_resources(indexed: ScriptedRepo):
    async with server("--repo", str(indexed.path)) as client:
        status = (await client.read_resource("cortex://status")).contents[0]
        assert status.mime_type == "text/markdown"
        assert "5 commits by 2 authors" in status.text
        hot = (await client.read_resource("cortex://hotspots")).contents[0]
        assert hot.text.startswith("**Hotspots**") and "`pkg/core.py::compute`" in hot.text


async def test_without_bpe_openai_a_pack_says_its_tokens_are_estimated(indexed: ScriptedRepo):
    from cortex_core.features.token_count import estimate_tokens
    code = ("import sys; sys.modules['bpe_openai'] = None\n"
            "from cortex_cli.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    params = StdioServerParameters(
        command=sys.executable, args=["-c", code, "mcp", "--repo", str(indexed.path)],
        env={"CORTEX_MODEL": "none", "PYTHONIOENCODING": "utf-8", **CODE_UNDER_TEST,
             **{k: v for k, v in os.environ.items() if k.startswith(("GIT_", "VIRTUAL_ENV"))}})
    async with Client(params, read_timeout_seconds=60) as client:
        result = await ok(client, "context_pack", focus="pkg/core.py::compute", budget=800)
        data = result.structured_content
        assert data["tokenizer"] == "estimate" and "bpe-openai is not installed" in data["note"]
        assert "tokens are estimated" in text(result) and "tokens (estimate)_" in text(result)
        assert estimate_tokens(text(result)) <= 800


async def test_prompts_brief_within_their_budget(indexed: ScriptedRepo):
    async with server("--repo", str(indexed.path)) as client:
        await ok(client, "record_note", target="pkg/core.py::compute",
                 text="Never make compute async.")
        prompt = await client.get_prompt("before-edit", {"target": "pkg/core.py::compute"})
        body = prompt.messages[0].content.text
        assert prompt.messages[0].role == "user"
        assert body.startswith("I am about to change `pkg/core.py::compute`.")
        assert "# Context: before editing pkg/core.py::compute" in body
        assert "status of pkg/core.py::compute" in body and "a hotspot" in body
        assert "Never make compute async." in body
        assert "blast radius" in body and "pkg/use.py::main" in body
        assert count_tokens(body) <= 2000

        explain = await client.get_prompt("explain-symbol", {"target": "pkg/core.py::compute"})
        body = explain.messages[0].content.text
        assert body.startswith("Explain why `pkg/core.py::compute` is the way it is.")
        assert "def compute(x):" in body and "Callers rely on compute growing" in body

        for name in ("before-edit", "explain-symbol"):
            for budget in (200, 400, 1000, 3000):
                got = await client.get_prompt(name, {"target": "pkg/core.py::compute",
                                                     "budget": str(budget)})
                assert count_tokens(got.messages[0].content.text) <= budget, (name, budget)

        with pytest.raises(MCPError, match="leave no room for the context"):
            await client.get_prompt("before-edit", {"target": "pkg/core.py::compute",
                                                    "budget": "100"})
        with pytest.raises(MCPError, match="no symbol"):
            await client.get_prompt("before-edit", {"target": "pkg/core.py::nope"})
        with pytest.raises(MCPError, match="budget"):
            await client.get_prompt("before-edit", {"target": "pkg/core.py::compute",
                                                    "budget": "lots"})


def test_cli_mcp_help_and_bad_repo(tmp_path: Path):
    out = subprocess.run([sys.executable, "-m", "cortex_core", "mcp", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "search_memory" in out and "--repo" in out
    bad = subprocess.run([sys.executable, "-m", "cortex_core", "mcp", "--repo", str(tmp_path)],
                         capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert bad.returncode == 1
    assert re.search(r"cortex: .* is not inside a git repository", bad.stderr)


# -- hostile repositories and stopping -----------------------------------------------------------


def hostile(path: Path) -> ScriptedRepo:
    """A repository whose files would run if the indexer imported from its working directory."""
    repo = ScriptedRepo(path)
    marker = path.parent / "PWNED"
    repo.write("cortex_core/__init__.py", "")
    repo.write("cortex_core/__main__.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    repo.write("json.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    repo.write("app.py", "def f():\n    return 1\n")
    repo.commit("add f")
    return repo


async def test_sync_never_runs_the_repositorys_code(tmp_path: Path):
    repo = hostile(tmp_path / "evil")
    # As Claude Code starts servers: in the project folder (-P: the server itself must not import
    # from it either; `cortex mcp`, the console script, never does).
    params = StdioServerParameters(command=sys.executable,
                                   args=["-P", "-m", "cortex_core", "mcp"], cwd=str(repo.path),
                                   env={"CORTEX_MODEL": "none"})
    async with Client(params, read_timeout_seconds=60) as client:
        result = await ok(client, "sync", wait_seconds=120)
        assert result.structured_content["summary"]["new_commits"] == 1
        assert "1 commit" in text(await ok(client, "symbol_history", target="app.py::f"))
    assert not (tmp_path / "PWNED").exists()


async def test_a_shipped_index_is_refused(indexed: ScriptedRepo):
    indexed.git("add", "-f", ".cortex/cortex.db")
    indexed.commit("ship an index")
    async with server("--repo", str(indexed.path)) as client:
        message = await error(client, "symbol_history", target="pkg/core.py::compute")
        assert "tracks" in message or "shipped" in message or "refus" in message


async def test_a_rebuild_keeps_notes_and_their_ids(indexed: ScriptedRepo):
    async with server("--repo", str(indexed.path)) as client:
        first = (await ok(client, "record_note", target="pkg/core.py::compute",
                          text="keep compute pure")).structured_content["id"]
        inode = os.stat(indexed.path / ".cortex" / "cortex.db").st_ino
        result = await ok(client, "sync", rebuild=True, wait_seconds=120)
        assert result.structured_content["summary"]["rebuilt"] is True
        # Emptied in place: the same file, so no reader or note writer is left on a removed one.
        assert os.stat(indexed.path / ".cortex" / "cortex.db").st_ino == inode
        data = (await ok(client, "symbol_history", target="pkg/core.py::compute")
                ).structured_content
        assert [n["id"] for n in data["notes"]] == [first] and data["total"] == 5
        second = (await ok(client, "record_note", target="pkg/core.py::helper",
                           text="helper is public API")).structured_content["id"]
        assert second == first + 1


def test_sigterm_stops_a_server_whose_stdin_is_still_open(indexed: ScriptedRepo):
    import signal
    proc = subprocess.Popen([sys.executable, "-m", "cortex_core", "mcp", "--repo",
                             str(indexed.path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ, CORTEX_MODEL="none"))
    try:
        # The server answers once it is serving: then the signal finds it in its loop.
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
        proc.stdin.flush()
        assert proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 143
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs pidfd_open (Linux)")
async def test_a_killed_server_takes_its_indexer_with_it(project: ScriptedRepo):
    import signal
    db = project.path / ".cortex" / "cortex.db"
    with writer_lock(db, 0):          # the indexer waits for this lock: it is alive and quiet
        async with server("--repo", str(project.path)) as client:
            started = await ok(client, "sync", wait_seconds=0)
            child = started.structured_content["pid"]
            stat = Path(f"/proc/{child}/stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            watch = os.pidfd_open(child)
            try:
                os.kill(parent, signal.SIGKILL)      # no cleanup can run in the server
                ready, _, _ = select.select([watch], [], [], 20)   # the child's exit, an event
                assert ready, "the indexer outlived its server"
            finally:
                os.close(watch)


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs pidfd_open (Linux)")
async def test_a_killed_server_takes_its_spare_indexer_with_it(project: ScriptedRepo):
    """The spare is started from a thread that lives as long as the server: a child's
    parent-death signal follows the thread that started it, and a run's thread ends with it."""
    import signal
    async with server("--repo", str(project.path)) as client:
        await ok(client, "sync", wait_seconds=120)
        (pid,) = mcp_servers()
        (spare,) = spares_of(pid)
        watch = os.pidfd_open(spare)
        try:
            os.kill(pid, signal.SIGKILL)
            ready, _, _ = select.select([watch], [], [], 20)   # the spare's exit, an event
            assert ready, "the spare indexer outlived its server"
        finally:
            os.close(watch)


def test_a_lone_surrogate_in_a_request_gets_an_answer(indexed: ScriptedRepo, tmp_path: Path):
    """JSON may escape half a surrogate pair (`"\\ud800"`, a string cut between the halves of
    an emoji). The SDK's parser refuses such a line and dropped it unanswered: the client waited
    forever. It is read again, the half as U+FFFD, and answered."""
    with RawServer(indexed.path, tmp_path / "stderr") as raw:
        raw.send('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
                 '"related", "arguments": {"target": "pkg/core.py::comp\\ud800"}}}')
        result = raw.answer()
        assert result["id"] == 1 and result["result"]["isError"]
        assert "no symbol 'comp\ufffd' in pkg/core.py" in result["result"]["content"][0]["text"]
        raw.send('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": '
                 '"related", "arguments": {"target": "pkg/core.py"}}}')
        result = raw.answer()
        assert result["id"] == 2 and not result["result"]["isError"]


def test_requests_written_before_stdin_closes_all_get_their_answers(indexed: ScriptedRepo):
    """A client may write its requests and close stdin at once (`cortex mcp < requests`, a
    script). The SDK stopped serving at the end of stdin and dropped the answers still being
    worked on: of ten tool calls, three were answered. Each request read is answered first."""
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
        "name": "status" if i % 3 else "no_such_tool", "arguments": {}}} for i in range(1, 11)]
    done = subprocess.run(
        [sys.executable, "-m", "cortex_core", "mcp", "--repo", str(indexed.path)],
        input="".join(json.dumps(line) + "\n" for line in lines).encode(), capture_output=True,
        env={**os.environ, "CORTEX_MODEL": "none"}, timeout=120)
    answers = [json.loads(line) for line in done.stdout.decode().splitlines() if line.strip()]
    assert sorted(a["id"] for a in answers) == list(range(11))
    unknown = [a for a in answers if a["id"] in (3, 6, 9)]
    assert all("no_such_tool" in json.dumps(a) for a in unknown)


def test_the_end_of_stdin_waits_for_no_request_cancelled_or_answered(indexed: ScriptedRepo):
    """A review's cases: a request cancelled by its id written as a string ("5" for 5, as the
    SDK correlates them) is never answered, and the end of stdin waited 10 minutes for it; two
    requests of one id each get their answer; a client that closed stdout ends the server
    quietly, with no traceback."""
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "related", "arguments": {"target": "pkg/core.py"}}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "5"}},
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
         "params": {"name": "status", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
         "params": {"name": "status", "arguments": {}}}]
    command = [sys.executable, "-m", "cortex_core", "mcp", "--repo", str(indexed.path)]
    env = {**os.environ, "CORTEX_MODEL": "none"}
    sent = "".join(json.dumps(line) + "\n" for line in lines).encode()
    # A wait for the cancelled request would last 10 minutes: the timeout says it did.
    done = subprocess.run(command, input=sent, capture_output=True, env=env, timeout=120)
    assert done.returncode == 0
    ids = [json.loads(line)["id"] for line in done.stdout.decode().splitlines() if line]
    assert sorted(i for i in ids if i != 5) == [0, 9, 9]
    closed = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env)
    closed.stdout.close()   # nobody reads the answers
    _, err = closed.communicate(sent, timeout=120)
    assert closed.returncode == 0 and b"Traceback" not in err, err.decode()[-2000:]

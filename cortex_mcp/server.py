"""The MCP server: tools, resources and prompts over one repository's memory.

Each tool finds the repository's engine (`repo`, else the server's own; cortex_core.engine),
runs one engine operation (`TOOLS` names them) on a consistent snapshot of its index, and answers
with compact markdown for the model plus the same data as structured content. Failures an agent
can act on (no such symbol, not a repository, no index yet, a busy index) are tool errors with a
clear message, the fix in this server's words (`WORDS`); nothing else reaches the client (the SDK
logs it, without a traceback on the wire). Read tools run on the SDK's worker threads, each with
its own read connection.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Iterator, Literal, cast

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer, UserMessage
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from cortex_core import __version__
from cortex_core.api import CortexError
from cortex_core.engine import Engine, Snapshot
from cortex_core.dates import reach, shallow_reach
from cortex_core.plain import plain
from cortex_core.text.sanitize import markdown, markdown_code, terminal

from cortex_mcp import messages, render
from cortex_mcp.arguments import problems, prompt_problem
from cortex_mcp.places import Places, spec_of
from cortex_mcp.sync import Indexers

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
Cortex is a memory of this git repository: the history of each function and class (which commits \
changed it, and why), what depends on it, what changes with it, hotspots, notes left by people and \
agents. Targets are PATH, PATH::SYMBOL (Class.method) or PATH:LINE, the path relative to the \
repository root. Before changing a symbol, read `symbol_history` and `blast_radius` (or the \
`before-edit` prompt); to answer "why is it like this" or "when did we change X", use \
`search_memory` or `context_pack`. Record decisions and invariants with `record_note`. Every \
answer cites commits (short sha), files (path:line) and notes (#id)."""

READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

Repo = Annotated[str | None, Field(max_length=4096, description=(
    "a path inside the git repository (default: the server's repository)"))]
TargetArg = Annotated[str, Field(max_length=4096, description=(
    "PATH, PATH::SYMBOL (Class.method) or PATH:LINE; the path relative to the repository root"))]
OptionalTarget = Annotated[str | None, Field(max_length=4096, description=(
    "PATH, PATH::SYMBOL (Class.method) or PATH:LINE; the path relative to the repository root"))]
Changed = Annotated[list[Annotated[str, Field(max_length=4096)]] | None, Field(
    max_length=1000, description=(
        "without a target: the changed files and symbols (PATH or PATH::SYMBOL); default: the "
        "working tree's uncommitted changes"))]
TopK = Annotated[int, Field(ge=1, le=100, description="how many results")]
Budget = Annotated[int, Field(ge=50, le=200_000, description="the most tokens the pack may use")]
Encoding = Annotated[Literal["o200k", "cl100k", "estimate"] | None, Field(description=(
    "how tokens are counted: o200k (GPT-4o and later), cl100k (GPT-4), estimate (an over-count on "
    "English and code, for other tokenizers); default: the repository's packs.encoding, "
    "else o200k"))]
DEFAULT_BUDGET = 2000

# The engine operations each tool, resource and prompt runs (cortex_core/operations.py; `sync`
# runs the index operation as a child process). tests/test_operations.py checks them.
TOOLS = {
    "search_memory": ("search",), "symbol_history": ("history",), "blast_radius": ("blast",),
    "related": ("related", "changes_related"), "hotspots": ("hotspots",),
    "context_pack": ("context_pack",), "status": ("status",), "sync": ("index",),
    "record_note": ("add_note",), "supersede_note": ("supersede_note",),
    "cortex://status": ("status",), "cortex://hotspots": ("hotspots",),
    "explain-symbol": ("briefing",), "before-edit": ("briefing",),
}
MAX_NOTES = 10          # notes listed in an answer's text


class Memory:
    """The server's state: an engine per repository, background indexers."""

    def __init__(self, default: Path | None, db: Path | None = None):
        self.places = Places(default, db)
        self.indexers = Indexers()

    @contextmanager
    def reading(self, repo: str | None) -> Iterator[tuple[Engine, Snapshot]]:
        """The repository's engine and a consistent snapshot of its index."""
        with errors_as(ToolError):
            engine = self.places.find(repo)
            with engine.snapshot() as snap:
                yield engine, snap

    def freshness(self, engine: Engine, snap: Snapshot) -> tuple[dict, list[str]]:
        """The index's state for the structured content, and the footnotes an answer needs."""
        current = engine.head()
        indexed = snap.indexed_head()
        head = current.commit if current is not None else None   # None: unborn or unreadable
        run = self.indexers.running(engine)
        since = snap.history_from()   # set while only a recent window is indexed
        until = snap.history_until()  # set while a first run has not reached HEAD
        shallow = snap.shallow_from()  # set for a shallow clone
        state = {"repository": str(engine.root), "indexed_head": indexed, "head": head,
                 "up_to_date": bool(head) and indexed == head, "indexing": run is not None,
                 "history_from": since, "history_until": until, "shallow_from": shallow}
        notes = []
        if shallow is not None:
            notes.append(shallow_reach(shallow) + " (`git fetch --unshallow`, then `sync`, for "
                         "the rest)")
        if until is not None:
            notes.append(reach(since, until) + (
                "; newer commits are being indexed" if run is not None
                else "; no index run has reached HEAD yet: call `sync` to continue"))
        elif since is not None:
            notes.append(reach(since) + ("; older commits are being indexed" if run is not None
                                         else "; call `sync` to index the older commits"))
        elif run is not None:
            notes.append(f"indexing in progress ({markdown(run.message)}): recent history "
                         "may be missing")
        elif head and indexed != head:
            at = f"is at {indexed[:10]}" if indexed else "has no commits yet"
            notes.append(f"the index {at}, HEAD at {head[:10]}: call `sync` for the newest "
                         "commits")
        return state, notes


# What fixes an error (its Hint), in this server's words: its tools and their arguments
# (cortex_core/errors.py, ACTIONS).
WORDS = {
    "index": "{message}; call the `sync` tool (or run `cortex index`) to build it",
    "upgrade": "{message}; call `sync` to upgrade it",
    "rebuild": "{message}: call `sync` with rebuild=true (or run `cortex index --rebuild`); "
               "notes are kept",
    "newer": "{message}; upgrade Cortex, or call `sync` with rebuild=true",
    "repository": "{message} (pass `repo`: a path inside a git repository)",
    "budget": "{message}; give a larger `budget`",
    "focus": "give a `query`, a `focus`, or both",
    "retry": "{message}; try again in a moment",
    "free_space": "{message}: is the disk full? Free some space, then call `sync` again",
    "elsewhere": "{message} (or start the server with `cortex mcp --db FILE`)",
    "wait": "{message}; call `sync` again later",
    "model": "{message}; the `status` tool says why",
    "one_worker": "{message}; call `sync` again, or run `cortex index --jobs 1` in a terminal",
    "continue": "{message}; call `sync` to continue it",
    "foreign": "{message}; start the server with `cortex mcp --db FILE` for this repository, or"
               " call `sync` with rebuild=true to replace this index",
}


@contextmanager
def errors_as(kind: type[Exception]) -> Iterator[None]:
    """Errors an agent can act on, as `kind` (a tool or resource error) with a clear message."""
    try:
        yield
    except CortexError as exc:   # its lines quote repository text: inert, as everywhere
        raise kind("\n".join(terminal(line) for line in exc.phrased(WORDS).split("\n"))
                   ) from None
    except OverflowError as exc:
        raise kind(f"a number is out of range: {exc}") from None


def answer(lines: list[str], data, state: dict, notes: list[str]) -> CallToolResult:
    out = plain(data)
    if not isinstance(out, dict):
        out = {"items": out}
    out["index"] = state
    return CallToolResult(content=[TextContent(type="text", text=render.footer(lines, notes))],
                          structured_content=out)


class _Server(MCPServer):
    """MCPServer, with a client's mistakes in a call answered in clear words
    (cortex_mcp.arguments): a tool's refused arguments as its tool error, a line per argument,
    instead of pydantic's report; a prompt's unknown name, missing or unknown argument as Invalid
    params, which the SDK answers with an internal error (code 0) and logs with a traceback."""

    async def call_tool(self, name, arguments, context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            # Only the arguments' own validation: a tool's failures have their own words.
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError) \
                    or cause.title != f"{name}Arguments":
                raise
            schema = next(t.input_schema for t in await self.list_tools() if t.name == name)
            lines = problems(cause, arguments, schema)
            # From the ValidationError still: the SDK logs the refused fields' names only.
            raise ToolError(f"Error executing tool {name}: " + "\n".join(lines)) from cause

    async def get_prompt(self, name, arguments=None, context=None):
        prompts = {p.name: p for p in await self.list_prompts()}
        if name not in prompts:
            raise MCPError(INVALID_PARAMS, f"no prompt {terminal(name)[:60]!r}: the prompts are "
                           + ", ".join(sorted(prompts)))
        known = {arg.name: bool(arg.required) for arg in prompts[name].arguments or ()}
        problem = prompt_problem(name, known, arguments)
        if problem is not None:
            raise MCPError(INVALID_PARAMS, problem)
        return await super().get_prompt(name, arguments, context)


def build_server(memory: Memory) -> MCPServer:
    mcp = _Server(name="cortex", title="Cortex: repository memory", version=__version__,
                    instructions=INSTRUCTIONS)

    @mcp.tool(annotations=READ)
    def search_memory(query: Annotated[str, Field(min_length=1, max_length=2000,
                                                  description="words or a question; an @login "
                                                              "lifts that author's commits")],
                      top_k: TopK = 8,
                      kind: Annotated[list[Literal["commit", "doc", "note"]] | None,
                                      Field(description="only these kinds")] = None,
                      since: Annotated[str | None, Field(description="YYYY-MM-DD or a number of "
                                                                     "days back")] = None,
                      path: Annotated[str | None, Field(description="only items about files "
                                                                    "under this path")] = None,
                      repo: Repo = None) -> CallToolResult:
        """Search the repository's memory — commit messages, documentation sections, notes — by
        meaning and by words, ranked with recency. For "why did we…", "when did we change…"."""
        with memory.reading(repo) as (engine, snap):
            # The working tree's changes lift what touches them, as `cortex search` does.
            result = snap.search(query, top_k=top_k, kinds=tuple(kind or ()), since=since,
                                 path=spec_of(path, engine).path if path else None)
            state, notes = memory.freshness(engine, snap)
            if result.note:     # why vectors were not used
                notes.insert(0, render.ours(result.note))
            return answer(render.search(result), result, state, notes)

    @mcp.tool(annotations=READ)
    def symbol_history(target: TargetArg,
                       limit: Annotated[int, Field(ge=1, le=500)] = 10,
                       substantive: bool = True,
                       repo: Repo = None) -> CallToolResult:
        """The commits that changed one function, class or file (not the whole file's log for a
        symbol), newest first, each with its reason and kind (body, signature, docs, renamed,
        moved, ...); and the live notes on it. Overloads are distinct: `Class.method(int)`.
        `substantive` (default) leaves out formatting-only commits and renames of its class."""
        with memory.reading(repo) as (engine, snap):
            result = snap.history(spec_of(target, engine), limit=limit, substantive=substantive)
            whys = snap.reasons(e.commit for e in result.entries)
            found = snap.live_notes(result.target.path, result.target.qualname)
            lines = render.history(result, whys)
            if found:
                lines.append("Notes:")
                lines += [render.note_line(n) for n in found[:MAX_NOTES]]
                if len(found) > MAX_NOTES:
                    lines.append(f"- … {len(found) - MAX_NOTES} more (in the structured content)")
            data = plain(result)
            for entry in data["entries"]:
                entry["why"] = whys.get(entry["commit"]["sha"])
            data["notes"] = plain(found)
            return answer(lines, data, *memory.freshness(engine, snap))

    @mcp.tool(annotations=READ)
    def blast_radius(target: TargetArg,
                     depth: Annotated[int, Field(ge=1, le=4)] = 2,
                     min_confidence: Annotated[float | None, Field(ge=0, le=1)] = None,
                     repo: Repo = None) -> CallToolResult:
        """What depends on a symbol or file — callers, importers, subclasses, tests, up to
        `depth` steps — with a risk level, and what changes with it without a link in the code.
        Dependents below `min_confidence` (default 0.25: below it, calls matched by a method's
        name alone) are counted, not listed."""
        with memory.reading(repo) as (engine, snap):
            result = snap.blast(spec_of(target, engine), depth=depth,
                                min_confidence=min_confidence)
            return answer(render.blast(result), result, *memory.freshness(engine, snap))

    @mcp.tool(annotations=READ)
    def related(target: OptionalTarget = None, top_k: TopK = 10,
                changed: Changed = None, repo: Repo = None) -> CallToolResult:
        """What moves with a symbol or file: files that change in the same commits (co-change,
        with evidence) fused with the files the code links it to; for a symbol, also the
        symbols that change with it. Without a target: what a set of changes usually brings
        along and is not changed yet ("you probably also need to touch ..."), the set being
        `changed` if given, else the working tree's uncommitted changes (files and the symbols
        their diff touches)."""
        with memory.reading(repo) as (engine, snap):
            if target is not None and changed:   # one question at a time, none silently dropped
                raise CortexError("give a `target` or the `changed` files and symbols, not both")
            if target is None:
                found = snap.changes_related(tuple(spec_of(c, engine) for c in changed or ()),
                                             top_k=top_k)
                if not changed and not (found.changed or found.unknown):
                    raise CortexError("no uncommitted changes: give a `target`, or the "
                                      "`changed` files and symbols")
                return answer(render.set_related(found), found, *memory.freshness(engine, snap))
            fused = snap.related(spec_of(target, engine), top_k=top_k)
            return answer(render.related(fused), plain(fused), *memory.freshness(engine, snap))

    @mcp.tool(annotations=READ)
    def hotspots(top_k: TopK = 10,
                 path: Annotated[str | None, Field(description="only under this path")] = None,
                 since_days: Annotated[float | None, Field(gt=0, le=100_000)] = None,
                 repo: Repo = None) -> CallToolResult:
        """The symbols and files that change the most: recency-weighted changes × authors ×
        churn. Risky places to edit."""
        with memory.reading(repo) as (engine, snap):
            result = snap.hotspots(top_k=top_k, since_days=since_days,
                                   path=spec_of(path, engine).path if path else None)
            return answer(render.hotspots(result), result, *memory.freshness(engine, snap))

    @mcp.tool(annotations=READ)
    def context_pack(query: Annotated[str | None, Field(max_length=2000)] = None,
                     focus: Annotated[str | None, Field(max_length=4096, description=(
                         "a target: PATH, PATH::SYMBOL or PATH:LINE"))] = None,
                     budget: Budget = DEFAULT_BUDGET,
                     encoding: Encoding = None,
                     repo: Repo = None) -> CallToolResult:
        """A token-budgeted pack of what to read about a question and/or a symbol: its code,
        history with reasons, notes, what changes with it, dependents, related commits, docs.
        Every item is cited; the answer never exceeds `budget` tokens in `encoding`."""
        with memory.reading(repo) as (engine, snap):
            at = spec_of(focus, engine).label if focus else None
            state, notes = memory.freshness(engine, snap)
            tokens = engine.token_counter(encoding)
            notes = list(notes) + ([markdown(tokens.note)] if tokens.note else [])

            def size(items: int, used: int) -> str:
                return (f"\n_{render.plural(items, 'item')}, {used}/{budget} tokens "
                        f"({tokens.tokenizer})_")
            # The answer's own lines (its size, the index's freshness) come out of the budget
            # too; the whole answer is counted at the end (BPE tokens need not add up).
            room = budget - tokens.count(render.footer([size(999, budget)], list(notes)))
            while True:
                pack = snap.context_pack(query=query, at=at, budget=room,
                                         encoding=tokens.encoding)
                lines = [pack.text.rstrip("\n"), size(len(pack.items), pack.used)]
                over = tokens.count(render.footer(list(lines), list(notes))) - budget
                if over <= 0:
                    break
                room -= over
            data = plain(pack)
            data["tokens"], data["budget"] = pack.used, budget
            for item in data["items"]:      # their text is in `text` already
                item.pop("text", None)
            return answer(lines, data, state, notes)

    @mcp.tool(annotations=READ)
    def status(repo: Repo = None) -> CallToolResult:
        """What the index holds, whether it is up to date with HEAD, and whether it is being
        indexed."""
        with errors_as(ToolError):
            engine = memory.places.find(repo)
        run = memory.indexers.current(engine)
        if not engine.db.is_file():
            text = (f"No index for {markdown_code(str(engine.root))} yet: call `sync` to build it."
                    + (f"\n- indexer: {render.run_line(run)}" if run else ""))
            return CallToolResult(content=[TextContent(type="text", text=text)],
                                  structured_content={"index": None, "repository": str(engine.root),
                                                      "indexer": plain(run)})
        with memory.reading(repo) as (engine, snap):
            result = snap.status()
            state, _ = memory.freshness(engine, snap)
            out = answer(render.status(result, state["head"], run), result, state, [])
            out.structured_content["indexer"] = plain(run)
            return out

    @mcp.tool(annotations=WRITE)
    async def sync(repo: Repo = None,
                   wait_seconds: Annotated[float, Field(ge=0, le=3600, description=(
                       "how long to wait for the run to finish; it goes on in the background "
                       "after that"))] = 60,
                   rebuild: Annotated[bool, Field(description="empty the index (its notes are "
                                                              "kept) and rebuild it")] = False,
                   ctx: Context | None = None) -> CallToolResult:
        """Bring the index up to date with HEAD (incremental: only new commits are read). Starts
        the indexer in the background, or joins the run already going; reports progress."""
        with errors_as(ToolError):
            engine = memory.places.find(repo)
            try:
                run, started = memory.indexers.start(engine, rebuild=rebuild)
            except OSError as exc:
                raise CortexError(f"could not start the indexer: {exc}") from None
        deadline = time.monotonic() + wait_seconds
        while not run.finished and time.monotonic() < deadline:
            seen = run.events
            await anyio.to_thread.run_sync(memory.indexers.wait, run, seen,
                                           min(5.0, max(0.0, deadline - time.monotonic())))
            if ctx is not None and run.total and not run.finished:
                await ctx.report_progress(run.done, run.total, run.message)
        lines = render.sync(run, started)
        if rebuild and not started:
            lines.append("A run was already going: no rebuild was started.")
        if run.finished and not run.ok:
            raise ToolError(lines[0])
        data = {"repository": str(engine.root), "running": not run.finished, "ok": run.ok,
                "pid": run.pid, "warm": run.warm,
                "phase": run.phase, "done": run.done, "total": run.total,
                "summary": run.summary, "error": run.error}
        return CallToolResult(content=[TextContent(type="text", text="\n".join(lines))],
                              structured_content=data)

    @mcp.tool(annotations=WRITE)
    def record_note(text: Annotated[str, Field(min_length=1, max_length=20_000, description=(
                        "the decision, invariant or warning, in a few sentences"))],
                    target: Annotated[str | None, Field(description=(
                        "PATH, PATH::SYMBOL or PATH:LINE; omit for a note on the whole "
                        "repository"))] = None,
                    author: Annotated[str | None, Field(max_length=200)] = None,
                    repo: Repo = None) -> CallToolResult:
        """Write a note on a symbol, file or the repository: a decision or an invariant for the
        next reader. It is anchored to the symbol's code, flagged stale when that code changes,
        found by `search_memory`, and shown in the editor's hover."""
        with errors_as(ToolError):
            engine = memory.places.find(repo)
            at = None
            if target is not None and target.strip() not in ("", ".", "/"):
                at = spec_of(target, engine).label
            note = engine.add_note(at, text, author=author or _agent_author(engine.git_author()))
            return answer(render.note(note, "Recorded"), note,
                          {"repository": str(engine.root)}, [])

    @mcp.tool(annotations=WRITE)
    def supersede_note(note_id: Annotated[int, Field(ge=1, le=2**62)],
                       text: Annotated[str, Field(min_length=1, max_length=20_000)],
                       author: Annotated[str | None, Field(max_length=200)] = None,
                       repo: Repo = None) -> CallToolResult:
        """Replace a live note by a new text: the old one is closed (kept, with its validity
        period), the new one takes its target."""
        with errors_as(ToolError):
            engine = memory.places.find(repo)
            note = engine.supersede_note(note_id, text,
                                         author=author or _agent_author(engine.git_author()))
            lines = render.note(note, "Recorded")
            lines[0] += f" It supersedes #{note_id}."
            return answer(lines, note, {"repository": str(engine.root)}, [])

    @mcp.resource("cortex://status", name="status", mime_type="text/markdown",
                  description="What the index of the server's repository holds, and whether it "
                              "is up to date")
    def status_resource() -> str:
        with errors_as(ResourceError):
            engine = memory.places.find(None)
            with engine.snapshot() as snap:
                result = snap.status()
                state, _ = memory.freshness(engine, snap)
            return "\n".join(render.status(result, state["head"],
                                           memory.indexers.current(engine)))

    @mcp.resource("cortex://hotspots", name="hotspots", mime_type="text/markdown",
                  description="The symbols and files of the server's repository that change the "
                              "most")
    def hotspots_resource() -> str:
        with errors_as(ResourceError):
            engine = memory.places.find(None)
            with engine.snapshot() as snap:
                result = snap.hotspots()
                return render.footer(render.hotspots(result), memory.freshness(engine, snap)[1])

    @mcp.prompt("explain-symbol", description="Explain why a symbol is the way it is, from its "
                "code, history, notes and related commits (within a token budget)")
    def explain_symbol(target: str, repo: str | None = None,
                       budget: str = str(DEFAULT_BUDGET)) -> list[UserMessage]:
        ask = (f"Explain why `{target}` is the way it is. Use the context below; cite commits by "
               "their short sha and notes by their #id, and say what the history does not "
               "explain.\n\n")
        return [UserMessage(_briefing(memory, target, repo, budget, "explain", ask))]

    @mcp.prompt("before-edit", description="What to know before changing a symbol: its "
                "status (hotspot, dependents), notes, history and what changes with it")
    def before_edit(target: str, repo: str | None = None,
                    budget: str = str(DEFAULT_BUDGET)) -> list[UserMessage]:
        ask = (f"I am about to change `{target}`. From the context below, tell me what to keep "
               "in mind: invariants and decisions (notes, commit reasons), who depends on it "
               "and must be checked, files that usually change with it, and whether it is a "
               "hotspot. Cite short shas, paths and note ids.\n\n")
        return [UserMessage(_briefing(memory, target, repo, budget, "before-edit", ask))]

    return mcp


def _agent_author(user: str | None) -> str:
    return f"{user} (agent)" if user else "agent"


def _briefing(memory: Memory, target: str, repo: str | None, budget: str, purpose: str,
              ask: str) -> str:
    """The prompt's text: the request, then a briefing packed into what the budget leaves."""
    try:
        with memory.reading(repo) as (engine, snap):
            try:
                total = int(str(budget).strip())
            except ValueError:
                raise CortexError(f"budget: a whole number of tokens, not {budget[:40]!r}") from None
            if not 50 <= total <= 200_000:
                raise CortexError("budget: between 50 and 200000 tokens")
            count = engine.token_counter().count
            ask = ask.replace(f"`{target}`", markdown_code(target[:300]))
            room = total - count(ask)
            if room < 40:     # the pack's header and one short item
                raise CortexError(f"budget: {total} tokens leave no room for the context after "
                                  f"this prompt's request ({count(ask)} tokens); give at "
                                  f"least {count(ask) + 40}")
            at = spec_of(target, engine).label
            while True:     # the whole prompt is counted (BPE tokens need not add up)
                pack = snap.briefing(at, purpose, budget=room)
                over = count(ask + pack.text) - total
                if over <= 0:
                    return ask + pack.text
                room -= over
    except ToolError as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from None


def run(default: Path | None, db: Path | None = None) -> None:
    memory = Memory(default, db)
    server = build_server(memory)
    # A client that stops the server with SIGTERM (the SDK's stdio client does, after closing
    # stdin) still gets the indexer child interrupted: it runs in its own session.
    signal.signal(signal.SIGTERM, _stop(memory, 143))
    signal.signal(signal.SIGHUP, _stop(memory, 129))
    code = 0
    try:
        _serve(server)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except KeyboardInterrupt:
        code = 130
    finally:
        # Quickly, and not cut short by a SIGTERM: the SDK's client waits 2 s after closing
        # stdin, then 2 s after SIGTERM, then kills the server (not the indexer's own group).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        memory.indexers.close(grace=1.0)
        memory.places.close()
    if code:
        # Stopped by a signal while stdin is still open: the SDK's stdin reader is a worker
        # thread blocked in read(), which a normal exit would join forever. Every answer was
        # flushed when it was written; the indexer is stopped.
        sys.stderr.flush()
        os._exit(code)


def _serve(server: MCPServer) -> None:
    """Serve stdio until it ends; a client that closed stdout (`cortex mcp < requests | head`)
    ends it quietly: there is nobody left to answer."""
    try:
        anyio.run(_serve_stdio, server)
    except* (BrokenPipeError, anyio.BrokenResourceError):
        pass


async def _serve_stdio(server: MCPServer) -> None:
    """server.run("stdio"), with each line of stdin checked before the SDK reads it (_Lines),
    and the end of stdin held back until every request read has its answer (_Answers)."""
    from mcp.server.stdio import stdio_server
    lowlevel = server._lowlevel_server   # what MCPServer.run_stdio_async serves
    with _claimed_stdin() as stdin:
        lines = _Lines(stdin)
        checked = cast("anyio.AsyncFile[str]", lines)   # the SDK only iterates it, as it can be
        async with stdio_server(stdin=checked) as (read_stream, write_stream):
            lines.answer_to(write_stream)
            answers = _Answers()
            await lowlevel.run(_Reading(read_stream, answers), answers.writing(write_stream),
                               lowlevel.create_initialization_options())


@contextmanager
def _claimed_stdin() -> Iterator:
    """stdin as the SDK's stdio_server claims it when it reads stdin itself: fd 0 then reads
    the null device, so that no handler or child takes a line meant for the server. Its own
    helpers, private but pinned with the SDK's version (pyproject.toml)."""
    from mcp.server import stdio
    buffer, release = stdio._claim_fd(0, sys.stdin, "rb", stdio._open_stdin_diversion)
    try:
        yield anyio.wrap_file(stdio._UnownedTextWrapper(buffer, encoding="utf-8",
                                                        errors="replace"))
    finally:
        if release is not None:
            release()


class _Lines:
    """stdin's lines for the SDK's reader, each checked first (cortex_mcp.messages). A line that
    is not a message is answered here with its JSON-RPC error, and never reaches the SDK, which
    would drop it unanswered (or read a request with a bad id as a notification)."""

    def __init__(self, stdin):
        self._stdin = stdin
        self._initialized = False   # once an "initialize" request went to the SDK
        self._write = None
        self._writable = anyio.Event()

    def answer_to(self, write_stream) -> None:
        """Where the errors go: the SDK's stdout stream, made after its reader started. Not
        through _Answers: no request was counted for such a line."""
        self._write = write_stream
        self._writable.set()

    async def __aiter__(self):
        async for line in self._stdin:
            verdict = messages.checked(line, initialized=self._initialized)
            if isinstance(verdict, str):
                if not self._initialized:
                    self._initialized = messages.opens_session(verdict)
                yield verdict
            elif verdict is not None:
                await self._refuse(verdict)

    async def _refuse(self, refusal: messages.Refusal) -> None:
        from mcp.shared.message import SessionMessage
        await self._writable.wait()
        try:
            await self._write.send(SessionMessage(refusal.answer()))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass    # the client closed its end: nobody is left to answer


DRAIN_SECONDS = 600.0   # how long the end of stdin waits for the answers still being worked on


class _Answers:
    """The requests read and not answered yet. At the end of stdin the SDK stopped serving at
    once: a client that wrote its requests and closed its end (`cortex mcp < requests`, a
    script) lost the answers still being worked on, often all but the first. The end of stdin
    now reaches the SDK once each request read has been answered (or cancelled by the client),
    or after DRAIN_SECONDS."""

    def __init__(self):
        # Request id -> how many requests with it wait: ids as the SDK correlates them ("7"
        # and 7 are one), each repeat counted (a client may reuse an id; each gets an answer).
        self.pending: Counter = Counter()
        self._changed = anyio.Event()

    def read(self, item) -> None:
        message = getattr(item, "message", None)
        kind = type(message).__name__
        if kind == "JSONRPCRequest":
            self.pending[_request_key(message.id)] += 1
        elif kind == "JSONRPCNotification" and message.method == "notifications/cancelled":
            params = message.params if isinstance(message.params, dict) else {}
            self._done(params.get("requestId"))

    def written(self, item) -> None:
        message = getattr(item, "message", None)
        if type(message).__name__ in ("JSONRPCResponse", "JSONRPCError"):
            self._done(message.id)

    def _done(self, request_id) -> None:
        key = _request_key(request_id)
        if self.pending[key] > 1:
            self.pending[key] -= 1
        else:
            self.pending.pop(key, None)
        self._changed.set()

    async def drain(self) -> None:
        with anyio.move_on_after(DRAIN_SECONDS):
            while self.pending:
                self._changed = anyio.Event()
                await self._changed.wait()

    def writing(self, inner):
        return _Writing(inner, self)


def _request_key(request_id):
    """A request id as the SDK correlates them (its coerce_request_id): "7" is 7."""
    if isinstance(request_id, str):
        try:
            return int(request_id)
        except ValueError:
            pass
    return request_id


class _Writing:
    """The SDK's stdout stream, telling _Answers which requests have their answer."""

    def __init__(self, inner, answers: _Answers):
        self._inner = inner
        self._answers = answers

    async def send(self, item) -> None:
        await self._inner.send(item)
        self._answers.written(item)

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def __aenter__(self):
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self._inner.__aexit__(*exc)


class _Reading:
    """The SDK's read stream (its ReadStream protocol), telling _Answers which requests were
    read, and holding its end back until they have their answers."""

    def __init__(self, inner, answers: _Answers):
        self._inner = inner
        self._answers = answers

    @property
    def last_context(self):
        return getattr(self._inner, "last_context", None)

    async def receive(self):
        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            await self._answers.drain()
            raise
        self._answers.read(item)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            item = await self._inner.__anext__()
        except StopAsyncIteration:
            await self._answers.drain()
            raise
        self._answers.read(item)
        return item

    async def __aenter__(self):
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self._inner.__aexit__(*exc)


STOP_GRACE = 5.0   # seconds the normal way out may take before the watchdog takes it


def _stop(memory: Memory, code: int):
    """A signal handler that exits with `code` through the normal way out (SystemExit from the
    main thread: stdio closed, indexer interrupted). A watchdog makes sure of it: the SystemExit
    can land inside library code that swallows it (seen once on a loaded machine: the server
    outlived its SIGTERM), and then the watchdog stops the indexer and exits itself."""
    def watchdog() -> None:
        memory.indexers.close(grace=1.0)
        sys.stderr.flush()
        os._exit(code)

    def handler(*_) -> None:
        timer = threading.Timer(STOP_GRACE, watchdog)
        timer.daemon = True
        timer.start()
        sys.exit(code)
    return handler

"""Which operations the engine offers: one table, from which every front end is wired.

Each operation has a typed request (an immutable named tuple of its parameters, named after
it), the method of `Snapshot` (reads) or `Engine` (writes, indexing) that answers it with those
parameters as keywords, and the type of its answer. The command line's commands, the MCP tools
and the language server's custom requests are each a front end's mapping onto these names
(`cortex_cli.cli.COMMANDS`, `cortex_mcp.server.TOOLS`, `cortex_ls.features.REQUESTS`): each
front end still chooses its own names, parameters' names, shapes and help text, and
tests/test_operations.py checks that each mapping names only operations listed here and that
every operation listed here is offered by some front end.

A parameter left at None takes the repository's resolved setting (`Engine.settings`: defaults <
`.cortex/config.toml` < environment < the front end's overrides), so a front end passes only
what its user asked for. Targets are `TargetSpec`s: parsing a target's text (and mapping a path
given relative to a current directory) is the front end's (`Engine.target`).

This module imports nothing heavy: the command line reads it on every start. The requests are
typed named tuples, not dataclasses: immutable and typed all the same, and defining twenty of them
costs well under a millisecond where frozen dataclasses cost about ten (bench/bench_start.py).
"""

from pathlib import Path
from typing import Any, Callable, NamedTuple

from cortex_core.query.targets import TargetSpec


# -- the requests ----------------------------------------------------------------------------------
# No `from __future__ import annotations` here: NamedTuple would compile each string annotation
# (a ForwardRef), which cost more than the rest of the module.


class HistoryRequest(NamedTuple):
    target: TargetSpec
    limit: int | None = None
    substantive: bool = False


class HotspotsRequest(NamedTuple):
    top_k: int = 10
    since_days: float | None = None
    path: str | None = None                 # a repository-relative prefix
    half_life_days: float | None = None
    clock: str | None = None


class RelatedRequest(NamedTuple):
    target: TargetSpec
    top_k: int = 10
    min_support: int | None = None
    half_life_days: float | None = None


class ChangesRelatedRequest(NamedTuple):
    """What a set of changes usually brings along: `changed` targets, else the working tree's
    uncommitted changes (with `overlay`: unsaved buffers by repository-relative path)."""
    changed: tuple[TargetSpec, ...] = ()
    overlay: dict[str, bytes] | None = None
    top_k: int = 10
    min_support: int | None = None
    half_life_days: float | None = None


class BlastRequest(NamedTuple):
    target: TargetSpec
    depth: int = 2
    min_confidence: float | None = None
    half_life_days: float | None = None
    clock: str | None = None


class CallersRequest(NamedTuple):
    target: TargetSpec


class CalleesRequest(NamedTuple):
    target: TargetSpec


class SearchRequest(NamedTuple):
    query: str
    top_k: int = 10
    kinds: tuple[str, ...] = ()
    since: str | int | None = None          # text (a date or days back, on the clock) or epoch
    path: str | None = None                 # a repository-relative prefix
    at: str | None = None                   # a target's label to lift what is about it
    mode: str = "hybrid"
    priors: bool = True
    context: bool = True                    # lift what touches the working copy's changes
    workspace: bool = True                  # read the working copy (branch, changed files)
    dirty: tuple[str, ...] = ()             # more changed paths (an editor's unsaved buffers)
    clock: str | None = None


class ContextPackRequest(NamedTuple):
    query: str | None = None
    at: str | None = None                   # a target's text
    budget: int = 2000
    fmt: str = "markdown"
    encoding: str | None = None
    clock: str | None = None
    cwd: Path | None = None                 # `at` paths relative to this folder (the CLI's)


class BriefingRequest(NamedTuple):
    at: str
    purpose: str
    budget: int = 2000


class WhatRequest(NamedTuple):
    top_k: int = 5
    clock: str | None = None


class StatusRequest(NamedTuple):
    """No parameters."""


class RelatedCommitsRequest(NamedTuple):
    target: str                             # a commit id, or a target's text
    top_k: int = 10
    cwd: Path | None = None


class AreasRequest(NamedTuple):
    top_k: int | None = None


class NotesRequest(NamedTuple):
    target: str | None = None               # a target's label; None: every note
    include_closed: bool = False


class AddNoteRequest(NamedTuple):
    target: str | None                      # a target's label; None: the repository
    text: str
    author: str | None = None
    valid_from: int | None = None


class SupersedeNoteRequest(NamedTuple):
    note_id: int
    text: str
    author: str | None = None


class ExportNotesRequest(NamedTuple):
    """No parameters."""


class ImportNotesRequest(NamedTuple):
    data: Any


class IndexRequest(NamedTuple):
    all_branches: bool | None = None
    rebuild: bool = False
    wait_seconds: float = 10.0
    jobs: int | None = None
    model: str | None = None
    coalesce: bool = False
    progress: Callable[..., None] | None = None
    on_wait: Callable[[str], None] | None = None
    recent_first: str = "no"   # ingest.RECENT_FIRST: a recent window first, then the rest


# -- the table ---------------------------------------------------------------------------------------


class Operation(NamedTuple):
    name: str
    request: type
    method: str             # of Snapshot (reads) or of Engine (writes)
    result: str             # the answer's type, as module:Name (imported only when asked)
    writes: bool = False
    summary: str = ""


OPERATIONS: dict[str, Operation] = {op.name: op for op in (
    Operation("history", HistoryRequest, "history", "cortex_core.query.history:History",
              summary="the commits that changed a file or a symbol, following renames"),
    Operation("hotspots", HotspotsRequest, "hotspots", "cortex_core.query.hotspots:Hotspots",
              summary="symbols and files that change the most"),
    Operation("related", RelatedRequest, "related", "cortex_core.query.blast:FusedRelated",
              summary="what changes with a file or symbol: co-change fused with structure"),
    Operation("changes_related", ChangesRelatedRequest, "changes_related",
              "cortex_core.query.working_changes:WorkingChanges",
              summary="what a set of changes (default: the working tree's) brings along"),
    Operation("blast", BlastRequest, "blast", "cortex_core.query.blast:Blast",
              summary="what depends on a symbol or file, with a risk level"),
    Operation("callers", CallersRequest, "callers", "cortex_core.query.blast:Neighbours",
              summary="what calls or references a symbol"),
    Operation("callees", CalleesRequest, "callees", "cortex_core.query.blast:Neighbours",
              summary="what a symbol calls or references"),
    Operation("search", SearchRequest, "search", "cortex_core.memory.search:SearchResult",
              summary="hybrid search of commits, documents and notes"),
    Operation("context_pack", ContextPackRequest, "context_pack",
              "cortex_core.features.context_pack:ContextPack",
              summary="a token-budgeted pack of what to read about a question or a symbol"),
    Operation("briefing", BriefingRequest, "briefing",
              "cortex_core.features.context_pack:ContextPack",
              summary="a pack for a purpose (before-edit, explain) about a symbol"),
    Operation("what", WhatRequest, "what", "cortex_core.features.what:What",
              summary="what matters for the working copy's changes"),
    Operation("status", StatusRequest, "status", "cortex_core.query.status:Status",
              summary="what the index holds"),
    Operation("related_commits", RelatedCommitsRequest, "related_commits",
              "cortex_core.query.related_commits:RelatedCommits",
              summary="commits related to a commit or a symbol"),
    Operation("areas", AreasRequest, "areas", "cortex_core.index.areas:Area",
              summary="the areas of the code base (clusters of the memory)"),
    Operation("notes", NotesRequest, "notes", "cortex_core.memory.notes:Note",
              summary="notes, newest first"),
    Operation("add_note", AddNoteRequest, "add_note", "cortex_core.memory.notes:Note",
              writes=True, summary="write a note on a symbol, a file or the repository"),
    Operation("supersede_note", SupersedeNoteRequest, "supersede_note",
              "cortex_core.memory.notes:Note", writes=True,
              summary="replace a live note by a new text"),
    Operation("export_notes", ExportNotesRequest, "export_notes", "builtins:dict",
              summary="every note, as JSON-ready data"),
    Operation("import_notes", ImportNotesRequest, "import_notes", "builtins:int", writes=True,
              summary="add the notes of an export"),
    Operation("index", IndexRequest, "index", "cortex_core.index.ingest:IndexSummary",
              writes=True, summary="index the commits not indexed yet"),
)}

BY_REQUEST: dict[type, Operation] = {op.request: op for op in OPERATIONS.values()}

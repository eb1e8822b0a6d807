"""What front ends may name of the engine besides `Engine`: its typed errors, the operations'
requests, the vocabularies they validate parameters against, and the result types they render.

The rule (docs/architecture.md, API boundaries; tests/test_architecture.py keeps it): a front end
imports `cortex_core.engine` (the facade), this module (its vocabulary), and only these other
modules of the engine, which read no repository and no store: `cortex_core.text.sanitize` (text
made inert for where it is shown), `cortex_core.dates` (dates in words), `cortex_core.plain`
(typed results as JSON) and `cortex_core.child_process` (the indexer's command line, which each
front end runs by its own policy); and `cortex_core` itself for its version.

Names that live in heavier modules (targets, result types, helpers of a renderer) are loaded when
first used (PEP 562 `__getattr__`), so importing this module stays as cheap as the command line's
start needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from cortex_core.errors import (ACTIONS, Ambiguous, CortexError, DamagedStore, Hint, IndexerBusy,
                                IndexQueued, NewerSchema, NoIndex, NotARepository, NotFound,
                                OlderSchema, StoreBusy, StoreError, StoreIOError)
from cortex_core.features.token_count import ENCODINGS, encoding_name

if TYPE_CHECKING:
    from cortex_core.clock import CLOCKS
    from cortex_core.operations import (OPERATIONS, AddNoteRequest, AreasRequest, BlastRequest,
                                        BriefingRequest, CalleesRequest, CallersRequest,
                                        ChangesRelatedRequest, ContextPackRequest,
                                        ExportNotesRequest, HistoryRequest, HotspotsRequest,
                                        ImportNotesRequest, IndexRequest, NotesRequest,
                                        Operation, RelatedCommitsRequest, RelatedRequest,
                                        SearchRequest, StatusRequest, SupersedeNoteRequest,
                                        WhatRequest)
    from cortex_core.config import Settings
    from cortex_core.features.context_pack import ContextPack
    from cortex_core.git.remotes import commit_url
    from cortex_core.index.ingest import IndexSummary
    from cortex_core.query.blast import Blast, FusedRelated, Neighbours
    from cortex_core.query.coupling import is_changelog
    from cortex_core.query.history import CommitRef, History
    from cortex_core.query.hotspots import Hotspots
    from cortex_core.query.status import Status
    from cortex_core.query.targets import TargetSpec, parse_target
    from cortex_core.memory.notes import dumps as notes_json

# name -> the module that holds it, imported on first use.
_LAZY = {
    "OPERATIONS": "cortex_core.operations",
    "AddNoteRequest": "cortex_core.operations",
    "AreasRequest": "cortex_core.operations",
    "BlastRequest": "cortex_core.operations",
    "BriefingRequest": "cortex_core.operations",
    "CalleesRequest": "cortex_core.operations",
    "CallersRequest": "cortex_core.operations",
    "ChangesRelatedRequest": "cortex_core.operations",
    "ContextPackRequest": "cortex_core.operations",
    "ExportNotesRequest": "cortex_core.operations",
    "HistoryRequest": "cortex_core.operations",
    "HotspotsRequest": "cortex_core.operations",
    "ImportNotesRequest": "cortex_core.operations",
    "IndexRequest": "cortex_core.operations",
    "NotesRequest": "cortex_core.operations",
    "Operation": "cortex_core.operations",
    "RelatedCommitsRequest": "cortex_core.operations",
    "RelatedRequest": "cortex_core.operations",
    "SearchRequest": "cortex_core.operations",
    "StatusRequest": "cortex_core.operations",
    "SupersedeNoteRequest": "cortex_core.operations",
    "WhatRequest": "cortex_core.operations",
    "CLOCKS": "cortex_core.clock",
    "TargetSpec": "cortex_core.query.targets",
    "parse_target": "cortex_core.query.targets",
    "Settings": "cortex_core.config",
    "ContextPack": "cortex_core.features.context_pack",
    "commit_url": "cortex_core.git.remotes",
    "IndexSummary": "cortex_core.index.ingest",
    "Blast": "cortex_core.query.blast",
    "FusedRelated": "cortex_core.query.blast",
    "Neighbours": "cortex_core.query.blast",
    "is_changelog": "cortex_core.query.coupling",
    "CommitRef": "cortex_core.query.history",
    "History": "cortex_core.query.history",
    "Hotspots": "cortex_core.query.hotspots",
    "Status": "cortex_core.query.status",
    "notes_json": "cortex_core.memory.notes:dumps",   # an export's text, as import reads it
}


def __getattr__(name: str):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = where.partition(":")
    value = getattr(importlib.import_module(module), attr or name)
    globals()[name] = value
    return value


__all__ = [
    "ACTIONS", "CLOCKS", "ENCODINGS", "OPERATIONS", "AddNoteRequest", "Ambiguous", "AreasRequest",
    "Blast", "BlastRequest", "BriefingRequest", "CalleesRequest", "CallersRequest",
    "ChangesRelatedRequest", "CommitRef", "ContextPack", "ContextPackRequest", "CortexError",
    "DamagedStore", "ExportNotesRequest", "FusedRelated", "Hint", "History", "HistoryRequest",
    "Hotspots", "HotspotsRequest", "ImportNotesRequest", "IndexQueued", "IndexRequest",
    "IndexSummary", "IndexerBusy", "Neighbours", "NewerSchema", "NoIndex", "NotARepository",
    "NotFound", "NotesRequest", "OlderSchema", "Operation", "RelatedCommitsRequest",
    "RelatedRequest", "SearchRequest", "Settings", "Status", "StatusRequest", "StoreBusy",
    "StoreError", "StoreIOError", "SupersedeNoteRequest", "TargetSpec", "WhatRequest",
    "commit_url", "encoding_name", "is_changelog", "notes_json", "parse_target",
]

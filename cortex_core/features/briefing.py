"""Briefings: context packs about one symbol for a purpose — what to know before editing it, or
what explains it. They are the MCP server's prompts (`before-edit`, `explain-symbol`).

A briefing is a context pack (same candidates, same greedy packing under a hard token budget,
same citations) with one more item, the symbol's status (changes, authors, hotspot, dependents),
and with the sections weighted for the purpose: before an edit, what depends on the symbol and
what changes with it matter most; to explain it, its code, its history and related commits.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cortex_core.config import Settings
from cortex_core.features.context_pack import ContextPack, PackItem, pack, target_candidates
from cortex_core.errors import CortexError
from cortex_core.dates import date, window
from cortex_core.features.symbol_info import HeatSettings, symbol_card
from cortex_core.features.token_count import DEFAULT_ENCODING
from cortex_core.query.targets import parse_target, resolve

# Multipliers on each section's utility (the candidates' own utilities are in context_pack).
# Packing is greedy by utility per token, so the sections a purpose cannot do without get
# multipliers large enough to be packed first whenever they fit at all.
PURPOSES: dict[str, dict[str, float]] = {
    "before-edit": {"status": 100.0, "notes": 50.0, "blast": 50.0, "changes-with": 8.0,
                    "history": 1.0, "focus": 0.3, "related": 0.3, "docs": 0.3},
    "explain": {"status": 20.0, "notes": 20.0, "focus": 1.0, "history": 1.2, "related": 0.8,
                "docs": 0.8, "blast": 0.6, "changes-with": 0.6},
}
SUBJECTS = {"before-edit": "before editing {}", "explain": "why {} is the way it is"}


def briefing(con, repo_root: Path, at: str, purpose: str, *, budget: int = 2000,
             heat: HeatSettings = HeatSettings(), embedder=None, spec_fix=None,
             now: float | None = None, encoding: str = DEFAULT_ENCODING,
             settings: Settings | None = None) -> ContextPack:
    """The pack for `purpose` about `at` (PATH, PATH::SYMBOL or PATH:LINE), within `budget`;
    `settings`: the repository's, as build_pack reads them."""
    if purpose not in PURPOSES:
        raise CortexError(f"unknown purpose {purpose!r} ({', '.join(PURPOSES)})")
    spec = parse_target(at)
    spec = spec_fix(spec) if spec_fix else spec
    target = resolve(con, spec)
    weights = PURPOSES[purpose]
    candidates = [status_item(con, repo_root, target, heat, now, settings)]
    candidates += target_candidates(con, repo_root, spec, target, embedder, heat.clock, settings)
    candidates = [replace(c, utility=c.utility * weights.get(c.section, 0.5)) for c in candidates]
    return pack(SUBJECTS[purpose].format(target.label), candidates, budget, encoding=encoding)


def status_item(con, repo_root: Path, target, heat: HeatSettings,
                now: float | None = None, settings: Settings | None = None) -> PackItem:
    """One line of facts: how often and by how many it changed, whether it is a hotspot now,
    how many places depend on it directly."""
    card = symbol_card(con, repo_root, target.path, target.qualname, limit=1, heat=heat, now=now,
                       coupling=(settings or Settings()).coupling)
    facts = [f"{card.changes} commit{'s' if card.changes != 1 else ''} changed it, "
             f"by {card.authors} author{'s' if card.authors != 1 else ''}"]
    if card.last_change is not None:
        c = card.last_change
        facts.append(f"last on {date(c.time, c.offset)} in {c.short} ({c.subject})")
    if card.recent is not None:
        span = window(heat.window_days, card.clock)
        facts.append(f"a hotspot: {card.recent.changes} changes in the {span}"
                     if card.recent.hot else
                     f"not a hotspot ({card.recent.changes} changes in the {span}; "
                     f"hot from {heat.threshold})")
    if not target.alive:
        facts.append("no longer at HEAD")
    if card.dependents is not None:
        facts.append(f"{card.dependents} direct dependent{'s' if card.dependents != 1 else ''}")
    if card.notes:
        stale = sum(1 for n in card.notes if n.stale)
        facts.append(f"{len(card.notes)} live note{'s' if len(card.notes) != 1 else ''}"
                     + (f" ({stale} possibly stale)" if stale else ""))
    citation = f"{target.path}:{target.start_line}" if target.start_line else target.path
    return PackItem("status", f"status of {target.label}", "; ".join(facts) + ".", citation, 1.0)

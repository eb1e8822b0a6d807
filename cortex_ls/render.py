"""Markdown for hovers and titles for code lenses, from cortex_core's typed results.

Everything that came from a repository (subjects, bodies, author names, notes, symbol names) is
untrusted: it is escaped so that it can never open a link, an image, HTML or a command. The only
links are commit pages built from a validated remote (cortex_core.git.remotes).
"""

from __future__ import annotations

import time

from cortex_core.api import commit_url
from cortex_core.dates import reach, relative_time, shallow_reach, window
from cortex_core.text.sanitize import markdown, markdown_code


def _sha(commit, web_base: str | None) -> str:
    short = commit.sha[:10]
    if web_base:
        return f"[`{short}`]({commit_url(web_base, commit.sha)})"
    return f"`{short}`"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def lens_title(changes: int, authors: int, dependents: int | None, window_days: float) -> str:
    parts = [f"changed {changes}× in {_days(window_days)}", _plural(authors, "author")]
    if dependents is not None:
        parts.append(_plural(dependents, "dependent"))
    return " · ".join(parts)


def lens_tooltip(window_days: float, clock) -> str:
    return f"changes to its own code in the {window(window_days, clock)}"


def _days(days: float) -> str:
    return f"{days:g}d"


def index_note(partial: bool, history_from: int | None,
               history_until: int | None = None, shallow_from: int | None = None) -> str | None:
    """How far an answer can be trusted while the index is incomplete: how far its history
    reaches (a recent window indexed first, the older commits to come; or the older part a
    first run read before it stopped, the newer commits to come; or a shallow clone's), or
    that it is still being built; None for a complete index of a full clone."""
    if history_until is not None:
        return reach(history_from, history_until) + (
            "; indexing newer commits" if partial else
            "; newer commits not indexed yet (Cortex: Reindex)")
    if history_from is not None:
        return reach(history_from) + ("; indexing older commits" if partial else
                                      "; older commits not indexed yet (Cortex: Reindex)")
    if shallow_from is not None:
        return (shallow_reach(shallow_from)
                + " (git fetch --unshallow, then Cortex: Reindex, for the rest)"
                + ("; index still building" if partial else ""))
    if partial:
        return "index still building: recent history may be missing"
    return None


def hover(card, *, web_base: str | None, partial: bool, now: float | None = None,
          note: str | None = None) -> str:
    now = time.time() if now is None else now
    t = card.target
    title = markdown_code(t.qualname) if t.qualname else markdown_code(t.path)
    head = [f"**{title}**" + (f" · {markdown(t.kind)}" if t.kind else "")]
    facts = [_plural(card.changes, "change"), _plural(card.authors, "author")]
    if card.last_change is not None:
        facts.append(f"last {relative_time(card.last_change.time, now)}")
    if card.recent is not None and card.recent.hot:
        facts.append(f"**hotspot**: {card.recent.changes}× in the "
                     f"{window(card.window_days, card.clock)}")
    if card.dependents is not None:
        facts.append(_plural(card.dependents, "dependent"))
    lines = [head[0], "", " · ".join(facts)]
    if card.coupled is not None:
        c = card.coupled
        lines += ["", f"{'usually' if 2 * c.shared >= c.of else 'often'} changes with "
                      f"{markdown_code(c.qualname)}"
                      + ("" if c.path == t.path else f" in {markdown_code(c.path)}")
                      + f" ({c.shared} of {c.of} commits)"]
    if card.history:
        lines.append("")
        for change in card.history:
            c = change.commit
            row = (f"- {_sha(c, web_base)} {relative_time(c.time, now)} · {markdown(c.author, 40)}"
                   f" · {markdown(c.subject, 100)}")
            if change.change not in ("modified", "M"):
                row += f" *({markdown(change.change)})*"
            if change.why:   # two trailing spaces: a hard line break, invisible as raw text
                lines += [row + "  ", f"  — {markdown(change.why)}"]
            else:
                lines.append(row)
        more = card.changes - len(card.history)
        if more > 0:
            lines.append(f"- … {more} more (Cortex: Show Symbol History)")
    folded = [_plural(card.reformatted, "formatting-only commit")] if card.reformatted else []
    if card.waypoints:
        folded.append(_plural(card.waypoints, "scope rename"))
    if folded:  # dimmed: never a reason
        lines.append(f"- *+ {' · '.join(folded)}*")
    if card.notes:
        lines += ["", "**Notes**"]
        for n in card.notes[:5]:
            flag = " *(possibly stale)*" if n.stale else ""
            lines.append(f"- note \\#{n.id}{flag}: {markdown(n.text, 300)}")
    footer = []
    if note:
        footer.append(markdown(note))
    state = index_note(partial, card.history_from, card.history_until, card.shallow_from)
    if state:
        footer.append(state)
    if footer:
        lines += ["", "*" + " · ".join(footer) + "*"]
    return "\n".join(lines)


def line_hover(line: int, origin, *, web_base: str | None, partial: bool,
               now: float | None = None, history_from: int | None = None,
               history_until: int | None = None, shallow_from: int | None = None) -> str:
    """The hover for a line outside any symbol: who last changed it."""
    now = time.time() if now is None else now
    if origin is None:
        text = f"**line {line}**: not committed yet"
    elif origin.commit is None:
        text = f"**line {line}**: {markdown(origin.reason or 'unknown origin')}"
    else:
        c = origin.commit
        text = (f"**line {line}** last changed {relative_time(c.time, now)} by "
                f"{markdown(c.author, 40)} in {_sha(c, web_base)}: {markdown(c.subject, 120)}")
    state = index_note(partial, history_from, history_until, shallow_from)
    if state:
        text += f"\n\n*{state}*"
    return text

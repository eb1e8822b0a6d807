"""Untrusted text (commit subjects and bodies, author names, notes, symbol names) as inert
markdown, for every front end that renders markdown: the language server's hovers and the MCP
server's answers to agents. Escaped text can never open a link, an image, HTML or a command."""

from __future__ import annotations

import re

# What could turn untrusted text into markup: emphasis, code, links and images (brackets), HTML
# (<), strikethrough, tables. Parentheses, dots and colons stay readable (clients that show the
# raw text, like Neovim's hover, would show every escape): with the brackets escaped no link can
# form, and the autolinks of bare URLs, www. names and e-mail addresses are broken where they
# start. A block marker at the very start is escaped too: text may follow a line break of ours.
_SPECIAL = re.compile(r"([\\`*\[\]~|@])")
# Underscores inside a word (`rebuild_proxies`) can neither open nor close emphasis in CommonMark:
# they stay as they are, readable and copyable. Any other run of them is escaped.
_UNDERSCORES = re.compile(r"_+")
_AUTOLINK = re.compile(r"(?i)(?<=[a-z0-9+.-])(:)(?=//)|(?<=\bwww)(\.)")
_BLOCK_START = re.compile(r"^(?:([#>+=-])|(\d{1,9})([.)]))")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                      "\ufeff]+")


def escape(text: str, limit: int | None = None) -> str:
    """Untrusted text as inert markdown on one line."""
    text = _CONTROL.sub(" ", text).strip()
    if limit is not None and len(text) > limit:
        text = text[:limit - 1].rstrip() + "…"
    text = _SPECIAL.sub(r"\\\1", text)
    text = _UNDERSCORES.sub(lambda m: m[0] if _inside_word(m) else "\\_" * len(m[0]), text)
    text = _AUTOLINK.sub(lambda m: "\\" + (m.group(1) or m.group(2)), text)
    # A line of ours may end where this text begins (a search hit's body): no heading, quote,
    # list item, setext underline or thematic break can open there.
    text = _BLOCK_START.sub(lambda m: "\\" + m[1] if m[1] else m[2] + "\\" + m[3], text)
    return text.replace("<", "&lt;")


def code(text: str) -> str:
    """Untrusted text in an inline code span (backticks cannot close it early)."""
    text = _CONTROL.sub(" ", text).replace("`", "'")
    return f"`{text}`"


def _inside_word(m: re.Match) -> bool:
    text, start, end = m.string, m.start(), m.end()
    return 0 < start and end < len(text) and text[start - 1].isalnum() and text[end].isalnum()


"""Qualified names as the index keeps them: identities with tags (see symbols.py, Identity).

Pure string functions, importable without a parser: front ends and queries use them.
"""

from __future__ import annotations


def structural_name(qualname: str) -> str:
    """A qualname (identity) without its tags and ordinals: "A.f(int).B.g[2]" -> "A.f.B.g". Tags
    are bracketed, and brackets inside them balance (types as written)."""
    if "(" not in qualname and "[" not in qualname:
        return qualname
    out: list[str] = []
    depth = 0
    for i, ch in enumerate(qualname):
        if depth == 0 and qualname.endswith("operator", 0, i) and qualname[i:i + 2] in ("()", "[]"):
            out.append(ch)  # C++ operator() and operator[]: part of the name
        elif depth == 0 and out and out[-1] in "([" and ch in ")]":
            out.append(ch)
        elif ch in "([":
            depth += 1
        elif ch in ")]" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    text = "".join(out)
    for qualifier in (" const", " volatile", " &&", " &"):
        text = text.replace(qualifier, "")
    return text.strip()

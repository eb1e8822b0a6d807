"""Qualified names as the index keeps them: identities with tags (see symbols.py, Identity).

Pure string functions, importable without a parser: front ends and queries use them.
"""

from __future__ import annotations

import re


_QUALIFIERS = re.compile(r"\)(?:\s(?:const|volatile|&&|&))+(?=$|[.\[])")


def structural_name(qualname: str) -> str:
    """A qualname (identity) without its tags and ordinals: "A.f(int).B.g[2]" -> "A.f.B.g". Tags
    are bracketed, and brackets inside them balance (symbols._type_list sees to it); C++
    qualifiers follow a parameter list ("S.get() const"); `operator()` and `operator[]` are
    names when a name part starts with `operator` and a parameter list follows them, and so
    are Ruby's `[]` and `[]=` at the start of a name part."""
    if "(" not in qualname and "[" not in qualname:
        return qualname
    qualname = _QUALIFIERS.sub(")", qualname)
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(qualname):
        ch = qualname[i]
        if depth == 0 and qualname[i:i + 2] in ("()", "[]") and qualname[i + 2:i + 3] == "(" \
                and _part_is_operator(qualname, i):
            out.append(qualname[i:i + 2])  # C++ operator() and operator[]: part of the name
            i += 2
            continue
        if depth == 0 and qualname[i:i + 2] == "[]" and (i == 0 or qualname[i - 1] == "."):
            out.append("[]")  # Ruby's `[]` and `[]=`: a tag follows a name, never a dot
            i += 2
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
        i += 1
    return "".join(out).strip()


def _part_is_operator(qualname: str, at: int) -> bool:
    """Whether the name part ending at `at` is exactly `operator`."""
    start = qualname.rfind(".", 0, at) + 1
    return qualname[start:at] == "operator"

"""bench_oracles.py: declarations named NAME in a blob, found without cortex: Python by `ast`,
Java by brace matching on the text with comments and literals blanked. Each: start (first
annotation or decorator line), line (signature), end, doc (Javadoc line range), doc_text, key
(Java: parameter types; Python: parameter names), qual (Python), text."""

from __future__ import annotations

import ast
import difflib
import re


JAVA_MODS = (r"(?:(?:public|protected|private|static|final|abstract|synchronized|native|default"
             r"|strictfp)\s+)*")
NOT_TYPES = {"return", "new", "throw", "else", "case", "yield", "await", "assert"}
JAVA_NOISE = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)


def java_decls(text: str, name: str) -> list[dict]:
    masked = JAVA_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
    lines, raw, offsets = masked.split("\n"), text.split("\n"), [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    decl = re.compile(rf"^\s*(?:@\w+(?:\s*\([^)]*\))?\s*)*{JAVA_MODS}(?:<[^;{{}}()]*>\s*)?"
                      rf"(?P<type>[\w$][\w$.\[\]<>?, ]*?)\s+{re.escape(name)}\s*\(")
    found = []
    for i, line in enumerate(lines):
        m = decl.match(line)
        if not m or m.group("type").split()[-1] in NOT_TYPES:
            continue
        params_end = closing(masked, offsets[i] + m.end() - 1, "(", ")")
        body = re.compile(r"[{;]").search(masked, params_end or 0)
        if params_end is None or body is None:
            continue
        end = body.start() if body.group() == ";" else closing(masked, body.start(), "{", "}")
        if end is None:
            continue
        start = i + 1
        while start > 1 and raw[start - 2].strip().startswith("@"):
            start -= 1  # annotations on lines of their own belong to the declaration
        doc, j = None, start - 2
        if j >= 0 and raw[j].strip().endswith("*/"):
            while j >= 0 and "/*" not in raw[j]:
                j -= 1
            doc = (j + 1, start - 1) if j >= 0 and "/**" in raw[j] else None
        end_line = masked.count("\n", 0, end) + 1
        found.append({"start": start, "line": i + 1, "end": end_line, "doc": doc, "qual": None,
                      "doc_text": "\n".join(raw[doc[0] - 1:doc[1]]) if doc else "",
                      "key": java_params(masked[offsets[i] + m.end():params_end]),
                      "text": "\n".join(raw[start - 1:end_line])})
    return found


def closing(text: str, pos: int, open_: str, close: str) -> int | None:
    """The index of the bracket closing the one at `pos`."""
    depth = 0
    for i in range(pos, len(text)):
        depth += (text[i] == open_) - (text[i] == close)
        if depth == 0:
            return i
    return None


def java_params(params: str) -> str:
    """Parameter types only (names, `final`, annotations and spaces dropped)."""
    parts, depth, cur = [], 0, ""
    for ch in params + ",":
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            p = re.sub(r"@\w+(\s*\([^)]*\))?|\bfinal\b", " ", cur).replace("...", "[] ").split()
            parts += ["".join(p[:-1]) or p[0]] if p else []
            cur = ""
        else:
            cur += ch
    return ",".join(parts)


def python_decls(text: str, name: str) -> list[dict]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines, found = text.split("\n"), []

    def walk(node, quals):
        for child in ast.iter_child_nodes(node):
            q = quals
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = quals + (child.name,)
                if child.name == name and not isinstance(child, ast.ClassDef):
                    start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                    a = child.args
                    found.append({
                        "start": start, "line": child.lineno, "end": child.end_lineno,
                        "doc": None, "doc_text": "", "qual": ".".join(q),
                        "key": ",".join(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs),
                        "text": "\n".join(lines[start - 1:child.end_lineno])})
            walk(child, q)
    walk(tree, ())
    return found


def decls(lang: str, text: str | None, name: str) -> list[dict]:
    return [] if text is None else (python_decls if lang == "python" else java_decls)(text, name)


def pick(cands: list[dict], key: str, qual: str | None, siblings: set[str]) -> dict | None:
    """The declaration meant: Python by qualified name; Java, overload siblings left out, the
    one whose parameter types are nearest."""
    if not cands:
        return None
    if qual and cands[0]["qual"] is not None:
        return next((d for d in cands if d["qual"] == qual), None)
    mine = [d for d in cands if d["key"] == key or d["key"] not in siblings]
    like = (lambda d: 2.0 if d["key"] == key
            else difflib.SequenceMatcher(None, d["key"], key).ratio())
    return max(mine, key=like) if mine else None


def bare(qualname: str) -> str:
    """A cortex qualified name without its tags: "A.f(int, T[]).g[2]" -> "A.f.g"."""
    while (shorter := re.sub(r"[(\[][^()\[\]]*[)\]]", "", qualname)) != qualname:
        qualname = shorter
    return qualname


def tag_params(qualname: str) -> str | None:
    """The parameter types cortex tags an overload with, normalized like java_params()."""
    m = re.search(r"\(([^()]*)\)$", qualname)
    inner = m and re.sub(r"@\w+|\bfinal\b", " ", m.group(1)).replace("...", "[]")
    return re.sub(r"\s+", "", inner) if m else None

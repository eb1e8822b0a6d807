"""Imports and references of one source file, read with tree-sitter: no database, no resolution.

extract_structure(language, source) parses the file once and runs one compiled query per
language. The query only selects the nodes of interest (import statements, calls, class
headers, decorators, ...); a small handler per captured node type reads its fields. Matching
runs in C and handlers never recurse (name chains and Rust use-trees are walked with loops), so
deep nesting cannot hit Python's recursion limit. A file with syntax errors yields whatever
tree-sitter's error recovery left readable; `error_nodes` counts the ERROR and MISSING nodes.

Results are in source order. An import's `line` is the line of the name it binds (the module
for whole-module imports); a ref's `line` and `byte` are those of its last segment (`save` in
`db.save()`), so a call spread over several lines is placed where its name is.

Qualifiers: the text before the last segment when it is a plain chain of names (`self.a.b()` ->
"self.a", Rust `a::b::f()` -> "a::b::"; generic arguments dropped: `Vec::<u8>::new()` ->
"Vec::"); "?" for any other receiver (`f().g()`, `x[0].g()`); None for a bare call. A Rust path
keeps its last `::`, so that `T::f()` (a path: qualifier + name is what was written) is told
from `t.f()` (a value's method, qualifier "t"); a value reached by a path is a value
(`Foo::BAR.m()` -> "Foo::BAR").

Per-language decisions:
- Python: `import a.b` binds alias "a"; `from __future__ import x` is an import of "__future__".
  Class bases skip keyword arguments and `*args`; `Generic[T]` is the base "Generic". A decorator
  that is a plain name or attribute is a "ref"; a decorator call (`@app.route("/")`) is a "call",
  recorded once. `super().m()` and `super(A, self).m()` have qualifier "super".
- JavaScript/TypeScript/TSX: `import x from` is name "default" with alias "x"; `import {a as b}`
  name "a" alias "b"; `import * as ns` and TS `import ns = require()` name None alias "ns"; a
  side-effect `import "./x"` has neither. `export {a as b} from "./m"` is name "a" alias "b",
  `export * from` a wildcard, `export * as ns from` alias "ns". `require("lit")` is an import, not
  a call: alias is the variable it is assigned to, `const {a, b: c} = require()` yields one
  import per property, `const x = require("m").y` name "y"; any other use has neither. Dynamic
  `import("lit")` likewise (through `await`). `new X()` is a call; `super()` is not recorded.
  Heritage: `extends` / `implements` / interface `extends`; `extends mixin(A)` is only a call.
  The owner of an anonymous class is its variable, or "default" under `export default`.
  Decorators as for Python. JSX (in .js/.jsx and .tsx): `<Button />` and `<ui.Panel>` are calls of
  the component; lowercase tags are HTML and not recorded.
- Go: each import spec is an import with name None and alias the package name used: the
  explicit name ("." for a dot import, which is also a wildcard; "_" for a blank import), else
  the last path segment, skipping a major-version segment ("github.com/x/y/v2" -> "y") and
  dropping a gopkg.in-style suffix ("gopkg.in/yaml.v3" -> "yaml"); names that differ from the
  directory (`go-redis` declaring `package redis`) cannot be known here. Embedded struct fields
  and embedded interfaces are "inherits" refs owned by the named type. Type conversions
  (`int(x)`) look like calls and are recorded as calls; `g[int]()` is not recorded (an
  instantiation cannot be told from indexing a slice of functions).
- Java: `import com.x.Y` is module "com.x" name "Y"; `import static com.x.Y.m` module "com.x.Y"
  name "m"; `import com.x.*` module "com.x", wildcard. Method invocations and `new X()` are calls;
  `super(...)`/`this(...)` constructor calls are not recorded. Method references are "ref"s
  (`Foo::bar` -> "bar" qualified "Foo"; `Foo::new` -> "Foo"). `extends`/`implements` of
  classes, interfaces, enums and records are "inherits".
- Rust: a use path is split before its last segment: `use crate::a::Foo` -> module "crate::a"
  name "Foo"; `use std::io` -> module "std" name "io" (a path cannot tell a module from an
  item); `self` in a use list names its parent path; a single segment (`use serde;`,
  `extern crate alloc`) is a whole-module import bound to its own name; a leading `::` is dropped.
  Macro invocations are calls named with their "!" (`println!`), so they never resolve to a
  function of the same name. Macro arguments are token trees, not syntax: inside them a name
  directly followed by `(` is read as a call (`a.b(`, `A::new(`, nested `format!(`), except
  after `fn`/`struct`/... and inside attributes (`#[cfg(any(...))]`). `impl Trait for Type` and
  supertraits (`trait A: B`) are "inherits" refs owned by the type (no path, no generics).
  Tests: `tests` holds the byte ranges of what is test code: a function with an attribute whose
  path ends in `test`, `rstest` or `test_case` (`#[test]`, `#[tokio::test]`), a module, function
  or impl with `#[cfg(test)]` or `#[cfg(all(test, ...))]` (or a body opening with
  `#![cfg(test)]`, the whole file for one at its top) and an inline `mod tests`.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Iterator

from tree_sitter import Node, Parser, Query, QueryCursor, Tree
from tree_sitter_language_pack import get_language, get_parser

from cortex_core.lang.conflicts import conflict_sides

__all__ = ["SUPPORTED", "FileStructure", "Import", "Ref", "extract_structure"]


@dataclass(frozen=True, slots=True)
class Import:
    module: str  # as written, normalised (Python relative: dots stripped, see level)
    name: str | None  # the imported name; None for a whole-module import
    alias: str | None  # the local name bound when it differs from `name`, or for whole modules
    line: int  # 1-based
    level: int = 0  # Python relative import level (number of leading dots)
    wildcard: bool = False  # `from m import *`, `use m::*`, `import com.x.*`, Go dot import
    byte: int = 0  # start byte of the name it binds (where `line` is): its place among scopes


@dataclass(frozen=True, slots=True)
class Ref:
    name: str  # the last segment of the callee, or the base class / interface / trait name
    qualifier: str | None  # the plain name chain before it, "?" for a complex receiver, or None
    kind: str  # "call" | "inherits" | "ref"
    line: int  # 1-based
    byte: int  # start byte of the name
    owner: str | None = None  # for "inherits": the class/type that inherits


@dataclass(frozen=True, slots=True)
class FileStructure:
    imports: tuple[Import, ...]
    refs: tuple[Ref, ...]
    error_nodes: int  # tree-sitter ERROR and MISSING nodes
    # Byte ranges (start, end) of test code, outermost and innermost alike, in no order (Rust).
    tests: tuple[tuple[int, int], ...] = ()


# ---------------------------------------------------------------------------------------------
# What handlers write to


class _Out:
    __slots__ = ("src", "imports", "refs", "skip", "skip_sorted", "locals", "py_locals",
                 "py_attributes", "py_outer", "py_scopes", "go_scopes", "root", "tests",
                 "type_params", "type_param_spans", "module_names", "not_types")

    def __init__(self, src: bytes, root: Node | None = None) -> None:
        self.src = src
        self.root = root
        # A Python file's functions, classes, lambdas, comprehensions and loops: their starts,
        # the nodes, the index of the one around each (-1: none); built on first use
        # (_py_around). A node's `parent` is found from the root down, so a walk up by it
        # was quadratic in the depth for each call, cubic in all.
        self.py_scopes: tuple[list[int], list[Node], list[int]] | None = None
        # A Go file's functions, methods and function literals, as py_scopes (_go_declared_type).
        self.go_scopes: tuple[list[int], list[Node], list[int]] | None = None
        # (function, name) -> the class the name has around the function (_py_declared_type).
        self.py_outer: dict[tuple[int, str], str | None] = {}
        # A Go function's typed local variables, read once per function (_go_locals).
        self.locals: dict[int, dict[str, list[tuple[int, int, int, str]]]] = {}
        # A Python function's (or module's) assigned names, read once per scope (_py_locals).
        self.py_locals: dict[int, dict[str, tuple[list[int], list[str | None],
                                                  list[tuple[int, int]]]]] = {}
        # A Python class's attributes and the classes assigned to them (_py_class_attributes).
        self.py_attributes: dict[int, dict[str, list[str]]] = {}
        self.imports: list[tuple[int, Import]] = []
        self.refs: list[Ref] = []
        # Byte ranges whose token trees are not code (Rust attributes); sorted on first use.
        self.skip: list[tuple[int, int]] = []
        self.skip_sorted = False
        self.tests: list[tuple[int, int]] = []
        # A type parameter's name (TypeScript, Java, Go; a mapped key, an `infer`, a type of a
        # block) -> the byte ranges of the code that declares it, read before the type refs.
        self.type_params: dict[str, list[tuple[int, int]]] = {}
        # Those ranges merged, by name: (starts, ends, how many ranges were merged).
        self.type_param_spans: dict[str, tuple[list[int], list[int], int]] = {}
        # The names a Python module binds at its top level (_py_module_names), read on first use.
        self.module_names: frozenset[str] | None = None
        # Type nodes that name no type, by byte range (_py_not_type, _ts_not_type).
        self.not_types: set[tuple[int, int]] = set()

    def text(self, node: Node) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def imp(self, at: Node, module: str, name: str | None, alias: str | None,
            level: int = 0, wildcard: bool = False) -> None:
        self.imports.append((at.start_byte, Import(module, name, alias, at.start_point[0] + 1,
                                                   level, wildcard, at.start_byte)))

    def ref(self, at: Node, name: str, qualifier: str | None, kind: str,
            owner: str | None = None) -> None:
        if name:
            self.refs.append(Ref(name, qualifier, kind, at.start_point[0] + 1, at.start_byte,
                                 owner))

    def type_param(self, name: str, byte: int) -> bool:
        """Whether `byte` is in a declaration that declares a type parameter `name`. Its ranges
        are merged once: checked one by one, each use against every declaration of the name,
        6,000 generic methods of one file took minutes."""
        ranges = self.type_params.get(name)
        if not ranges:
            return False
        spans = self.type_param_spans.get(name)
        if spans is None or spans[2] != len(ranges):
            starts: list[int] = []
            ends: list[int] = []
            for start, end in sorted(ranges):
                if ends and start <= ends[-1]:
                    ends[-1] = max(ends[-1], end)
                else:
                    starts.append(start)
                    ends.append(end)
            spans = self.type_param_spans[name] = (starts, ends, len(ranges))
        at = bisect_right(spans[0], byte) - 1
        return at >= 0 and byte < spans[1][at]

    def skipped(self, node: Node) -> bool:
        if not self.skip_sorted:
            self.skip.sort()
            self.skip_sorted = True
        i = bisect_right(self.skip, (node.start_byte, 1 << 62)) - 1
        return i >= 0 and node.start_byte < self.skip[i][1]


_Handler = Callable[[_Out, Node], None]


def _chain(out: _Out, node: Node, link: str, obj_field: str, prop_field: str,
           bases: frozenset[str], sep: str = ".") -> str:
    """The text of a plain name chain (`a.b.c`), or "?" when it is anything else."""
    parts: list[str] = []
    n: Node | None = node
    while n is not None and n.type == link:
        prop = n.child_by_field_name(prop_field)
        if prop is None:
            return "?"
        parts.append(out.text(prop))
        n = n.child_by_field_name(obj_field)
    if n is None or n.type not in bases:
        return "?"
    parts.append(out.text(n))
    parts.reverse()
    return sep.join(parts)


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] in "\"'`" and text[-1] == text[0]:
        return text[1:-1]
    return text.strip("\"'`")


# ---------------------------------------------------------------------------------------------
# Python

_PY_BASES = frozenset({"identifier"})


def _py_dotted(out: _Out, node: Node) -> str:
    if node.type == "dotted_name":
        return ".".join(out.text(c) for c in node.named_children if c.type == "identifier")
    return out.text(node)


def _py_qualifier(out: _Out, obj: Node) -> str:
    if obj.type == "call":
        fn = obj.child_by_field_name("function")
        if fn is not None and fn.type == "identifier" and out.text(fn) == "super":
            return "super"
        return "?"
    return _chain(out, obj, "attribute", "object", "attribute", _PY_BASES)


def _py_import(out: _Out, node: Node) -> None:
    for item in node.children_by_field_name("name"):
        if item.type == "aliased_import":
            target, alias = item.child_by_field_name("name"), item.child_by_field_name("alias")
            if target is not None:
                out.imp(target, _py_dotted(out, target), None,
                        out.text(alias) if alias is not None else None)
        else:
            module = _py_dotted(out, item)
            out.imp(item, module, None, module.split(".", 1)[0])


def _py_import_from(out: _Out, node: Node) -> None:
    source = node.child_by_field_name("module_name")
    level, module = 0, ""
    if source is None:  # `from __future__ import x`
        if node.type != "future_import_statement":
            return
        module = "__future__"
    elif source.type == "relative_import":
        for c in source.named_children:
            if c.type == "import_prefix":
                level = out.text(c).count(".")
            elif c.type == "dotted_name":
                module = _py_dotted(out, c)
    else:
        module = _py_dotted(out, source)
    for c in node.named_children:
        if c.type == "wildcard_import":
            out.imp(c, module, None, None, level, wildcard=True)
    for item in node.children_by_field_name("name"):
        if item.type == "aliased_import":
            target, alias = item.child_by_field_name("name"), item.child_by_field_name("alias")
            if target is not None:
                out.imp(target, module, _py_dotted(out, target),
                        out.text(alias) if alias is not None else None, level)
        else:
            out.imp(item, module, _py_dotted(out, item), None, level)


def _py_named(out: _Out, node: Node, kind: str, owner: str | None = None) -> None:
    """A name or attribute expression as a ref of `kind`; anything else is skipped. A call on
    a variable whose type is in sight (_py_declared_type) is qualified by that type."""
    if node.type == "identifier":
        out.ref(node, out.text(node), None, kind, owner)
    elif node.type == "attribute":
        attr, obj = node.child_by_field_name("attribute"), node.child_by_field_name("object")
        if attr is not None and obj is not None:
            qualifier = None
            if kind == "call" and obj.type == "identifier" and out.text(obj) not in _PY_SELF:
                qualifier = _py_declared_type(out, obj)
            elif kind == "call" and obj.type == "attribute":
                qualifier = _py_attribute_type(out, obj)
            out.ref(attr, out.text(attr), qualifier or _py_qualifier(out, obj), kind, owner)


_PY_SELF = frozenset({"self", "cls"})
_PY_SCOPES = frozenset({"function_definition", "lambda", "class_definition", "module"})
# Where a walk for a function's locals does not go: scopes of their own.
_PY_COMPREHENSIONS = frozenset({"list_comprehension", "set_comprehension",
                                "dictionary_comprehension", "generator_expression"})
_PY_OWN_SCOPES = frozenset({"function_definition", "class_definition", "lambda",
                            *_PY_COMPREHENSIONS})
# Annotations that say nothing of a class: a call on such a variable stays a guess by name.
_PY_UNTYPED = frozenset({"Any", "object", "None"})


def _py_declared_type(out: _Out, ident: Node) -> str | None:
    """The class of the variable `ident` where a call on it is (`request.url_for()` with
    `request: Request` a parameter is a call of Request's url_for, not of every `url_for` of the
    repository), as the call's qualifier: the annotation of a parameter of the innermost
    function that has one of that name, or the assignments to it there that can reach the call
    (`x = Client(...)`, `x: Client = ...`: the last one before it, and the ones before that
    when the last is in a branch the call is not in, and the ones after it in a loop around
    it; `None` aside, all of one class), else in the functions around it, else at the module's
    top level. A class is told from a function by its name (PEP 8: `Client()`, not `make()`).
    None when the binding gives no one class (an untyped parameter, another assignment, a loop
    variable, a comprehension's, a branch's other class): the call keeps the variable's name,
    as before."""
    name = out.text(ident)
    here = ident.start_byte
    loop_end = -1     # the end of the outermost loop around the call in the scope walked
    # The functions passed: what is around each is the same for every call in it (_Out.py_outer).
    passed: list[tuple[int, str]] = []
    found: str | None = None
    for n in _py_around(out, ident):
        if n.type in ("for_statement", "while_statement"):
            loop_end = n.end_byte
        elif n.type == "lambda":
            if _py_parameter(out, n, name) is not None:
                break
        elif n.type in _PY_COMPREHENSIONS:
            if any(out.text(t) == name for c in n.named_children if c.type == "for_in_clause"
                   for left in (c.child_by_field_name("left"),) if left is not None
                   for t in _py_targets(left)):
                break
        elif n.type in ("function_definition", "module"):
            assigned = _py_locals(out, n).get(name)
            if assigned is not None:
                reaching = _py_reaching(assigned, here, loop_end)
                if reaching is not None:
                    kinds, dominated = reaching
                    if not dominated and n.type == "function_definition":
                        kinds.add(_py_parameter(out, n, name))
                    kinds.discard(None)
                    found = kinds.pop() if len(kinds) == 1 and "" not in kinds else None
                    break
            if n.type == "function_definition":
                parameter = _py_parameter(out, n, name)
                if parameter is not None:
                    found = parameter or None
                    break
                key = (n.id, name)
                if key in out.py_outer:
                    found = out.py_outer[key]
                    break
                passed.append(key)
            loop_end = -1   # a loop in the function does not run the code around it again
    for key in passed:
        out.py_outer[key] = found
    return found


_PY_AROUND = "[(function_definition) (class_definition) (lambda) (list_comprehension) " \
    "(set_comprehension) (dictionary_comprehension) (generator_expression) (for_statement) " \
    "(while_statement)] @around"
_py_around_query: list[Query] = []


def _py_around(out: _Out, node: Node) -> Iterator[Node]:
    """The functions, classes, lambdas, comprehensions and loops around `node`, the innermost
    first, then the module: found by bisection among them all, read once per file by a query
    (not by `parent`, each of which walks down from the root again)."""
    if out.py_scopes is None:
        out.py_scopes = _scope_table(out, "python", _PY_AROUND, _py_around_query)
    yield from _around(out.py_scopes, node)
    if out.root is not None:
        yield out.root


def _scope_table(out: _Out, language: str, pattern: str, compiled: list[Query]
                 ) -> tuple[list[int], list[Node], list[int]]:
    """The nodes `pattern` captures in the file, sorted by start, with the index of the one
    around each (-1: none)."""
    if not compiled:
        compiled.append(Query(get_language(language), pattern))
    found = [n for ns in QueryCursor(compiled[0]).captures(out.root).values()
             for n in ns] if out.root is not None else []
    found.sort(key=lambda n: (n.start_byte, -n.end_byte))
    parents: list[int] = []
    open_: list[int] = []
    for i, n in enumerate(found):
        while open_ and found[open_[-1]].end_byte <= n.start_byte:
            open_.pop()
        parents.append(open_[-1] if open_ else -1)
        open_.append(i)
    return [n.start_byte for n in found], found, parents


def _around(table: tuple[list[int], list[Node], list[int]], node: Node) -> Iterator[Node]:
    """The nodes of a _scope_table that hold `node`, the innermost first."""
    starts, nodes, parents = table
    i = bisect_right(starts, node.start_byte) - 1
    while i >= 0:
        around = nodes[i]
        if around.end_byte >= node.end_byte and around.id != node.id:
            yield around
        i = parents[i]


# How many assignments of a name are weighed for one call (a hostile file's thousands of
# branches, each assigning it, are not all read for each of its calls).
_PY_REACHING = 32


def _py_reaching(assigned: tuple[list[int], list[str | None], list[tuple[int, int]]],
                 here: int, loop_end: int) -> tuple[set[str | None], bool] | None:
    """The classes the assignments that can reach a use at `here` give (None for `x = None`),
    and whether one of them is sure to run before it: the last assignment before it, and the
    ones before it while the last is in a block the use is not in (an `if`'s branch, a loop's
    body, a `try`), and those after it up to `loop_end` (a loop around the use runs them
    before its next turn). None when no assignment is before the use, nor in its loop."""
    starts, kinds, blocks = assigned
    at = bisect_right(starts, here - 1) - 1
    after = bisect_right(starts, loop_end - 1) if loop_end > here else at + 1
    if at < 0 and after <= at + 1:
        return None
    if after - at - 1 > _PY_REACHING:
        return {""}, True
    found: set[str | None] = set(kinds[at + 1:after])
    dominated = False
    for i in range(at, max(-1, at - _PY_REACHING), -1):
        found.add(kinds[i])
        if blocks[i][0] <= here < blocks[i][1]:
            dominated = True
            break
    else:
        if at >= _PY_REACHING:
            return {""}, True
    return found, dominated


def _py_attribute_type(out: _Out, node: Node) -> str | None:
    """The class of `self.x` where a method calls `self.x.send()`: the one class that every
    assignment to the attribute in its class gives it (`self.x = Client(...)`, `self.x: Client
    = ...`, `self.x = client` with `client: Client` a parameter there, or `x: Client` in the
    class body), `None` assignments aside. None when the attribute is assigned anything else,
    or not in its class (a base's: not followed)."""
    obj, attr = node.child_by_field_name("object"), node.child_by_field_name("attribute")
    if obj is None or attr is None or obj.type != "identifier" or out.text(obj) != "self":
        return None
    cls = next((n for n in _py_around(out, node) if n.type == "class_definition"), None)
    if cls is None:
        return None
    types = _py_class_attributes(out, cls).get(out.text(attr))
    return types[0] if types is not None and len(types) == 1 and types[0] else None


def _py_class_attributes(out: _Out, cls: Node) -> dict[str, list[str]]:
    """attribute -> the distinct classes its assignments in the class `cls` give it ("" for
    an assignment that gives none), from the class body and its methods (and what they hold,
    not the classes nested in it)."""
    found = out.py_attributes.get(cls.id)
    if found is not None:
        return found
    kinds: dict[str, list[str]] = defaultdict(list)

    def add(name: str, kind: str | None) -> None:
        if kind is not None and kind not in kinds[name]:
            kinds[name].append(kind)

    body = cls.child_by_field_name("body")
    for top in body.named_children if body is not None else ():
        n = top.named_children[0] if top.type == "expression_statement" and \
            top.named_children else top
        if n.type == "assignment":
            left = n.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                add(out.text(left), _py_assigned_type(out, n, None))
            continue
        fn = top.child_by_field_name("definition") if top.type == "decorated_definition" else top
        if fn is None or fn.type != "function_definition":
            continue
        stack = list(fn.named_children)
        while stack:
            n = stack.pop()
            if n.type == "class_definition":
                continue
            if n.type == "assignment":
                left = n.child_by_field_name("left")
                if left is not None and left.type == "attribute":
                    target, name = (left.child_by_field_name("object"),
                                    left.child_by_field_name("attribute"))
                    if target is not None and name is not None and out.text(target) == "self":
                        add(out.text(name), _py_assigned_type(out, n, fn))
            stack.extend(n.named_children)
    out.py_attributes[cls.id] = found = dict(kinds)
    return found


def _py_assigned_type(out: _Out, assignment: Node, fn: Node | None) -> str | None:
    """The class an assignment gives its target: its annotation, the class it constructs, or,
    in a method `fn`, the annotation of the parameter it copies. "None" itself (an attribute
    set to None before its value comes) is no kind; "" is none in sight."""
    typed = assignment.child_by_field_name("type")
    if typed is not None:
        return _py_type_name(out, typed) or ""
    right = assignment.child_by_field_name("right")
    if right is None:
        return ""
    if right.type == "none":
        return None
    if right.type == "identifier" and fn is not None:
        return _py_parameter(out, fn, out.text(right)) or ""
    return _py_constructed(out, right) or ""


def _py_parameter(out: _Out, fn: Node, name: str) -> str | None:
    """The class a parameter `name` of `fn` is annotated with, "" for a parameter with no class
    in sight, None when `fn` has no such parameter."""
    params = fn.child_by_field_name("parameters")
    for p in params.named_children if params is not None else ():
        if p.type == "identifier":
            if out.text(p) == name:
                return ""
        elif p.type in ("typed_parameter", "typed_default_parameter", "default_parameter"):
            first = p.child_by_field_name("name") or (p.named_children[0]
                                                      if p.named_children else None)
            if first is None or first.type != "identifier" or out.text(first) != name:
                continue
            return _py_type_name(out, p.child_by_field_name("type")) or ""
        elif p.type in ("list_splat_pattern", "dictionary_splat_pattern"):
            if any(out.text(c) == name for c in p.named_children):
                return ""
    return None


# Expressions whose subtrees bind no name of the scope they are in, but by `:=` (_py_locals).
_PY_BINDS_NOTHING = frozenset({
    "call", "argument_list", "keyword_argument", "attribute", "subscript", "slice",
    "string", "concatenated_string", "integer", "float", "true", "false", "none", "ellipsis",
    "binary_operator", "boolean_operator", "comparison_operator", "unary_operator",
    "not_operator", "conditional_expression", "await", "dictionary", "pair", "set",
    "return_statement", "assert_statement", "delete_statement",
    "pass_statement", "break_statement", "continue_statement", "comment"})


def _py_locals(out: _Out, scope: Node
               ) -> dict[str, tuple[list[int], list[str | None], list[tuple[int, int]]]]:
    """name -> (where, class, block) of each binding in the function or module `scope`'s own
    body (not in the functions, classes and comprehensions it holds), in the order of the text:
    their starts; the classes they give ("" for none in sight, None for `x = None`); the
    byte ranges of the blocks they are in (the scope's for its own statements)."""
    key = scope.id
    found = out.py_locals.get(key)
    if found is not None:
        return found
    names: dict[str, list[tuple[int, str | None, tuple[int, int]]]] = defaultdict(list)
    body = scope.child_by_field_name("body") if scope.type != "module" else scope
    whole = (scope.start_byte, scope.end_byte + 1)
    # Without `:=` in its text, an expression binds nothing here (a lambda's or a
    # comprehension's names are their own): its subtree is not walked.
    opaque = frozenset() if b":=" in out.src[scope.start_byte:scope.end_byte] \
        else _PY_BINDS_NOTHING
    stack = [(c, whole) for c in reversed(body.named_children)] if body is not None else []
    while stack:
        n, block = stack.pop()
        if n.type in opaque:
            continue
        if n.type == "decorated_definition":
            n = n.child_by_field_name("definition") or n
        if n.type in _PY_OWN_SCOPES:
            named = n.child_by_field_name("name")   # `def x():`, `class x:` bind x
            if named is not None and n.type in ("function_definition", "class_definition"):
                names[out.text(named)].append((n.start_byte, "", block))
            continue
        if n.type == "assignment":
            left = n.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                typed, right = n.child_by_field_name("type"), n.child_by_field_name("right")
                kind: str | None = _py_type_name(out, typed) or "" if typed else \
                    None if right is not None and right.type == "none" else \
                    _py_constructed(out, right) or ""
                names[out.text(left)].append((n.start_byte, kind, block))
            elif left is not None:
                for target in _py_targets(left):
                    names[out.text(target)].append((n.start_byte, "", block))
        elif n.type in ("for_statement", "for_in_clause"):
            left = n.child_by_field_name("left")
            for target in _py_targets(left) if left is not None else ():
                names[out.text(target)].append((n.start_byte, "", block))
        elif n.type in ("as_pattern_target", "named_expression"):
            target = n.named_children[0] if n.type == "as_pattern_target" and n.named_children \
                else n.child_by_field_name("name")
            if target is not None and target.type == "identifier":
                names[out.text(target)].append((n.start_byte, "", block))
        elif n.type in ("import_statement", "import_from_statement"):
            for item in n.children_by_field_name("name"):
                alias = item.child_by_field_name("alias") if item.type == "aliased_import" \
                    else item.named_children[0] if item.named_children else None
                if alias is not None:   # `import a.b` binds a, `from m import c as d` d
                    names[out.text(alias)].append((n.start_byte, "", block))
            continue
        elif n.type == "case_pattern":   # a match's captures (and classes: no matter)
            captures = [n]
            while captures:
                c = captures.pop()
                if c.type == "identifier":
                    names[out.text(c)].append((n.start_byte, "", block))
                captures.extend(c.named_children)
            continue
        if n.type == "block":
            block = (n.start_byte, n.end_byte)
        stack.extend((c, block) for c in reversed(n.named_children))
    for seen in names.values():
        seen.sort(key=lambda item: item[0])   # a walk in the text's order: sorted already
    found = out.py_locals[key] = {name: ([at for at, _, _ in seen], [t for _, t, _ in seen],
                                         [b for _, _, b in seen])
                                  for name, seen in names.items()}
    return found


def _py_targets(node: Node) -> list[Node]:
    """The names an assignment's or a loop's target binds (`a, (b, c)`, `*rest`)."""
    if node.type == "identifier":
        return [node]
    if node.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list",
                     "list_splat_pattern", "parenthesized_expression"):
        return [t for c in node.named_children for t in _py_targets(c)]
    return []


def _py_constructed(out: _Out, value: Node | None) -> str | None:
    """`Client(...)`, `http.Client(...)`: the class a value is made by, told by its name."""
    if value is None or value.type != "call":
        return None
    fn = value.child_by_field_name("function")
    if fn is None or fn.type not in ("identifier", "attribute"):
        return None
    dotted = _chain(out, fn, "attribute", "object", "attribute", _PY_BASES)
    last = dotted.rsplit(".", 1)[-1]
    if dotted == "?" or not last[:1].isupper() or last.isupper() or last in _PY_UNTYPED:
        return None    # a function, or a CONSTANT's call
    return dotted


def _py_type_name(out: _Out, node: Node | None) -> str | None:
    """The one class an annotation names (`Request`, `m.Request`, `"Request"`,
    `Optional[Request]`, `Request | None`); None for anything else (`list[Request]`, `Any`)."""
    while node is not None and node.type == "type" and len(node.named_children) == 1:
        node = node.named_children[0]
    if node is None:
        return None
    if node.type == "identifier":
        text = out.text(node)
        return None if text in _PY_UNTYPED else text
    if node.type == "attribute":
        dotted = _chain(out, node, "attribute", "object", "attribute", _PY_BASES)
        return None if dotted == "?" else dotted
    if node.type == "string":
        content = [c for c in node.named_children if c.type == "string_content"]
        text = out.text(content[0]).strip() if len(content) == 1 else ""
        return text if _PY_DOTTED.fullmatch(text) and text not in _PY_UNTYPED else None
    if node.type == "binary_operator":
        sides = [node.child_by_field_name("left"), node.child_by_field_name("right")]
        kept = [side for side in sides if side is not None and side.type != "none"
                and out.text(side) != "None"]
        return _py_type_name(out, kept[0]) if len(kept) == 1 else None
    if node.type in ("generic_type", "subscript"):
        head = node.named_children[0] if node.named_children else None
        if head is not None and out.text(head) in ("Optional", "typing.Optional"):
            inner = node.named_children[1] if len(node.named_children) > 1 else None
            while inner is not None and inner.type == "type_parameter":
                inner = inner.named_children[0] if inner.named_children else None
            return _py_type_name(out, inner)
    return None


def _py_call(out: _Out, node: Node) -> None:
    fn = node.child_by_field_name("function")
    if fn is not None:
        _py_named(out, fn, "call")


def _py_class(out: _Out, node: Node) -> None:
    bases = node.child_by_field_name("superclasses")
    if bases is None:
        return
    name = node.child_by_field_name("name")
    owner = out.text(name) if name is not None else None
    for base in bases.named_children:
        if base.type == "subscript":  # Generic[T]
            value = base.child_by_field_name("value")
            if value is None:
                continue
            base = value
        _py_named(out, base, "inherits", owner)


def _py_type(out: _Out, node: Node) -> None:
    """The classes a type annotation names: `User`, `models.Order | None`, `Optional["Item"]`
    (a string holding a dotted name is a forward reference, "list[Item]" names its types).
    A `type` nested in this one is captured, and read, on its own. Not what `Literal[...]`
    holds (values), nor `Annotated[T, ...]`'s metadata, nor the name `type X = ...` declares."""
    if (node.start_byte, node.end_byte) in out.not_types:
        return
    stack = list(reversed(node.named_children))
    while stack:
        n = stack.pop()
        if n.type in ("identifier", "attribute"):
            _py_named(out, n, "type")
        elif n.type == "string":
            _py_forward_ref(out, n)
        elif n.type == "subscript":
            value = n.child_by_field_name("value")
            if value is None:
                continue
            arguments = n.children_by_field_name("subscript")
            stack.extend(reversed([value] + [a for i, a in enumerate(arguments)
                                             if _py_type_argument(out, value, i)]))
        elif n.type != "type":
            stack.extend(reversed(n.named_children))


def _py_not_type(out: _Out, node: Node) -> None:
    """A `type` node that names no type (_PYTHON's "not_type" patterns: matched by the query,
    not by a walk up from each `type`, which a union of 20,000 made quadratic)."""
    out.not_types.add((node.start_byte, node.end_byte))


def _py_type_argument(out: _Out, generic: Node, i: int) -> bool:
    """Whether the `i`th argument of `generic[...]` is a type: none of `Literal`'s (values,
    `Literal["pending"]` is no use of a function `pending`), only the first of `Annotated`'s."""
    name = out.text(generic).rsplit(".", 1)[-1]
    return name != "Literal" and (i == 0 or name != "Annotated")


# A quoted annotation that is dotted names, subscripts, commas and unions ("dict[str, m.User]
# | None"), with no two names side by side ("not a name"): its dotted names, and between them.
_PY_DOTTED = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
_PY_BETWEEN_NAMES = re.compile(r"[\[\],|\s]*")
_PY_NAMES_APART = re.compile(r"\w\s+\w")
_PY_NOT_TYPES = frozenset({"None", "True", "False"})


def _py_forward_ref(out: _Out, string: Node) -> None:
    """A string annotation: each dotted name it holds ("models.User", "list[Item] | None") as
    a ref at its last part; nothing when it holds anything else (a literal, a call), or a
    `Literal` or `Annotated` (values and metadata, not types)."""
    content = [c for c in string.named_children if c.type == "string_content"]
    if len(content) != 1:
        return   # empty, or split by an escape or an interpolation: no plain name
    raw = out.src[content[0].start_byte:content[0].end_byte]
    text = raw.decode("utf-8", "replace")
    if not _PY_BETWEEN_NAMES.fullmatch(_PY_DOTTED.sub("", text)) or _PY_NAMES_APART.search(text):
        return
    names = [(m.start(), m.group()) for m in _PY_DOTTED.finditer(text)]
    if any(name.rsplit(".", 1)[-1] in ("Literal", "Annotated") for _, name in names):
        return
    for start, name in names:
        last = name.rsplit(".", 1)[-1]
        if last in _PY_NOT_TYPES:
            continue
        before = text[:start + len(name) - len(last)].encode()
        out.refs.append(Ref(last, name[:-len(last) - 1] or None, "type",
                            content[0].start_point[0] + 1 + before.count(b"\n"),
                            content[0].start_byte + len(before), None))


def _py_module_names(out: _Out, node: Node) -> frozenset[str]:
    """What the module binds by name: its imports' local names (read before: the imports'
    handlers run first), its functions and classes."""
    if out.module_names is None:
        names = {imp.alias or imp.name or "" for _, imp in out.imports if not imp.wildcard}
        root = node
        while root.parent is not None:
            root = root.parent
        for top in root.named_children:
            if top.type == "decorated_definition":
                top = top.child_by_field_name("definition") or top
            if top.type in ("function_definition", "class_definition"):
                name = top.child_by_field_name("name")
                if name is not None:
                    names.add(out.text(name))
        names.discard("")
        out.module_names = frozenset(names)
    return out.module_names


def _py_value(out: _Out, node: Node) -> None:
    """A function or class named as a value, not called: `Middleware(GZipMiddleware)`,
    `isinstance(x, Row)`, `key=utils.slug`, `except Timeout`, `raise Closed`. Only a name the
    module imports or defines (or a chain starting at one): every local variable passed along
    would otherwise be a reference to resolve, or a guess at a definition of its name."""
    head = node
    while head.type == "attribute":
        obj = head.child_by_field_name("object")
        if obj is None:
            return
        head = obj
    if head.type == "identifier" and out.text(head) in _py_module_names(out, node):
        _py_named(out, node, "ref")


def _py_arguments(out: _Out, call: Node) -> None:
    """A call's arguments that name a function or a class (_py_value). The query captures the
    call, not its `argument_list`, whose `parent` would walk down from the root again (a
    class's bases are an `argument_list` too: "inherits" refs, _py_class). An `argument_list`
    whose parent is an ERROR (`class Kid(Base)` without its colon, while it is typed) is
    captured itself: its names are read as a call's, with no function."""
    if call.type == "argument_list":
        arguments, fn = call, None
    else:
        arguments = call.child_by_field_name("arguments")
        fn = call.child_by_field_name("function")
    if arguments is None or arguments.type != "argument_list":
        return   # `f(x for x in xs)`: a generator, no names passed
    if fn is not None and fn.type == "identifier" and out.text(fn) == "super":
        return   # super(Class, self): the class around the call
    for arg in arguments.named_children:
        if arg.type == "keyword_argument":
            value = arg.child_by_field_name("value")
            if value is not None and value.type in ("identifier", "attribute"):
                _py_value(out, value)
        elif arg.type in ("identifier", "attribute"):
            _py_value(out, arg)


def _py_except(out: _Out, node: Node) -> None:
    caught = node.named_children[0] if node.named_children else None
    if caught is not None and caught.type == "as_pattern":
        caught = caught.named_children[0] if caught.named_children else None
    if caught is None:
        return
    for item in (caught.named_children if caught.type == "tuple" else [caught]):
        if item.type in ("identifier", "attribute"):
            _py_value(out, item)


def _py_raise(out: _Out, node: Node) -> None:
    raised = node.named_children[0] if node.named_children else None
    if raised is not None and raised.type in ("identifier", "attribute"):
        _py_value(out, raised)


def _py_decorator(out: _Out, node: Node) -> None:
    for c in node.named_children:
        if c.type != "comment":
            _py_named(out, c, "ref")  # a call is recorded by _py_call
            return


# ---------------------------------------------------------------------------------------------
# JavaScript, TypeScript, TSX

_JS_BASES = frozenset({"identifier", "this", "super"})
_JS_CLASS_TYPES = ("class_declaration", "class", "abstract_class_declaration")


def _js_string(out: _Out, node: Node | None) -> str | None:
    if node is None or node.type != "string":
        return None
    return _unquote(out.text(node))


def _js_member(out: _Out, node: Node, kind: str, owner: str | None = None) -> None:
    if node.type == "identifier":
        out.ref(node, out.text(node), None, kind, owner)
    elif node.type == "member_expression":
        prop, obj = node.child_by_field_name("property"), node.child_by_field_name("object")
        if prop is not None and obj is not None:
            out.ref(prop, out.text(prop), _chain(out, obj, "member_expression", "object",
                                                 "property", _JS_BASES), kind, owner)


def _js_type(out: _Out, node: Node, kind: str, owner: str | None) -> None:
    """A TypeScript type in a heritage clause: T, ns.T, T<U>."""
    if node.type == "generic_type":
        inner = node.child_by_field_name("name")
        if inner is None:
            return
        node = inner
    if node.type in ("type_identifier", "identifier"):
        out.ref(node, out.text(node), None, kind, owner)
    elif node.type == "nested_type_identifier":
        name, module = node.child_by_field_name("name"), node.child_by_field_name("module")
        if name is not None:
            out.ref(name, out.text(name),
                    out.text(module).replace(" ", "") if module is not None else None, kind, owner)
    else:
        _js_member(out, node, kind, owner)


# Declarations whose `name` is a type_identifier that they declare, not use.
_TS_DECLARING = ("class_declaration", "abstract_class_declaration", "class",
                 "interface_declaration", "type_alias_declaration", "type_parameter")
# Heritage clauses: their types are recorded as "inherits" (_js_class, _js_interface).
_TS_HERITAGE = ("implements_clause", "extends_type_clause")
# The type names that are no use of a type (_ts_not_type), matched by the query rather than by
# a look at each name's parent, which tree-sitter finds from the root down (a union of 20,000
# types, each name as deep as its place in the union, took minutes).
_TS_NOT_TYPES = "\n".join(
    [f"({d} name: (type_identifier) @not_type)" for d in _TS_DECLARING]
    + [f"({h} [(type_identifier) (nested_type_identifier)] @not_type)\n"
       f"({h} (generic_type name: (_) @not_type))" for h in _TS_HERITAGE]
    + ["(nested_type_identifier name: (type_identifier) @not_type)"])


def _ts_not_type(out: _Out, node: Node) -> None:
    out.not_types.add((node.start_byte, node.end_byte))


def _ts_type_ref(out: _Out, node: Node) -> None:
    """A TypeScript type named in an annotation, a return type, a type argument, an alias, a
    constraint, `as T` or `satisfies T`: `User`, `m.Order`. Not the name a declaration
    declares, not a heritage clause's own type (an "inherits" ref already), not a type
    parameter of an enclosing declaration (`T` in `class Box<T> { v: T }`: a lookup in the
    ranges _ts_type_param read, not a walk up the tree, which nested types make quadratic)."""
    if (node.start_byte, node.end_byte) in out.not_types:
        return
    if node.type == "nested_type_identifier":
        name, module = node.child_by_field_name("name"), node.child_by_field_name("module")
        if name is not None:
            out.ref(name, out.text(name),
                    out.text(module).replace(" ", "") if module is not None else None, "type")
        return
    text = out.text(node)
    if text == "bigint" or out.type_param(text, node.start_byte):
        return   # a primitive, as `number` (which the grammar reads as one)
    out.ref(node, text, None, "type")


def _ts_type_param(out: _Out, name: Node) -> None:
    """`T` of `<T>`: a name the declaration holding the type parameters declares."""
    params = name.parent.parent if name.parent is not None else None
    scope = params.parent if params is not None else None
    if scope is not None:
        out.type_params.setdefault(out.text(name), []).append((scope.start_byte, scope.end_byte))


def _ts_local_type(out: _Out, name: Node) -> None:
    """`K` of a mapped type `{[K in keyof T]: ...}`, used in its index signature, and `U` of
    `infer U`, used in its conditional type: type names declared where they are written."""
    scope: Node | None = name.parent
    if scope is not None and scope.type == "mapped_type_clause":
        scope = scope.parent
    else:
        for _ in range(32):   # the conditional type whose `extends` clause infers it
            if scope is None or scope.type == "conditional_type":
                break
            scope = scope.parent
    if scope is not None:
        out.type_params.setdefault(out.text(name), []).append((scope.start_byte, scope.end_byte))


def _ts_block_type(out: _Out, name: Node) -> None:
    """A type alias, interface or class declared in a block (a function's body, a test's
    callback): a name the block declares, as a type parameter is, and no definition of the
    file's symbols, which are those of its top level."""
    block = name.parent.parent if name.parent is not None else None
    if block is not None:
        out.type_params.setdefault(out.text(name), []).append((block.start_byte, block.end_byte))


def _js_import(out: _Out, node: Node) -> None:
    module = _js_string(out, node.child_by_field_name("source"))
    clauses = [c for c in node.named_children
               if c.type in ("import_clause", "import_require_clause")]
    for clause in clauses:
        if clause.type == "import_require_clause":  # TS: import x = require("./x")
            module = _js_string(out, clause.child_by_field_name("source"))
            ident = next((c for c in clause.named_children if c.type == "identifier"), None)
            if module is not None and ident is not None:
                out.imp(ident, module, None, out.text(ident))
            return
    if module is None:
        return
    if not clauses:
        out.imp(node, module, None, None)
        return
    for c in clauses[0].named_children:
        if c.type == "identifier":
            out.imp(c, module, "default", out.text(c))
        elif c.type == "namespace_import":
            ident = next((i for i in c.named_children if i.type == "identifier"), None)
            if ident is not None:
                out.imp(ident, module, None, out.text(ident))
        elif c.type == "named_imports":
            for spec in c.named_children:
                _js_specifier(out, spec, module)


def _js_specifier(out: _Out, spec: Node, module: str) -> None:
    if spec.type not in ("import_specifier", "export_specifier"):
        return
    name, alias = spec.child_by_field_name("name"), spec.child_by_field_name("alias")
    if name is None:
        return
    text = _unquote(out.text(name)) if name.type == "string" else out.text(name)
    out.imp(name, module, text, _unquote(out.text(alias)) if alias is not None else None)


def _js_export(out: _Out, node: Node) -> None:
    module = _js_string(out, node.child_by_field_name("source"))
    if module is None:
        return
    named = False
    for c in node.named_children:
        if c.type == "export_clause":
            named = True
            for spec in c.named_children:
                _js_specifier(out, spec, module)
        elif c.type == "namespace_export":
            named = True
            ident = next((i for i in c.named_children if i.type in ("identifier", "string")),
                         None)
            out.imp(ident or c, module, None,
                    _unquote(out.text(ident)) if ident is not None else None)
    if not named:  # export * from "./m"
        out.imp(node, module, None, None, wildcard=True)


def _js_binding(node: Node) -> Node | None:
    """The variable_declarator whose value `node` is (through `await`), if any."""
    parent = node.parent
    if parent is not None and parent.type == "await_expression":
        node, parent = parent, parent.parent
    if parent is not None and parent.type == "variable_declarator":
        value = parent.child_by_field_name("value")
        if value is not None and value.id == node.id:
            return parent
    return None


def _js_module_call(out: _Out, node: Node, module: str) -> None:
    """`require("m")` / `import("m")`: an import named by what it is assigned to."""
    holder = node
    prop_name: str | None = None
    parent = node.parent
    if parent is not None and parent.type == "member_expression":  # require("m").y
        prop = parent.child_by_field_name("property")
        obj = parent.child_by_field_name("object")
        if prop is not None and obj is not None and obj.id == node.id:
            holder, prop_name = parent, out.text(prop)
    decl = _js_binding(holder)
    target = decl.child_by_field_name("name") if decl is not None else None
    if target is not None and target.type == "identifier":
        alias = out.text(target)
        out.imp(target, module, prop_name, alias if alias != prop_name else None)
    elif target is not None and target.type == "object_pattern" and prop_name is None:
        for p in target.named_children:  # const {a, b: c} = require("m")
            if p.type == "shorthand_property_identifier_pattern":
                out.imp(p, module, out.text(p), None)
            elif p.type == "pair_pattern":
                key, value = p.child_by_field_name("key"), p.child_by_field_name("value")
                if key is not None and value is not None and value.type == "identifier":
                    out.imp(key, module, _unquote(out.text(key)), out.text(value))
    else:
        out.imp(node, module, prop_name, None)


def _js_call(out: _Out, node: Node) -> None:
    fn = node.child_by_field_name("function")
    if fn is None:
        return
    if fn.type == "import" or fn.type == "identifier" and out.text(fn) == "require":
        args = node.child_by_field_name("arguments")
        first = args.named_children[0] if args is not None and args.named_child_count else None
        module = _js_string(out, first)
        if module is not None:
            _js_module_call(out, node, module)
            return
    _js_member(out, fn, "call")


def _js_new(out: _Out, node: Node) -> None:
    ctor = node.child_by_field_name("constructor")
    if ctor is not None:
        _js_member(out, ctor, "call")


def _js_class(out: _Out, node: Node) -> None:
    heritage = next((c for c in node.children if c.type == "class_heritage"), None)
    if heritage is None:
        return
    name = node.child_by_field_name("name")
    owner: str | None = None
    if name is not None:
        owner = out.text(name)
    elif node.parent is not None and node.parent.type == "export_statement":
        owner = "default"
    else:
        decl = _js_binding(node)
        target = decl.child_by_field_name("name") if decl is not None else None
        if target is not None and target.type == "identifier":
            owner = out.text(target)
    for c in heritage.named_children:
        if c.type == "extends_clause":
            for value in c.children_by_field_name("value"):
                _js_member(out, value, "inherits", owner)
        elif c.type == "implements_clause":
            for t in c.named_children:
                _js_type(out, t, "inherits", owner)
        else:  # JavaScript: class_heritage holds the expression itself
            _js_member(out, c, "inherits", owner)


def _js_interface(out: _Out, node: Node) -> None:
    name = node.child_by_field_name("name")
    owner = out.text(name) if name is not None else None
    for c in node.named_children:
        if c.type == "extends_type_clause":
            for t in c.named_children:
                _js_type(out, t, "inherits", owner)


def _js_element(out: _Out, node: Node) -> None:
    """`<Button />` and `<ui.Panel>` use a component; lowercase names are HTML tags."""
    name = node.child_by_field_name("name")
    if name is None:
        return
    if name.type == "member_expression" or (
            name.type == "identifier" and out.text(name)[:1].isupper()):
        _js_member(out, name, "call")


def _js_decorator(out: _Out, node: Node) -> None:
    for c in node.named_children:
        if c.type != "comment":
            _js_member(out, c, "ref")  # a call is recorded by _js_call
            return


# ---------------------------------------------------------------------------------------------
# Go

_GO_BASES = frozenset({"identifier"})
_GO_VERSION = re.compile(r"v[0-9]+")
_GO_DOT_VERSION = re.compile(r"\.v[0-9]+$")


def _go_package_name(path: str) -> str:
    segments = [s for s in path.split("/") if s]
    if not segments:
        return path
    last = segments[-1]
    if _GO_VERSION.fullmatch(last) and len(segments) > 1:
        last = segments[-2]
    return _GO_DOT_VERSION.sub("", last) or last


def _go_import(out: _Out, node: Node) -> None:
    path = node.child_by_field_name("path")
    if path is None:
        return
    module = _unquote(out.text(path))
    name = node.child_by_field_name("name")
    if name is None:
        out.imp(path, module, None, _go_package_name(module))
    else:
        alias = out.text(name)
        out.imp(path, module, None, alias, wildcard=alias == ".")


def _go_call(out: _Out, node: Node) -> None:
    fn = node.child_by_field_name("function")
    if fn is None:
        return
    if fn.type == "identifier":
        out.ref(fn, out.text(fn), None, "call")
    elif fn.type == "selector_expression":
        field, operand = fn.child_by_field_name("field"), fn.child_by_field_name("operand")
        if field is not None and operand is not None:
            qualifier = _go_declared_type(out, operand) if operand.type == "identifier" else None
            out.ref(field, out.text(field), qualifier or
                    _chain(out, operand, "selector_expression", "operand", "field", _GO_BASES),
                    "call")


# Stored with the structure (meta `extract_version`): a store whose references an earlier
# extractor read has every file read again, once (2: a Go call on a parameter or receiver
# qualified by its declared type, _go_declared_type; 3: a Java call on a variable qualified by
# its declared type, _java_declared_type; Rust test code, FileStructure.tests, a Rust path
# qualifier's last `::`, and the place of an import: a Rust `use` inside a module starts its
# `super::` there; 4: Rust's cfg(test) fns and impls, cfg(all(test, ...)), rstest, test_case;
# 5: a Go file's build constraint, meta `go_build:<file id>`, index/structure.py; Python and
# TypeScript type annotations, and Java's and Go's types, refs of kind "type"; a Python
# function or class the module imports or defines, named as a value: an argument, `except`,
# `raise`; 6: a Python call on a variable qualified by its class where it is in sight,
# _py_declared_type).
EXTRACT_VERSION = "6"

_GO_FUNCTIONS = frozenset({"function_declaration", "method_declaration", "func_literal"})


def _go_declared_type(out: _Out, ident: Node) -> str | None:
    """The type the variable `ident` is declared with in the nearest function that declares it,
    as the call's qualifier (`t *testing.T` -> `testing.T`, `c *Command` -> `Command`): a
    parameter, a receiver, or a local declared before the call with its type in sight (`var c
    Command`, `c := &Command{...}`, `c := Command{...}`). `t.Run(...)` is then a call on a
    `testing.T` (another package's), not a possible call of every `Run` of the repository
    (urfave/cli's `Command.Run`: 135 such "callers"). None where the type is not in sight (`c :=
    New()`) or not a named type."""
    name = out.text(ident)
    here = ident.start_byte
    if out.go_scopes is None:   # the functions around, by bisection: `parent` walks from the
        out.go_scopes = _scope_table(out, "go", _GO_AROUND, _go_around_query)   # root again
    for n in _around(out.go_scopes, ident):
        # The innermost declaration before the call whose scope holds the call.
        seen = [t for at, start, end, t in _go_locals(out, n).get(name, ())
                if at < here and start <= here < end]
        if seen:
            return seen[-1] or None
        for field in ("receiver", "parameters"):
            params = n.child_by_field_name(field)
            for param in params.named_children if params is not None else ():
                if param.type != "parameter_declaration" or not any(
                        out.text(c) == name for c in param.children_by_field_name("name")):
                    continue
                return _go_type_name(out, param.child_by_field_name("type"))
    return None


_GO_AROUND = "[(function_declaration) (method_declaration) (func_literal)] @around"
_go_around_query: list[Query] = []


# Where a Go declaration is seen: the block (or the if, for, switch or case clause) holding it.
_GO_SCOPES = frozenset({"block", "if_statement", "for_statement", "expression_switch_statement",
                        "type_switch_statement", "select_statement", "expression_case",
                        "type_case", "default_case", "communication_case"})


def _go_locals(out: _Out, fn: Node) -> dict[str, list[tuple[int, int, int, str]]]:
    """name -> (where, scope start, scope end, type name or "" when not in sight) of each local
    variable the function `fn` declares in its own body (not in the closures it holds), in the
    order declared. A range clause's and a type switch's variables are declared with no type
    in sight: they hide a parameter of the same name, and say nothing of their own type."""
    key = fn.start_byte
    found = out.locals.get(key)
    if found is not None:
        return found
    found = {}

    def declare(target: Node, at: Node, kind: str, scope: Node) -> None:
        found.setdefault(out.text(target), []).append(
            (at.start_byte, scope.start_byte, scope.end_byte, kind))

    body = fn.child_by_field_name("body")
    # Each node with the innermost scope above it (_GO_SCOPES, else the function), carried
    # down: a walk up by `parent` from each declaration started at the root each step.
    stack: list[tuple[Node, Node]] = [(body, fn)] if body is not None else []
    while stack:
        n, scope = stack.pop()
        if n.type == "func_literal":
            continue
        if n.type == "short_var_declaration":
            left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
            names = left.named_children if left is not None else []
            values = right.named_children if right is not None else []
            for i, target in enumerate(names):
                value = values[i] if len(values) == len(names) else None
                declare(target, n, _go_literal_type(out, value) or "", scope)
        elif n.type == "var_spec":
            kind = _go_type_name(out, n.child_by_field_name("type")) or ""
            for target in n.children_by_field_name("name"):
                declare(target, n, kind, scope)
        elif n.type == "range_clause":
            left = n.child_by_field_name("left")
            for target in left.named_children if left is not None else []:
                declare(target, n, "", scope)   # its for statement: seen there
        elif n.type == "type_switch_statement":
            alias = n.child_by_field_name("alias")
            for target in alias.named_children if alias is not None else []:
                declare(target, alias, "", n)
        inner = n if n.type in _GO_SCOPES else scope
        stack.extend((c, inner) for c in reversed(n.named_children))
    for places in found.values():
        places.sort()
    out.locals[key] = found
    return found


def _go_literal_type(out: _Out, value: Node | None) -> str | None:
    """The type of `T{...}` or `&T{...}`; None for any other value."""
    if value is not None and value.type == "unary_expression" and value.named_children:
        value = value.named_children[-1]
    if value is None or value.type != "composite_literal":
        return None
    return _go_type_name(out, value.child_by_field_name("type"))


def _go_type_name(out: _Out, node: Node | None) -> str | None:
    while node is not None and node.type in ("pointer_type", "generic_type",
                                               "parenthesized_type"):
        node = (node.child_by_field_name("type") if node.type == "generic_type"
                else node.named_children[0] if node.named_children else None)
    if node is None:
        return None
    if node.type == "type_identifier":
        return out.text(node)
    if node.type == "qualified_type":
        package, name = node.child_by_field_name("package"), node.child_by_field_name("name")
        if package is not None and name is not None:
            return f"{out.text(package)}.{out.text(name)}"
    return None


def _go_type_ref(out: _Out, node: Node | None, owner: str | None) -> None:
    if node is not None and node.type == "generic_type":
        node = node.child_by_field_name("type")
    if node is None:
        return
    if node.type == "type_identifier":
        out.ref(node, out.text(node), None, "inherits", owner)
    elif node.type == "qualified_type":
        name, package = node.child_by_field_name("name"), node.child_by_field_name("package")
        if name is not None:
            out.ref(name, out.text(name), out.text(package) if package is not None else None,
                    "inherits", owner)


def _go_owner(out: _Out, type_node: Node | None) -> str | None:
    """The name of the type_spec declaring `type_node` (a struct or interface type)."""
    spec = type_node.parent if type_node is not None else None
    if spec is not None and spec.type == "type_spec":
        name = spec.child_by_field_name("name")
        if name is not None:
            return out.text(name)
    return None


# Go's predeclared types: a name of the language, not of the repository.
_GO_PREDECLARED = frozenset({
    "any", "bool", "byte", "comparable", "complex64", "complex128", "error", "float32",
    "float64", "int", "int8", "int16", "int32", "int64", "rune", "string", "uint", "uint8",
    "uint16", "uint32", "uint64", "uintptr"})


def _go_named_type(out: _Out, node: Node) -> None:
    """A Go type named in a parameter, a result, a field, a `var`, a composite literal
    (`&Command{}`), a type assertion or a type argument: `Config`, `util.Opt`. Not the name a
    `type` declares, not a method's receiver (its own type), not an embedded field or
    interface (recorded as "inherits"), not a type parameter, not a predeclared type."""
    parent = node.parent
    if parent is None or parent.type == "qualified_type":
        return   # read as the qualified type
    if parent.type in ("type_spec", "type_alias") and parent.child_by_field_name("name") == node:
        return
    up: Node | None = parent
    for _ in range(4):   # `(l *List[T])`: generic, pointer, parameter_declaration, its list
        if up is None:
            break
        if up.type == "field_declaration" and up.child_by_field_name("name") is None:
            return   # embedded
        if up.type == "type_elem" and up.parent is not None and \
                up.parent.type == "interface_type":
            return   # an interface's embedded one
        if up.type == "parameter_list" and up.parent is not None and \
                up.parent.type == "method_declaration" and \
                up.parent.child_by_field_name("receiver") == up:
            return
        up = up.parent
    if node.type == "qualified_type":
        package, name = node.child_by_field_name("package"), node.child_by_field_name("name")
        if package is not None and name is not None:
            out.ref(name, out.text(name), out.text(package), "type")
        return
    text = out.text(node)
    if text in _GO_PREDECLARED or out.type_param(text, node.start_byte):
        return
    out.ref(node, text, None, "type")


def _go_type_param(out: _Out, node: Node) -> None:
    """`T` of `[T any]`: names the declaration holding the list declares."""
    scope = node.parent.parent if node.parent is not None else None
    if scope is None:
        return
    for name in node.children_by_field_name("name"):
        out.type_params.setdefault(out.text(name), []).append((scope.start_byte, scope.end_byte))


def _go_receiver(out: _Out, receiver: Node) -> None:
    """`T` of `func (l *List[T]) Push(v T)`: the receiver's type arguments name the method's
    type parameters."""
    scope = receiver.parent
    stack = list(receiver.named_children)
    while stack and scope is not None:
        n = stack.pop()
        if n.type == "type_arguments":
            for elem in n.named_children:
                name = elem.named_children[0] if elem.named_children else elem
                if name.type == "type_identifier":
                    out.type_params.setdefault(out.text(name), []).append(
                        (scope.start_byte, scope.end_byte))
        else:
            stack.extend(n.named_children)


def _go_embedded_field(out: _Out, node: Node) -> None:
    if node.child_by_field_name("name") is not None:
        return
    fields = node.parent
    struct = fields.parent if fields is not None else None
    if struct is None or struct.type != "struct_type":
        return
    _go_type_ref(out, node.child_by_field_name("type"), _go_owner(out, struct))


def _go_embedded_interface(out: _Out, node: Node) -> None:
    interface = node.parent
    if interface is None or interface.type != "interface_type" or node.named_child_count != 1:
        return  # unions and ~T constraints are not embeddings
    _go_type_ref(out, node.named_children[0], _go_owner(out, interface))


# ---------------------------------------------------------------------------------------------
# Java

_JAVA_BASES = frozenset({"identifier", "this", "super"})


def _java_import(out: _Out, node: Node) -> None:
    path = next((c for c in node.named_children
                 if c.type in ("scoped_identifier", "identifier")), None)
    if path is None:
        return
    full = re.sub(r"\s+", "", out.text(path))
    if any(c.type == "asterisk" for c in node.named_children):
        out.imp(path, full, None, None, wildcard=True)
        return
    module, _, name = full.rpartition(".")
    at = path.child_by_field_name("name") if path.type == "scoped_identifier" else path
    out.imp(at or path, module, name, None)


def _java_type(out: _Out, node: Node, kind: str, owner: str | None) -> None:
    if node.type == "generic_type":
        inner = next((c for c in node.named_children
                      if c.type in ("type_identifier", "scoped_type_identifier")), None)
        if inner is None:
            return
        node = inner
    if node.type == "type_identifier":
        out.ref(node, out.text(node), None, kind, owner)
    elif node.type == "scoped_type_identifier":
        parts = [c for c in node.named_children if c.type == "type_identifier"]
        if parts:
            qualifier = re.sub(r"\s+", "", out.src[node.start_byte:parts[-1].start_byte]
                               .decode("utf-8", "replace")).rstrip(".")
            out.ref(parts[-1], out.text(parts[-1]), qualifier or None, kind, owner)


def _java_invocation(out: _Out, node: Node) -> None:
    name = node.child_by_field_name("name")
    if name is None:
        return
    obj = node.child_by_field_name("object")
    qualifier = None if obj is None else _chain(out, obj, "field_access", "object", "field",
                                                _JAVA_BASES)
    if obj is not None and obj.type == "identifier":
        qualifier = _java_declared_type(out, obj) or qualifier
    out.ref(name, out.text(name), qualifier, "call")


# The parameters of a method or a lambda that name a type.
_JAVA_DECLARES = frozenset({"formal_parameter", "spread_parameter"})


def _java_declared_type(out: _Out, ident: Node) -> str | None:
    """The type the variable `ident` is declared with where the call is (`in.nextString()`
    with `JsonReader in` a parameter is a call of JsonReader's nextString, not of every
    `nextString` of the repository: gson's JsonReader.nextString had 92 callers under the
    confidence floor): a parameter, a local declared before the call, a for-each or catch
    variable, a resource, a field of an enclosing class; `var x = new T(...)` is a T. None when
    the nearest declaration gives no class type (a primitive, an array, a lambda's parameter)
    or there is none in sight (then the call keeps the variable's name, as before)."""
    name = out.text(ident)
    here = ident.start_byte
    n, child = ident.parent, ident
    found, at = None, -1
    while n is not None:
        found = _java_declared_here(out, n, child, name, here)
        if found is not None:
            at = n.start_byte if n.type not in _JAVA_SCOPES else -1
            break
        n, child = n.parent, n
    # A pattern variable (`o instanceof Foo f`, `case Foo f ->`) declared after what the walk
    # found, before the call, is the nearer one (flow scoping is not modelled: the nearest
    # before the call is taken).
    pattern = _java_pattern(out, ident, name, here)
    if pattern is not None and pattern[0] > at:
        return pattern[1] or None
    return found or None


# Where a walk up from a call finds a declaration at no position of its own: a block's locals
# and a class's fields are looked up from the block or class body itself.
_JAVA_SCOPES = frozenset({"block", "constructor_body", "switch_block_statement_group",
                          "class_body", "enum_body", "interface_body", "record_declaration"})
_JAVA_BODIES = frozenset({"method_declaration", "constructor_declaration", "lambda_expression",
                          "static_initializer", "field_declaration"})


def _java_pattern(out: _Out, ident: Node, name: str, here: int) -> tuple[int, str] | None:
    """(where, type or "") of the last pattern variable named `name` before `here` in the
    method (or lambda, initializer) around the call."""
    body = ident.parent
    while body is not None and body.type not in _JAVA_BODIES:
        body = body.parent
    if body is None:
        return None
    best = None
    stack = [body]
    while stack:
        n = stack.pop()
        if n.start_byte >= here:
            continue
        named, kind = None, None
        if n.type == "instanceof_expression":
            named, kind = n.child_by_field_name("name"), n.child_by_field_name("right")
        elif n.type in ("type_pattern", "record_pattern_component"):
            parts = n.named_children
            if len(parts) == 2 and parts[1].type == "identifier":
                named, kind = parts[1], parts[0]
        if named is not None and out.text(named) == name and _java_in_statement(n, here):
            best = max(best or (-1, ""), (named.start_byte, _java_class_type(out, kind) or ""))
        stack.extend(n.named_children)
    return best


_JAVA_STATEMENTS = frozenset({"if_statement", "while_statement", "for_statement",
                              "do_statement", "switch_rule", "switch_block_statement_group",
                              "expression_statement", "return_statement",
                              "local_variable_declaration", "yield_statement"})


def _java_in_statement(pattern: Node, here: int) -> bool:
    """Whether the call at `here` is inside the statement that holds the pattern (its `if`
    and branches, its switch case): where the pattern's variable is seen, but for the flow
    scoping of `if (!(o instanceof Foo f)) return;`, which is not modelled."""
    n = pattern.parent
    while n is not None and n.type not in _JAVA_STATEMENTS:
        n = n.parent
    if n is None or not n.start_byte <= here < n.end_byte:
        return False
    other = n.child_by_field_name("alternative") if n.type == "if_statement" else None
    return other is None or not other.start_byte <= here < other.end_byte   # not in its else


def _java_declared_here(out: _Out, n: Node, child: Node, name: str, here: int) -> str | None:
    """The type (or "" for one not named) that `n` declares `name` with, as seen from its child
    `child` at byte `here`; None when `n` does not declare it."""
    t = n.type
    if t in ("block", "constructor_body", "switch_block_statement_group"):
        found = None
        for c in n.named_children:
            if c.start_byte >= here:
                break
            if c.type == "local_variable_declaration":
                found = _java_variables(out, c, name) or found
        return found
    if t in ("method_declaration", "constructor_declaration", "lambda_expression"):
        params = n.child_by_field_name("parameters")
        if params is not None and params.type == "identifier":   # `in -> in.trim()`
            return "" if out.text(params) == name else None
        for p in params.named_children if params is not None else ():
            if p.type == "identifier" and out.text(p) == name:
                return ""                       # a lambda's parameter: its type is inferred
            if p.type in _JAVA_DECLARES and _java_name_of(out, p) == name:
                return _java_class_type(out, p.child_by_field_name("type")) or ""
        return None
    if t == "enhanced_for_statement":          # its variable is seen in its body
        if child == n.child_by_field_name("body") and _java_name_of(out, n) == name:
            return _java_class_type(out, n.child_by_field_name("type")) or ""   # var: ""
        return None
    if t == "for_statement":                   # `for (Foo x = ...; ...)`
        init = n.child_by_field_name("init")
        if init is not None and init != child and init.type == "local_variable_declaration":
            return _java_variables(out, init, name)
        return None
    if t == "try_with_resources_statement":    # `try (Reader r = open())`
        resources = n.child_by_field_name("resources")
        for r in resources.named_children if resources is not None else ():
            if r.start_byte < here and r != child and r.type == "resource" and \
                    _java_name_of(out, r) == name:
                return _java_typed(out, r.child_by_field_name("type"),
                                   r.child_by_field_name("value"))
        return None
    if t == "catch_clause":                    # `catch (IOException e)`: one type, not a union
        param = next((c for c in n.named_children if c.type == "catch_formal_parameter"), None)
        if param is None or param == child or _java_name_of(out, param) != name:
            return None
        kinds = next((c for c in param.named_children if c.type == "catch_type"), None)
        one = kinds.named_children if kinds is not None else []
        return (_java_class_type(out, one[0]) or "") if len(one) == 1 else ""
    if t in ("class_body", "enum_body", "record_declaration", "interface_body"):
        for c in n.named_children:
            if c.type == "field_declaration":
                found = _java_variables(out, c, name)
                if found is not None:
                    return found
    return None


def _java_name_of(out: _Out, node: Node) -> str | None:
    named = node.child_by_field_name("name")
    if named is None:   # a catch parameter, a spread parameter: the last identifier
        named = next((c for c in reversed(node.named_children) if c.type == "identifier"),
                     None)
        if named is None:
            decl = next((c for c in node.named_children if c.type == "variable_declarator"),
                        None)
            named = decl.child_by_field_name("name") if decl is not None else None
    return out.text(named) if named is not None else None


def _java_variables(out: _Out, decl: Node, name: str) -> str | None:
    """The type a local variable or field declaration gives `name` ("" when not a class
    type), None when it declares no `name`."""
    kind = decl.child_by_field_name("type")
    for d in decl.children_by_field_name("declarator"):
        var = d.child_by_field_name("name")
        if var is None or out.text(var) != name:
            continue
        if d.child_by_field_name("dimensions") is not None:
            return ""                                # `Foo x[]`: an array
        return _java_typed(out, kind, d.child_by_field_name("value"))
    return None


def _java_typed(out: _Out, kind: Node | None, value: Node | None) -> str:
    """A declaration's class type, "" when none is named: `var w = new JsonWriter(...)` is a
    JsonWriter; `var` of anything else, a primitive, an array are not named."""
    if kind is not None and kind.type == "type_identifier" and out.text(kind) == "var":
        if value is not None and value.type == "object_creation_expression":
            return _java_class_type(out, value.child_by_field_name("type")) or ""
        return ""
    return _java_class_type(out, kind) or ""


def _java_class_type(out: _Out, node: Node | None) -> str | None:
    """A class type's name as written (`JsonReader`, `Map.Entry`; generics left out); None for
    a primitive, an array or anything else."""
    if node is not None and node.type == "generic_type":
        node = next((c for c in node.named_children
                     if c.type in ("type_identifier", "scoped_type_identifier")), None)
    if node is None or node.type not in ("type_identifier", "scoped_type_identifier"):
        return None
    text = re.sub(r"\s+", "", out.text(node))
    return None if text in ("", "var") else text


def _java_new(out: _Out, node: Node) -> None:
    t = node.child_by_field_name("type")
    if t is not None:
        _java_type(out, t, "call", None)


def _java_class(out: _Out, node: Node) -> None:
    name = node.child_by_field_name("name")
    owner = out.text(name) if name is not None else None
    for c in node.named_children:
        if c.type in ("superclass", "super_interfaces", "extends_interfaces"):
            for t in c.named_children:
                if t.type == "type_list":
                    for u in t.named_children:
                        _java_type(out, u, "inherits", owner)
                else:
                    _java_type(out, t, "inherits", owner)


# Where a Java type is recorded already: a heritage clause's ("inherits", _java_class) and a
# constructed one's ("call", _java_new).
_JAVA_RECORDED = frozenset({"superclass", "super_interfaces", "extends_interfaces",
                            "object_creation_expression"})


def _java_type_ref(out: _Out, node: Node) -> None:
    """A Java type named in a field, a parameter, a return type, a local, a cast, `instanceof`,
    a catch, `throws`, a class literal or a type argument: `User`, `Map.Entry`. Not a type
    parameter (`T` of `class Box<T>`, where it is declared or used), not `var`, not what a
    heritage clause or `new` names (recorded as "inherits" and "call")."""
    parent = node.parent
    if parent is None or parent.type == "scoped_type_identifier" or parent.type == "type_parameter":
        return   # a part of a longer name (its outermost is read), or a declared parameter
    up: Node | None = parent
    if up.type == "generic_type" and up.named_children and up.named_children[0] == node:
        up = up.parent   # `B<Arg>`'s B is what the generic's own parent makes of it
    if up is not None and up.type == "type_list":
        up = up.parent
    if up is not None and up.type in _JAVA_RECORDED:
        return
    if node.type == "scoped_type_identifier":
        name = node.named_children[-1] if node.named_children else None
        if name is None or name.type != "type_identifier":
            return
        qualifier = out.src[node.start_byte:name.start_byte].decode("utf-8", "replace")
        out.ref(name, out.text(name), "".join(qualifier.split()).rstrip(".") or None, "type")
        return
    text = out.text(node)
    if text == "var" or out.type_param(text, node.start_byte):
        return
    out.ref(node, text, None, "type")


def _java_type_param(out: _Out, node: Node) -> None:
    """`T` of `<T extends Base>`: a name the declaration holding the parameters declares."""
    name = next((c for c in node.named_children if c.type == "type_identifier"), None)
    scope = node.parent.parent if node.parent is not None else None
    if name is not None and scope is not None:
        out.type_params.setdefault(out.text(name), []).append((scope.start_byte, scope.end_byte))


def _java_method_reference(out: _Out, node: Node) -> None:
    kids = node.children
    if len(kids) < 3:
        return
    target, last = kids[0], kids[-1]
    if last.type == "new":  # Foo::new refers to the constructor: the class itself
        if target.type == "identifier":
            out.ref(target, out.text(target), None, "ref")
        elif target.type == "field_access":
            field, obj = target.child_by_field_name("field"), target.child_by_field_name("object")
            if field is not None and obj is not None:
                out.ref(field, out.text(field), _chain(out, obj, "field_access", "object",
                                                       "field", _JAVA_BASES), "ref")
        else:
            _java_type(out, target, "ref", None)
    elif last.type == "identifier":
        out.ref(last, out.text(last),
                _chain(out, target, "field_access", "object", "field", _JAVA_BASES), "ref")


# ---------------------------------------------------------------------------------------------
# Rust

_RUST_SEGMENTS = frozenset({"identifier", "type_identifier", "crate", "self", "super",
                            "metavariable", "primitive_type"})
_RUST_FIELD_BASES = frozenset({"identifier", "self"})
# What may stand between an attribute and its item.
_RUST_LEADING = frozenset({"attribute_item", "line_comment", "block_comment"})
# A name after these keywords inside a token tree is declared, not called.
_RUST_DECLARING = frozenset({"fn", "struct", "enum", "union", "trait", "mod", "type", "impl",
                             "macro_rules!"})


def _rust_path(out: _Out, node: Node | None) -> list[str] | None:
    """The segments of a path (`a::b::<T>::c` -> a, b, c), None when it is not a plain path."""
    parts: list[str] = []
    while node is not None:
        t = node.type
        if t in ("scoped_identifier", "scoped_type_identifier"):
            name = node.child_by_field_name("name")
            if name is None:
                return None
            parts.append(out.text(name))
            node = node.child_by_field_name("path")  # None after a leading `::`
        elif t == "generic_type":
            node = node.child_by_field_name("type")
        elif t in _RUST_SEGMENTS:
            parts.append(out.text(node))
            node = None
        else:
            return None
    parts.reverse()
    return parts


def _rust_qualifier(out: _Out, path: Node | None) -> str | None:
    """The qualifier of `path::name`: the path with its last `::` (`a::b::`), None after a bare
    leading `::`, "?" for a path that is not plain (`<T as Trait>::f`)."""
    parts = _rust_path(out, path)
    if parts is None:
        return "?"
    return "".join(p + "::" for p in parts) or None


def _rust_type_name(out: _Out, node: Node | None) -> str | None:
    """A type without path, generics or references: `&mut a::Foo<T>` -> "Foo"."""
    while node is not None:
        t = node.type
        if t in ("generic_type", "reference_type", "pointer_type"):
            node = node.child_by_field_name("type")
        elif t == "scoped_type_identifier":
            node = node.child_by_field_name("name")
        else:
            return out.text(node)
    return None


def _rust_trait_ref(out: _Out, node: Node, owner: str | None) -> None:
    if node.type == "generic_type":
        inner = node.child_by_field_name("type")
        if inner is None:
            return
        node = inner
    if node.type == "type_identifier":
        out.ref(node, out.text(node), None, "inherits", owner)
    elif node.type == "scoped_type_identifier":
        name = node.child_by_field_name("name")
        if name is not None:
            out.ref(name, out.text(name), _rust_qualifier(out, node.child_by_field_name("path")),
                    "inherits", owner)


def _rust_emit_use(out: _Out, at: Node, parts: list[str], alias: str | None) -> None:
    if parts and parts[-1] == "self":
        parts = parts[:-1]
    if not parts:
        return
    if len(parts) == 1:
        out.imp(at, parts[0], None, alias or parts[0])
    else:
        out.imp(at, "::".join(parts[:-1]), parts[-1], alias)


def _rust_use(out: _Out, node: Node) -> None:
    root = node.child_by_field_name("argument")
    todo: list[tuple[Node, list[str]]] = [(root, [])] if root is not None else []
    while todo:
        n, prefix = todo.pop()
        t = n.type
        if t == "use_list":
            todo.extend((c, prefix) for c in reversed(n.named_children))
        elif t == "scoped_use_list":
            path = n.child_by_field_name("path")
            inner = _rust_path(out, path) if path is not None else []
            items = n.child_by_field_name("list")
            if inner is not None and items is not None:
                todo.append((items, prefix + inner))
        elif t == "use_wildcard":
            path = n.named_children[0] if n.named_child_count else None
            inner = _rust_path(out, path) if path is not None else []
            if inner is not None and prefix + inner:
                out.imp(n, "::".join(prefix + inner), None, None, wildcard=True)
        elif t == "use_as_clause":
            path, alias = n.child_by_field_name("path"), n.child_by_field_name("alias")
            inner = _rust_path(out, path)
            if inner is not None and path is not None:
                _rust_emit_use(out, path, prefix + inner,
                               out.text(alias) if alias is not None else None)
        else:
            inner = _rust_path(out, n)
            if inner is not None:
                _rust_emit_use(out, n, prefix + inner, None)


def _rust_extern_crate(out: _Out, node: Node) -> None:
    name, alias = node.child_by_field_name("name"), node.child_by_field_name("alias")
    if name is not None:
        crate = out.text(name)
        out.imp(name, crate, None, out.text(alias) if alias is not None else crate)


def _rust_call(out: _Out, node: Node) -> None:
    fn = node.child_by_field_name("function")
    if fn is not None and fn.type == "generic_function":  # f::<T>(), x.collect::<T>()
        fn = fn.child_by_field_name("function")
    if fn is None:
        return
    if fn.type == "identifier":
        out.ref(fn, out.text(fn), None, "call")
    elif fn.type == "scoped_identifier":
        name = fn.child_by_field_name("name")
        if name is not None:
            out.ref(name, out.text(name), _rust_qualifier(out, fn.child_by_field_name("path")),
                    "call")
    elif fn.type == "field_expression":
        field, value = fn.child_by_field_name("field"), fn.child_by_field_name("value")
        if field is None or value is None or field.type != "field_identifier":
            return
        if value.type == "scoped_identifier":  # Foo::BAR.m()
            path = _rust_path(out, value)
            qualifier = "::".join(path) if path else "?"
        else:
            qualifier = _chain(out, value, "field_expression", "value", "field",
                               _RUST_FIELD_BASES)
        out.ref(field, out.text(field), qualifier, "call")


def _rust_macro(out: _Out, node: Node) -> None:
    macro = node.child_by_field_name("macro")
    if macro is None:
        return
    if macro.type == "scoped_identifier":
        name = macro.child_by_field_name("name")
        if name is not None:
            out.ref(name, out.text(name) + "!",
                    _rust_qualifier(out, macro.child_by_field_name("path")), "call")
    else:
        out.ref(macro, out.text(macro) + "!", None, "call")


def _rust_attribute(out: _Out, node: Node) -> None:
    out.skip.append((node.start_byte, node.end_byte))
    attribute = next((c for c in node.named_children if c.type == "attribute"), None)
    if attribute is None:
        return
    if node.type == "inner_attribute_item":  # `#![cfg(test)]`: what holds it is test code
        if _rust_cfg_test(out, attribute):
            holder = node.parent
            if holder is not None and holder.type == "declaration_list":
                holder = holder.parent
            if holder is not None:
                out.tests.append((holder.start_byte, holder.end_byte))
        return
    item = node.next_named_sibling
    while item is not None and item.type in _RUST_LEADING:  # more attributes, doc comments
        item = item.next_named_sibling
    if item is None:
        return
    if (item.type == "function_item" and _rust_test_attribute(out, attribute)) or (
            item.type in ("function_item", "impl_item") and _rust_cfg_test(out, attribute)) or (
            item.type == "mod_item" and item.child_by_field_name("body") is not None
            and _rust_cfg_test(out, attribute)):   # (`mod x;`: its file says, not this one)
        out.tests.append((item.start_byte, item.end_byte))


# Test attributes' last path segment: libtest's, and rstest's and test-case's, which a review
# found uncounted (`#[rstest]`, `#[test_case(1)]`).
_RUST_TEST_ATTRIBUTES = frozenset({"test", "rstest", "test_case"})


def _rust_test_attribute(out: _Out, attribute: Node) -> bool:
    """`#[test]`, and a test framework's `#[tokio::test]`, `#[async_std::test]`, `#[rstest]`,
    `#[test_case(...)]`: a path ending in one of _RUST_TEST_ATTRIBUTES."""
    path = next((c for c in attribute.named_children
                 if c.type in ("identifier", "scoped_identifier")), None)
    if path is not None and path.type == "scoped_identifier":
        path = path.child_by_field_name("name")
    return path is not None and out.text(path) in _RUST_TEST_ATTRIBUTES


def _rust_cfg_test(out: _Out, attribute: Node) -> bool:
    """`cfg(test)`, or `cfg(all(test, ...))`: compiled only for the tests (`any(test, ...)`
    and `not(test)` are not)."""
    text = "".join(out.text(attribute).split())
    if text == "cfg(test)":
        return True
    if not (text.startswith("cfg(all(") and text.endswith("))")):
        return False
    depth, part, parts = 0, "", []
    for ch in text[len("cfg(all("):-2]:
        if ch == "," and depth == 0:
            parts.append(part)
            part = ""
            continue
        depth += (ch == "(") - (ch == ")")
        part += ch
    return "test" in parts + [part]


def _rust_mod(out: _Out, node: Node) -> None:
    """An inline `mod tests { ... }` is test code by the convention every crate follows."""
    name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
    if name is not None and body is not None and out.text(name) == "tests":
        out.tests.append((node.start_byte, node.end_byte))


def _rust_token_call(out: _Out, node: Node) -> None:
    """In macro arguments, `name(`, `a.b(`, `A::new(` or `name!(` read as a call."""
    after = node.next_sibling
    if after is None:
        return
    name = out.text(node)
    if after.type == "!":
        after = after.next_sibling
        name += "!"
        if after is None or after.type != "token_tree":
            return
    elif after.type != "token_tree" or after.child_count == 0 or after.children[0].type != "(":
        return
    if out.skipped(node):
        return
    before = node.prev_sibling
    qualifier: str | None = None
    if before is not None:
        if before.type in _RUST_DECLARING:
            return
        if before.type in (".", "::"):
            parts: list[str] = []
            sep, p = before.type, before
            while p is not None and p.type == sep:
                q = p.prev_sibling
                if q is None or q.type not in _RUST_SEGMENTS:
                    parts = []
                    break
                parts.append(out.text(q))
                p = q.prev_sibling
            parts.reverse()
            qualifier = (sep.join(parts) + ("::" if sep == "::" else "")) if parts else "?"
    out.ref(node, name, qualifier, "call")


def _rust_impl(out: _Out, node: Node) -> None:
    trait = node.child_by_field_name("trait")
    if trait is not None:
        _rust_trait_ref(out, trait, _rust_type_name(out, node.child_by_field_name("type")))


def _rust_trait(out: _Out, node: Node) -> None:
    bounds = node.child_by_field_name("bounds")
    name = node.child_by_field_name("name")
    if bounds is None:
        return
    owner = out.text(name) if name is not None else None
    for b in bounds.named_children:
        _rust_trait_ref(out, b, owner)


# ---------------------------------------------------------------------------------------------
# Per-language tables: capture name -> (query pattern, handler), run in this order (Rust
# attributes are recorded before the token-tree calls that consult them).

_Spec = dict[str, tuple[str, _Handler]]

_PYTHON: _Spec = {
    "import": ("(import_statement) @import", _py_import),
    "import_from": ("[(import_from_statement) (future_import_statement)] @import_from",
                    _py_import_from),
    "call": ("(call) @call", _py_call),
    "class": ("(class_definition) @class", _py_class),
    "decorator": ("(decorator) @decorator", _py_decorator),
    # Literal's arguments, Annotated's metadata, the name `type X = ...` declares (_py_type).
    "not_type": ('(generic_type (identifier) @_literal (type_parameter (type) @not_type)'
                 ' (#eq? @_literal "Literal"))\n'
                 '(generic_type (identifier) @_annotated (type_parameter . (type) (type) @not_type)'
                 ' (#eq? @_annotated "Annotated"))\n'
                 "(type_alias_statement left: (type) @not_type)", _py_not_type),
    "type": ("(type) @type", _py_type),
    "arguments": ("(call) @arguments\n(ERROR (argument_list) @arguments)", _py_arguments),
    "except": ("(except_clause) @except", _py_except),
    "raise": ("(raise_statement) @raise", _py_raise),
}

_JS: _Spec = {
    "import": ("(import_statement) @import", _js_import),
    "export": ("(export_statement source: (_)) @export", _js_export),
    "call": ("(call_expression) @call", _js_call),
    "new": ("(new_expression) @new", _js_new),
    "class": ("[(class_declaration) (class)] @class", _js_class),
    "decorator": ("(decorator) @decorator", _js_decorator),
}

_JSX: _Spec = {
    **_JS,
    "element": ("[(jsx_opening_element) (jsx_self_closing_element)] @element", _js_element),
}

_TS: _Spec = {
    **_JS,
    "class": ("[(class_declaration) (class) (abstract_class_declaration)] @class", _js_class),
    "interface": ("(interface_declaration) @interface", _js_interface),
    "type_param": ("(type_parameter name: (type_identifier) @type_param)", _ts_type_param),
    "local_type": ("[(mapped_type_clause name: (type_identifier) @local_type)"
                   " (infer_type (type_identifier) @local_type)]", _ts_local_type),
    "block_type": ("(statement_block [(type_alias_declaration name: (type_identifier) @block_type)"
                   " (interface_declaration name: (type_identifier) @block_type)"
                   " (class_declaration name: (type_identifier) @block_type)])", _ts_block_type),
    "not_type": (_TS_NOT_TYPES, _ts_not_type),
    "type_ref": ("[(type_identifier) (nested_type_identifier)] @type_ref", _ts_type_ref),
}

_TSX: _Spec = {**_TS, "element": _JSX["element"]}

_GO: _Spec = {
    "import": ("(import_spec) @import", _go_import),
    "call": ("(call_expression) @call", _go_call),
    "embedded_field": ("(field_declaration !name) @embedded_field", _go_embedded_field),
    "embedded_interface": ("(interface_type (type_elem) @embedded_interface)",
                           _go_embedded_interface),
    "type_param": ("(type_parameter_declaration) @type_param", _go_type_param),
    "receiver": ("(method_declaration receiver: (parameter_list) @receiver)", _go_receiver),
    "type_ref": ("[(type_identifier) (qualified_type)] @type_ref", _go_named_type),
}

_JAVA: _Spec = {
    "import": ("(import_declaration) @import", _java_import),
    "call": ("(method_invocation) @call", _java_invocation),
    "new": ("(object_creation_expression) @new", _java_new),
    "class": ("[(class_declaration) (interface_declaration) (enum_declaration)"
              " (record_declaration)] @class", _java_class),
    "method_reference": ("(method_reference) @method_reference", _java_method_reference),
    "type_param": ("(type_parameter) @type_param", _java_type_param),
    "type_ref": ("[(type_identifier) (scoped_type_identifier)] @type_ref", _java_type_ref),
}

_RUST: _Spec = {
    "use": ("(use_declaration) @use", _rust_use),
    "extern_crate": ("(extern_crate_declaration) @extern_crate", _rust_extern_crate),
    "call": ("(call_expression) @call", _rust_call),
    "macro": ("(macro_invocation) @macro", _rust_macro),
    "attribute": ("[(attribute_item) (inner_attribute_item)] @attribute", _rust_attribute),
    "token_call": ("(token_tree (identifier) @token_call . (token_tree))", _rust_token_call),
    "impl": ("(impl_item) @impl", _rust_impl),
    "trait": ("(trait_item) @trait", _rust_trait),
    "mod": ("(mod_item) @mod", _rust_mod),
}

_SPECS: dict[str, _Spec] = {
    "python": _PYTHON, "javascript": _JSX, "typescript": _TS, "tsx": _TSX,
    "go": _GO, "java": _JAVA, "rust": _RUST,
}

SUPPORTED: frozenset[str] = frozenset(_SPECS)


class _Language:
    """One parser and the compiled queries of a language, shared by every call."""

    def __init__(self, name: str, spec: _Spec) -> None:
        language = get_language(name)
        self.parser: Parser = get_parser(name)
        self.lock = threading.Lock()  # a Parser is not safe to share between threads
        self.query = Query(language, "\n".join(pattern for pattern, _ in spec.values()))
        self.handlers = [(capture, handler) for capture, (_, handler) in spec.items()]
        self.errors = Query(language, "(ERROR) @error (MISSING) @missing")


_LANGUAGES: dict[str, _Language] = {}
_LOAD_LOCK = threading.Lock()


def _load(language: str) -> _Language | None:
    loaded = _LANGUAGES.get(language)
    if loaded is None:
        spec = _SPECS.get(language)
        if spec is None:
            return None
        with _LOAD_LOCK:
            loaded = _LANGUAGES.get(language)
            if loaded is None:
                loaded = _LANGUAGES[language] = _Language(language, spec)
    return loaded


def _one_side(parser: Parser, sides: tuple[bytes, bytes]) -> tuple[bytes, Tree]:
    """A text with conflict markers read as one side of its conflicts, as its symbols are
    (lang/conflicts.py): ours, unless only theirs parses. Every byte keeps its place."""
    ours = parser.parse(sides[0])
    if ours.root_node.has_error:
        theirs = parser.parse(sides[1])
        if not theirs.root_node.has_error:
            return sides[1], theirs
    return sides[0], ours


def extract_structure(language: str, source: bytes,
                      tree: Tree | None = None) -> FileStructure | None:
    """The imports and references of `source`, or None when `language` is not supported.
    `tree`: `source` already parsed with this language's grammar (the symbol parser's tree of
    the same blob), read instead of parsing again."""
    lang = _load(language)
    if lang is None:
        return None
    data = bytes(source)
    sides = conflict_sides(data)
    if sides is not None:   # a tree of the text with its markers is not the one read
        with lang.lock:
            data, tree = _one_side(lang.parser, sides)
    elif tree is None:
        with lang.lock:
            tree = lang.parser.parse(data)
    root = tree.root_node
    out = _Out(data, root)
    captures = QueryCursor(lang.query).captures(root)
    for capture, handler in lang.handlers:
        for node in captures.get(capture, ()):
            handler(out, node)
    errors = 0
    if root.has_error:
        errors = sum(len(v) for v in QueryCursor(lang.errors).captures(root).values())
    out.imports.sort(key=lambda item: item[0])
    out.refs.sort(key=lambda r: r.byte)
    return FileStructure(tuple(i for _, i in out.imports), tuple(out.refs), errors,
                         tuple(out.tests))

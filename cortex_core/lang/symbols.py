"""Definitions (functions, classes, ...) of a source blob, with their line ranges.

The indexer runs this on every changed blob of a repository's whole history, so extraction walks
only the nodes that can hold definitions: per language, a table names the definition node types
(with their kind and how to read their name) and the container node types to descend into. A walk
never enters expressions, so its cost follows the number of statements at definition level, not
the size of the tree. It iterates with an explicit stack: untrusted input may nest deeply.

Kinds: function, method, class, interface, struct (also unions), enum, trait, impl, module,
namespace, type (aliases and other named types), macro (Rust macro_rules!, C function-like
#define). A function whose enclosing symbol is class-like is a method.

Per-language decisions:
- Python: defs in module, class and function bodies and in their if/try/with blocks; the range of
  a decorated definition starts at its first decorator. `f = lambda ...` is a function f.
- JavaScript/TypeScript/TSX: `const f = () => {}` / `function () {}` / `class {}` assigned to a
  variable (anywhere a statement list is walked) takes the variable's name, also in parentheses
  or a type assertion (`((a) => a) as T`, `satisfies T`); class fields holding functions are
  methods; an anonymous `export default` function or class is named "default";
  `export`, `declare` and decorators belong to the range. Object-literal methods, overload
  signatures, abstract method signatures and interface members are not symbols.
- Go: methods are qualified by their receiver type without pointer or type arguments
  ("Repo.Save"); each type_spec of a grouped `type (...)` is its own symbol.
- Rust: an impl block is a symbol of kind "impl" named by its type (no path, no generics), so its
  fns are "Foo.bar" for both `impl Foo` and `impl Trait for Foo`, and the caller's merge of equal
  qualnames joins a struct with its impls. Trait method signatures are methods ("Trait.m").
  Preceding #[attributes] belong to the range. `mod m;` without a body is not a symbol.
- Java: records are classes, annotation types interfaces; constructors are methods named after
  their class ("Foo.Foo()"). Inside a method or constructor, an anonymous class is a class named
  "new Runnable" and local classes are classes, at any depth of statements and expressions
  (found by one tree-sitter query per file, so the walk still never enters expressions); their
  methods are symbols under it and roll up into it. Enum constant bodies are skipped.
- C/C++: a `.h` file that holds C++ is read as C++, and annotation and export macros are
  blanked before parsing (lang/c_text.py). Only definitions with a body (no prototypes, no
  forward declarations); a typedef'd struct is named by its tag when it has one, else by the
  typedef name, and its range is the whole typedef. Definitions inside #if/#ifdef/#else are read. Function bodies are not walked
  (C has no nested functions; C++ local classes are rare). C++ out-of-line `ns::Foo::bar` is
  qualified by its written scope and is a method unless that scope is a namespace defined in the
  same file; the range of a template includes its `template<...>` line.
- Ruby: `def self.x` and methods of `class << self` are "Class.x" (with the tag `[self]`, see
  Identity), and so is `def A.x` inside `class A`; `def obj.x` and methods of `class << obj`
  are tagged `[obj]`; `def Foo.x` is "Foo.x" under the enclosing scope; a top-level def is a
  function, a def in a class or module a method, also under a condition (`unless
  method_defined? :x`, `def x ... end if cond`). `[]` and `[]=` are names. A definition takes
  the comment lines right above it into its range, as Go's do (RDoc and YARD read them so).
- PHP: namespaces are not symbols and do not qualify names (one class per file: the path already
  says it); braced namespace bodies and `if (!function_exists(...)) { function f() {} }` are read.
  A DocBlock right above a definition (no blank line between) belongs to its range, attributes
  (`#[...]`) too.

Identity: a symbol's qualname tells it from every other symbol of its file. Same-named siblings
(overloads, redefinitions, a property's accessors) would otherwise share one history, so a
definition may carry a tag, and its qualname is its structural name (the dotted scope path that
code uses to name it, kept in `structural_name`) with the tags of it and of its enclosing symbols:
- Java and C++ functions, methods and constructors: their parameter types as written, always
  (an overload's identity does not depend on which overloads exist): "Visitor.visit(Node, A)",
  "Foo.Foo()", C++ "Foo.get() const". Names and default values of parameters are left out,
  annotations and `final` too; whitespace is normalized.
- Ruby: a method of the class itself is "x[self]", the instance method "x".
- Python: a property's setter and deleter are "x[setter]" and "x[deleter]" (the getter is "x");
  `@overload` stubs share the identity of their implementation, and so do TypeScript overload
  signatures (function_signature; method_signature in a class body): their lines are the
  implementation's.
- Any other same-named functions or methods in one scope: the second is "f[2]", the third
  "f[3]". Other kinds stay merged: a reopened namespace, a Rust struct and its impls, TypeScript
  interface merging, a class defined in both branches of an `if` are one symbol each.
Java definitions take their Javadoc (`/** ... */` right before them) into their range, PHP ones
their DocBlock (`/** ... */` with no blank line before the definition), and Rust items their outer
doc comments (`///`, `/** */`), as decorators and attributes are elsewhere: CodeShovel and
reviewers count a doc change as a change of the method.

body_hash(symbol, source): blake2b (8 bytes, hex) of the definition's text (decorators included,
Symbol.start_byte to end_byte) with every whole-identifier occurrence of its own simple name
masked and all whitespace removed; "" when fewer than 40 bytes remain. Equal for a function
renamed or re-indented, or for a method whose class was renamed (unless the body names the
class). Computed on demand: only symbols that appear or disappear in a commit need it.

Incremental parsing: SymbolParser keeps each parsed blob's tree and line start offsets. Given the
old blob's id and git's zero-context hunks, it edits a copy of the old tree and re-parses only what
changed; hunks that do not fit the two blobs are ignored (full parse). tree-sitter's error recovery
depends on the subtrees it reuses, so when the incremental tree has errors the blob is parsed again
from scratch: the symbols are always those of a full parse. After an incremental parse, a
definition lying outside what changed (the edited bytes, and the ranges whose structure tree-sitter
reports changed) is not entered: its symbols are the old blob's, with lines and bytes shifted (see
_Reuse). The walk still goes through the containers that changed (the module, an edited class) and
looks at each definition in them, but names only those that changed or whose context did.

Reading by regions (Python): when the old blob's tree is gone from the cache but its symbols are
not, only the module-level definitions the hunks touch are parsed, as a text of their own, and
the old symbols elsewhere are kept, shifted (see _regions). The text kept is checked byte for
byte against the old blob's (a checksum per piece between two definitions that start a line), so
wrong hunks cost a full parse, never a wrong symbol; a region with a syntax error, an old blob
that had one, or regions that are most of the file are parsed in full.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import Callable, Iterable, NamedTuple

from tree_sitter import Language, Node, Parser, Query, QueryCursor, Range, Tree
from tree_sitter_language_pack import get_language, get_parser

from cortex_core.lang.c_text import blanked, dialect, macro_spans
from cortex_core.lang.conflicts import conflict_sides

__all__ = ["EXTENDING", "OVERLOAD", "Symbol", "SymbolParser", "body_hash", "extract_symbols",
           "preferred_kind"]


@dataclass(frozen=True, slots=True)
class Symbol:
    # The symbol's identity in its file: "Class.method", "outer.inner", "Repo.Save",
    # "Visitor.visit(MethodCallExpr, A)", "f[2]", "Box.size[setter]" (see Identity above).
    qualname: str
    name: str  # the simple name
    kind: str  # see the module docstring
    start_line: int  # 1-based, inclusive, decorators/attributes included
    end_line: int  # 1-based, inclusive: the last line holding text of the definition
    parent: int  # index of the innermost enclosing symbol in the same list, -1 at top level
    # The definition's text in its blob, decorators/attributes included: what body_hash reads.
    start_byte: int
    end_byte: int
    # What tells it from same-named siblings: "(int, String)", "[setter]", OVERLOAD; "" if none.
    tag: str = ""
    # The qualified name without tags or ordinals, when it differs from qualname: the name that
    # code uses for it (references, imports, the structure pass).
    structural: str = ""

    @property
    def structural_name(self) -> str:
        return self.structural or self.qualname


# Kinds of blocks that extend a definition under its name: a Rust `impl` block, a TypeScript
# namespace merged with a class or function.
EXTENDING = frozenset({"impl", "namespace"})


def preferred_kind(kinds: Iterable[str]) -> str | None:
    """The kind of one name defined several times (a struct and its impl blocks), from their
    kinds in the file's order: the first that does not extend another, else the first."""
    first = None
    for kind in kinds:
        if kind not in EXTENDING:
            return kind
        if first is None:
            first = kind
    return first


# ---------------------------------------------------------------------------------------------
# Names

# A name as read from the tree: its scope parts, then the simple name last; raw bytes.
_Parts = tuple[bytes, ...]
# What a rule reads from a definition node: name parts and a kind overriding the rule's kind.
_Name = tuple[_Parts, "str | None"]
# Reads the name of a definition node; `outer` is the wrapper whose range it takes, if any.
_Namer = Callable[[Node, "Node | None"], "_Name | None"]

# Scoped names are split into their parts: C++ a::b, Ruby A::B, TypeScript namespace A.B.
_SCOPED = {
    "qualified_identifier": ("scope", "name"),
    "scope_resolution": ("scope", "name"),
    "nested_identifier": ("object", "property"),
}
# Generic arguments are not part of a name: Foo<T> -> Foo.
_UNWRAP = {"template_type": "name", "generic_type": "type", "template_function": "name"}
# Names made of a list of parts.
_LISTED = frozenset({"nested_namespace_specifier", "namespace_name"})


def _name_parts(node: Node | None) -> _Parts | None:
    """The parts of a (possibly scoped) name node, or None when it has no text."""
    parts: list[bytes] = []
    todo = [node] if node is not None else []
    while todo:
        n = todo.pop()
        t = n.type
        if t in _SCOPED:
            scope_field, name_field = _SCOPED[t]
            todo.extend(c for c in (n.child_by_field_name(name_field),
                                    n.child_by_field_name(scope_field)) if c is not None)
        elif t in _UNWRAP:
            inner = n.child_by_field_name(_UNWRAP[t])
            if inner is not None:
                todo.append(inner)
        elif t in _LISTED:
            todo.extend(reversed(n.named_children))
        elif t == "operator_cast":  # C++ `operator bool`
            target = n.child_by_field_name("type")
            parts.append(b"operator " + (target.text if target is not None else b""))
        else:
            text = _tidy(n.text or b"")
            if t == "string":  # TypeScript declare module "name"
                text = text.strip(b"'\"`")
            if text:
                parts.append(text)
    return tuple(parts) or None


_SPACE_BY_PUNCTUATION = re.compile(rb"\s+(?=[^\w\s])|(?<=[^\w\s])\s+")


def _tidy(text: bytes) -> bytes:
    """Spacing never changes a name: `operator ==` is `operator==`, `operator  new` is
    `operator new` (names with whitespace are C++ operators)."""
    words = text.split()
    if len(words) == 1:
        return words[0]
    return _SPACE_BY_PUNCTUATION.sub(b"", b" ".join(words))


def _named_by(field_name: str) -> _Namer:
    def namer(node: Node, outer: Node | None) -> _Name | None:
        parts = _name_parts(node.child_by_field_name(field_name))
        return (parts, None) if parts else None
    return namer


_by_name = _named_by("name")

_JS_FUNCTIONS = frozenset({"arrow_function", "function_expression", "function",
                           "generator_function"})
_JS_CLASSES = frozenset({"class"})


# What a TypeScript value may be wrapped in without being another value: `(() => {}) as T`,
# `satisfies T`, `f!`, parentheses. ky's `const ky = ((…) => …) as KyInterface` was no symbol.
_VALUE_WRAPPERS = frozenset({"as_expression", "satisfies_expression", "parenthesized_expression",
                             "non_null_expression"})


def _js_value(node: Node, field_name: str = "value") -> Node | None:
    """The node's value, unwrapped of type assertions and parentheses."""
    value = node.child_by_field_name(field_name)
    for _ in range(8):   # a few layers at most: `((f) as unknown) as T`
        if value is None or value.type not in _VALUE_WRAPPERS or not value.named_children:
            break
        value = value.named_children[0]
    return value


def _js_variable(node: Node, outer: Node | None) -> _Name | None:
    """`const f = () => {}`: a function (or class) named by its variable."""
    value = _js_value(node)
    name = node.child_by_field_name("name")
    if value is None or name is None or name.type != "identifier":
        return None
    if value.type in _JS_FUNCTIONS:
        kind = "function"
    elif value.type in _JS_CLASSES:
        kind = "class"
    else:
        return None
    parts = _name_parts(name)
    return (parts, kind) if parts else None


def _js_field(field_name: str) -> _Namer:
    """A class field holding a function is a method."""
    def namer(node: Node, outer: Node | None) -> _Name | None:
        value = _js_value(node)
        if value is None or value.type not in _JS_FUNCTIONS:
            return None
        parts = _name_parts(node.child_by_field_name(field_name))
        return (parts, "method") if parts else None
    return namer


def _js_default_export(node: Node, outer: Node | None) -> _Name | None:
    """`export default function () {}` / `export default class {}` is named "default"."""
    value = _js_value(node)
    if value is None:
        return None
    if value.type in _JS_FUNCTIONS:
        return (b"default",), "function"
    if value.type in _JS_CLASSES:
        return (b"default",), "class"
    return None


# Receiver and impl types are reduced to their bare name: *Repo[T] -> Repo, &a::Foo<T> -> Foo.
_TYPE_WRAPPERS = frozenset({"pointer_type", "generic_type", "reference_type", "parenthesized_type",
                            "scoped_type_identifier"})


def _bare_type_name(node: Node | None) -> bytes | None:
    while node is not None and node.type in _TYPE_WRAPPERS:
        inner = node.child_by_field_name("name") or node.child_by_field_name("type")
        node = inner if inner is not None else (node.named_children or [None])[-1]
    return _tidy(node.text or b"") or None if node is not None else None


def _go_method(node: Node, outer: Node | None) -> _Name | None:
    name = _name_parts(node.child_by_field_name("name"))
    receiver = node.child_by_field_name("receiver")
    if name is None:
        return None
    params = receiver.named_children if receiver is not None else []
    receiver_type = _bare_type_name(params[0].child_by_field_name("type")) if params else None
    return ((receiver_type, *name) if receiver_type else name), "method"


_GO_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}


def _go_type_spec(node: Node, outer: Node | None) -> _Name | None:
    parts = _name_parts(node.child_by_field_name("name"))
    if parts is None:
        return None
    target = node.child_by_field_name("type")
    return parts, _GO_TYPE_KINDS.get(target.type if target is not None else "", "type")


def _rust_impl(node: Node, outer: Node | None) -> _Name | None:
    name = _bare_type_name(node.child_by_field_name("type"))
    return ((name,), None) if name else None


def _ruby_singleton_method(node: Node, outer: Node | None) -> _Name | None:
    """`def self.x` is x of the enclosing scope (as is `def A.x` inside `class A`); `def Foo.x`
    is Foo.x under it."""
    name = _name_parts(node.child_by_field_name("name"))
    target = node.child_by_field_name("object")
    if name is None:
        return None
    if target is not None and target.type in ("constant", "scope_resolution") \
            and not _ruby_is_outer(target, node):
        scope = _name_parts(target)
        if scope:
            return scope + name, "method"
    return name, None


def _ruby_is_outer(receiver: Node, node: Node) -> bool:
    """`A` in `def A.x` or `class << A` inside `class A`: the class itself, as `self` is."""
    if receiver.type not in ("constant", "scope_resolution"):
        return False
    up = node.parent
    while up is not None and up.type not in ("class", "module", "method", "program"):
        up = up.parent
    if up is None or up.type not in ("class", "module"):
        return False
    mine = _name_parts(receiver)
    theirs = _name_parts(up.child_by_field_name("name"))
    return bool(mine and theirs and mine[-1] == theirs[-1])


def _ruby_receiver_tag(receiver: Node | None, node: Node) -> str:
    """The tag of a method defined on `receiver`: "[self]" for the class itself; for another
    object (`def obj.x`, `class << obj`), "[obj]", so that it is not the instance method x."""
    if receiver is None:
        return ""
    if receiver.type == "self" or _ruby_is_outer(receiver, node):
        return "[self]"
    if receiver.type in ("identifier", "instance_variable", "class_variable",
                         "global_variable"):
        text = (receiver.text or b"").decode("utf-8", "replace")
        return f"[{text}]" if text.replace("@", "").replace("$", "").replace("_", "").isalnum() \
            else ""
    return ""


# C declarators nest around the name: char *(*getfn(void))(int) is pointer > function >
# parenthesized > pointer > function > identifier.
_C_NAMES = frozenset({"identifier", "field_identifier", "qualified_identifier", "destructor_name",
                      "operator_name", "operator_cast", "template_function", "type_identifier"})


def _c_declarator(node: Node, outer: Node | None) -> _Name | None:
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type not in _C_NAMES:
        inner = declarator.child_by_field_name("declarator")
        if inner is None and declarator.named_child_count:
            inner = declarator.named_children[0]  # parenthesized_declarator has no field
        declarator = inner
    parts = _name_parts(declarator)
    return (parts, None) if parts else None


def _c_tag(node: Node, outer: Node | None) -> _Name | None:
    """A struct/union/enum/class with a body: its tag, or for `typedef struct {...} T;` T."""
    if node.child_by_field_name("body") is None:
        return None
    parts = _name_parts(node.child_by_field_name("name"))
    if parts is None and outer is not None and outer.type == "type_definition":
        parts = _name_parts(outer.child_by_field_name("declarator"))
    return (parts, None) if parts else None


def _with_body(namer: _Namer) -> _Namer:
    """Only a definition with a body counts (`mod m;` and `namespace X;` do not)."""
    def checked(node: Node, outer: Node | None) -> _Name | None:
        return namer(node, outer) if node.child_by_field_name("body") is not None else None
    return checked


# ---------------------------------------------------------------------------------------------
# Tags: what tells same-named siblings apart (see Identity)

OVERLOAD = "=overload"  # the tag of an overload stub or signature: it joins its implementation
_CALLABLE_KINDS = frozenset({"function", "method"})


def _words(text: bytes) -> str:
    return b" ".join(text.split()).decode("utf-8", "replace")


MAX_TAG = 200  # characters of a parameter list kept in an identity; beyond, a digest stands in


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _type_list(types: list[str]) -> str:
    text = ", ".join(types)
    if not _balanced(text):  # a syntax error (`int[ x`): brackets would swallow the names after
        text = text.translate(str.maketrans("", "", "()[]"))
    if len(text) > MAX_TAG:  # untrusted input: a name stays readable and bounded, still unique
        digest = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=4).hexdigest()
        kept = text[:MAX_TAG].rsplit(",", 1)[0]
        text = kept.translate(str.maketrans("", "", "()[]")) + f", …{digest}"
    return "(" + text + ")"


def _java_tag(node: Node, outer: Node | None, kind: str) -> str:
    """The parameter types of a method or constructor: "(int, String...)"."""
    params = node.child_by_field_name("parameters")
    if kind not in _CALLABLE_KINDS or params is None:
        return ""
    types = []
    for p in params.named_children:
        if p.type == "formal_parameter":
            t = p.child_by_field_name("type")
            dims = p.child_by_field_name("dimensions")
            text = _words(t.text or b"") if t is not None else "?"
            types.append(text + (_words(dims.text or b"") if dims is not None else ""))
        elif p.type == "spread_parameter":
            t = next((c for c in p.named_children
                      if c.type not in ("modifiers", "variable_declarator")), None)
            types.append((_words(t.text or b"") if t is not None else "?") + "...")
    return _type_list(types)


def _c_function_declarator(node: Node) -> Node | None:
    d = node.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        inner = d.child_by_field_name("declarator")
        if inner is None and d.named_child_count:
            inner = d.named_children[0]
        d = inner
    return d


def _c_param_type(p: Node) -> str:
    """A parameter's text without its name and default value: `const char *`."""
    text = p.text or b""
    base = p.start_byte
    end = len(text)
    default = p.child_by_field_name("default_value")
    if default is not None:
        end = default.start_byte - base
    d = p.child_by_field_name("declarator")
    while d is not None and d.type not in ("identifier", "field_identifier"):
        inner = d.child_by_field_name("declarator")
        if inner is None and d.named_child_count:
            children = d.named_children
            inner = children[-1] if d.type == "reference_declarator" else children[0]
        d = inner
    if d is not None and d.start_byte - base < end:
        text = text[:d.start_byte - base] + text[d.end_byte - base:end]
    else:
        text = text[:end]
    return _tidy(text.rstrip().rstrip(b"=").rstrip()).decode("utf-8", "replace") or "?"


def _cpp_tag(node: Node, outer: Node | None, kind: str) -> str:
    """A function's parameter types and const/ref qualifiers: "(int, const char*) const"."""
    if kind not in _CALLABLE_KINDS:
        return ""
    fd = _c_function_declarator(node)
    params = fd.child_by_field_name("parameters") if fd is not None else None
    if params is None:
        return ""
    types = [_c_param_type(p) if p.type != "..." else "..." for p in params.named_children
             if p.type.endswith("parameter_declaration") or p.type == "..."]
    if any(c.type == "..." for c in params.children):
        types.append("...")
    quals = [_words(c.text or b"") for c in fd.children
             if c.type in ("type_qualifier", "ref_qualifier")]
    return _type_list(types) + "".join(" " + q for q in quals)


def _python_tag(node: Node, outer: Node | None, kind: str) -> str:
    """A property's setter or deleter, or an @overload stub."""
    if kind not in _CALLABLE_KINDS or outer is None or outer.type != "decorated_definition":
        return ""
    name = node.child_by_field_name("name")
    own = name.text if name is not None else b""
    for d in outer.named_children:
        if d.type != "decorator":
            continue
        text = b"".join((d.text or b"").lstrip(b"@").split())
        if text == b"overload" or text.endswith(b".overload"):
            return OVERLOAD
        if text in (own + b".setter", own + b".deleter"):
            return "[" + text.rpartition(b".")[2].decode() + "]"
    return ""


def _ruby_tag(node: Node, outer: Node | None, kind: str) -> str:
    """A method of the class itself (`def self.x`, or any def in `class << self`) is "x[self]":
    Ruby keeps it apart from the instance method x, which a class often has too (sinatra's
    `Base.settings`), so one must not take the other's history by their order in the file."""
    if node.type == "singleton_method":
        return _ruby_receiver_tag(node.child_by_field_name("object"), node)
    up = node.parent
    while up is not None and up.type in _RUBY_THROUGH:
        up = up.parent
    if node.type != "method" or up is None or up.type != "singleton_class":
        return ""
    return _ruby_receiver_tag(up.child_by_field_name("value"), up) or "[self]"


# What the walk goes through between a Ruby definition and the scope it belongs to: bodies and
# conditions (`unless method_defined? :x`, `def x ... end if RUBY_VERSION >= "3"`).
_RUBY_CONDITIONS = frozenset({"if", "unless", "then", "else", "elsif"})
_RUBY_MODIFIERS = frozenset({"if_modifier", "unless_modifier"})
_RUBY_THROUGH = _RUBY_CONDITIONS | _RUBY_MODIFIERS | {"body_statement"}


_TS_SIGNATURES = frozenset({"function_signature", "method_signature"})


def _ts_tag(node: Node, outer: Node | None, kind: str) -> str:
    return OVERLOAD if node.type in _TS_SIGNATURES else ""


def _javadoc(node: Node) -> bool:
    return (node.text or b"").startswith(b"/**")


def _phpdoc(node: Node) -> bool:
    """A PHP DocBlock (`/** */`) of the declaration it touches: no blank line between them, so a
    file's license block above its first function, a blank line below it, stays the file's."""
    text = node.text or b""
    if not text.startswith(b"/**") or text == b"/**/":
        return False
    prev = node.prev_sibling
    if prev is not None and prev.end_point[0] >= node.start_point[0]:
        return False   # after code on its line: `$x = 1; /** note */`
    while True:
        nxt = node.next_sibling
        if nxt is None or nxt.start_point[0] > node.end_point[0] + 1:
            return False
        if nxt.type != "comment":
            return True
        node = nxt


def _rust_outer(node: Node) -> bool:
    """An attribute, or an outer doc comment (`///`, `/** */`): the item's after it, as rustdoc
    reads them (`////` and `/***` are plain comments; `//!` documents the enclosing item)."""
    if node.type == "attribute_item":
        return True
    text = node.text or b""
    return (text.startswith(b"///") and not text.startswith(b"////")) or \
        (text.startswith(b"/**") and not text.startswith(b"/***") and text != b"/**/")


def _go_doc(node: Node) -> bool:
    """A comment of the doc comment right above a Go declaration, as godoc reads it (and a
    Ruby one, as RDoc and YARD do): comments starting their lines, each on the line after the
    one before, the last on the line before the declaration (a blank line between them makes a
    plain comment)."""
    prev = node.prev_sibling
    if prev is not None and prev.end_point[0] >= node.start_point[0]:
        return False  # after code on its line: `x := 1 // note`
    while True:
        nxt = node.next_sibling
        if nxt is None or nxt.start_point[0] != node.end_point[0] + 1:
            return False
        if nxt.type != "comment":
            return True
        node = nxt


# A file's first lines that speak to the interpreter, not of the definition below them: a
# shebang, and Ruby's magic comments (`# frozen_string_literal: true`, `# -*- coding: utf-8 -*-`).
_RUBY_MAGIC = re.compile(
    rb"#!|#\s*(-\*-.*-\*-|(frozen_string_literal|encoding|coding|warn_indent|"
    rb"shareable_constant_value|typed)\s*:)", re.IGNORECASE)


def _ruby_doc(node: Node) -> bool:
    """A comment of the documentation right above a Ruby definition (as `_go_doc`), but not a
    shebang or a magic comment: a file's first definition held them, and an edit of one was a
    change of its documentation (a review)."""
    return not _magic(node) and _go_doc(node)


def _magic(node: Node) -> bool:
    """A shebang or magic comment: one of the file's first comments, before any code (Ruby reads
    them only there; `# Encoding: ...` in a method's documentation is documentation)."""
    if not _RUBY_MAGIC.match(node.text or b""):
        return False
    prev = node.prev_sibling
    while prev is not None:
        if prev.type != "comment":
            return False
        prev = prev.prev_sibling
    return True


def _py_lambda(node: Node, outer: Node | None) -> _Name | None:
    """`f = lambda x: ...`: a function named by its variable."""
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or right is None or left.type != "identifier" or right.type != "lambda":
        return None
    return (left.text,), "function"


def _java_anonymous(node: Node, outer: Node | None) -> _Name | None:
    """`new Runnable() { ... }` is a class named "new Runnable" (generic arguments dropped)."""
    if not any(c.type == "class_body" for c in node.named_children):
        return None
    target = node.child_by_field_name("type")
    if target is not None and target.type == "generic_type" and target.named_child_count:
        target = target.named_children[0]  # Callable<Object> -> Callable
    name = _bare_type_name(target)
    return ((b"new " + (name or b"Object"),), "class")


# ---------------------------------------------------------------------------------------------
# Language tables


class _Def(NamedTuple):
    kind: str
    namer: _Namer = _by_name


@dataclass(frozen=True, slots=True)
class _Spec:
    # Definition node type -> rule. A node whose namer returns None (anonymous namespace,
    # `const x = 1`) is walked like a container instead.
    defs: dict[str, _Def]
    # Node types walked through without making a symbol.
    containers: frozenset[str]
    # Containers whose range belongs to the single definition they hold (decorators, export,
    # template<...>, typedef); they are walked too.
    wrappers: frozenset[str] = frozenset()
    # Siblings that belong to the definition after them (Rust #[attr], TS member decorators).
    leading: frozenset[str] = frozenset()
    # Reads a definition's tag (see Identity): (node, wrapper node or None, kind) -> tag.
    tagger: "Callable[[Node, Node | None, str], str] | None" = None
    # Accepts a leading sibling (a Java block comment is leading only when it is a Javadoc).
    lead_filter: "Callable[[Node], bool] | None" = None
    # Containers whose leading siblings lead the definition they start with: tree-sitter-ruby
    # puts the comments above a body's first statement before the body_statement, in the class.
    lead_into: frozenset[str] = frozenset()
    # A tree-sitter query for definitions nested in expressions (Java anonymous classes) and
    # statements of any depth (local classes): the children of a callable are the matches whose
    # nearest enclosing definition it is, instead of the statements the walk would enter.
    nested: str | None = None
    # Definition node types so common that they are walked only where a field holds one of the
    # given node types (a Python `assignment` defines a function only when its right side is a
    # `lambda`): the other nodes of that type are skipped without a visit. Every assignment in
    # every function body, visited, cost ~5% of a full index.
    gated: "dict[str, tuple[str, frozenset[str]]]" = field(default_factory=dict)
    # Enclosing kinds that make a function a method.
    method_parents: frozenset[str] = frozenset({"class", "struct", "interface", "trait", "impl",
                                                "enum"})
    # Every node type the walk enters: defs, containers and wrappers.
    walked: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "walked", (frozenset(self.defs) | self.containers
                                            | self.wrappers) - frozenset(self.gated))


_JS_DEFS = {
    "function_declaration": _Def("function"),
    "generator_function_declaration": _Def("function"),
    "class_declaration": _Def("class"),
    "method_definition": _Def("method"),
    "variable_declarator": _Def("function", _js_variable),
    "field_definition": _Def("method", _js_field("property")),
    "export_statement": _Def("function", _js_default_export),
}
_JS_CONTAINERS = frozenset({"program", "statement_block", "class_body", "class", "ERROR",
                            *_JS_FUNCTIONS, *_VALUE_WRAPPERS})   # into `((a) => …) as T`
_JS_WRAPPERS = frozenset({"export_statement", "lexical_declaration", "variable_declaration"})

_TS = _Spec(
    defs={
        **_JS_DEFS,
        "abstract_class_declaration": _Def("class"),
        "interface_declaration": _Def("interface"),
        "type_alias_declaration": _Def("type"),
        "enum_declaration": _Def("enum"),
        "internal_module": _Def("namespace", _with_body(_by_name)),
        "module": _Def("namespace", _with_body(_by_name)),
        "public_field_definition": _Def("method", _js_field("name")),
        # Overload signatures: symbols sharing the identity of their implementation.
        "function_signature": _Def("function"),
        "method_signature": _Def("method"),
    },
    containers=_JS_CONTAINERS,
    # `namespace X {}` is an expression statement in this grammar.
    wrappers=_JS_WRAPPERS | {"ambient_declaration", "expression_statement"},
    leading=frozenset({"decorator"}),
    tagger=_ts_tag,
)

_C_DEFS = {
    "function_definition": _Def("function", _c_declarator),
    "struct_specifier": _Def("struct", _c_tag),
    "union_specifier": _Def("struct", _c_tag),
    "enum_specifier": _Def("enum", _c_tag),
    "preproc_function_def": _Def("macro"),
}
# `extern "C" { ... }` is C too: a header readable from C++ wraps all it declares in one (behind
# `#ifdef __cplusplus`), and cJSON.h read as having no definitions at all without it.
_C_CONTAINERS = frozenset({"translation_unit", "preproc_if", "preproc_ifdef", "preproc_else",
                           "preproc_elif", "preproc_elifdef", "field_declaration_list",
                           "linkage_specification", "declaration_list", "ERROR"})
_C_WRAPPERS = frozenset({"declaration", "type_definition", "field_declaration"})

_SPECS: dict[str, _Spec] = {
    "python": _Spec(
        defs={"function_definition": _Def("function"), "class_definition": _Def("class"),
              "assignment": _Def("function", _py_lambda)},
        gated={"assignment": ("right", frozenset({"lambda"}))},
        # Control flow is walked inside functions too: tkinter alone defines two closures in
        # if/else branches of methods. It costs ~1 ms per 5,000 lines.
        containers=frozenset({"module", "block", "if_statement", "elif_clause", "else_clause",
                              "try_statement", "except_clause", "except_group_clause",
                              "finally_clause", "with_statement", "ERROR"}),
        wrappers=frozenset({"decorated_definition"}),
        tagger=_python_tag,
    ),
    "javascript": _Spec(defs=_JS_DEFS, containers=_JS_CONTAINERS, wrappers=_JS_WRAPPERS),
    "typescript": _TS,
    "tsx": _TS,
    "go": _Spec(
        defs={
            "function_declaration": _Def("function"),
            "method_declaration": _Def("method", _go_method),
            "type_spec": _Def("type", _go_type_spec),
            "type_alias": _Def("type"),
        },
        containers=frozenset({"source_file", "block", "statement_list", "ERROR"}),
        wrappers=frozenset({"type_declaration"}),
        leading=frozenset({"comment"}),
        lead_filter=_go_doc,
    ),
    "rust": _Spec(
        defs={
            "function_item": _Def("function"),
            "function_signature_item": _Def("function"),
            "struct_item": _Def("struct"),
            "union_item": _Def("struct"),
            "enum_item": _Def("enum"),
            "trait_item": _Def("trait"),
            "impl_item": _Def("impl", _rust_impl),
            "mod_item": _Def("module", _with_body(_by_name)),
            "type_item": _Def("type"),
            "macro_definition": _Def("macro"),
        },
        containers=frozenset({"source_file", "declaration_list", "block", "ERROR"}),
        leading=frozenset({"attribute_item", "line_comment", "block_comment"}),
        lead_filter=_rust_outer,
    ),
    "java": _Spec(
        defs={
            "class_declaration": _Def("class"),
            "record_declaration": _Def("class"),
            "interface_declaration": _Def("interface"),
            "annotation_type_declaration": _Def("interface"),
            "enum_declaration": _Def("enum"),
            "method_declaration": _Def("method"),
            "constructor_declaration": _Def("method"),
            "compact_constructor_declaration": _Def("method"),
            "object_creation_expression": _Def("class", _java_anonymous),
        },
        containers=frozenset({"program", "class_body", "interface_body", "enum_body",
                              "enum_body_declarations", "annotation_type_body", "block",
                              "constructor_body", "ERROR"}),
        leading=frozenset({"block_comment"}),
        lead_filter=_javadoc,
        tagger=_java_tag,
        nested="(object_creation_expression (class_body)) @d (class_declaration) @d"
               " (record_declaration) @d (enum_declaration) @d (interface_declaration) @d",
    ),
    "c": _Spec(defs=_C_DEFS, containers=_C_CONTAINERS, wrappers=_C_WRAPPERS),
    "cpp": _Spec(
        defs={
            **_C_DEFS,
            "class_specifier": _Def("class", _c_tag),
            "namespace_definition": _Def("namespace", _with_body(_by_name)),
        },
        containers=_C_CONTAINERS,
        wrappers=_C_WRAPPERS | {"template_declaration", "friend_declaration"},
        tagger=_cpp_tag,
    ),
    "ruby": _Spec(
        defs={
            "module": _Def("module"),
            "class": _Def("class"),
            "method": _Def("function"),
            "singleton_method": _Def("function", _ruby_singleton_method),
        },
        containers=frozenset({"program", "body_statement", "singleton_class", "ERROR"})
        | _RUBY_CONDITIONS,
        wrappers=_RUBY_MODIFIERS,
        method_parents=frozenset({"class", "module"}),
        tagger=_ruby_tag,
        # RDoc and YARD read the comment lines right above a definition as its documentation,
        # as godoc does.
        leading=frozenset({"comment"}),
        lead_filter=_ruby_doc,
        lead_into=frozenset({"body_statement"}),
    ),
    "php": _Spec(
        defs={
            "class_declaration": _Def("class"),
            "interface_declaration": _Def("interface"),
            "trait_declaration": _Def("trait"),
            "enum_declaration": _Def("enum"),
            "function_definition": _Def("function"),
            "method_declaration": _Def("method"),
        },
        containers=frozenset({"program", "namespace_definition", "compound_statement",
                              "declaration_list", "enum_declaration_list", "if_statement",
                              "ERROR"}),
        leading=frozenset({"comment"}),
        lead_filter=_phpdoc,
    ),
}


# ---------------------------------------------------------------------------------------------
# Extraction


def _end_line(node: Node) -> int:
    """1-based last line holding text: a node ending at column 0 ends on the line before."""
    row, column = node.end_point
    if column == 0 and row > node.start_point[0]:
        return row
    return row + 1


_MIN_FINGERPRINT = 40  # shorter normalized texts (`def f(): pass`) match too much to be evidence
_ASCII_WHITESPACE = b" \t\n\r\x0b\x0c"
_WORD_BYTES = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz$")


def _mask_name(text: bytes, name: bytes) -> bytes:
    """`text` with every whole-identifier occurrence of `name` (not next to a letter, digit, _
    or $) replaced by a NUL: renaming foo must not unmask foo_helper. Searched with bytes.find
    rather than a regex: hashes are computed for a few symbols of each commit, almost every one
    with a name of its own, and compiling a pattern per name cost more than all the searching."""
    if not name:
        return text
    pieces: list[bytes] = []
    done = 0
    at = text.find(name)
    while at >= 0:
        end = at + len(name)
        if (at and text[at - 1] in _WORD_BYTES) or (end < len(text) and text[end] in _WORD_BYTES):
            at = text.find(name, at + 1)  # part of a longer identifier
            continue
        pieces.append(text[done:at])
        done = end
        at = text.find(name, end)
    if not pieces:
        return text
    pieces.append(text[done:])
    return b"\0".join(pieces)


def body_hash(symbol: Symbol, source: bytes) -> str:
    """Fingerprint of a definition's text that survives renaming it and moving it: its own name
    masked, then all whitespace dropped (indentation and line breaks never count). Dropping
    rather than collapsing whitespace is ~3x cheaper (no token list) and conflates only texts
    that differ by a space between two tokens. `source` is the blob the symbol was read from.

    Computed on demand, not at extraction: only the few symbols that appear or disappear in a
    commit need it. A name that is not valid UTF-8 was decoded with replacement characters, so
    its re-encoding is not in the text and stays unmasked (the hash then does not survive a
    rename of that symbol)."""
    text = source[symbol.start_byte:symbol.end_byte]
    masked = _mask_name(text, symbol.name.encode("utf-8"))
    normalized = masked.translate(None, _ASCII_WHITESPACE)
    if len(normalized) < _MIN_FINGERPRINT:
        return ""
    return hashlib.blake2b(normalized, digest_size=8).hexdigest()


# A node to visit: the node, the index of its enclosing symbol (-1 at top level), the wrapper
# whose range its definition takes, its first leading sibling (attribute, decorator).
_Item = tuple[Node, int, "Node | None", "Node | None"]

_ERROR_KIND = 0xFFFF  # tree-sitter's builtin error symbol, not counted in node_kind_count


class _Extraction(NamedTuple):
    """The symbols of a blob, and what a successor blob needs to copy them instead of walking."""

    symbols: list[Symbol]
    # Per symbol, its definition node (not the wrapper that lends it a range): start, end, kind.
    # In document order, so node_starts is sorted.
    node_starts: list[int]
    node_ends: list[int]
    node_kinds: list[int]
    # Symbols whose kind depends on the namespaces defined before them (C++ ns::f vs Foo::f).
    scoped: set[int]


def _first_statement(node: Node) -> Node | None:
    return next((c for c in node.named_children if not c.is_extra), None)


class _Walker:
    """A language's table resolved to the grammar's numeric node kinds: the walk compares
    integers instead of building a type string for every child it looks at."""

    def __init__(self, spec: _Spec, language: Language):
        ids: dict[str, list[int]] = {}
        for kind_id in [*range(language.node_kind_count), _ERROR_KIND]:
            if language.node_kind_is_named(kind_id):
                ids.setdefault(language.node_kind_for_id(kind_id), []).append(kind_id)

        def resolve(names: Iterable[str]) -> frozenset[int]:
            return frozenset(i for name in names for i in ids.get(name, ()))

        self.spec = spec
        self.defs = {i: rule for name, rule in spec.defs.items() for i in ids.get(name, ())}
        self.walked = resolve(spec.walked)
        self.gated = {i: (field_name, resolve(types))
                      for name, (field_name, types) in spec.gated.items() for i in ids.get(name, ())}
        self.wrappers = resolve(spec.wrappers)
        self.leading = resolve(spec.leading)
        self.lead_filter = spec.lead_filter
        self.lead_into = resolve(spec.lead_into)
        self.nested = Query(language, spec.nested) if spec.nested else None
        self.callables = frozenset(i for i, rule in self.defs.items()
                                   if rule.kind in _CALLABLE_KINDS)

    def children(self, node: Node, parent: int) -> list[_Item]:
        """The children of `node` worth walking, each with its leading siblings."""
        items: list[_Item] = []
        walked, leading, gated = self.walked, self.leading, self.gated
        lead = None
        for child in node.named_children:
            kind_id = child.kind_id
            if kind_id in walked or kind_id in gated and self._admits(child, gated[kind_id]):
                items.append((child, parent, None, lead))
                lead = None
            elif kind_id in leading and (self.lead_filter is None or self.lead_filter(child)):
                lead = lead or child
            elif lead is not None and not child.is_extra:  # a comment keeps the lead
                lead = None
        return items

    @staticmethod
    def _admits(node: Node, gate: tuple[str, frozenset[int]]) -> bool:
        value = node.child_by_field_name(gate[0])
        return value is not None and value.kind_id in gate[1]

    def extract(self, root: Node, reuse: _Reuse | None = None) -> _Extraction:
        """The symbols under `root`; with `reuse`, unchanged definitions are copied from the old
        blob's extraction instead of walked."""
        found = _Extraction([], [], [], [], set())
        namespaces: set[str] = set()  # qualnames of namespaces, to tell C++ ns::f from Foo::f
        nested = self._nested(root) if self.nested is not None else None
        stack = self.children(root, -1)
        stack.reverse()
        while stack:
            children = self._visit(stack.pop(), found, namespaces, reuse, nested)
            children.reverse()
            stack.extend(children)
        found.symbols[:] = _identities(found.symbols)
        return found

    def _nested(self, root: Node) -> dict[tuple[int, int], list[Node]]:
        """(start, end) of a callable -> the nested definitions it is the nearest definition of.
        One query over the file, in C; only the matches' ancestors are looked at in Python."""
        out: dict[tuple[int, int], list[Node]] = {}
        defs = self.defs
        for node in QueryCursor(self.nested).captures(root).get("d", ()):
            up = node.parent
            while up is not None and up.kind_id not in defs:
                up = up.parent
            if up is not None and up.kind_id in self.callables:
                out.setdefault((up.start_byte, up.end_byte), []).append(node)
        for nodes in out.values():
            nodes.sort(key=lambda n: n.start_byte)
        return out

    def _visit(self, item: _Item, found: _Extraction, namespaces: set[str],
               reuse: _Reuse | None,
               nested: dict[tuple[int, int], list[Node]] | None = None) -> list[_Item]:
        """Appends the symbol `item` defines, if any; returns its children to walk (none when
        the symbols under it were copied)."""
        node, parent, outer, lead = item
        kind_id = node.kind_id
        rule = self.defs.get(kind_id)
        at = reuse.locate(node) if rule is not None and reuse is not None else None
        if at is not None and reuse.copy_definition(at, node, parent, outer, lead, found,
                                                    namespaces):
            return []  # an unchanged definition in an unchanged context
        read = rule.namer(node, outer) if rule is not None else None
        if read is not None:
            index = self._add(found, namespaces, rule, read, node, parent, outer, lead)
            if at is not None and reuse.copy_descendants(at, index, found, namespaces):
                return []  # an unchanged subtree under a symbol that is the same as before
            if nested is not None and kind_id in self.callables:
                return [(n, index, None, None) for n in nested.get((node.start_byte,
                                                                    node.end_byte), ())]
            return self.children(node, index)
        children = self.children(node, parent)
        if lead is not None and kind_id in self.lead_into and children and \
                children[0][3] is None and children[0][0] == _first_statement(node):
            children[0] = (*children[0][:3], lead)
        # A wrapper lends its range only when it holds a single definition.
        if kind_id in self.wrappers and len(children) == 1:
            child = children[0][0]
            # ...and its leading siblings (a Go `type` declaration's doc comment); what leads
            # the child inside it (a decorator, a comment in a Go `type ( ... )` group) starts
            # no earlier than the wrapper itself.
            children[0] = (child, parent, outer or node, lead)
        return children

    def _add(self, found: _Extraction, namespaces: set[str], rule: _Def, read: _Name, node: Node,
             parent: int, outer: Node | None, lead: Node | None) -> int:
        """Appends the symbol of definition `node`; returns its index."""
        symbol = _symbol(self.spec, rule.kind, read, node, parent, outer, lead, found.symbols,
                         namespaces)
        index = len(found.symbols)
        found.symbols.append(symbol)
        found.node_starts.append(node.start_byte)
        found.node_ends.append(node.end_byte)
        found.node_kinds.append(node.kind_id)
        if symbol.kind == "namespace":
            namespaces.add(symbol.qualname)
        if len(read[0]) > 1 and (read[1] or rule.kind) == "function":
            found.scoped.add(index)
        return index


_WALKERS: dict[str, _Walker] = {}


def _walker(language: str) -> _Walker:
    walker = _WALKERS.get(language)
    if walker is None:
        try:
            spec = _SPECS[language]
        except KeyError:
            raise ValueError(f"no symbol table for language {language!r}; "
                             f"supported: {', '.join(_SPECS)}") from None
        walker = _WALKERS[language] = _Walker(spec, get_language(language))
    return walker


def _symbol(spec: _Spec, kind: str, read: _Name, node: Node, parent: int, outer: Node | None,
            lead: Node | None, symbols: list[Symbol], namespaces: set[str]) -> Symbol:
    parts, kind_override = read
    kind = kind_override or kind
    # The walk names symbols structurally; _identities adds the tags once the file is read.
    prefix = symbols[parent].structural_name + "." if parent >= 0 else ""
    names = [p.decode("utf-8", errors="replace") for p in parts]
    qualname = prefix + ".".join(names)
    if kind == "function":
        if len(names) > 1:  # out-of-line Foo::bar, unless Foo is a namespace
            scope = prefix + ".".join(names[:-1])
            kind = "function" if scope in namespaces else "method"
        elif parent >= 0 and symbols[parent].kind in spec.method_parents:
            kind = "method"
    first = lead or outer or node
    last = outer or node
    return Symbol(
        qualname=qualname,
        name=names[-1],
        kind=kind,
        start_line=first.start_point[0] + 1,
        end_line=_end_line(last),
        parent=parent,
        start_byte=first.start_byte,
        end_byte=last.end_byte,
        tag=spec.tagger(node, outer, kind) if spec.tagger is not None else "",
    )


def _identities(symbols: list[Symbol]) -> list[Symbol]:
    """The symbols with their identities as qualnames (see Identity): a symbol's structural name
    under its parent's identity, its tag, and an ordinal for the second and later same-named
    siblings. Symbols are in document order, parents before their children."""
    out: list[Symbol] = []
    seen: dict[tuple[int, str], int] = {}
    for s in symbols:
        structural = s.structural_name
        ident = structural
        if s.parent >= 0:
            up = out[s.parent]
            up_name = up.structural_name
            if up.qualname != up_name and structural.startswith(up_name + "."):
                ident = up.qualname + structural[len(up_name):]
        if s.tag and s.tag != OVERLOAD:
            ident += s.tag
        # Only callables: reopened namespaces, a struct and its impls, merged TS interfaces and
        # classes redefined in if/else are one thing each.
        if s.tag != OVERLOAD and (s.kind in _CALLABLE_KINDS or s.name.startswith("new ")):
            n = seen[(s.parent, ident)] = seen.get((s.parent, ident), 0) + 1
            if n > 1:
                ident += f"[{n}]"
        if ident != s.qualname:
            s = replace(s, qualname=ident, structural="" if ident == structural else structural)
        out.append(s)
    return out


# ---------------------------------------------------------------------------------------------
# Reuse after an incremental parse


class _Reuse:
    """Lets the walk of an incrementally parsed tree copy the old blob's symbols for the
    definitions that did not change, instead of walking them.

    A definition node lying wholly outside the edited byte ranges (the hunks' new sides,
    insertion and deletion points included) and outside the changed ranges tree-sitter reports
    between the edited old tree and the new one (structure that changed as a consequence of an
    edit, e.g. an unclosed comment) has the same text and the same subtree as in the old tree,
    shifted. Both are needed: renaming an identifier changes no structure. Touching a range counts
    as lying in it.

    The symbols of the node's descendants depend only on that subtree and on the node's own
    symbol: when that symbol is the old one, they are the old ones with lines and bytes shifted
    (copy_descendants). The node's own symbol also depends on its context: its parent (a renamed
    class renames its methods) and the wrapper and leading siblings that lend it its range. It is
    copied too when its parent has the old name and kind and its range is the old one and
    unchanged (copy_definition); otherwise it is computed. Neither copies a C++ `ns::f`: whether
    it is a method depends on the namespaces defined anywhere before it in the file."""

    def __init__(self, old: _Extraction, edits: list[_Edit], changed: Iterable[Range]):
        self.old = old
        spans = sorted([*((e.start_byte, e.new_end_byte) for e in edits),
                        *((r.start_byte, r.end_byte) for r in changed)])
        self.dirty_starts, self.dirty_ends = _merged(spans)
        # Text after the k first edits (and before the next) moved by byte_shifts[k] bytes and
        # row_shifts[k] rows; git hunks cover whole lines, so columns did not change.
        self.edit_ends = [e.new_end_byte for e in edits]
        self.byte_shifts = [0, *accumulate(e.new_end_byte - e.old_end_byte for e in edits)]
        self.row_shifts = [0, *accumulate(e.new_end_point[0] - e.old_end_point[0]
                                          for e in edits)]

    def locate(self, node: Node) -> _Located | None:
        """The old symbol defined by `node` when the node did not change, with its shift."""
        start, end = node.start_byte, node.end_byte
        if self._dirty(start, end):
            return None
        k = bisect_left(self.edit_ends, start)  # edits before the node
        byte_shift = self.byte_shifts[k]
        j = self._old_index(start - byte_shift, end - byte_shift, node.kind_id)
        return _Located(j, byte_shift, self.row_shifts[k]) if j >= 0 else None

    def copy_definition(self, at: _Located, node: Node, parent: int, outer: Node | None,
                        lead: Node | None, found: _Extraction, namespaces: set[str]) -> bool:
        """Appends the old symbol `at` and its descendants as the symbol of `node`; False when
        its context changed and its own symbol has to be computed."""
        old = self.old
        theirs = old.symbols[at.index]
        if not _same_parent(found.symbols, parent, old.symbols, theirs.parent):
            return False
        start, end = (lead or outer or node).start_byte, (outer or node).end_byte
        if (start - at.byte_shift != theirs.start_byte or end - at.byte_shift != theirs.end_byte
                or self._dirty(start, end)):
            return False
        return _copy_subtree(old, at, parent, found, namespaces)

    def copy_descendants(self, at: _Located, root: int, found: _Extraction,
                         namespaces: set[str]) -> bool:
        """Appends the old symbols under `at`, whose new symbol found.symbols[root] was just
        computed; False when they have to be walked."""
        mine, theirs = found.symbols[root], self.old.symbols[at.index]
        if (mine.structural_name != theirs.structural_name or mine.kind != theirs.kind
                or mine.tag != theirs.tag):
            return False
        return _copy_subtree(self.old, at, None, found, namespaces)

    def _dirty(self, start: int, end: int) -> bool:
        i = bisect_left(self.dirty_ends, start)
        return i < len(self.dirty_starts) and self.dirty_starts[i] <= end

    def _old_index(self, start: int, end: int, kind_id: int) -> int:
        """Index of the old symbol defined by the node at start..end of kind_id, or -1."""
        old = self.old
        j = bisect_left(old.node_starts, start)
        while j < len(old.node_starts) and old.node_starts[j] == start:
            if old.node_ends[j] == end and old.node_kinds[j] == kind_id:
                return j
            j += 1
        return -1


class _Located(NamedTuple):
    index: int  # type: ignore[assignment]  # in the old extraction (shadows tuple.index)
    byte_shift: int  # new position - old position
    row_shift: int


def _same_parent(symbols: list[Symbol], parent: int, old_symbols: list[Symbol],
                 old_parent: int) -> bool:
    """Whether two enclosing symbols give a child the same qualified name and kind."""
    if parent < 0 or old_parent < 0:
        return parent == old_parent
    mine, theirs = symbols[parent], old_symbols[old_parent]
    return (mine.structural_name == theirs.structural_name and mine.kind == theirs.kind
            and mine.tag == theirs.tag)


def _merged(spans: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Sorted closed intervals merged where they overlap or touch: (starts, ends)."""
    starts: list[int] = []
    ends: list[int] = []
    for a, b in spans:
        if ends and a <= ends[-1]:
            ends[-1] = max(ends[-1], b)
        else:
            starts.append(a)
            ends.append(b)
    return starts, ends


def _copy_subtree(old: _Extraction, at: _Located, parent: int | None, found: _Extraction,
                  namespaces: set[str]) -> bool:
    """Appends, shifted, old symbol at.index with `parent` as its parent and its descendants, or
    when `parent` is None its descendants only (the last symbol appended being its new one).
    They are contiguous: the walk is in document order. False, appending nothing, when one of
    them is a scoped name."""
    olds = old.symbols
    j = at.index
    first = j if parent is not None else j + 1
    stop = j + 1
    while stop < len(olds) and olds[stop].parent >= j:
        stop += 1
    if old.scoped and not old.scoped.isdisjoint(range(first, stop)):
        return False
    reindex = len(found.symbols) - first  # new index - old index
    if (at.byte_shift == at.row_shift == reindex == 0
            and (parent is None or olds[j].parent == parent)):
        found.symbols.extend(olds[first:stop])  # unchanged, and immutable: shared
    else:
        _append_shifted(olds[first:stop], parent, reindex, at, found.symbols)
    for s in olds[first:stop]:
        if s.kind == "namespace":
            namespaces.add(s.structural_name)
    shift = at.byte_shift.__add__
    found.node_starts.extend(map(shift, old.node_starts[first:stop]))
    found.node_ends.extend(map(shift, old.node_ends[first:stop]))
    found.node_kinds.extend(old.node_kinds[first:stop])
    return True


def _append_shifted(copied: list[Symbol], parent: int | None, reindex: int, at: _Located,
                    out: list[Symbol]) -> None:
    """Appends `copied` moved by `at`'s shift, re-parented by `reindex`; the first one under
    `parent` unless None."""
    rows, offset = at.row_shift, at.byte_shift
    for s in copied:
        out.append(Symbol(s.qualname, s.name, s.kind, s.start_line + rows, s.end_line + rows,
                          s.parent + reindex if parent is None else parent,
                          s.start_byte + offset, s.end_byte + offset, s.tag, s.structural))
        parent = None


# ---------------------------------------------------------------------------------------------
# Parsing, caching and incremental re-parsing


def _line_starts(source: bytes) -> list[int]:
    """Byte offset of the start of every line, as tree-sitter rows count them (after each \\n)."""
    if b"\r" in source:  # bytes.splitlines also splits at \r
        return [0, *accumulate(len(line) + 1 for line in source.split(b"\n")[:-1])]
    starts = list(accumulate(map(len, source.splitlines(keepends=True)), initial=0))
    if not source.endswith(b"\n") and source:
        starts.pop()  # the end of a last line without \n starts no line
    return starts


class _Lines(NamedTuple):
    """Line geometry of a blob, enough to turn git line numbers into tree-sitter edits."""

    starts: list[int]
    size: int

    @property
    def count(self) -> int:  # type: ignore[override]  # shadows tuple.count
        """Lines as git counts them: a last line without a newline counts."""
        return len(self.starts) - (1 if self.starts[-1] == self.size else 0)

    def offset(self, line: int) -> int:
        """Byte offset where 0-based `line` starts; the end of the blob past the last line."""
        return self.starts[line] if line < len(self.starts) else self.size

    def point(self, offset: int) -> tuple[int, int]:
        row = bisect_right(self.starts, offset) - 1
        return row, offset - self.starts[row]


class _Edit(NamedTuple):
    start_byte: int
    old_end_byte: int
    new_end_byte: int
    start_point: tuple[int, int]
    old_end_point: tuple[int, int]
    new_end_point: tuple[int, int]


Hunk = tuple[int, int, int, int]


def _first_line(start: int, lines: int) -> int:
    """0-based first line a git hunk side covers. An empty side (pure insertion or deletion)
    names the line after which the change happened, so its 0-based position is `start`."""
    return start - 1 if lines else start


def _edits(hunks: list[Hunk], old: _Lines, new: _Lines) -> list[_Edit] | None:
    """tree-sitter edits, in application order, for git zero-context hunks from `old` to `new`;
    None when the hunks do not describe these two blobs (then a full parse is the safe answer).

    Edits are applied top-down, so when a hunk is applied everything above it is already new
    text and everything below still old: its start is a position in the new blob, its old end
    lies the old text's extent further on."""
    edits: list[_Edit] = []
    old_done = new_done = 0  # lines consumed on each side
    for old_start, old_lines, new_start, new_lines in sorted(hunks):
        old_first = _first_line(old_start, old_lines)
        new_first = _first_line(new_start, new_lines)
        if not _same_gap(old, old_done, old_first, new, new_done, new_first):
            return None
        old_done, new_done = old_first + old_lines, new_first + new_lines
        if old_done > old.count or new_done > new.count:
            return None
        old_a, old_b = old.offset(old_first), old.offset(old_done)
        start = new.offset(new_first)
        start_point = new.point(start)
        (a_row, a_col), (b_row, b_col) = old.point(old_a), old.point(old_b)
        old_end_point = (start_point[0] + b_row - a_row,
                         start_point[1] + b_col - a_col if b_row == a_row else b_col)
        new_end = new.offset(new_done)
        edits.append(_Edit(start, start + old_b - old_a, new_end,
                           start_point, old_end_point, new.point(new_end)))
    if not _same_gap(old, old_done, old.count, new, new_done, new.count):
        return None
    return edits


def _same_gap(old: _Lines, old_from: int, old_to: int, new: _Lines, new_from: int,
              new_to: int) -> bool:
    """Unchanged text between hunks has the same number of lines and bytes on both sides."""
    return (old_to - old_from == new_to - new_from >= 0
            and old.offset(old_to) - old.offset(old_from)
            == new.offset(new_to) - new.offset(new_from))


# Text whose trees the cache keeps: a tree takes 20-120x its text (35x measured on generated
# Python, Java, C and JavaScript; 50-110x on sympy's Python), so 100-450 MB at most, per process: the
# cache is most of a commit reader's memory (issue 17: a bounded index run). The recently changed
# ordinary files fit (sympy's hot set: 1-4 MB of text); the newest tree is kept whatever its
# size (except by a worker's parser: keep_oversized), so a big file's next version still
# re-parses incrementally when it comes next.
TREE_CACHE_BYTES = 4_000_000
TREE_CACHE_SIZE = 64   # trees; 128 parsed no fewer blobs on sympy's commits 20,000-24,000
# Symbols the symbols cache keeps, all versions together: each version of a 10 MB file holds
# about 100k of them, and those after its first edit are new objects (shifted), 150-200 bytes
# each; 4096 versions of it would not fit in memory. 300k symbols: about 60 MB at most (sympy's
# readers held 120-230k).
CACHED_SYMBOLS = 300_000


class _Parsed(NamedTuple):
    tree: Tree  # never mutated: incremental parses edit a copy
    lines: _Lines
    found: _Extraction


class SymbolParser:
    """Parses blobs to symbols, caching by blob id so a blob is never parsed twice.

    Keeps one tree-sitter parser per language and the most recently used blobs with their trees,
    so that a blob's successor can be re-parsed incrementally and copy the symbols of the
    definitions it did not change. Not thread-safe: one per thread.
    """

    def __init__(self, cache_size: int = 4096, tree_cache_size: int = TREE_CACHE_SIZE,
                 tree_cache_bytes: int = TREE_CACHE_BYTES, cached_symbols: int = CACHED_SYMBOLS,
                 keep_oversized: bool = True):
        # Two caches: symbols are small and answer a repeated blob (the old side of the next
        # commit) without parsing; trees are large (~20x the text) and serve incremental
        # re-parses. A tree superseded by an incremental parse of its successor is dropped: a
        # file's older versions are rarely diffed again (merges, other branches), so the tree
        # cache holds about one version per recently changed file. Measured on scrapy (11k
        # commits): one LRU cache of 128 blobs parsed 30.7k blobs, of 1024 21.2k (and 425 MB).
        # The tree cache (TREE_CACHE_SIZE trees) is also bounded by the text it stands for: 64
        # trees of 10 MB files
        # would take tens of GB (see TREE_CACHE_BYTES).
        # Whether the newest tree is kept even beyond tree_cache_bytes (see _remember_tree). A
        # worker within a memory share keeps none: a big file's old tree alive while its new
        # version is parsed doubles what the commit takes (sympy's 2 MB generated file: two
        # trees of ~150 MB at once).
        self._keep_oversized = keep_oversized
        self._cache_size = cache_size
        self._tree_cache_size = tree_cache_size
        self._tree_cache_bytes = tree_cache_bytes
        self._cached_symbols_max = cached_symbols
        self._tree_bytes = 0
        self._cached_symbols = 0
        self._cache: OrderedDict[tuple[str, str], list[Symbol]] = OrderedDict()
        self._dialects: dict[str, str] = {}   # a C blob's grammar (c_text.dialect), by blob id
        # Lines of the cached blobs whose symbols came from a parse without errors, in the
        # languages read by regions (_REGIONS): what a successor's region parse needs to know.
        self._clean: dict[tuple[str, str], _Segments] = {}
        self._trees: OrderedDict[tuple[str, str], _Parsed] = OrderedDict()
        self._parsers: dict[str, Parser] = {}
        self._parses = 0
        self._regions = 0

    def symbols(self, language: str, blob_id: str, source: bytes,
                base: tuple[str, list[Hunk]] | None = None) -> list[Symbol]:
        """Symbols of a blob. `base` = (old blob id, git zero-context hunks from the old blob to
        this one): when the old blob's tree is still cached, only the edited regions are
        re-parsed."""
        if language == "c":   # which grammar, read once per blob (a scan of the whole text)
            known = self._dialects.get(blob_id)
            if known is None:
                if len(self._dialects) >= DIALECTS_KEPT:
                    self._dialects.clear()
                known = self._dialects[blob_id] = dialect(language, source)
            language = known
        key = (language, blob_id)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return list(cached)
        walker = _walker(language)
        sides = conflict_sides(source)
        if sides is not None:
            # Read as one side of its conflicts (lang/conflicts.py), in full. Neither its tree nor
            # its boundaries are kept: the next version's hunks are of the text with markers.
            self._parses += 1
            before = self._cache.get((language, base[0])) if base is not None else None
            symbols = _one_side(walker, self._parser(language), language, sides, before)
            self._remember_symbols(key, symbols)
            return list(symbols)
        lines = _Lines(_line_starts(source), len(source))
        edited = self._edited_base(language, base, lines)
        if edited is None and base is not None and language in _REGIONS:
            symbols = self._by_regions(walker, language, base, source, lines)
            if symbols is not None:
                self._parses += 1
                self._regions += 1
                self._remember_symbols(key, symbols, _segments(symbols, source))
                return list(symbols)
        # Blanked (lang/c_text.py) whether parsed in full or incrementally: a word alone on its
        # line is blanked or not by the next line, which an incremental parse reads again
        # either way (the word is that line's return type, or the padding before its token).
        text = blanked(source, macro_spans(language, source))
        tree, reuse = self._parse(language, text, edited)
        self._parses += 1
        found = walker.extract(tree.root_node, reuse)
        if edited is not None:
            self._forget_tree((language, base[0]))
        self._remember_tree(key, _Parsed(tree, lines, found))
        clean = language in _REGIONS and not tree.root_node.has_error
        self._remember_symbols(key, found.symbols,
                               _segments(found.symbols, source) if clean else None)
        return list(found.symbols)

    def _by_regions(self, walker: _Walker, language: str, base: tuple[str, list[Hunk]],
                    source: bytes, lines: _Lines) -> list[Symbol] | None:
        """The symbols of a new version whose old version's symbols are cached but not its tree:
        only the top-level definitions the hunks touch are parsed (see _regions); None when
        that is not provably what a full parse would give."""
        old_key = (language, base[0])
        old, segments = self._cache.get(old_key), self._clean.get(old_key)
        if old is None or segments is None or not base[1]:
            return None
        plan = _regions(old, segments, sorted(base[1]), source, lines)
        if plan is None:
            return None
        return _stitch(walker, self._parser(language), old, plan, source, lines)

    def _remember_symbols(self, key: tuple[str, str], symbols: list[Symbol],
                          clean: _Segments | None = None) -> None:
        """Keep a blob's symbols (with its boundaries when its parse had no error: see
        _regions); evict the least recently used beyond the count of blobs or of symbols (the
        newest is kept whatever its size)."""
        self._cache[key] = symbols
        self._cached_symbols += len(symbols)
        if clean is not None:
            self._clean[key] = clean
        while len(self._cache) > 1 and (len(self._cache) > self._cache_size
                                        or self._cached_symbols > self._cached_symbols_max):
            gone, dropped = self._cache.popitem(last=False)
            self._cached_symbols -= len(dropped)
            self._clean.pop(gone, None)

    def _remember_tree(self, key: tuple[str, str], parsed: _Parsed) -> None:
        """Keep the newest tree whatever its size (its successor will want it), unless this
        parser keeps no oversized tree; evict the least recently used beyond either bound."""
        self._forget_tree(key)
        if not self.keeps_tree(parsed.lines.size):
            return
        self._trees[key] = parsed
        self._tree_bytes += parsed.lines.size
        while len(self._trees) > 1 and (len(self._trees) > self._tree_cache_size
                                        or self._tree_bytes > self._tree_cache_bytes):
            self._forget_tree(next(iter(self._trees)))

    def _forget_tree(self, key: tuple[str, str]) -> None:
        parsed = self._trees.pop(key, None)
        if parsed is not None:
            self._tree_bytes -= parsed.lines.size

    def cached(self, language: str, blob_id: str) -> list[Symbol] | None:
        """The blob's symbols if they are cached, without parsing and without changing what
        the caches keep: another reader of the same blob asks (the structure pass, after the
        commit reader parsed HEAD's new versions)."""
        if language == "c":
            known = self._dialects.get(blob_id)
            if known is None:
                return None
            language = known
        found = self._cache.get((language, blob_id))
        return list(found) if found is not None else None

    def tree(self, language: str, blob_id: str) -> Tree | None:
        """The blob's tree if it is cached, without changing what the caches keep: a tree of
        the blob's own text (not of C's, whose macros were blanked before parsing), for
        another reader of the same blob (the structure pass's references)."""
        if language in ("c", "cpp"):
            return None
        parsed = self._trees.get((language, blob_id))
        return parsed.tree if parsed is not None else None

    def keeps_tree(self, size: int) -> bool:
        """Whether the tree of a blob of `size` bytes would be kept once parsed."""
        return self._keep_oversized or size <= self._tree_cache_bytes

    def forget(self) -> None:
        """Drop every cached tree and symbol list (they are rebuilt on demand, as in a fresh
        parser): what a worker does before a commit whose tree would not fit beside them."""
        self._cache.clear()
        self._clean.clear()
        self._trees.clear()
        self._tree_bytes = self._cached_symbols = 0

    def parse_count(self) -> int:
        """How many blobs were parsed (full, incremental or by regions), i.e. cache misses."""
        return self._parses

    def _parser(self, language: str) -> Parser:
        parser = self._parsers.get(language)
        if parser is None:
            parser = self._parsers[language] = get_parser(language)
        return parser

    def region_count(self) -> int:
        """How many of them were read by regions (only the definitions their hunks touch)."""
        return self._regions

    def _parse(self, language: str, source: bytes,
               base: tuple[_Parsed, Tree, list[_Edit]] | None) -> tuple[Tree, _Reuse | None]:
        """The blob's tree, and what its walk may copy from the base blob's symbols."""
        parser = self._parser(language)
        if base is None:
            return parser.parse(source), None
        old, edited, edits = base
        tree = parser.parse(source, edited)
        # Error recovery depends on which subtrees are reused: an incremental tree with errors
        # can differ from a full parse (seen on C), so such a blob is parsed again from scratch
        # (and then has nothing in common with the old tree to copy from).
        if tree.root_node.has_error:
            return parser.parse(source), None
        return tree, _Reuse(old.found, edits, edited.changed_ranges(tree))

    def _edited_base(self, language: str, base: tuple[str, list[Hunk]] | None,
                     lines: _Lines) -> tuple[_Parsed, Tree, list[_Edit]] | None:
        """The old blob as cached, a copy of its tree with the hunks applied, and the edits."""
        old = self._trees.get((language, base[0])) if base is not None else None
        if old is None:
            return None
        edits = _edits(base[1], old.lines, lines)
        if not edits:
            # No edit between two different blobs (equal ones share an id and hit the cache):
            # the hunks are wrong, and an unedited tree would be reused, old names and all.
            return None
        tree = old.tree.copy()  # the cached tree may serve other successors: never edit it
        for edit in edits:
            tree.edit(*edit)
        return old, tree, edits


# ---------------------------------------------------------------------------------------------
# Reading a new version by regions
#
# When a file's old tree was evicted but its symbols are cached, a full parse of the new version
# is most of the reading time (issue 17: 41% on sympy). In Python a definition that starts at
# column 0 starts a module-level statement, and the text before it decides nothing after it
# except through the parser's state there, which is the module's own. So between two such
# definitions of the old version that the hunks leave alone, the new text is a run of whole
# module-level statements: parsed alone, it gives the symbols a full parse gives there (lines
# and bytes shifted), and the old symbols outside such runs stand, shifted. Only when the old
# version parsed without an error and the run parses without one: error recovery depends on
# context. Checked against full parses on real histories (bench_read_profile.py --verify).

_REGIONS = frozenset({"python"})
_REGION_STARTS = (b"def ", b"class ", b"async ", b"@")
# Past this share of the file in regions, a full parse costs about the same and risks nothing.
_REGION_SHARE = 0.6


class _Plan(NamedTuple):
    # Old symbols kept, as (first, stop, byte shift, line shift), and regions of the new text
    # as (start byte, end byte, first row), in document order: a region after each kept span
    # but the last.
    kept: list[tuple[int, int, int, int]]
    regions: list[tuple[int, int, int]]


class _Segments(NamedTuple):
    """A version cut at its boundaries (module-level definitions starting a line at column 0:
    where a region of a later version may start or end), with a checksum of each piece: the
    text before the first boundary, between two, after the last."""

    bounds: tuple[int, ...]   # indices of the boundary symbols
    crcs: tuple[int, ...]     # len(bounds) + 1 CRC-32s
    size: int


def _segments(symbols: list[Symbol], source: bytes) -> _Segments:
    bounds = tuple(i for i, s in enumerate(symbols)
                   if s.parent < 0 and s.kind in ("class", "function")
                   and (s.start_byte == 0 or source[s.start_byte - 1] == 0x0A)
                   and source.startswith(_REGION_STARTS, s.start_byte))
    cuts = [0, *(symbols[i].start_byte for i in bounds), len(source)]
    view = memoryview(source)
    return _Segments(bounds, tuple(zlib.crc32(view[a:b]) for a, b in zip(cuts, cuts[1:])),
                     len(source))


def _regions(old: list[Symbol], segments: _Segments, hunks: list[Hunk], source: bytes,
             lines: _Lines) -> _Plan | None:
    """Which pieces of the old version the hunks reach, as a plan for _stitch: whole pieces, so
    that each region starts and ends at a boundary. The hunks only propose: every piece kept
    must be found, byte for byte (by its checksum), where the plan puts it in the new text, and
    the pieces and regions must tile it. None otherwise, or when regions are most of it."""
    bounds = segments.bounds
    starts = [old[i].start_line for i in bounds]
    cuts = [0, *(old[i].start_byte for i in bounds), segments.size]  # piece j: cuts[j:j+2]
    changed = []  # per hunk: the first old line it changes (or inserts before), the last
    for i, (old_start, old_lines, _, new_lines) in enumerate(hunks):
        if old_lines:
            changed.append((old_start, old_start + old_lines - 1, new_lines - old_lines))
        else:
            changed.append((old_start + 1, old_start, new_lines))
        if i and (changed[-1][0] <= changed[-2][1] or old_start == hunks[i - 1][0]):
            return None   # overlapping or repeated hunks: git's never are
    spans: list[list[int]] = []  # [last boundary before, first boundary after], merged
    for lo, hi, _ in changed:
        a = bisect_right(starts, lo - 1) - 1
        b = bisect_right(starts, hi)
        if spans and a < spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], b)
        else:
            spans.append([a, b])

    def new_start(k: int) -> int:
        """Where boundary k (-1: the top, len(bounds): the end) starts in the new text, by the
        hunks: its old line moved by the lines inserted and deleted above it."""
        if k < 0:
            return 0
        if k >= len(starts):
            return lines.size
        return lines.offset(starts[k] - 1 + sum(d for _, hi, d in changed if hi < starts[k]))

    view = memoryview(source)

    def found(first: int, stop: int, shift: int) -> bool:
        """Whether old pieces first..stop-1 are in the new text, moved by `shift` bytes."""
        return all(zlib.crc32(view[cuts[j] + shift:cuts[j + 1] + shift]) == segments.crcs[j]
                   for j in range(first, stop))

    kept: list[tuple[int, int, int, int]] = []
    regions: list[tuple[int, int, int]] = []
    after, piece, shift, rows, covered = 0, 0, 0, 0, 0   # what follows the last region
    for a, b in spans:
        start, end = new_start(a), new_start(b)
        if (end < start or start != cuts[a + 1] + shift or not found(piece, a + 1, shift)
                or start and not source.startswith(_REGION_STARTS, start)
                or source[start:end].rstrip(b"\r\n").endswith(b"\\")):
            # Hunks that do not fit the text, or a region that would not stand alone: one that
            # starts inside the statement before it, or ends in a line continuation (which
            # parses alone, and joins the definition after it in the file).
            return None
        kept.append((after, bounds[a] if a >= 0 else 0, shift, rows))
        row = lines.point(start)[0] if start < lines.size else lines.count
        regions.append((start, end, row))
        covered += end - start
        piece, shift = b + 1, end - cuts[b + 1]
        if b < len(bounds):
            after = bounds[b]
            rows = lines.point(end)[0] - (starts[b] - 1)
        else:
            after = len(old)
    if (covered > _REGION_SHARE * lines.size or segments.size + shift != lines.size
            or not found(piece, len(cuts) - 1, shift)):
        return None
    kept.append((after, len(old), shift, rows))
    return _Plan(kept, regions)


def _stitch(walker: _Walker, parser: Parser, old: list[Symbol], plan: _Plan, source: bytes,
            lines: _Lines) -> list[Symbol] | None:
    """The new version's symbols: the old ones the plan keeps, shifted, and each region's own,
    parsed alone and moved to its place; None when a region does not parse cleanly."""
    out: list[Symbol] = []
    for (first, stop, byte_shift, row_shift), region in zip(plan.kept, [*plan.regions, None]):
        reindex = len(out) - first
        if byte_shift == row_shift == reindex == 0:
            out.extend(old[first:stop])   # unchanged, and immutable: shared
        else:
            out.extend(_moved(s, row_shift, byte_shift, reindex) for s in old[first:stop])
        if region is None:
            continue
        start, end, row = region
        tree = parser.parse(source[start:end])
        if tree.root_node.has_error:
            return None
        offset = len(out)   # the region's own parent indices start here
        out.extend(_moved(s, row, start, offset) for s in walker.extract(tree.root_node).symbols)
    return _identities(out)


def _moved(s: Symbol, rows: int, offset: int, reindex: int) -> Symbol:
    """`s` moved down `rows` lines and `offset` bytes, its parent's index by `reindex` (a
    top-level symbol stays one)."""
    return Symbol(s.qualname, s.name, s.kind, s.start_line + rows, s.end_line + rows,
                  s.parent + reindex if s.parent >= 0 else -1, s.start_byte + offset,
                  s.end_byte + offset, s.tag, s.structural)


DIALECTS_KEPT = 16_384   # C blob ids whose grammar is kept (about 2 MB), then forgotten at once


def extract_symbols(language: str, source: bytes) -> list[Symbol]:
    """Symbols of `source`, parsed once without caching (one side of its conflicts, if any)."""
    language = dialect(language, source)
    walker = _walker(language)
    sides = conflict_sides(source)
    parser = get_parser(language)
    if sides is not None:
        return _one_side(walker, parser, language, sides)
    text = blanked(source, macro_spans(language, source))
    return walker.extract(parser.parse(text).root_node).symbols


def _one_side(walker: _Walker, parser: Parser, language: str, sides: tuple[bytes, bytes],
              before: list[Symbol] | None = None) -> list[Symbol]:
    """The symbols of the side of a conflicted text that parses (a block may start inside a
    definition that only one side closes); of two that do, the one that keeps more of the
    previous version's definitions (the least change), else ours."""
    kept = {s.qualname for s in before or ()}
    read = []
    for preference, side in enumerate(sides):
        tree = parser.parse(blanked(side, macro_spans(language, side)))
        symbols = walker.extract(tree.root_node).symbols
        score = sum(s.qualname in kept for s in symbols)
        read.append((not tree.root_node.has_error, score, -preference, symbols))
    return max(read, key=lambda r: r[:3])[3]


"""Resolution of references to definitions, the way a linker would.

A reference resolves, in order: through the file's imports (`from a.b import save` binds `save`
to `a/b.py::save`; relative imports; `import x as y`; JS/TS `import {save} from "./db"` with
extensions and index files; Go packages by directory; Java imports and packages; Rust `use`
paths), then through the enclosing class for `self.x()` / `this.x()` (and its bases), then the
same file (and, for Go and Java, the same package), then a unique definition of that name in the
project. Every edge carries a confidence; what several definitions could satisfy is kept as
ambiguous (the confidence shared), what none can as unresolved, what points outside the
repository as external.

Rust paths go through modules as rustc's do (_rust_walk): `crate::`, `self::`, `super::`, the
crate's own name or another package's of the repository (from the Cargo.toml files, meta
`rust_crates`), child modules (inline `mod x { }` or `mod x;` files) and items of the module a
reference is in. A module is a place: a file and the inline module in it (Place). A bare name is
first a definition of its module, then of an enclosing module of the file (what `use super::*`
in `mod tests` sees); `T::f()` is `T`'s `f`, and a `T` defined nowhere in the repository (`Box`,
`String`) is external.
"""

from __future__ import annotations

import builtins
import json
import posixpath
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Generic, TypeVar

from cortex_core.lang.go_build import compatible

CONF_IMPORT = 1.0      # through an import or a module qualifier, the definition found
CONF_LOCAL = 1.0       # the same file
CONF_CLASS = 0.9       # self.x() / this.x() in the enclosing class or a base
CONF_PACKAGE = 0.9     # the same Go/Java package
CONF_MODULE_ONLY = 0.6  # the imported module is known, the name is not a definition in it
CONF_UNIQUE = 0.5      # the only definition of that name in the project
CONF_METHOD = 0.4      # obj.name(): the only method of that name in the project
CONF_IMPL = 0.9        # Rust T::f() with T known and f in an impl block of T in another file
MAX_CANDIDATES = 5     # more candidates than this: unresolved rather than noise
MAX_REEXPORT_DEPTH = 64  # modules re-exporting a name, followed at most this deep
# Lookups one asker (a reference) may make; past them its chain is cut as a long one is (see
# _binding). Answers that a cycle of re-exports made are found again by each asker, and an
# import can name many files (a Java package): the work of one asker is bounded, not only the
# depth (sympy's references need at most 7 lookups; 56,000 for all 423,000 of them).
LOOKUPS_PER_ASKER = 1_000
# Files and names whose definitions a resolution reads one at a time before it reads the rest at
# once (_Definitions): 2,000 reads cost about what reading sympy's 39,000 definitions does.
READ_ALL_AFTER = 2_000
# Stored with the answers (meta `resolver_version`): a store whose answers an earlier resolver
# gave is resolved again in full once (2: answers that do not depend on the order of asking;
# 3: a Java method's unqualified call of another method of its class; 4: candidates in the order
# of their paths, not of the ids an index run gave their files; 5: a Go call qualified by a
# type of its package, `Command.Run` for `c.Run()` with `c *Command`; 6: a Java call qualified by
# a class of its package, `Dates.parse()`, under any source root; a java.lang class is external;
# Rust modules, inline ones included, the crates of the repository by name, and `T::f()`
# qualified by `T`; 7: a Rust path through a module a `use` names, `use crate::sys; sys::f()`;
# 8: a JavaScript private name, `x.#send()`, is the member of the class around it; 9: a Go
# call reaches only the definitions of files built beside its own (lang/go_build.py), a dot
# import binds each file of the package that defines the name, type annotations' refs,
# TypeScript's global types outside the repository, Java's types by their class in scope, Go's
# by their package, a Python namespace package's modules, a Java import of a nested class or
# a static member binds it, a Java type by its full name or nested in a base class, none by
# its name alone; 10: a Python or Go type declared in the definition around its use; 11: a
# Python call qualified by a class, `Request` or `wrappers.Response` (a module's, or one it
# re-exports), finds the methods it defines or inherits, and by a builtin value type is
# outside the repository; 12: a bare call of a function nested in one around it, in Python
# and JavaScript, is that one before an import or a top-level function of its name).
RESOLVER_VERSION = "12"

JS_LIKE = ("javascript", "typescript", "tsx")
PY_AND_JS = ("python", *JS_LIKE)
# Definitions a bare call can mean when one is nested in the function around the call.
_FUNCTION_KINDS = frozenset({"function", "method"})
# Definitions whose members `self.x()` / `this.x()` / Rust's `Self::x()` name.
_CLASS_KINDS = frozenset({"class", "struct", "interface", "trait", "impl", "type", "enum",
                          "record"})
# java.lang's classes, which Java code names without an import (a receiver's declared type).
JAVA_LANG = frozenset({
    "Object", "String", "StringBuilder", "StringBuffer", "CharSequence", "Class", "Enum",
    "Integer", "Long", "Short", "Byte", "Double", "Float", "Boolean", "Character", "Number",
    "Math", "StrictMath", "System", "Thread", "Runtime", "Process", "ProcessBuilder", "Iterable",
    "Comparable", "Runnable", "AutoCloseable", "Throwable", "Exception", "RuntimeException",
    "Error", "ClassLoader", "ThreadLocal", "Void", "Record", "Appendable", "Readable",
    # its exceptions and errors, which a `catch` or `throws` names (gson: 400 of 474 types
    # stored unresolved), and more of its classes
    "ArithmeticException", "ArrayIndexOutOfBoundsException", "ArrayStoreException",
    "ClassCastException", "ClassNotFoundException", "CloneNotSupportedException",
    "EnumConstantNotPresentException", "IllegalAccessException", "IllegalArgumentException",
    "IllegalCallerException", "IllegalMonitorStateException", "IllegalStateException",
    "IllegalThreadStateException", "IndexOutOfBoundsException", "InstantiationException",
    "InterruptedException", "NegativeArraySizeException", "NoSuchFieldException",
    "NoSuchMethodException", "NullPointerException", "NumberFormatException",
    "ReflectiveOperationException", "SecurityException", "StringIndexOutOfBoundsException",
    "TypeNotPresentException", "UnsupportedOperationException", "AbstractMethodError",
    "AssertionError", "BootstrapMethodError", "ClassCircularityError", "ClassFormatError",
    "ExceptionInInitializerError", "IllegalAccessError", "IncompatibleClassChangeError",
    "InstantiationError", "InternalError", "LinkageError", "NoClassDefFoundError",
    "NoSuchFieldError", "NoSuchMethodError", "OutOfMemoryError", "StackOverflowError",
    "ThreadDeath", "UnknownError", "UnsatisfiedLinkError", "UnsupportedClassVersionError",
    "VerifyError", "VirtualMachineError", "Cloneable", "ClassValue", "InheritableThreadLocal",
    "SecurityManager", "StackTraceElement", "StackWalker", "ThreadGroup"})
# The packages of the JDK: a type named by its full name there (`java.sql.Date`) is outside.
_JDK_PACKAGES = frozenset({"java", "javax", "jdk"})
_RUST_ROOTS = ("lib.rs", "main.rs")
_RUST_TARGET_FOLDERS = frozenset({"examples", "tests", "benches"})   # a crate per file
# Inline modules (and a path's types) followed around a Rust reference at most: each level costs
# a lookup of a name as long as the levels, and only hostile code nests deeper (1,500 nested
# `mod`s took minutes to resolve without it).
_RUST_NESTING = 32
PY_BUILTINS = frozenset(dir(builtins))
# The builtin classes of values, which a call's qualifier names when its variable is declared
# one (`text: str`, `parts = list(...)` is not: the name tells a class only when capitalised),
# and which no variable is named after.
PY_VALUE_TYPES = frozenset({"str", "bytes", "bytearray", "dict", "list", "set", "frozenset",
                            "tuple", "int", "float", "bool", "complex"})
# The types TypeScript code names without an import (its standard library and the DOM's most
# used): a type annotation naming one, with no definition of the name in its file or imports,
# is outside the repository, not a guess at a same-named class of the project.
TS_GLOBAL_TYPES = frozenset({
    "Array", "ReadonlyArray", "Promise", "PromiseLike", "Map", "ReadonlyMap", "Set",
    "ReadonlySet", "WeakMap", "WeakSet", "Record", "Partial", "Required", "Readonly", "Pick",
    "Omit", "Exclude", "Extract", "NonNullable", "Parameters", "ReturnType", "InstanceType",
    "ConstructorParameters", "Awaited", "Uppercase", "Lowercase", "Capitalize", "Uncapitalize",
    "ThisType", "Date", "Error", "TypeError", "RangeError", "SyntaxError", "RegExp", "Function",
    "Object", "String", "Number", "Boolean", "Symbol", "BigInt", "Iterable", "Iterator",
    "IterableIterator", "AsyncIterable", "AsyncIterator", "AsyncIterableIterator", "Generator",
    "AsyncGenerator", "ArrayLike", "ArrayBuffer", "Uint8Array", "DataView", "JSON", "Math",
    "Element", "HTMLElement", "Event", "Node", "Document", "Window", "Response", "Request",
    "Headers", "URL", "URLSearchParams", "Blob", "File", "FormData", "AbortSignal",
    "AbortController", "ReadableStream", "WritableStream", "TextEncoder", "TextDecoder",
    "PropertyKey", "PropertyDescriptor", "TemplateStringsArray", "NoInfer", "ThisParameterType",
    "OmitThisParameter", "WeakRef", "SharedArrayBuffer", "Int8Array", "Int16Array",
    "Int32Array", "Uint16Array", "Uint32Array", "Uint8ClampedArray", "Float32Array",
    "Float64Array", "BigInt64Array", "BigUint64Array", "Console", "Intl"})
JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts")


@dataclass
class RefRow:
    id: int
    file_id: int
    scope: str | None
    kind: str
    name: str | None
    qualifier: str | None
    module: str | None
    level: int
    alias: str | None
    owner: str | None


Target = tuple[int, "str | None", float]   # (file id, qualname or None, confidence)
# Where a module path leads: a file, and the definition in it (None: the file's own module); in
# Rust an inline module (`tests`) or, after the modules, a type (`Printer`, for `Printer::new`).
Place = tuple[int, "str | None"]
_NO_CYCLE = 1 << 30   # a `low` above any place on the stack (Resolver._binding)
_CUT = 1 << 30        # the `need` of an answer cut by the depth bound
_UNKNOWN: list = []   # a lookup not made yet
K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class _Definitions:
    """The definitions of the files resolved (`files`), by file and by name, read from the store
    when first asked for, or all at once (`whole`). A one-commit update of sympy asks for a few
    hundred of its 1,400 files and 24,000 names, where reading its 39,000 definitions into
    Python cost every update 0.1 s. A read of one file or name costs some 35 µs, a definition
    read whole some 2.5 µs: after READ_ALL_AFTER reads the rest are read at once, which bounds
    an update that asks for many. The answers are the same either way: a file's definitions in
    the order of their qualnames, a name's in the order of their paths, then qualnames."""

    def __init__(self, con, files: dict[int, str], whole: bool):
        self.con, self.files = con, files
        self._by_file: dict[int, dict[str, str]] = {}                 # qualname -> kind
        self._by_name: dict[str, list[tuple[int, str, str]]] = {}     # (file, qualname, kind)
        self._whole = False
        self._reads = 0
        if whole:
            self._read_all()

    def of_file(self, file_id: int) -> dict[str, str]:
        found = self._by_file.get(file_id)
        if found is None:
            if self._whole or file_id not in self.files or self._read_one():
                return self._by_file.get(file_id, {})
            found = self._by_file[file_id] = dict(self.con.execute(
                "select qualname, kind from defs where file_id = ? order by qualname",
                (file_id,)))
        return found

    def named(self, name: str) -> list[tuple[int, str, str]]:
        found = self._by_name.get(name)
        if found is None:
            if self._whole or self._read_one():
                return self._by_name.get(name, [])
            found = self._by_name[name] = [row for row in self.con.execute(
                "select d.file_id, d.qualname, d.kind from defs d join files f on f.id = d.file_id"
                " where d.name = ? order by f.path, d.qualname", (name,)) if row[0] in self.files]
        return found

    def _read_one(self) -> bool:
        """Count a read of one file or name; True when the rest were read at once instead."""
        self._reads += 1
        if self._reads > READ_ALL_AFTER:
            self._read_all()
        return self._whole

    def _read_all(self) -> None:
        by_file: dict[int, dict[str, str]] = defaultdict(dict)
        by_name: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
        for fid, qualname, name, kind in self.con.execute(
                "select d.file_id, d.qualname, d.name, d.kind from defs d join files f"
                " on f.id = d.file_id order by f.path, d.qualname"):
            if fid in self.files:
                by_file[fid][qualname] = kind
                by_name[name].append((fid, qualname, kind))
        self._by_file, self._by_name, self._whole = dict(by_file), dict(by_name), True


class _Lookup(Generic[K, V]):
    """A read-only view of _Definitions by one key: what `read` answers for it, which is empty
    for a key with none (`get` then answers its default)."""

    def __init__(self, read: Callable[[K], V]):
        self._read = read

    def __getitem__(self, key: K) -> V:
        return self._read(key)

    def get(self, key: K, default: T) -> V | T:
        return self._read(key) or default


def local_name(name: str | None, alias: str | None, module: str | None) -> str | None:
    """The name an import binds in its file: its alias, the name it imports, or for a whole
    module (`import a.b`) the module's first part."""
    local = alias or (name if name not in (None, "*") else None)
    if local is None and module:
        local = module.split(".")[0].split("/")[-1].split("::")[-1]
    return local


class Resolver:
    """Indexes of the whole project's structure, built once per resolution run."""

    def __init__(self, con, whole: bool = True):
        """`whole`: read every definition at once (a full resolution asks for most of them);
        else each file's and name's when first asked (_Definitions)."""
        self.con = con
        self.path = {}
        self.lang = {}
        # Everything by path: candidates are kept in this order (MAX_CANDIDATES), and the keys'
        # order would be the file ids', which follow the order an index run's workers deliver
        # commits in.
        for fid, path, lang in con.execute(
                "select f.id, f.path, s.language from struct_files s join files f"
                " on f.id = s.file_id where s.skip_reason is null order by f.path"):
            self.path[fid] = path
            self.lang[fid] = lang
        self.by_path = {p: f for f, p in self.path.items()}
        definitions = _Definitions(con, self.path, whole)
        self.defs = _Lookup(definitions.of_file)       # file -> qualname -> kind
        self.by_name = _Lookup(definitions.named)      # name -> [(file, qualname, kind)]
        self.by_dir: dict[str, list[int]] = defaultdict(list)
        for fid, path in self.path.items():
            self.by_dir[posixpath.dirname(path)].append(fid)
        self._py_modules: dict[str, list[int]] | None = None
        self._go_module: str | None = None
        self._java_modules: dict[str, list[int] | None] = {}
        self._java_classes: dict[str, list[int]] | None = None   # class name -> its files
        self._java_wildcards: dict[int, bool] = {}   # file -> imports an outside package whole
        self._globs: dict[Place, dict[str, str]] = {}   # what a wildcard import binds (glob)
        # file -> its imports by the local name they bind (with their place in the file), and
        # the definitions its wildcard imports bind: name -> (place of that import, [(its file,
        # the definition's qualname)])
        self._imports: dict[int, tuple[dict[str, list[tuple[int, RefRow]]],
                                       dict[str, tuple[int, list[tuple[int, str]]]]]] = {}
        # (file, local name) -> what the file's imports bind it to (None: nothing), how deep
        # that answer went, and the lookups under way with their place on the stack (_binding)
        self._bindings: dict[tuple[int, str], list[Target] | None] = {}
        self._needs: dict[tuple[int, str], int] = {}
        self._open: dict[tuple[int, str], int] = {}
        self._lookups = 0          # made for the current asker
        self.lookups = 0           # made in all (for tests and benchmarks)
        self._bases: dict[tuple[int, str], list[Target]] = {}
        self._crates: dict[str, tuple[str, str]] | None = None   # _rust_crates
        self._crate_folders: dict[str, list[str]] = defaultdict(list)
        self._roots: dict[str, bool] = {}
        self._rust_names: set[str] | None = None
        # Go files' build constraints (lang/go_build.py), by file id, from the structure pass.
        self.go_builds = {int(f): b for f, b in con.execute(
            "select substr(key, 10), value from meta where key like 'go\\_build:%' escape '\\'")}

    # -- modules -----------------------------------------------------------------------------

    def module_places(self, file_id: int, module: str | None, level: int,
                      scope: str | None = None) -> list[Place] | None:
        """The places a module reference names; None when it is outside the repository. `scope`:
        where the reference is (a Rust path starts from the module holding it)."""
        if self.lang.get(file_id) == "rust":
            return self._rust_module(file_id, module or "", scope)
        files = self.module_files(file_id, module, level)
        return None if files is None else [(f, None) for f in files]

    def module_files(self, file_id: int, module: str | None, level: int,
                     scope: str | None = None) -> list[int] | None:
        """Files a module reference names; None when it is outside the repository."""
        lang = self.lang.get(file_id)
        here = self.path[file_id]
        if lang == "python":
            return self._python_module(here, module or "", level)
        if lang in JS_LIKE:
            return self._js_module(here, module or "")
        if lang == "go":
            return self._go_package(module or "")
        if lang == "java":
            return self._java_module(module or "")
        if lang == "rust":
            places = self._rust_module(file_id, module or "", scope)
            return None if places is None else list(dict.fromkeys(f for f, _ in places))
        return None

    def _python_module(self, here: str, module: str, level: int) -> list[int] | None:
        if level:
            base = posixpath.dirname(here).split("/") if posixpath.dirname(here) else []
            if level - 1 > len(base):
                return []    # climbs out of the repository
            base = base[:len(base) - (level - 1)] if level > 1 else base
            stem = "/".join(base + (module.split(".") if module else []))
            found = [self.by_path[p] for p in (stem + ".py", stem + "/__init__.py",
                                                stem + ".pyi") if p in self.by_path]
            return found or []
        if self._py_modules is None:
            self._py_modules = defaultdict(list)
            for fid, path in self.path.items():
                if self.lang[fid] != "python":
                    continue
                stem = path[:-3] if path.endswith(".py") else path[:-4] if path.endswith(".pyi") \
                    else path
                if stem.endswith("/__init__"):
                    stem = stem[:-9]
                parts = stem.split("/")
                for k in range(len(parts)):
                    self._py_modules[".".join(parts[k:])].append(fid)
        found = self._py_modules.get(module)
        if not found:
            return None
        if len(found) > 1:   # the candidate closest to the importing file
            found = sorted(found, key=lambda f: (-_common_prefix(self.path[f], here),
                                                 self.path[f]))[:1]
        return found

    def _js_module(self, here: str, module: str) -> list[int] | None:
        if not module.startswith("."):
            return None                     # a package (or a path alias we do not read)
        base = posixpath.normpath(posixpath.join(posixpath.dirname(here), module))
        if base.startswith(".."):
            return []        # outside the repository
        index = "index" if base == "." else base + "/index"
        for candidate in [base] + [base + e for e in JS_EXTENSIONS] + \
                [index + e for e in JS_EXTENSIONS]:
            if candidate in self.by_path:
                return [self.by_path[candidate]]
        # "./x.js" written for "./x.ts" (TypeScript's ESM convention)
        stem, ext = posixpath.splitext(base)
        if ext in (".js", ".jsx", ".mjs", ".cjs"):
            for e in (".ts", ".tsx", ".mts", ".cts"):
                if stem + e in self.by_path:
                    return [self.by_path[stem + e]]
        return []

    def _go_package(self, module: str) -> list[int] | None:
        if self._go_module is None:   # recorded from go.mod by the structure pass
            row = self.con.execute("select value from meta where key = 'go_module'").fetchone()
            self._go_module = row[0] if row else ""
        prefix = self._go_module
        if prefix and (module == prefix or module.startswith(prefix + "/")):
            rel = module[len(prefix):].lstrip("/")
            return [f for f in self.by_dir.get(rel, []) if self.lang.get(f) == "go"] or []
        # without go.mod: a directory whose path ends the import path
        for d, fids in self.by_dir.items():
            if d and (module == d or module.endswith("/" + d)):
                return [f for f in fids if self.lang.get(f) == "go"]
        return None

    def _java_scoped(self, ref: RefRow, q: str) -> tuple[str, list[Target]] | None:
        """`q.name()` with `q` a class the file defines (nested ones too: `Builder` in `User`
        is `User.Builder`), else, unless an import names `q`, a class of the file's package
        (`Dates.parse()` needs no import; it beats a wildcard import's class of that name);
        None to go on as for any language."""
        own = self.defs.get(ref.file_id, {})
        scope = ref.scope or ""
        # Only a class in scope where the call is: a top-level one, or one nested in (or local
        # to) a definition around the call; the innermost such one shadows the others.
        seen = [c for c, kind in own.items() if kind in _CLASS_KINDS and (
                c == q or (c.endswith("." + q) and _encloses(c[:-len(q) - 1], scope)))]
        if seen:
            cls = max(seen, key=lambda c: (c.count("."), c))
            member = f"{cls}.{ref.name}"
            if member in own:
                return "resolved", [(ref.file_id, member, CONF_LOCAL)]
            return None
        if q in self._file_imports(ref.file_id)[0]:
            return None
        files = self._java_package_class(ref.file_id, q)
        if files:
            return self._member([(f, q, CONF_PACKAGE) for f in files], ref.name, q)
        return None

    def _java_type(self, ref: RefRow) -> tuple[str, list[Target]] | None:
        """A Java type named without an import: a class of the file in scope where it is named
        (a nested one too: `Builder` in `User` is `User.Builder`; the innermost), else one
        nested in a base of the class around it, else a class of the package, else
        java.lang's (outside); None to go on as for any name."""
        own = self.defs.get(ref.file_id, {})
        scope = ref.scope or ""
        name = ref.name
        seen = [c for c, kind in own.items() if kind in _CLASS_KINDS and (
                c == name or (c.endswith("." + name) and _encloses(c[:-len(name) - 1], scope)))]
        if seen:
            return "resolved", [(ref.file_id, max(seen, key=lambda c: (c.count("."), c)),
                                 CONF_LOCAL)]
        inherited = [t for t in self._in_class(ref, include_own=False)
                     if self.defs.get(t[0], {}).get(t[1]) in _CLASS_KINDS]
        if inherited:   # a nested class of a base: `Builder` in a subclass of `Node`
            return "resolved", inherited
        files = [f for f in self._java_package_class(ref.file_id, name) if f != ref.file_id
                 and name in self.defs.get(f, {})]
        if files:
            return ("resolved" if len(files) == 1 else "ambiguous"), [
                (f, name, CONF_PACKAGE / len(files)) for f in files]
        if name in JAVA_LANG:
            return "external", []
        return None

    def _java_qualified_type(self, q: str, name: str) -> tuple[str, list[Target]] | None:
        """A Java type named by its full name, `com.acme.User` (`q` its package) or
        `com.acme.User.Id` (`q` its class); None to go on as for any name."""
        files = self._java_module(q)
        for f in files or ():
            nested = self._java_class_member(f, q, name)
            if nested is not None:
                return "resolved", [(f, nested, CONF_IMPORT)]
        found = [(f, name, CONF_IMPORT) for f in files or () if name in self.defs.get(f, {})]
        if found:
            return ("resolved" if len(found) == 1 else "ambiguous"), found
        if q.split(".")[0] in _JDK_PACKAGES:
            return "external", []
        return None

    def _java_wildcard_outside(self, file_id: int) -> bool:
        """Whether a Java file imports a package from outside the repository whole
        (`import java.util.*;`), which a type it names may then come from."""
        if self.lang.get(file_id) != "java":
            return False
        found = self._java_wildcards.get(file_id)
        if found is None:
            found = self._java_wildcards[file_id] = any(
                self.module_files(file_id, module, 0) is None for module, in self.con.execute(
                    "select module from refs where file_id = ? and kind = 'import'"
                    " and (name = '*' or name is null)", (file_id,)))
        return found

    def _java_class_member(self, file_id: int, module: str | None, name: str) -> str | None:
        """`Outer.name` when `module` (`a.b.Outer`) names the class of the Java file `file_id`
        and it defines `name`: `import a.b.Outer.Inner;`, `import static a.b.Outer.max;`."""
        if self.lang.get(file_id) != "java" or not module:
            return None
        cls = module.rsplit(".", 1)[-1]
        member = f"{cls}.{name}"
        if posixpath.basename(self.path[file_id]) == f"{cls}.java" and \
                member in self.defs.get(file_id, {}):
            return member
        return None

    def _java_package_class(self, file_id: int, cls: str) -> list[int]:
        """The file of class `cls` in the Java package of `file_id`: `cls`.java in its folder,
        or in the folder of the same package under another source root (the path after the last
        `java/` component, as Maven and Gradle lay sources out)."""
        here = posixpath.dirname(self.path[file_id])
        same = [f for f in self.by_dir.get(here, []) if self.path[f].endswith(f"/{cls}.java")
                or self.path[f] == f"{cls}.java"]
        if same:
            return same
        package = _java_package_dir(here)
        if package is None:
            return []
        if self._java_classes is None:
            self._java_classes = defaultdict(list)
            for f, path in self.path.items():
                if path.endswith(".java"):
                    self._java_classes[posixpath.basename(path)[:-5]].append(f)
        return [f for f in self._java_classes.get(cls, ())
                if _java_package_dir(posixpath.dirname(self.path[f])) == package]

    def _java_module(self, module: str) -> list[int] | None:
        if module in self._java_modules:   # each answer scans every path: once per module
            return self._java_modules[module]
        rel = module.replace(".", "/")
        found = [f for p, f in self.by_path.items() if p.endswith(rel + ".java")
                 and (p == rel + ".java" or p.endswith("/" + rel + ".java"))]
        if found:
            answer: list[int] | None = found[:1]
        else:
            answer = [f for d, fids in self.by_dir.items() if d == rel or d.endswith("/" + rel)
                      for f in fids if self.lang.get(f) == "java"] or None
        self._java_modules[module] = answer
        return answer

    # -- Rust modules ----------------------------------------------------------------------------

    def _rust_module(self, file_id: int, module: str, scope: str | None) -> list[Place] | None:
        """The places a `use` path's module names (`crate::a`, `super`, `hexyl`), followed on
        through the definitions it names after its modules (the enum of `use Enum::*`)."""
        walked = self._rust_walk(file_id, scope, [p for p in module.split("::") if p])
        if walked is None:
            return None
        places, rest = walked
        return list(dict.fromkeys(self._rust_items(place, rest)[0] for place in places))

    def _rust_walk(self, file_id: int, scope: str | None, parts: list[str]
                   ) -> tuple[list[Place], list[str]] | None:
        """Where a path's modules lead from the module holding `scope`: the places reached, and
        the segments after the last module (an item; a type and its members). None when the
        path starts outside the repository (`std::`, another crate) or with a name the file's
        imports bring, which the caller looks up (_rust_ref)."""
        if not parts:
            return None
        head = parts[0]
        places: list[Place]
        if head == "crate":
            places, rest = [(f, None) for f in self._rust_roots(file_id)], parts[1:]
        elif head in ("self", "super"):
            places, rest = [(file_id, self._rust_inline(file_id, scope))], parts
        else:
            here = self._rust_seen(file_id, scope, head)
            lib = self._rust_crate(file_id, head) if here is None else None
            if here is not None:
                places, rest = [here], parts
            elif lib is not None:
                places, rest = [(lib, None)], parts[1:]
            else:
                return None
        while rest and places:
            deeper = list(dict.fromkeys(c for p in places for c in self._rust_child(p, rest[0])))
            if not deeper:
                break
            places, rest = deeper, rest[1:]
        return places, rest

    def _rust_inline(self, file_id: int, scope: str | None) -> str | None:
        """The inline module holding a scope (`tests` for `tests.display_offset`), None for
        the file's own module."""
        own = self.defs.get(file_id, {})
        inline: str | None = None
        for part in scope.split(".", _RUST_NESTING)[:_RUST_NESTING] if scope else ():
            name = f"{inline}.{part}" if inline else part
            if own.get(name) != "module":
                break
            inline = name
        return inline

    def _rust_outward(self, file_id: int, scope: str | None) -> list[str | None]:
        """The modules of the file around a scope, innermost first, the file's own last."""
        inline = self._rust_inline(file_id, scope)
        out: list[str | None] = [inline]
        while inline is not None:
            inline = inline.rpartition(".")[0] or None
            out.append(inline)
        return out

    def _rust_local(self, file_id: int, scope: str | None, name: str) -> str | None:
        """A bare name's definition in the file: an item nested in a function around the call
        (`fn outer() { fn open() {} open() }`), else the module holding the scope's own item,
        else the nearest module around it that has one. rustc sees an outer module's items
        through `use super::*` (every `mod tests` has it); a name defined in both is the inner
        one. A module's own `use` of the name shadows the outer modules' items: None then, for
        the imports to answer (a review found `use crate::sys::open` in `mod tests` lost to the
        file's own `open`)."""
        own = self.defs.get(file_id, {})
        parts = scope.split(".") if scope else []
        for k in range(len(parts), 0, -1):
            holder = ".".join(parts[:k])
            if own.get(holder) not in ("function", "method"):
                break              # a module or a type: a bare name is not its member
            if f"{holder}.{name}" in own:
                return f"{holder}.{name}"
        used = {row.scope for _, row in self._file_imports(file_id)[0].get(name, ())}
        for inline in self._rust_outward(file_id, scope):
            qualname = f"{inline}.{name}" if inline else name
            if qualname in own:
                return qualname
            if inline in used:
                return None
        return None

    def _rust_seen(self, file_id: int, scope: str | None, name: str) -> Place | None:
        """The module of the file, from the scope's out to the file's own, where a path's
        first segment is an item or a child module (as for _rust_local)."""
        own = self.defs.get(file_id, {})
        for inline in self._rust_outward(file_id, scope):
            place = (file_id, inline)
            if (f"{inline}.{name}" if inline else name) in own or self._rust_child(place, name):
                return place
        return None

    def _rust_child(self, place: Place, segment: str) -> list[Place]:
        """The module a path segment names under a place: `self`, `super`, an inline module,
        or a file (`mod x;`: x.rs or x/mod.rs in the place's folder)."""
        if segment == "self":
            return [place]
        if segment == "super":
            return self._rust_parents(place)
        f, inline = place
        own = self.defs.get(f, {})
        if inline is not None and own.get(inline) != "module":
            return []    # a type holds no modules
        name = f"{inline}.{segment}" if inline else segment
        if own.get(name) == "module":
            return [(f, name)]
        stem = posixpath.join(self._rust_folder(place), segment)
        files: list[Place] = [(self.by_path[c], None) for c in (stem + ".rs", stem + "/mod.rs")
                              if c in self.by_path]
        return files[:1]

    def _rust_folder(self, place: Place) -> str:
        """Where the files of a module's `mod x;` are: a crate root's or a mod.rs's folder,
        `a/` for a.rs, and under it a folder per inline module (`mod m { mod x; }`: m/x.rs)."""
        f, inline = place
        path = self.path[f]
        folder, name = posixpath.split(path)
        if name != "mod.rs" and not self._rust_is_root(path):
            folder = posixpath.join(folder, posixpath.splitext(name)[0])
        return posixpath.join(folder, *inline.split(".")) if inline else folder

    def _rust_parents(self, place: Place) -> list[Place]:
        """What `super` names: the inline module around, else the files whose folder holds
        this file's module (a/mod.rs, a.rs, a/lib.rs, a/main.rs for a/b.rs or a/b/mod.rs);
        none for a crate root. Two crate roots in one folder are both kept: which of them
        declares the module, only their `mod` lines say, and those are not read."""
        f, inline = place
        if inline is not None:
            return [(f, inline.rpartition(".")[0] or None)]
        path = self.path[f]
        if self._rust_is_root(path):
            return []
        folder, name = posixpath.split(path)
        if name == "mod.rs":
            folder = posixpath.dirname(folder)
        candidates = [posixpath.join(folder, "mod.rs")] + ([folder + ".rs"] if folder else []) \
            + [posixpath.join(folder, n) for n in _RUST_ROOTS]
        return [(self.by_path[c], None) for c in candidates
                if c in self.by_path and self.by_path[c] != f]

    def _rust_items(self, place: Place, rest: list[str]) -> tuple[Place, list[str]]:
        """The deepest definition that the segments after a path's modules name in a place
        (`Printer` of `Printer::new`, `Enum` of `Enum::Variant`), and the segments left."""
        f, inline = place
        own = self.defs.get(f, {})
        for k, segment in enumerate(rest[:_RUST_NESTING]):
            name = f"{inline}.{segment}" if inline else segment
            if name not in own:
                return (f, inline), rest[k:]
            inline = name
        return (f, inline), rest[_RUST_NESTING:]

    def _rust_roots(self, file_id: int) -> list[int]:
        """The root of a file's crate (`crate::`): the file itself when it is one, else the
        lib.rs or main.rs of the nearest folder above that has one (both when it has both)."""
        path = self.path[file_id]
        if self._rust_is_root(path):
            return [file_id]
        root = posixpath.dirname(path)
        while root and not any(posixpath.join(root, n) in self.by_path for n in _RUST_ROOTS):
            root = posixpath.dirname(root)
        return [self.by_path[p] for p in (posixpath.join(root, n) for n in _RUST_ROOTS)
                if p in self.by_path]

    def _rust_is_root(self, path: str) -> bool:
        """A crate root: lib.rs, main.rs, and in a package (Cargo.toml) its build.rs, its
        library's `[lib] path`, src/bin/*.rs, and examples/, tests/ and benches/ *.rs."""
        known = self._roots.get(path)
        if known is None:
            known = posixpath.basename(path) in _RUST_ROOTS
            package = self._rust_package(path)
            if not known and package is not None:
                rel = posixpath.relpath(path, package) if package else path
                parts = rel.split("/")
                known = rel in ("build.rs", self._rust_crates()[package][1]) or (
                    len(parts) == 2 and parts[0] in _RUST_TARGET_FOLDERS) or (
                    len(parts) == 3 and parts[:2] == ["src", "bin"])
            self._roots[path] = known
        return known

    def _rust_crates(self) -> dict[str, tuple[str, str]]:
        """package folder ("" at the root) -> (crate name, library root in the folder), as the
        structure pass read them from the Cargo.toml files at HEAD (meta `rust_crates`)."""
        if self._crates is None:
            row = self.con.execute("select value from meta where key = 'rust_crates'").fetchone()
            try:
                found = json.loads(row[0]) if row else {}
            except ValueError:
                found = {}
            self._crates = {folder: (v[0], v[1]) for folder, v in found.items()
                            if isinstance(v, list) and len(v) == 2
                            and all(isinstance(x, str) for x in v)} \
                if isinstance(found, dict) else {}
            for folder, (name, _) in sorted(self._crates.items()):
                self._crate_folders[name].append(folder)
        return self._crates

    def _rust_package(self, path: str) -> str | None:
        """The folder of the nearest Cargo.toml above a file that declares a package."""
        crates = self._rust_crates()
        folder = posixpath.dirname(path)
        while folder not in crates:
            if not folder:
                return None
            folder = posixpath.dirname(folder)
        return folder

    def _rust_crate(self, file_id: int, name: str) -> int | None:
        """The library root of the crate that a path's first segment names: the file's own
        package's (`use hexyl::Printer` in hexyl's main.rs or examples), else the one package
        of the repository by that name (a workspace's other crates)."""
        crates = self._rust_crates()
        own = self._rust_package(self.path[file_id])
        folders = [own] if own is not None and crates[own][0] == name else \
            self._crate_folders.get(name, [])
        if len(folders) != 1:
            return None
        return self.by_path.get(posixpath.join(folders[0], crates[folders[0]][1]))

    def _rust_defined(self, name: str) -> bool:
        """Whether the repository's Rust code has a definition or a module file of this name."""
        if self._rust_names is None:
            self._rust_names = {q.rpartition(".")[2] for f in self.path
                                if self.lang.get(f) == "rust" for q in self.defs.get(f, {})}
            for f, path in self.path.items():
                if self.lang.get(f) == "rust":
                    folder, file_name = posixpath.split(path)
                    stem = posixpath.splitext(file_name)[0]
                    self._rust_names.add(posixpath.basename(folder) if stem == "mod" else stem)
        return name in self._rust_names

    # -- Rust references -------------------------------------------------------------------------

    def _rust_ref(self, ref: RefRow) -> tuple[str, list[Target]] | None:
        """A Rust reference by its path (the extractor ends a path qualifier with `::`); None
        where the resolution every language shares goes on: a bare name not defined in the file
        (its imports, then a definition elsewhere), a value's method (`x.f()`, `self.f()`,
        `f().g()`: its type is not known)."""
        q, name = ref.qualifier, ref.name or ""
        if q is None:
            local = self._rust_local(ref.file_id, ref.scope, name)
            return ("resolved", [(ref.file_id, local, CONF_LOCAL)]) if local else None
        if not q.endswith("::"):
            return None
        parts = q[:-2].split("::")
        if parts[0] == "Self":
            owner = self._enclosing_type(ref)
            return self._rust_lookup([(ref.file_id, owner, CONF_LOCAL)], parts[1:], name) \
                if owner else None
        walked = self._rust_walk(ref.file_id, ref.scope, parts)
        if walked is not None:
            places, rest = walked
            if not places:
                return "unresolved", []     # `super` of a crate root, `crate` with no root
            return self._rust_lookup([(f, qual, CONF_IMPORT) for f, qual in places], rest, name)
        used = self._rust_used_module(ref, parts[0])
        if used:
            return self._rust_lookup(used, parts[1:], name)
        bound = self.binding(ref.file_id, parts[0])
        if bound:
            return self._rust_lookup(bound, parts[1:], name)
        outside = self.external(ref.file_id, parts[0])
        if outside:
            return outside, []
        return self._rust_unseen(parts, name)

    def _rust_used_module(self, ref: RefRow, head: str) -> list[Target] | None:
        """The module a `use` of the file names by `head` (`use crate::sys;` then
        `sys::open()`: src/sys.rs; it resolved to the crate root's own `open`, a review found 17
        such calls in fd), walked from the module the `use` is in; None when the `use` names an
        item, not a module, or no `use` names `head`."""
        for _, row in self._file_imports(ref.file_id)[0].get(head, ()):
            if not row.name or row.name == "*":
                continue
            path = (row.module.split("::") if row.module else []) + [row.name]
            walked = self._rust_walk(ref.file_id, row.scope, path)
            if walked is not None and walked[0] and not walked[1]:
                return [(f, qual, CONF_IMPORT) for f, qual in walked[0]]
        return None

    def _rust_lookup(self, places: list[Target], rest: list[str], name: str
                     ) -> tuple[str, list[Target]]:
        """`name` in the places a path reached (each with its confidence), after the segments
        left there (_rust_answers): what it names, else the deepest definition reached, as a
        module whose name is no definition in it (CONF_MODULE_ONLY)."""
        exact, near = self._rust_answers(places, rest, name)
        best: dict[tuple[int, str | None], float] = {}
        for f, q, conf in exact:   # one definition reached two ways: the surer way
            best[f, q] = max(conf, best.get((f, q), 0.0))
        found = [(f, q, conf) for (f, q), conf in best.items()][:MAX_CANDIDATES]
        if found:
            return ("resolved" if len(found) == 1 else "ambiguous"), found
        return ("resolved", near[:1]) if near else ("unresolved", [])

    def _rust_answers(self, places: list[Target], rest: list[str], name: str
                      ) -> tuple[list[Target], list[Target]]:
        """(what the path names, the deepest definitions it reached otherwise): an item of a
        module or one it re-exports (`pub use`), a type's associated function in an impl
        block of its file, else of another file (CONF_IMPL); for a type without it (an enum's
        variant, a derived or a trait's default method), the type itself."""
        exact: list[Target] = []
        near: list[Target] = []
        for f, qual, conf in places:
            (f, qual), left = self._rust_items((f, qual), rest)
            own = self.defs.get(f, {})
            member = f"{qual}.{name}" if qual else name
            if left:   # a name the module re-exports (`pub use a::Printer`), then its members
                again = self._rust_reexported(f, left[0], conf) if qual is None else []
                if again:
                    more = self._rust_answers(again, left[1:], name)
                    exact += more[0]
                    near += more[1]
                else:
                    near.append((f, qual, CONF_MODULE_ONLY))
            elif member in own:
                exact.append((f, member, conf))
            elif qual is None:
                again = self._rust_reexported(f, name, conf)
                exact += again
                near += [] if again else [(f, None, CONF_MODULE_ONLY)]
            elif own.get(qual) == "module":
                near.append((f, qual, CONF_MODULE_ONLY))
            else:
                impls = self._rust_impls(qual.rpartition(".")[2], name, conf * CONF_IMPL)
                exact += impls
                near += [] if impls else [(f, qual, CONF_MODULE_ONLY)]
        return exact, near

    def _rust_reexported(self, file_id: int, name: str, conf: float) -> list[Target]:
        """The definitions a module's imports bind a name to (`pub use a::Printer`), a little
        less sure than the module's own (as _member's)."""
        return [(f, q, min(c, conf) * 0.9) for f, q, c in self.binding(file_id, name) or () if q]

    def _rust_impls(self, type_name: str, name: str, conf: float) -> list[Target]:
        """`type_name.name` in the repository's Rust files, the confidence shared: an impl
        block may be in any file of the crate (and a type's name, in several modules)."""
        found = [(f, q) for f, q, _ in self.by_name.get(name, ()) if self.lang.get(f) == "rust"
                 and (q == f"{type_name}.{name}" or q.endswith(f".{type_name}.{name}"))]
        if len(found) > MAX_CANDIDATES:
            return []
        return [(f, q, conf / len(found)) for f, q in found]

    def _rust_unseen(self, parts: list[str], name: str) -> tuple[str, list[Target]]:
        """A path that names nothing in reach, nor the file's imports: `Box::new`, `String::
        from`, `std::fs::read` are outside the repository; a type of the repository out of
        reach (through an import that does not resolve) is its methods of that name, if any."""
        impls = self._rust_impls(parts[-1], name, CONF_UNIQUE)
        if impls:
            return ("resolved" if len(impls) == 1 else "ambiguous"), impls
        if any(self._rust_defined(p) for p in parts):
            return "unresolved", []
        return "external", []

    def _enclosing_type(self, ref: RefRow) -> str | None:
        """The type (impl block, trait) whose code holds the reference: what `Self` names."""
        own = self.defs.get(ref.file_id, {})
        parts = ref.scope.split(".") if ref.scope else []
        for k in range(len(parts), max(0, len(parts) - _RUST_NESTING), -1):
            qualname = ".".join(parts[:k])
            if own.get(qualname) in _CLASS_KINDS:
                return qualname
        return None

    # -- imports -------------------------------------------------------------------------------

    def resolve_import(self, ref: RefRow) -> tuple[str, list[Target]]:
        self._lookups = 0   # a new asker (LOOKUPS_PER_ASKER), whatever its module's files
        status, targets, _, _ = self._resolve_import(ref, [])
        return status, targets

    def _resolve_import(self, ref: RefRow, stack: list) -> tuple[str, list[Target], int, int]:
        """(status, targets, low, need), `low` and `need` as _binding's."""
        if self.lang.get(ref.file_id) == "python" and ref.name and ref.name != "*":
            # `from pkg import sub`: a submodule first, also of a namespace package (a folder
            # with no __init__.py, which is no module file of its own).
            sub = self._python_module(self.path[ref.file_id],
                                      ".".join(p for p in (ref.module, ref.name) if p), ref.level)
            if sub:
                return "resolved", [(sub[0], None, CONF_IMPORT)], _NO_CYCLE, 0
        places = self.module_places(ref.file_id, ref.module, ref.level, ref.scope)
        if places is None:
            return "external", [], _NO_CYCLE, 0
        if not places:
            return "unresolved", [], _NO_CYCLE, 0
        if ref.name is None or ref.name == "*":
            if len(places) > 1 and self.lang.get(ref.file_id) == "rust":
                # `super` of a module that a lib.rs and a main.rs side by side may declare
                share = CONF_IMPORT / len(places)
                return "ambiguous", [(f, q, share) for f, q in places], _NO_CYCLE, 0
            return "resolved", [(f, q, CONF_IMPORT) for f, q in places], _NO_CYCLE, 0
        for f, q in places:
            member = f"{q}.{ref.name}" if q else ref.name
            if member in self.defs.get(f, {}):
                return "resolved", [(f, member, CONF_IMPORT)], _NO_CYCLE, 0
            nested = None if q else self._java_class_member(f, ref.module, ref.name)
            if nested is not None:
                return "resolved", [(f, nested, CONF_IMPORT)], _NO_CYCLE, 0
        low, need = _NO_CYCLE, 0
        files = [f for f, q in places if q is None]
        for f in files:   # a re-export: the name imported into that module from elsewhere
            target, seen, needed = self._binding(f, ref.name, stack)
            low, need = min(low, seen), max(need, needed)
            if target and target[0][0] != ref.file_id:
                return ("resolved", [(t[0], t[1], min(t[2], 0.9)) for t in target], low,
                        need)
        if ref.name == "default" and ref.alias:
            for f in files:
                if ref.alias in self.defs.get(f, {}):
                    return "resolved", [(f, ref.alias, CONF_CLASS)], low, need
        return "resolved", [(places[0][0], places[0][1], CONF_MODULE_ONLY)], low, need

    def glob(self, place: Place) -> dict[str, str]:
        """What a wildcard import of a place binds, name -> qualname: the file's top-level
        definitions, or an inline module's; none for a type (a Rust enum's glob binds its
        variants, which are no definitions). Made once per place: a file of 11,000 modules
        each with `use super::*` asked it 11,000 times over every definition (a review)."""
        found = self._globs.get(place)
        if found is None:
            found = self._globs[place] = self._glob(place)
        return found

    def _glob(self, place: Place) -> dict[str, str]:
        f, inline = place
        own = self.defs.get(f, {})
        if inline is None:
            return {q: q for q in own if "." not in q}
        if own.get(inline) != "module":
            return {}
        prefix = inline + "."
        return {q[len(prefix):]: q for q in own
                if q.startswith(prefix) and "." not in q[len(prefix):]}

    def binding(self, file_id: int, name: str) -> list[Target] | None:
        """What the file's imports bind the local `name` to: the first of its imports (in the
        file's order) that binds it and resolves, an import of that name or a wildcard import
        of a module defining it; None when none does."""
        found = self._bindings.get((file_id, name), _UNKNOWN)   # most are: no call below
        if found is _UNKNOWN:
            self._lookups = 0   # a new asker (LOOKUPS_PER_ASKER)
            found = self._binding(file_id, name, [])[0]
        return found

    def external(self, file_id: int, name: str) -> str | None:
        """For a local name that imports bind but that none resolves here: "external" (a package
        outside the repository: `from setuptools import setup` is not our setup()) or
        "unresolved" (a module the repository should have, missing), as its last import says."""
        status = None
        for _, row in self._file_imports(file_id)[0].get(name, ()):
            files = self.module_files(row.file_id, row.module, row.level, row.scope)  # as imports
            if not files:
                status = "external" if files is None else "unresolved"
        return status

    def _file_imports(self, file_id: int):
        """(local name -> [(place, import)], name -> (place, [(file, qualname)]) of the first
        wildcard import whose module defines it): read once per file, so that a lookup does not
        go through every wildcard import again (a TypeScript barrel has thousands of
        `export *`)."""
        cached = self._imports.get(file_id)
        if cached is None:
            by_local: dict[str, list[tuple[int, RefRow]]] = defaultdict(list)
            wildcard: dict[str, tuple[int, list[tuple[int, str]]]] = {}
            java = self.lang.get(file_id) == "java"
            expanded: set = set()   # a place globbed again adds nothing (the first one wins):
            # 11,000 modules of a file each with `use super::*` took 242M steps (a review)
            rows = self.con.execute(
                "select id, file_id, scope, kind, name, qualifier, module, level, alias, owner"
                " from refs where file_id = ? and kind = 'import' order by id", (file_id,))
            for n, row in enumerate(rows):
                ref = RefRow(*row)
                local = local_name(ref.name, ref.alias, ref.module)
                if local and local != "*":
                    by_local[local].append((n, ref))
                if ref.name == "*" or (ref.name is None and java):   # every definition of it
                    for place in self.module_places(file_id, ref.module, ref.level,
                                                    ref.scope) or ():
                        if place in expanded:
                            continue
                        expanded.add(place)
                        for bound, qualname in self.glob(place).items():
                            # The first import binding the name; all of its files that define
                            # it (a Go package's, one per platform: `read_unix.go`'s `Read`
                            # and `read_windows.go`'s).
                            first = wildcard.setdefault(bound, (n, []))
                            if first[0] == n:
                                first[1].append((place[0], qualname))
            cached = self._imports[file_id] = (dict(by_local), wildcard)
        return cached

    def _binding(self, file_id: int, name: str, stack: list
                 ) -> tuple[list[Target] | None, int, int]:
        """(binding(), low, need). `stack`: the lookups under way, outermost first; `low`: the
        lowest place on it that the answer saw still under way (a cycle), _NO_CYCLE for none;
        `need`: how many lookups deep the answer went (_CUT: cut by the depth bound).

        An answer must not depend on which reference asked first: an update compares its
        answers with the stored ones (structure.resolve_refs), and one that differs only by the
        order of asking reads as a change and resolves everything again (on sympy, a one-commit
        update took 6 s for it). Lookups are per name, so a cycle is one of re-exports of the
        same name. An answer is kept only when it is the one any asker would get: not one that
        saw a lookup still under way (a cycle through it or through one further out: Tarjan's
        low-link), nor one cut by the depth bound; and a kept answer serves only an asker with
        the depth it needed left. Past LOOKUPS_PER_ASKER lookups for one asker (no real project
        seen comes near), its chain is cut, and its answer may depend on what was kept before."""
        key = (file_id, name)
        depth_left = MAX_REEXPORT_DEPTH - len(stack)
        cached = self._bindings.get(key, _UNKNOWN)
        if cached is not _UNKNOWN and self._needs[key] <= depth_left:
            return cached, _NO_CYCLE, self._needs[key]
        place = self._open.get(key)
        if place is not None:   # a cycle of re-exports: not through here
            return None, place, 0
        if depth_left <= 0:
            return None, _NO_CYCLE, _CUT    # a longer chain is not followed
        place = len(stack)
        self._lookups += 1
        self.lookups += 1
        if self._lookups > LOOKUPS_PER_ASKER:
            return None, _NO_CYCLE, _CUT    # this asker's work is bounded: cut here
        by_local, wildcard = self._file_imports(file_id)
        # The first import of the file (in its order) that binds the name: an import of it that
        # resolves, or a wildcard import of a module that defines it.
        starred = wildcard.get(name)
        self._open[key] = place
        stack.append(key)
        low, need, found = _NO_CYCLE, 0, None
        try:
            for n, ref in by_local.get(name, ()):
                if starred is not None and starred[0] < n:
                    break
                status, targets, seen, needed = self._resolve_import(ref, stack)
                low, need = min(low, seen), max(need, needed)
                if status == "resolved":
                    found = targets
                    break
        finally:
            stack.pop()
            del self._open[key]
        if found is None and starred is not None:
            found = [(f, qualname, CONF_IMPORT * 0.9) for f, qualname in starred[1]]
        need = min(need + 1, _CUT)
        if low > place and need < _CUT:
            self._bindings[key] = found
            self._needs[key] = need
        return found, low, need

    # -- references ----------------------------------------------------------------------------

    def resolve(self, ref: RefRow) -> tuple[str, list[Target]]:
        status, targets = self._resolve(ref)
        if len(targets) > 1 and self.go_builds and self.lang.get(ref.file_id) == "go":
            # Of the definitions a Go call could mean (one per platform's file), those built
            # beside the calling file: `util.Read()` in a file built only off Windows is not
            # `util_windows.go`'s. None left (a constraint read wrong): all of them.
            here = self.go_builds.get(ref.file_id)
            built = [t for t in targets if compatible(here, self.go_builds.get(t[0]))]
            if built and len(built) < len(targets):
                return ("resolved" if len(built) == 1 and status == "ambiguous" else status), built
        return status, targets

    def _resolve(self, ref: RefRow) -> tuple[str, list[Target]]:
        if ref.kind == "import":
            return self.resolve_import(ref)
        if not ref.name:
            return "unresolved", []
        if self.lang.get(ref.file_id) == "rust":
            answer = self._rust_ref(ref)
            if answer is not None:
                return answer
        q = ref.qualifier
        if ref.name[0] == "#" and self.lang.get(ref.file_id) in JS_LIKE:
            return self._private_member(ref)
        if q in ("self", "cls", "this") or (q == "super"):
            found = self._in_class(ref, include_own=q != "super")
            if found:
                return "resolved", found
            return self._by_name(ref.name, methods=True)
        if q and q != "?":
            if self.lang.get(ref.file_id) == "java" and ref.kind == "type" and "." in q:
                qualified = self._java_qualified_type(q, ref.name)
                if qualified is not None:
                    return qualified
            if self.lang.get(ref.file_id) == "java" and "." not in q:
                # Java's order: a class of the file (a nested one too), a class imported by
                # name, a class of the package, then a wildcard import's.
                scoped = self._java_scoped(ref, q)
                if scoped is not None:
                    return scoped
            if self.lang.get(ref.file_id) == "python" and q.rsplit(".", 1)[-1][:1].isupper():
                # `Request`, `wrappers.Response`: a class (a variable's, _py_declared_type),
                # the method it defines or inherits; the name's other methods if neither.
                classes = self._python_classes(ref.file_id, q)
                if classes:
                    found = [(f, f"{c}.{ref.name}", CONF_IMPORT) for f, c in classes
                             if f"{c}.{ref.name}" in self.defs.get(f, {})] or [
                        t for f, c in classes for t in self._inherited(
                            [(g, d) for g, d, _ in self.bases(f, c) if d], ref.name)]
                    if found:
                        return ("resolved" if len(found) == 1 else "ambiguous"), \
                            found[:MAX_CANDIDATES]
                    return self._by_name(ref.name, methods=True)
            head = q.split(".")[0].split("::")[0]
            binding = self.binding(ref.file_id, q) or self.binding(ref.file_id, head)
            outside = None if binding else self.external(ref.file_id, head)
            if outside:
                return outside, []
            if binding and self.lang.get(ref.file_id) == "go" and q.count(".") == 1:
                return self._go_method(binding, ref.name, q.split(".")[1])
            if binding:
                return self._member(binding, ref.name, q)
            local_class = self.defs.get(ref.file_id, {}).get(q)
            if local_class is not None:   # Class.method() in the same file
                member = f"{q}.{ref.name}"
                if member in self.defs[ref.file_id]:
                    return "resolved", [(ref.file_id, member, CONF_LOCAL)]
                if local_class in _CLASS_KINDS:   # or one it inherits
                    found = self._inherited(
                        [(g, c) for g, c, _ in self.bases(ref.file_id, q) if c], ref.name)
                    if found:
                        return "resolved", found
            if self.lang.get(ref.file_id) == "python" and q in PY_VALUE_TYPES:
                return "external", []   # `text.split()` with `text: str`: no method of ours
            if self.lang.get(ref.file_id) == "java" and "." not in q and q in JAVA_LANG:
                return "external", []   # `s.length()` with `String s`: no method of ours
            if self.lang.get(ref.file_id) == "go" and "." not in q:
                # A method of a type of the package (c.Run() with c *Command): any of its files.
                member = f"{q}.{ref.name}"
                directory = posixpath.dirname(self.path[ref.file_id])
                same = [(f, member, CONF_PACKAGE) for f in self.by_dir.get(directory, [])
                        if member in self.defs.get(f, {})]
                if same:
                    return ("resolved" if len(same) == 1 else "ambiguous"), same
            if ref.kind == "type":
                return "unresolved", []   # `ns.T` none of whose parts is known: no method guess
            return self._by_name(ref.name, methods=True)
        if q == "?":
            return self._by_name(ref.name, methods=True)
        if ref.scope and ref.kind == "call" and self.lang.get(ref.file_id) in PY_AND_JS:
            # A function nested in one around the call (a closure, a test's helper), the
            # innermost first: it hides an import or a top-level function of its name. Not a
            # class's method: a class body's names are not seen from its methods.
            own = self.defs.get(ref.file_id, {})
            parts = ref.scope.split(".")
            for k in range(len(parts), 0, -1):
                outer = ".".join(parts[:k])
                if own.get(outer) not in _CLASS_KINDS and \
                        own.get(f"{outer}.{ref.name}") in _FUNCTION_KINDS:
                    return "resolved", [(ref.file_id, f"{outer}.{ref.name}", CONF_LOCAL)]
        binding = self.binding(ref.file_id, ref.name)
        if binding:
            return "resolved" if len(binding) == 1 else "ambiguous", binding
        outside = self.external(ref.file_id, ref.name)
        if outside:
            return outside, []
        if self.lang.get(ref.file_id) == "java" and ref.kind == "type":
            typed = self._java_type(ref)
            if typed is not None:
                return typed
        elif self.lang.get(ref.file_id) == "java":
            # An unqualified call in a method is a call of a method of its class, or of one it
            # inherits (this.run(), with `this` left out): Java has no functions outside classes.
            found = self._in_class(ref, include_own=True)
            if found:
                return "resolved", found
        own = self.defs.get(ref.file_id, {})
        if ref.scope and self.lang.get(ref.file_id) in JS_LIKE:
            # Inside a TypeScript namespace, its members are named bare: `helper()` in
            # `namespace util` is `util.helper` (the innermost namespace that has it).
            parts = ref.scope.split(".")
            for k in range(len(parts), 0, -1):
                space = ".".join(parts[:k])
                if own.get(space) == "namespace" and f"{space}.{ref.name}" in own:
                    return "resolved", [(ref.file_id, f"{space}.{ref.name}", CONF_LOCAL)]
        if ref.kind == "type" and ref.scope and self.lang.get(ref.file_id) in ("python", "go"):
            # A class or type declared in the definition around the annotation (a test's own
            # `State`), the innermost first: not a top-level one of its name elsewhere.
            parts = ref.scope.split(".")
            for k in range(len(parts), 0, -1):
                local = ".".join(parts[:k]) + "." + ref.name
                if own.get(local) in _CLASS_KINDS:
                    return "resolved", [(ref.file_id, local, CONF_LOCAL)]
        if ref.name in own:
            return "resolved", [(ref.file_id, ref.name, CONF_LOCAL)]
        if self.lang.get(ref.file_id) == "python" and ref.name in PY_BUILTINS:
            return "external", []      # len(), isinstance(), ValueError...
        if ref.kind == "type" and ref.name in TS_GLOBAL_TYPES \
                and self.lang.get(ref.file_id) in JS_LIKE:
            return "external", []      # Promise<T>, Record<K, V>, HTMLElement...
        if self.lang.get(ref.file_id) in ("go", "java"):
            directory = posixpath.dirname(self.path[ref.file_id])
            same = [(f, ref.name, CONF_PACKAGE) for f in self.by_dir.get(directory, [])
                    if f != ref.file_id and ref.name in self.defs.get(f, {})]
            if same:
                return ("resolved" if len(same) == 1 else "ambiguous"), same
            if ref.kind == "type":
                # A Go type comes from its package or an import; a Java one also from a
                # wildcard import of outside code (`List` of `java.util.*`): a class of its
                # name elsewhere in the repository is not it.
                return ("external" if self._java_wildcard_outside(ref.file_id)
                        else "unresolved"), []
        return self._by_name(ref.name, methods=False)

    def _go_method(self, binding: list[Target], name: str, type_name: str
                   ) -> tuple[str, list[Target]]:
        """`x.name()` with `x` of type `pkg.type_name`, `pkg` a package of the repository
        (`binding`): that type's method in the package's files, else (an embedded type's
        promoted method, a field, a var) the methods of that name, as for an unknown
        receiver. Never a top-level name of the package."""
        member = f"{type_name}.{name}"
        out: list[Target] = []
        for f, qual, conf in binding:
            if qual is None:
                directory = posixpath.dirname(self.path[f])
                out.extend((g, member, conf) for g in self.by_dir.get(directory, [])
                           if member in self.defs.get(g, {}))
        out = list(dict.fromkeys(out))
        if out:
            return ("resolved" if len(out) == 1 else "ambiguous"), out[:MAX_CANDIDATES]
        return self._by_name(name, methods=True)

    def _member(self, binding: list[Target], name: str, qualifier: str) -> tuple[str, list[Target]]:
        out: list[Target] = []
        for f, qual, conf in binding:
            member = f"{qual}.{name}" if qual else name
            if member in self.defs.get(f, {}):
                out.append((f, member, conf))
            elif qual and self.defs.get(f, {}).get(qual) in _CLASS_KINDS:
                # A method the class inherits (`request.url_for()`, `request: Request`, is
                # HTTPConnection's url_for).
                out.extend((g, m, min(conf, CONF_CLASS)) for g, m, _ in self._inherited(
                    [(g, c) for g, c, _ in self.bases(f, qual) if c], name))
            elif qual is None and self.lang.get(f) == "go":   # a Go package: any of its files
                directory = posixpath.dirname(self.path[f])
                out.extend((g, name, conf) for g in self.by_dir.get(directory, [])
                           if name in self.defs.get(g, {}))
            elif qual is None:   # a name the module imports from elsewhere (a re-export)
                out.extend((g, q2, min(c2, conf) * 0.9)
                           for g, q2, c2 in self.binding(f, name) or () if q2)
        out = list(dict.fromkeys(out))
        if out:
            return ("resolved" if len(out) == 1 else "ambiguous"), out[:MAX_CANDIDATES]
        files = [f for f, qual, _ in binding if qual is None]
        if files:   # the module is known; the name is not a definition in it
            return "resolved", [(files[0], None, CONF_MODULE_ONLY)]
        return self._by_name(name, methods=True)

    def _python_classes(self, file_id: int, q: str) -> list[tuple[int, str]]:
        """The classes a dotted name means in a Python file: `Request` (imported, or its own),
        `wrappers.Response` (a module it imports, then a class of that module or one the module
        imports and re-exports), `Outer.Inner`."""
        parts = q.split(".")
        own = self.defs.get(file_id, {})
        if own.get(parts[0]) in _CLASS_KINDS:
            current: list[tuple[int, str | None]] = [(file_id, parts[0])]
        else:
            current = [(f, c) for f, c, _ in self.binding(file_id, parts[0]) or ()]
        for part in parts[1:]:
            following: list[tuple[int, str | None]] = []
            for f, c in current:
                defs = self.defs.get(f, {})
                if c is None and defs.get(part) in _CLASS_KINDS:
                    following.append((f, part))
                elif c is None:      # a submodule, or a class the module imports
                    following.extend((g, d) for g, d, _ in self.binding(f, part) or ())
                elif f"{c}.{part}" in defs:
                    following.append((f, f"{c}.{part}"))
            current = following[:MAX_CANDIDATES]
        return [(f, c) for f, c in current if c and self.defs.get(f, {}).get(c) in _CLASS_KINDS]

    def _private_member(self, ref: RefRow) -> tuple[str, list[Target]]:
        """`x.#send()`: a JavaScript private name is bound by the class body around it that
        declares it, whatever `x` is (`ky.#retry()` on a local of its class, in a closure of a
        static method); no other class's member, nor a base's, can be meant. Matched by name
        as an unknown receiver's method, ky's calls on a local were 0.4 each, shared with any
        other class's `#retry`, and unresolved past 5 of them."""
        own = self.defs.get(ref.file_id, {})
        parts = (ref.scope or "").split(".")
        for k in range(len(parts), 0, -1):
            cls = ".".join(parts[:k])
            if own.get(cls) in _CLASS_KINDS and f"{cls}.{ref.name}" in own:
                return "resolved", [(ref.file_id, f"{cls}.{ref.name}", CONF_LOCAL)]
        return "unresolved", []   # a private field holding a function, or not a class's

    def _in_class(self, ref: RefRow, include_own: bool) -> list[Target]:
        if not ref.scope:
            return []
        own = self.defs.get(ref.file_id, {})
        parts = ref.scope.split(".")
        classes = [".".join(parts[:k]) for k in range(len(parts), 0, -1)
                   if own.get(".".join(parts[:k])) in _CLASS_KINDS]
        if not classes:
            return []
        cls = classes[0]
        start = [(ref.file_id, cls)] if include_own else [
            (f, c) for f, c, _ in self.bases(ref.file_id, cls) if c]
        return self._inherited(start, ref.name)

    def _inherited(self, start: list[tuple[int, str]], name: str) -> list[Target]:
        """The member `name` of the first of these classes, or of their bases, that has it."""
        seen: set[tuple[int, str]] = set()
        frontier = start
        depth = 0
        while frontier and depth < 10:
            nxt: list[tuple[int, str]] = []
            for f, c in frontier:
                if (f, c) in seen:
                    continue
                seen.add((f, c))
                member = f"{c}.{name}"
                if member in self.defs.get(f, {}):
                    return [(f, member, CONF_CLASS)]
                nxt.extend((g, d) for g, d, _ in self.bases(f, c))
            frontier, depth = nxt, depth + 1
        return []

    def bases(self, file_id: int, cls: str) -> list[Target]:
        key = (file_id, cls)
        if key in self._bases:
            return self._bases[key]
        self._bases[key] = []
        out: list[Target] = []
        for row in self.con.execute(
                "select id, file_id, scope, kind, name, qualifier, module, level, alias, owner"
                " from refs where file_id = ? and kind = 'inherits' and (scope = ? or owner = ?)",
                (file_id, cls, cls.rsplit(".", 1)[-1])):
            status, targets = self.resolve(RefRow(*row))
            out.extend(t for t in targets if t[1])
        self._bases[key] = out
        return out

    def _by_name(self, name: str, methods: bool) -> tuple[str, list[Target]]:
        """A definition anywhere in the project, when few enough share the name."""
        # A bare name means a top-level definition (never a method or a nested function);
        # obj.name() means a method.
        found = [(f, q) for f, q, kind in self.by_name.get(name, []) if ("." in q) == methods]
        if not found or len(found) > MAX_CANDIDATES:
            return "unresolved", []
        conf = CONF_METHOD if methods else CONF_UNIQUE
        if len(found) == 1:
            return "resolved", [(found[0][0], found[0][1], conf)]
        # Several definitions could be meant: each keeps a share (obj.get() is rarely all of them).
        return "ambiguous", [(f, q, conf / len(found)) for f, q in found]


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("/"), b.split("/")):
        if x != y:
            break
        n += 1
    return n


def _java_package_dir(directory: str) -> str | None:
    """The package part of a Java source folder: what follows its last `java` component
    (`src/test/java/com/acme` -> `com/acme`); None when it has none."""
    parts = directory.split("/")
    if "java" not in parts:
        return None
    at = len(parts) - 1 - parts[::-1].index("java")
    return "/".join(parts[at + 1:])


def _encloses(outer: str, scope: str) -> bool:
    """Whether the definition `outer` holds the scope `scope` (or is it)."""
    return scope == outer or scope.startswith(outer + ".")

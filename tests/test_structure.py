"""Structure at HEAD and in the working tree: resolution like a linker, blast radius, callers,
callees, fused "what changes with it". Real repositories, real stores."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench_modules import import_bench
from cortex_core.query.blast import blast, callees, callers, direct_dependents, fused_related
from cortex_core.config import IndexSettings, Settings
from cortex_core.errors import NotFound
from cortex_core.query.status import status
from cortex_core.query.targets import TargetSpec

# The comparison bench/replay_structure.py makes on real histories, one definition for both.
resolution = import_bench("replay_structure")[0].resolution

DB = """\
def save(item):
    return item


class Store:
    def put(self, item):
        return self.save_all([item])

    def save_all(self, items):
        return [save(i) for i in items]
"""

API = """\
from pkg.db import save
from . import db as database
import pkg.db


def handler(x):
    save(x)
    database.save(x)
    return pkg.db.save(x)


class Sub(database.Store):
    def run(self):
        return self.put(1)
"""

TEST = """\
from pkg.api import handler


def test_handler():
    assert handler(1) == 1
"""


@pytest.fixture
def py_project(repo):
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/db.py", DB)
    repo.write("pkg/api.py", API)
    repo.write("tests/test_api.py", TEST)
    repo.commit("Add the package", days_ago=30)
    return repo


@pytest.fixture
def indexed(py_project, cortex):
    cortex.index(model="none")
    return cortex


def labels(items):
    return {(i.path, i.qualname) for i in items}


def test_calls_resolve_through_imports_aliases_and_modules(indexed):
    con = indexed.reader()
    found = callers(con, TargetSpec("pkg/db.py", "save"))
    by_line = {(n.path, n.qualname, n.line): n.confidence for n in found.items}
    assert by_line[("pkg/api.py", "handler", 7)] == 1.0          # from pkg.db import save
    assert by_line[("pkg/api.py", "handler", 8)] == 1.0          # from . import db as database
    assert by_line[("pkg/api.py", "handler", 9)] == 1.0          # import pkg.db
    assert ("pkg/db.py", "Store.save_all") in labels(found.items)  # same file
    outgoing = callees(con, TargetSpec("pkg/api.py", "handler"))
    assert {("pkg/db.py", "save")} == {(n.path, n.qualname) for n in outgoing.items
                                        if n.relation == "callee"}


def test_self_calls_resolve_in_the_class_and_its_bases(indexed):
    con = indexed.reader()
    put = callers(con, TargetSpec("pkg/db.py", "Store.put"))
    assert [(n.path, n.qualname, n.confidence) for n in put.items] == [
        ("pkg/api.py", "Sub.run", 0.9)]
    assert labels(callers(con, TargetSpec("pkg/db.py", "Store.save_all")).items) == {
        ("pkg/db.py", "Store.put")}


def test_blast_radius_with_chains_tests_and_subclasses(indexed):
    con = indexed.reader()
    result = blast(con, TargetSpec("pkg/db.py", "save"), depth=2)
    by = {(d.path, d.qualname): d for d in result.dependents}
    handler = by[("pkg/api.py", "handler")]
    assert handler.relation == "caller" and handler.depth == 1
    test = by[("tests/test_api.py", "test_handler")]
    assert test.relation == "test" and test.depth == 2
    assert [(link.src_qualname, link.dst_qualname) for link in test.chain] == [
        ("test_handler", "handler"), ("handler", "save")]
    assert "tests/test_api.py::test_handler" in result.summary.tests
    assert result.summary.risk in ("low", "medium", "high")
    store = blast(con, TargetSpec("pkg/db.py", "Store"), depth=1)
    assert ("pkg/api.py", "Sub") in {(d.path, d.qualname) for d in store.dependents
                                     if d.relation == "subclass"}
    shallow = blast(con, TargetSpec("pkg/db.py", "save"), depth=1)
    assert ("tests/test_api.py", "test_handler") not in labels(shallow.dependents)


def test_a_file_target_collects_importers(indexed):
    con = indexed.reader()
    result = blast(con, TargetSpec("pkg/db.py"), depth=1)
    assert ("pkg/api.py", None) in {(d.path, d.qualname) for d in result.dependents
                                    if d.relation == "importer"}


def test_status_reports_resolution_per_language(indexed):
    rates = {r.language: r for r in status(indexed.reader(), indexed.db).structure}
    assert rates["python"].files == 4 and rates["python"].resolved >= 6


def test_only_changed_files_are_read_again_and_waiting_calls_resolve(py_project, indexed):
    py_project.write("pkg/api.py", API + "\n\ndef later():\n    return load()\n")
    py_project.commit("Call load", days_ago=2)
    assert indexed.index().structure_files_read == 1
    con = indexed.reader()
    assert con.execute("select status from refs where name = 'load'").get == "unresolved"
    py_project.write("pkg/db.py", DB + "\n\ndef load():\n    return 1\n")
    py_project.commit("Add load", days_ago=1)
    assert indexed.index().structure_files_read == 1
    con = indexed.reader()
    assert labels(callers(con, TargetSpec("pkg/db.py", "load")).items) == {("pkg/api.py", "later")}


def test_modified_files_in_the_working_tree_are_read_from_disk(py_project, indexed):
    (py_project.path / "pkg" / "api.py").write_text(API + "\n\ndef draft():\n    save(2)\n")
    summary = indexed.index()
    assert summary.structure_files_read == 1
    con = indexed.reader()
    assert ("pkg/api.py", "draft") in labels(callers(con, TargetSpec("pkg/db.py", "save")).items)
    assert con.execute("select worktree from struct_files s join files f on f.id = s.file_id"
                       " where f.path = 'pkg/api.py'").get == 1
    py_project.git("checkout", "--", "pkg/api.py")
    assert indexed.index().structure_files_read == 1          # back to HEAD's blob
    con = indexed.reader()
    assert ("pkg/api.py", "draft") not in labels(callers(con, TargetSpec("pkg/db.py", "save")).items)


def test_a_sparse_checkout_keeps_the_structure_of_the_files_it_leaves_out(py_project, cortex):
    """Files a sparse checkout leaves out of the working tree are HEAD's, not deleted ones
    (libgit2's status calls them deleted): their callers and importers stay, from HEAD."""
    py_project.git("sparse-checkout", "set", "pkg")
    assert not (py_project.path / "tests").exists()
    cortex.index(model="none")
    con = cortex.reader()
    assert ("tests/test_api.py", "test_handler") in labels(
        callers(con, TargetSpec("pkg/api.py", "handler")).items)
    # A file deleted for real in the same working tree still counts as deleted.
    (py_project.path / "pkg" / "api.py").unlink()
    cortex.index(model="none")
    assert ("pkg/api.py", "handler") not in labels(
        callers(cortex.reader(), TargetSpec("pkg/db.py", "save")).items)


def test_cycles_terminate_and_broken_files_degrade(repo, cortex):
    repo.write("a.py", "from b import g\n\n\ndef f():\n    return g()\n\n\nclass A(B):\n"
                       "    def m(self):\n        return self.missing()\n")
    repo.write("b.py", "from a import f\n\n\ndef g():\n    return f()\n\n\nclass B(A):\n    pass\n")
    repo.write("broken.py", "def ok():\n    return f()\n\n\ndef bad(:\n    pass\n\n\ndef also():\n"
                            "    return g()\n")
    repo.write("gen.py", "# big\n" + "x = 1\n" * 900_000)
    repo.commit("Cycles and junk", days_ago=1)
    cortex.index(Settings(index=IndexSettings(max_file_bytes=1_000_000)), model="none")
    con = cortex.reader()
    result = blast(con, TargetSpec("a.py", "f"), depth=10)
    assert ("b.py", "g") in labels(result.dependents) and ("a.py", "f") not in labels(
        result.dependents)
    assert con.execute("select error_nodes > 0 from struct_files s join files f"
                       " on f.id = s.file_id where f.path = 'broken.py'").get == 1
    assert ("broken.py", "ok") in labels(callers(con, TargetSpec("a.py", "f")).items)
    assert con.execute("select skip_reason from struct_files s join files f on f.id = s.file_id"
                       " where f.path = 'gen.py'").get == "too large"
    assert blast(con, TargetSpec("a.py", "A"), depth=10).dependents is not None


def test_javascript_and_typescript_imports(repo, cortex):
    repo.write("src/db.ts", "export function save(x: number) { return x; }\n"
                            "export class Store { put() { return this.flush(); } flush() {} }\n")
    repo.write("src/app.ts", 'import { save, Store } from "./db";\nimport * as db from "./db";\n'
                             "export function handler() {\n  save(1);\n  return db.save(2);\n}\n"
                             "export class Sub extends Store {}\n")
    repo.write("src/index.js", 'const app = require("./app");\nfunction main() { app.handler(); }\n')
    repo.commit("TS app", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    save = callers(con, TargetSpec("src/db.ts", "save"))
    assert {(n.path, n.qualname, n.confidence) for n in save.items} >= {
        ("src/app.ts", "handler", 1.0)}
    assert labels(callers(con, TargetSpec("src/db.ts", "Store.flush")).items) == {
        ("src/db.ts", "Store.put")}
    assert ("src/app.ts", "Sub") in labels(blast(con, TargetSpec("src/db.ts", "Store")).dependents)


def test_type_annotations_are_references(repo, cortex):
    """A class used only in annotations has dependents: the functions whose parameters,
    returns, variables or attributes name it, through imports, a module qualifier or a string
    (Python), a namespace (TypeScript). A TypeScript global type (`Promise`) is outside the
    repository even where the repository has a class of that name, and a type parameter is no
    use of a class that shares its name."""
    repo.write("app/models.py", "class User:\n    pass\n\n\nclass Order:\n    pass\n")
    repo.write("app/service.py", "from app.models import User\nimport app.models as m\n\n\n"
                                 "def load(uid) -> User:\n    return fetch(uid)\n\n\n"
                                 "def ship(order: 'm.Order', who: User | None = None):\n"
                                 "    pass\n\n\nclass Cart:\n    items: list[m.Order]\n")
    repo.write("web/types.ts", "export interface Props { id: string }\nexport class Promise {}\n"
                               "export class T {}\n")
    repo.write("web/view.ts", 'import { Props } from "./types";\nimport * as t from "./types";\n'
                              "export function render(p: Props): Promise<string> { return go(p); }\n"
                              "export function wrap<T>(x: T, y: t.Props): T { return x; }\n")
    repo.commit("Typed code", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    user = callers(con, TargetSpec("app/models.py", "User"))
    assert {(n.path, n.qualname, n.relation) for n in user.items} == {
        ("app/service.py", "load", "reference"), ("app/service.py", "ship", "reference")}
    assert labels(callers(con, TargetSpec("app/models.py", "Order")).items) == {
        ("app/service.py", "ship"), ("app/service.py", "Cart")}
    assert labels(blast(con, TargetSpec("web/types.ts", "Props")).dependents) == {
        ("web/view.ts", None), ("web/view.ts", "render"), ("web/view.ts", "wrap")}
    assert callers(con, TargetSpec("web/types.ts", "Promise")).items == []
    assert callers(con, TargetSpec("web/types.ts", "T")).items == []
    assert {(n.path, n.relation) for n in callees(con, TargetSpec("web/view.ts", "render")).items
            } >= {("web/types.ts", "reference")}


def test_java_types_where_they_are_named_are_references(repo, cortex):
    """A Java class used in a field, a parameter, a catch or a type argument, through an
    import or from its package, is used there; a nested class by its short name in its outer
    class; a type parameter that shares a class's name is no use of it, and `String` is
    java.lang's."""
    base = "src/main/java/com/acme/"
    repo.write(base + "core/Repo.java", "package com.acme.core;\n\npublic class Repo {\n"
                                        "    public static class Page {}\n"
                                        "    Page first() { return null; }\n}\n")
    repo.write(base + "core/Gone.java", "package com.acme.core;\n\n"
                                        "public class Gone extends RuntimeException {}\n")
    repo.write(base + "shop/Cart.java", "package com.acme.shop;\n\nimport com.acme.core.Repo;\n"
                                        "import com.acme.core.Gone;\nimport java.util.List;\n\n"
                                        "public class Cart {\n    private final Repo repo;\n"
                                        "    Cart(Repo repo) { this.repo = repo; }\n"
                                        "    List<Repo> all(String s) {\n"
                                        "        try { return null; } catch (Gone e) { return null; }\n"
                                        "    }\n}\n")
    repo.write(base + "shop/Box.java", "package com.acme.shop;\n\n"
                                       "class Box<Repo> { Repo held; Cart cart; }\n")
    repo.commit("Java types", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert labels(callers(con, TargetSpec(base + "core/Repo.java", "Repo")).items) == {
        (base + "shop/Cart.java", "Cart"), (base + "shop/Cart.java", "Cart.Cart"),
        (base + "shop/Cart.java", "Cart.all")}
    assert labels(callers(con, TargetSpec(base + "core/Repo.java", "Repo.Page")).items) == {
        (base + "core/Repo.java", "Repo.first")}
    assert labels(callers(con, TargetSpec(base + "core/Gone.java", "Gone")).items) == {
        (base + "shop/Cart.java", "Cart.all")}
    assert labels(callers(con, TargetSpec(base + "shop/Cart.java", "Cart")).items) == {
        (base + "shop/Box.java", "Box")}
    # `related` leaves type references out of its structure (measured: numbers.md).
    def relation(**options):
        found = fused_related(con, TargetSpec(base + "shop/Cart.java"), **options).files
        return next(p.relation for p in found if p.path == base + "shop/Box.java")
    assert relation() is None and relation(type_refs=True) == "dependent"


def test_a_java_import_of_a_nested_class_or_a_static_member_names_it(repo, cortex):
    """`import a.Types.Page;` and `import static a.Types.limit;` bind the class's member, not
    its file: gson's tests named TestTypes.BagOfPrimitives so 329 times, none a caller of it."""
    base = "src/main/java/com/acme/"
    repo.write(base + "core/Types.java", "package com.acme.core;\n\npublic class Types {\n"
                                         "    public static class Page {}\n"
                                         "    public static int limit() { return 1; }\n}\n")
    repo.write(base + "shop/Cart.java", "package com.acme.shop;\n\n"
                                        "import com.acme.core.Types.Page;\n"
                                        "import static com.acme.core.Types.limit;\n\n"
                                        "public class Cart {\n    Page page;\n"
                                        "    int size() { return limit(); }\n}\n")
    repo.commit("Nested imports", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert labels(callers(con, TargetSpec(base + "core/Types.java", "Types.Page")).items) == {
        (base + "shop/Cart.java", "Cart")}
    assert labels(callers(con, TargetSpec(base + "core/Types.java", "Types.limit")).items) == {
        (base + "shop/Cart.java", "Cart.size")}


def test_a_java_type_is_not_guessed_by_its_name_alone(repo, cortex):
    """A Java type named without an import is of its file, its package, a wildcard import or
    java.lang: `List` under `import java.util.*;` is not the repository's `util.List` of
    another package, `IllegalStateException` is java.lang's (outside, not unresolved), and a
    fully qualified `com.acme.other.User` is that class."""
    base = "src/main/java/com/acme/"
    repo.write(base + "util/List.java", "package com.acme.util;\n\npublic class List {}\n")
    repo.write(base + "other/User.java", "package com.acme.other;\n\npublic class User {\n"
                                         "    public static class Id {}\n}\n")
    repo.write(base + "app/Names.java", "package com.acme.app;\n\nimport java.util.*;\n\n"
                                        "public class Names {\n    List<String> names;\n"
                                        "    com.acme.other.User owner;\n"
                                        "    com.acme.other.User.Id id;\n"
                                        "    void check() throws IllegalStateException {}\n}\n")
    repo.commit("Names", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert labels(callers(con, TargetSpec(base + "util/List.java", "List")).items) == set()
    assert labels(callers(con, TargetSpec(base + "other/User.java", "User")).items) == {
        (base + "app/Names.java", "Names")}
    assert labels(callers(con, TargetSpec(base + "other/User.java", "User.Id")).items) == {
        (base + "app/Names.java", "Names")}
    assert _ref_status(con, base + "app/Names.java", "IllegalStateException") == ["external"]
    assert _ref_status(con, base + "app/Names.java", "List") == ["external"]   # java.util.*


def test_a_java_nested_class_a_base_declares_is_named_by_its_short_name(repo, cortex):
    """A subclass names its base's nested classes without a qualifier (junit4's
    `CouldNotGenerateValueException` of PotentialAssignment): they are the base's."""
    base = "src/main/java/com/acme/"
    repo.write(base + "core/Node.java", "package com.acme.core;\n\npublic class Node {\n"
                                        "    public static class Builder {}\n"
                                        "    public enum Kind { LEAF, BRANCH }\n}\n")
    repo.write(base + "tree/Leaf.java", "package com.acme.tree;\n\nimport com.acme.core.Node;\n\n"
                                        "public class Leaf extends Node {\n"
                                        "    Kind kind() { return null; }\n"
                                        "    void fill(Builder b) {}\n}\n")
    repo.commit("Nested of a base", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert labels(callers(con, TargetSpec(base + "core/Node.java", "Node.Builder")).items) == {
        (base + "tree/Leaf.java", "Leaf.fill")}
    assert labels(callers(con, TargetSpec(base + "core/Node.java", "Node.Kind")).items) == {
        (base + "tree/Leaf.java", "Leaf.kind")}


def test_go_types_where_they_are_named_are_references(repo, cortex):
    """A Go type named in a parameter, a field or a composite literal, in its package or
    through an import, is used there; a method's receiver is its own type's code, and a type
    of another package of the same name is not it."""
    repo.write("go.mod", "module example.com/app\n\ngo 1.22\n")
    repo.write("conf/conf.go", "package conf\n\ntype Config struct{ Name string }\n\n"
                               "func (c *Config) Valid() bool { return c.Name != \"\" }\n")
    repo.write("conf/load.go", "package conf\n\nfunc Load() *Config { return &Config{} }\n")
    repo.write("server/server.go", "package server\n\nimport \"example.com/app/conf\"\n\n"
                                   "type Server struct{ cfg conf.Config }\n\n"
                                   "func Start(c *conf.Config) {}\n")
    repo.write("other/other.go", "package other\n\ntype Config struct{}\n\n"
                                 "func Use(c Config) {}\n")
    repo.commit("Go types", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert labels(callers(con, TargetSpec("conf/conf.go", "Config")).items) == {
        ("conf/load.go", "Load"), ("server/server.go", "Server"), ("server/server.go", "Start")}
def test_a_typescript_namespace_member_is_named_bare_inside_it(repo, cortex):
    """Inside `namespace util`, `Deep` and `helper()` are util's own (zod's partialUtil's
    DeepPartial, StandardSchemaV1's Types): not another file's top-level ones, which a guess by
    name picked (0.25 to 0.5 each)."""
    repo.write("web/a.ts", "export namespace util {\n  export type Deep<T> = { v: Deep<T> };\n"
                           "  export function helper() { return 1; }\n"
                           "  export function run(d: Deep<number>) { return helper(); }\n}\n")
    repo.write("web/b.ts", "export type Deep = number;\nexport function helper() { return 2; }\n")
    repo.commit("Namespaces", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert callers(con, TargetSpec("web/b.ts", "Deep")).items == []
    assert callers(con, TargetSpec("web/b.ts", "helper")).items == []
    assert labels(callers(con, TargetSpec("web/a.ts", "util.helper")).items) == {
        ("web/a.ts", "util.run")}
    assert labels(callers(con, TargetSpec("web/a.ts", "util.Deep")).items) == {
        ("web/a.ts", "util.run")}


def test_a_type_declared_in_a_function_is_that_functions(repo, cortex):
    """A test's own `class State` (Python) or `type key struct{}` (Go), named in an annotation
    or a `var` in the function that declares it, is that one: a review found starlette's
    guessed at datastructures.State, and cobra's Go types declared in tests unresolved."""
    repo.write("go.mod", "module example.com/p\n\ngo 1.22\n")
    repo.write("app/datastructures.py", "class State:\n    pass\n")
    repo.write("app/test_local.py", "def test_x():\n    class State(dict):\n        pass\n\n"
                                    "    def inner(s: State) -> None:\n        pass\n")
    repo.write("p.go", "package p\n\nfunc TestCtx() {\n\ttype key struct{}\n\tvar k key\n"
                       "\t_ = k\n}\n\ntype key int\n\nfunc other(k key) {}\n")
    repo.commit("local types", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert callers(con, TargetSpec("app/datastructures.py", "State")).items == []
    assert labels(callers(con, TargetSpec("app/test_local.py", "test_x.State")).items) == {
        ("app/test_local.py", "test_x.inner")}
    assert labels(callers(con, TargetSpec("p.go", "key")).items) == {("p.go", "other")}


def test_a_python_name_used_as_a_value_is_a_reference(repo, cortex):
    """A class or function passed along, caught or raised is used there: `callers` lists the
    function that does it, and a local variable of the same name elsewhere is no use. `app` is
    a namespace package (no __init__.py): `from app import handlers` is its module."""
    repo.write("app/errors.py", "class Closed(Exception):\n    pass\n")
    repo.write("app/handlers.py", "def home(request):\n    return 1\n")
    repo.write("app/routes.py", "from app.errors import Closed\nfrom app import handlers\n\n\n"
                                "def routes(register):\n    register('/', handlers.home)\n\n\n"
                                "def serve(conn):\n    try:\n        conn.run()\n"
                                "    except Closed:\n        raise\n\n\n"
                                "def other(home):\n    return wrap(home)\n")
    repo.write("app/cli.py", "from . import handlers\n\n\ndef main():\n    handlers.home(1)\n")
    repo.commit("Routes", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert {(n.path, n.qualname, n.relation) for n in callers(
        con, TargetSpec("app/errors.py", "Closed")).items} == {
        ("app/routes.py", "serve", "reference")}
    assert {(n.path, n.qualname, n.relation) for n in callers(
        con, TargetSpec("app/handlers.py", "home")).items} == {
        ("app/routes.py", "routes", "reference"), ("app/cli.py", "main", "caller")}


def test_a_class_header_being_typed_still_names_its_base(repo, cortex):
    """`class Kid(Base)` without its colon yet (a file being edited in the working tree) parses
    to an ERROR that holds the bases' `argument_list`, with no call around it: the names in it
    are references all the same, so `callers` of Base still lists the class's file."""
    repo.write("app/__init__.py", "")
    repo.write("app/base.py", "class Base:\n    def run(self):\n        return 1\n")
    repo.write("app/kid.py", "from app.base import Base\n\n\nclass Kid(Base):\n    pass\n")
    repo.commit("Kid", days_ago=1)
    cortex.index(model="none")
    (repo.path / "app" / "kid.py").write_text(
        "from app.base import Base\n\n\nclass Kid(Base)\n    def go(self):\n        return 2\n")
    cortex.index(model="none")
    con = cortex.reader()
    assert con.execute("select error_nodes > 0 from struct_files s join files f"
                       " on f.id = s.file_id where f.path = 'app/kid.py'").get == 1
    assert "app/kid.py" in {n.path for n in callers(con, TargetSpec("app/base.py", "Base")).items}


def test_a_python_call_on_a_variable_of_a_known_class_is_that_classs(repo, cortex):
    """`request.url_for()` with `request: Request` is Request's url_for, or the one Request
    inherits; `client = Client()` makes `client.send()` Client's; a `str` has no method of
    ours; an untyped parameter's call is still a guess by name."""
    repo.write("web/conn.py", "class HTTPConnection:\n    def url_for(self, name):\n"
                              "        return name\n")
    repo.write("web/requests.py", "from web.conn import HTTPConnection\n\n\n"
                                  "class Request(HTTPConnection):\n    def body(self):\n"
                                  "        return b''\n")
    repo.write("web/client.py", "class Client:\n    def send(self):\n        return 1\n\n"
                                "    def url_for(self, name):\n        return name\n")
    repo.write("web/__init__.py", "from web.client import Client\n")
    repo.write("web/text.py", "def split(text):\n    return text\n\n\nclass Words:\n"
                              "    def split(self):\n        return []\n")
    repo.write("web/views.py",
               "from typing import Optional\n\nimport web\nfrom web.client import Client\n"
               "from web.requests import Request\n\n\n"
               "def home(request: Request, other: Optional['Client'] = None):\n"
               "    request.url_for('home')\n    return request.body()\n\n\n"
               "def fetch(text: str):\n    client = Client()\n    client.send()\n"
               "    return text.split()\n\n\n"
               "def guess(thing):\n    return thing.send()\n\n\n"
               "def remote():\n    c = web.Client()\n    return c.url_for('x')\n")
    repo.commit("Views", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert labels(callers(con, TargetSpec("web/conn.py", "HTTPConnection.url_for")).items) == {
        ("web/views.py", "home")}
    assert labels(callers(con, TargetSpec("web/client.py", "Client.url_for")).items) == {
        ("web/views.py", "remote")}       # web.Client: the class the package re-exports
    assert labels(callers(con, TargetSpec("web/requests.py", "Request.body")).items) == {
        ("web/views.py", "home")}
    send = {(n.path, n.qualname): n.confidence
            for n in callers(con, TargetSpec("web/client.py", "Client.send")).items}
    assert send[("web/views.py", "fetch")] == 1.0
    assert send[("web/views.py", "guess")] < 0.9      # untyped: the only `send`, by its name
    assert callers(con, TargetSpec("web/text.py", "Words.split")).items == []
    assert labels(callees(con, TargetSpec("web/views.py", "fetch")).items) >= {
        ("web/client.py", "Client.send")}


def test_a_python_call_on_an_attribute_of_a_known_class_is_that_classs(repo, cortex):
    """`self.router.add()` with `self.router = router` and `router: Router` in __init__ (or
    `self.client = Client()`, or `client: Client` in the class body) is Router's add; an
    attribute assigned two classes stays a guess by name."""
    repo.write("app/routing.py", "class Router:\n    def add(self, path):\n        return path\n")
    repo.write("app/client.py", "class Client:\n    def add(self, x):\n        return x\n\n"
                                "    def get(self):\n        return 1\n")
    repo.write("app/main.py",
               "from app.client import Client\nfrom app.routing import Router\n\n\n"
               "class App:\n    backup: Client\n\n"
               "    def __init__(self, router: Router) -> None:\n        self.router = router\n"
               "        self.client = None\n        self.client = Client()\n"
               "        self.either = Client()\n        self.either = Router()\n\n"
               "    def route(self):\n        self.router.add('/')\n"
               "        self.client.get()\n        self.backup.get()\n"
               "        return self.either.add(1)\n")
    repo.commit("App", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    routes = {(n.path, n.qualname, n.line): n.confidence
              for n in callers(con, TargetSpec("app/routing.py", "Router.add")).items}
    assert routes[("app/main.py", "App.route", 16)] == 1.0
    added = {(n.path, n.qualname, n.line): n.confidence
             for n in callers(con, TargetSpec("app/client.py", "Client.add")).items}
    assert added == {("app/main.py", "App.route", 19): 0.2}   # self.either: by its name
    got = callers(con, TargetSpec("app/client.py", "Client.get")).items
    assert [(n.path, n.qualname, n.line, n.confidence) for n in got] == [
        ("app/main.py", "App.route", 17, 1.0), ("app/main.py", "App.route", 18, 1.0)]


def test_a_python_variable_assigned_in_branches_keeps_every_class(repo, cortex):
    """`page = pages[name]()` in a `try` and `page = Missing()` in its `except`: the call
    after them may be either's, so it is not Missing's alone (werkzeug's cupoftee)."""
    repo.write("app/pages.py", "class Page:\n    def render(self):\n        return 1\n\n\n"
                               "class Missing(Page):\n    def render(self):\n        return 2\n"
                               "\n\nclass Home(Page):\n    def render(self):\n"
                               "        return 3\n")
    repo.write("app/main.py", "from app.pages import Home, Missing\n\nPAGES = {'': Home}\n\n\n"
                              "def serve(name):\n    try:\n        page = PAGES[name]()\n"
                              "    except KeyError:\n        page = Missing()\n"
                              "    return page.render()\n")
    repo.commit("pages", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert labels(callers(con, TargetSpec("app/pages.py", "Home.render")).items) == {
        ("app/main.py", "serve")}
    assert all(n.confidence < 1.0 for n in callers(
        con, TargetSpec("app/pages.py", "Missing.render")).items)


def test_a_python_call_on_a_variable_of_a_base_class_reaches_its_overrides(repo, cortex):
    """`self.backend.authenticate()` with `backend: Backend` is Backend's, and runs the
    override of the subclass the object is: a caller of BasicAuth.authenticate too, as the
    guess by its name made it (starlette's AuthenticationMiddleware). `Backend.check(self)`
    in the subclass itself is the base's own."""
    repo.write("app/auth.py", "class Backend:\n    def authenticate(self, conn):\n"
                              "        raise NotImplementedError\n\n"
                              "    def check(self):\n        return 0\n")
    repo.write("app/middleware.py",
               "from app.auth import Backend\n\n\nclass Middleware:\n"
               "    def __init__(self, backend: Backend) -> None:\n"
               "        self.backend = backend\n\n    def __call__(self, conn):\n"
               "        return self.backend.authenticate(conn)\n\n\n"
               "def login(backend: Backend, conn):\n    return backend.authenticate(conn)\n")
    repo.write("app/basic.py", "from app.auth import Backend\n\n\nclass BasicAuth(Backend):\n"
                               "    def authenticate(self, conn):\n        return conn\n\n"
                               "    def check(self):\n        return Backend.check(self)\n")
    repo.commit("auth", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert labels(callers(con, TargetSpec("app/basic.py", "BasicAuth.authenticate")).items) == {
        ("app/middleware.py", "Middleware.__call__"), ("app/middleware.py", "login")}
    assert callers(con, TargetSpec("app/basic.py", "BasicAuth.check")).items == []


def test_a_bare_call_of_a_nested_function_is_that_function(repo, cortex):
    """A closure or a test's helper called by its name inside the function that holds it is
    that one, the innermost first: not an import, nor a top-level function of its name."""
    repo.write("app/util.py", "def helper():\n    return 0\n")
    repo.write("app/mod.py", "from app.util import helper\n\n\n"
                             "def outer():\n    def helper():\n        return 1\n\n"
                             "    def deeper():\n        return helper()\n\n"
                             "    return helper() + deeper()\n\n\n"
                             "def other():\n    return helper()\n")
    repo.write("web/a.js", "export function inner() {\n  return 0;\n}\n")
    repo.write("web/b.js", "function outer() {\n  function inner() {\n    return 1;\n  }\n"
                           "  return inner();\n}\n\nfunction inner() {\n  return 2;\n}\n\n"
                           "export function top() {\n  return inner();\n}\n")
    repo.commit("closures", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert labels(callers(con, TargetSpec("app/util.py", "helper")).items) == {
        ("app/mod.py", "other")}
    assert labels(callers(con, TargetSpec("app/mod.py", "outer.helper")).items) == {
        ("app/mod.py", "outer"), ("app/mod.py", "outer.deeper")}
    assert labels(callers(con, TargetSpec("web/b.js", "outer.inner")).items) == {
        ("web/b.js", "outer")}
    assert labels(callers(con, TargetSpec("web/b.js", "inner")).items) == {("web/b.js", "top")}


def test_fused_related_ranks_structure_and_history(py_project, indexed):
    for n in range(3):
        py_project.write("pkg/db.py", DB + f"\nVERSION = {n}\n")
        py_project.write("docs.txt", f"v{n}\n")
        py_project.commit(f"Bump {n}", days_ago=10 - n)
    indexed.index()
    con = indexed.reader()
    result = fused_related(con, TargetSpec("pkg/db.py"), top_k=10)
    by = {f.path: f for f in result.files}
    assert by["pkg/api.py"].structure > 0 and by["pkg/api.py"].relation == "dependent"
    assert by["docs.txt"].confidence == 0.75 and by["docs.txt"].structure == 0
    # The three shared commits are the newest of the target's four: decayed, they weigh a little
    # more than three quarters.
    assert 0.75 < by["docs.txt"].cochange < 0.76
    assert all(f.score == pytest.approx(f.cochange + f.structure / (1 + result.target_commits)
                                        + result.folder_prior * f.folder, abs=1e-3)
               for f in result.files)
    assert by["docs.txt"].score > by["pkg/api.py"].score      # history leads where it exists
    hidden = blast(con, TargetSpec("pkg/db.py")).hidden
    assert [h.path for h in hidden] == ["docs.txt"]


def test_cli_blast_callers_callees(indexed, py_project):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "cortex_cli.cli", *args], cwd=py_project.path,
                              capture_output=True, text=True, timeout=120)
    db = ["--db", str(indexed.db)]
    out = run("blast", "pkg/db.py::save", *db)
    assert out.returncode == 0, out.stderr
    assert "blast radius of pkg/db.py::save" in out.stdout and "tests/test_api.py::test_handler" in out.stdout
    data = json.loads(run("callers", "pkg/db.py::save", "--json", *db).stdout)
    assert {i["qualname"] for i in data["items"]} >= {"handler", "Store.save_all"}
    assert "callee" in run("callees", "pkg/api.py::handler", *db).stdout
    bad = run("blast", "pkg/db.py::nope", *db)
    assert bad.returncode == 1 and "no symbol 'nope'" in bad.stderr
    rel = json.loads(run("related", "pkg/db.py", "--json", *db).stdout)
    assert rel["files"] and "score" in rel["files"][0]
    from cortex_cli.render import plural_noun   # a review saw "5 subclasss" in a summary
    assert [plural_noun(w, n) for w, n in (("subclass", 5), ("caller", 2), ("test", 1))] == [
        "subclasses", "callers", "test"]


def test_unknown_targets_are_errors(indexed):
    with pytest.raises(NotFound):
        blast(indexed.reader(), TargetSpec("nope.py"))


def test_re_exports_external_names_and_bare_calls(repo, cortex):
    repo.write("pkg/__init__.py", "from .db import save\n")
    repo.write("pkg/db.py", "def save():\n    return 1\n\n\nclass K:\n    def setup(self):\n"
                            "        def helper():\n            return 2\n        return helper()\n")
    repo.write("setup.py", "from setuptools import setup\n\nsetup(name='x')\n")
    repo.write("app.py", "import pkg\n\n\ndef run(f):\n    f()\n    helper()\n    return pkg.save()\n")
    repo.commit("Layout", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert ("app.py", "run") in labels(callers(con, TargetSpec("pkg/db.py", "save")).items)
    assert con.execute("select status from refs r join files f on f.id = r.file_id"
                       " where f.path = 'setup.py' and r.name = 'setup' and r.kind = 'call'"
                       ).get == "external"
    assert labels(callers(con, TargetSpec("pkg/db.py", "K.setup")).items) == set()
    # a bare call never means a nested function elsewhere
    assert ("app.py", "run") not in labels(callers(con, TargetSpec("pkg/db.py",
                                                                    "K.setup.helper")).items)


def test_go_packages_java_packages_and_rust_modules(repo, cortex):
    repo.write("go.mod", "module example.com/shop\n\ngo 1.22\n")
    repo.write("store/store.go", "package store\n\nfunc Save(x int) int { return x }\n")
    repo.write("cmd/main.go", 'package main\n\nimport "example.com/shop/store"\n\n'
                              "func main() { store.Save(1) }\n")
    repo.write("src/main/java/com/shop/Store.java",
               "package com.shop;\n\npublic class Store {\n  public void save() {}\n}\n")
    repo.write("src/main/java/com/shop/app/App.java",
               "package com.shop.app;\n\nimport com.shop.Store;\n\npublic class App extends Store {\n"
               "  void run() { new Store().save(); }\n}\n")
    repo.write("src/lib.rs", "pub mod db;\n\npub fn run() { db::save(); }\n")
    repo.write("src/db.rs", "pub fn save() {}\n")
    repo.commit("Three languages", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert ("cmd/main.go", "main") in labels(callers(con, TargetSpec("store/store.go", "Save")).items)
    store = blast(con, TargetSpec("src/main/java/com/shop/Store.java", "Store"), depth=1)
    assert ("src/main/java/com/shop/app/App.java", "App") in labels(store.dependents)
    assert ("src/lib.rs", "run") in labels(callers(con, TargetSpec("src/db.rs", "save")).items)


BASE = """\
class Base:
    def run(self):
        return self.hook()

    def hook(self):
        ...


class Loud(Base):
    def hook(self):
        return "LOUD"


class Quiet(Base):
    def hook(self):
        return "quiet"


class Plain(Base):
    def other(self):
        return self.hook()
"""


def test_a_method_is_called_through_the_method_it_overrides(repo, cortex):
    """`self.hook()` in a base class (a mixin's stub, an abstract method, a template method)
    runs a subclass's override: a review found requests' Session.send without the call that
    SessionRedirectMixin.resolve_redirects makes through the mixin's stub, and the pair listed
    as "hidden coupling, no structural link"."""
    repo.write("shapes.py", BASE)
    repo.write("src/main/java/com/shop/Job.java",
               "package com.shop;\n\npublic abstract class Job {\n"
               "  public void run() { step(); }\n  abstract void step();\n}\n")
    repo.write("src/main/java/com/shop/Copy.java",
               "package com.shop;\n\npublic class Copy extends Job {\n  void step() {}\n}\n")
    repo.commit("Template methods", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    loud = callers(con, TargetSpec("shapes.py", "Loud.hook"))
    # Base.run's call runs Loud.hook or Quiet.hook: shared between the two overrides. Plain's
    # call runs Base.hook (Plain does not override it), never Loud's.
    assert [(n.qualname, n.line, n.confidence) for n in loud.items] == [("Base.run", 3, 0.45)]
    found = blast(con, TargetSpec("shapes.py", "Loud.hook"), depth=1)
    [dep] = found.dependents
    assert (dep.qualname, dep.relation, dep.chain[0].kind, dep.chain[0].dst_qualname) == (
        "Base.run", "caller", "dispatch", "Base.hook")
    assert direct_dependents(con, con.execute("select id from files where path = 'shapes.py'"
                                              ).get, "Loud.hook") == 1
    # The base's own method keeps its direct callers only.
    assert labels(callers(con, TargetSpec("shapes.py", "Base.hook")).items) == {
        ("shapes.py", "Base.run"), ("shapes.py", "Plain.other")}
    # Java: an unqualified call of an abstract method.
    step = callers(con, TargetSpec("src/main/java/com/shop/Copy.java", "Copy.step"))
    assert labels(step.items) == {("src/main/java/com/shop/Job.java", "Job.run")}


def test_a_java_class_of_the_package_needs_no_import(repo, cortex):
    """`Dates.parse(...)` from a test of the same package under src/test/java: no import names
    Dates, and `parse` is everywhere. gson's ISO8601Utils.parse had 6 test callers, all
    unresolved ("tests covering it: 0")."""
    repo.write("src/main/java/com/acme/util/Dates.java",
               "package com.acme.util;\n\npublic class Dates {\n"
               "  public static long parse(String s) { return 0; }\n}\n")
    repo.write("src/main/java/com/acme/other/Parser.java",
               "package com.acme.other;\n\npublic class Parser {\n"
               "  public static long parse(String s) { return 1; }\n}\n")
    repo.write("src/test/java/com/acme/util/DatesTest.java",
               "package com.acme.util;\n\npublic class DatesTest {\n"
               "  @Test public void reads() { long t = Dates.parse(\"5\"); }\n}\n")
    repo.write("src/test/java/com/acme/elsewhere/OtherTest.java",   # another package: no
               "package com.acme.elsewhere;\n\npublic class OtherTest {\n"
               "  @Test public void reads() { long t = Dates.parse(\"5\"); }\n}\n")
    repo.commit("Dates", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    found = callers(con, TargetSpec("src/main/java/com/acme/util/Dates.java", "Dates.parse"))
    by_path = {n.path: n.confidence for n in found.items}
    assert by_path["src/test/java/com/acme/util/DatesTest.java"] == 0.9
    # Another package's test names Dates without an import: a guess by name, as before.
    assert by_path["src/test/java/com/acme/elsewhere/OtherTest.java"] <= 0.25
    other = callers(con, TargetSpec("src/main/java/com/acme/other/Parser.java", "Parser.parse"))
    assert "src/test/java/com/acme/util/DatesTest.java" not in {n.path for n in other.items}


def test_a_java_call_on_a_variable_is_a_call_of_its_declared_type(repo, cortex):
    """`in.next()` with `Reader in` is Reader.next, not any `next` (gson's JsonReader.nextString:
    92 of its callers were name-only guesses under the floor, "0 dependents, risk low")."""
    repo.write("src/main/java/com/acme/io/Reader.java",
               "package com.acme.io;\n\npublic class Reader {\n"
               "  public String next() { return null; }\n}\n")
    repo.write("src/main/java/com/acme/io/Tokens.java",
               "package com.acme.io;\n\npublic class Tokens {\n"
               "  public String next() { return null; }\n}\n")
    repo.write("src/main/java/com/acme/app/Use.java",
               "package com.acme.app;\n\nimport com.acme.io.Reader;\nimport com.acme.io.Tokens;\n"
               "\npublic class Use {\n  private Reader kept;\n"
               "  String param(Reader in) { return in.next(); }\n"
               "  String local() { Tokens t = new Tokens(); return t.next(); }\n"
               "  String field() { return kept.next(); }\n"
               "  String each(java.util.List<Reader> all) {\n"
               "    for (Reader r : all) { r.next(); }\n    return null;\n  }\n"
               "  String text(String s) { return s.trim(); }\n"
               "  Object lambda(Reader in) { return (java.util.function.Function<Tokens, String>)"
               " in -> in.next(); }\n}\n")
    repo.commit("Readers", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()

    def lines(path, qualname):
        found = callers(con, TargetSpec(path, qualname))
        return sorted((n.qualname, n.confidence) for n in found.items if n.confidence >= 0.5)
    assert lines("src/main/java/com/acme/io/Reader.java", "Reader.next") == [
        ("Use.each", 1.0), ("Use.field", 1.0), ("Use.param", 1.0)]
    # The lambda's `in` is its own parameter, of a type not written: no certain answer.
    assert lines("src/main/java/com/acme/io/Tokens.java", "Tokens.next") == [("Use.local", 1.0)]


def test_java_scopes_a_review_found_wrong(repo, cortex):
    """Each resolved at 0.9 to the wrong class: a pattern variable (`instanceof`, a switch case)
    took a field's type; a nested class lost to a class of the package of its name; a class
    of the package lost to a wildcard import's; `var` in try-with-resources named a class
    `var`."""
    base = "src/main/java/com/acme/"
    for cls in ("Foo", "Bar"):
        repo.write(f"{base}{cls}.java", f"package com.acme;\n\npublic class {cls} {{\n"
                   "  public void go() {}\n  public void close() {}\n}\n")
    repo.write(f"{base}Builder.java",
               "package com.acme;\n\npublic class Builder {\n  public void build() {}\n}\n")
    repo.write(f"{base}other/Foo.java",
               "package com.acme.other;\n\npublic class Foo {\n  public void go() {}\n}\n")
    repo.write(f"{base}User.java", "package com.acme;\n\npublic class User {\n"
               "  private Bar f;\n"
               "  void pattern(Object o) { if (o instanceof Foo f) { f.go(); } }\n"
               "  void sw(Object o) { switch (o) { case Foo f -> f.go(); default -> {} } }\n"
               "  void field() { f.go(); }\n"
               "  void nested() { Builder b = new Builder(); b.build(); }\n"
               "  void res() throws Exception { try (var r = new Foo()) { r.go(); } }\n"
               "  static class Builder {\n    void build() {}\n  }\n}\n")
    repo.write(f"{base}Wild.java", "package com.acme;\n\nimport com.acme.other.*;\n\n"
               "public class Wild {\n  void m(Foo x) { x.go(); }\n}\n")
    repo.commit("Scopes", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()

    def sure(path, qualname):
        return {n.qualname for n in callers(con, TargetSpec(base + path, qualname)).items
                if n.confidence >= 0.5}
    assert sure("Foo.java", "Foo.go") == {"User.pattern", "User.sw", "User.res", "Wild.m"}
    assert sure("Bar.java", "Bar.go") == {"User.field"}
    assert sure("other/Foo.java", "Foo.go") == set()
    assert sure("User.java", "User.Builder.build") == {"User.nested"}
    assert sure("Builder.java", "Builder.build") == set()


def test_java_classes_in_scope_where_the_call_is(repo, cortex):
    """A second review's cases, each at 1.0 on the wrong class: a nested class anywhere in the
    file beat an imported one; a method's local class served another method; a sibling's
    nested class of the same name won; an `instanceof` pattern reached its `else`."""
    repo.write("src/main/java/q/Builder.java",
               "package q;\n\npublic class Builder {\n  public Object build() { return 0; }\n}\n")
    repo.write("src/main/java/p/Outer.java", OUTER)
    repo.commit("Scopes", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    rows = {(line, name): edges for line, name, edges in con.execute(
        "select r.line, r.name, group_concat(f.path || '::' || e.dst_qualname || '@' ||"
        " e.confidence, ' | ') from refs r join edges e on e.ref_id = r.id join files f"
        " on f.id = e.dst_file_id where r.kind = 'call' and r.qualifier is not null"
        " and r.qualifier != '?' group by r.id")}
    outer = "src/main/java/p/Outer.java::"
    assert rows[(13, "build")] == "src/main/java/q/Builder.java::Builder.build@1.0"
    assert rows[(28, "go")] == outer + "Outer.second.Local.go@1.0"
    assert rows[(34, "visit")] == outer + "Outer.Zed.Node.visit@1.0"
    assert rows[(40, "visit")] == outer + "Outer.Alpha.Node.visit@1.0"
    assert rows[(60, "work")] == outer + "Other.work@1.0"
    assert rows[(62, "work")] == outer + "Thing.work@1.0"     # the else: the field's type


OUTER = """package p;

import q.Builder;

public class Outer {
    static class Inner {
        static class Builder {
            Object build() { return 1; }
        }
    }

    void useImported(Builder b) {
        b.build();
    }

    void first() {
        class Local {
            void go() {}
        }
        new Local().go();
    }

    void second() {
        class Local {
            void go() {}
        }
        Local l = new Local();
        l.go();
    }

    static class Zed {
        static class Node { void visit() {} }
        void walkZ(Node n) {
            n.visit();
        }
    }
    static class Alpha {
        static class Node { void visit() {} }
        void walk(Node n) {
            n.visit();
        }
    }

    Thing field;

    void sw(int k) {
        switch (k) {
            case 1:
                Other field = new Other();
                break;
            case 2:
                field = new Other();
                field.work();
                break;
        }
    }

    void els(Object o) {
        if (o instanceof Other field) {
            field.work();
        } else {
            field.work();
        }
    }
}

class Thing { void work() {} }
class Other { void work() {} }
"""


def test_a_constructor_is_called_by_what_constructs_its_class(repo, cortex):
    """`Wait(2)` runs Wait.__init__, `new Box(1)` Box's constructors: their callers listed
    only the explicit `Wait.__init__(...)` call of a subclass (tenacity's wait_fixed.__init__:
    1 dependent, where 29 test lines construct it)."""
    repo.write("wait.py", "class Wait:\n    def __init__(self, n):\n        self.n = n\n\n"
               "    def sleep(self):\n        return self.n\n\n\n"
               "class Longer(Wait):\n    def __init__(self, n):\n"
               "        Wait.__init__(self, n * 2)\n")
    repo.write("tests/test_wait.py", "from wait import Wait\n\n\ndef test_wait():\n"
               "    assert Wait(2).sleep() == 2\n")
    repo.write("src/main/java/com/acme/Box.java",
               "package com.acme;\n\npublic class Box {\n  public Box(int n) {}\n"
               "  public static Box of(int n) { return new Box(n); }\n}\n")
    repo.commit("Waits and boxes", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    init = callers(con, TargetSpec("wait.py", "Wait.__init__"))
    assert labels(init.items) == {("wait.py", "Longer.__init__"),
                                  ("tests/test_wait.py", "test_wait")}
    # The class's own callers are the same constructions, and its methods keep theirs.
    assert ("tests/test_wait.py", "test_wait") in labels(callers(con, TargetSpec(
        "wait.py", "Wait")).items)
    assert labels(callers(con, TargetSpec("wait.py", "Wait.sleep")).items) == {
        ("tests/test_wait.py", "test_wait")}
    box = callers(con, TargetSpec("src/main/java/com/acme/Box.java", "Box.Box"))
    assert labels(box.items) == {("src/main/java/com/acme/Box.java", "Box.of")}


@pytest.mark.timeout(60, method="thread")
def test_hostile_working_trees_and_long_chains(repo, cortex, tmp_path):
    import os
    for i in range(40):   # a re-export chain longer than any followed
        repo.write(f"m{i}.py", f"from m{i + 1} import x\n")
    repo.write("m40.py", "def x():\n    return 1\n")
    repo.write("a/b/c/m.py", "from .....x import y\n\n\ndef g():\n    return y()\n")
    repo.write("x.py", "def y():\n    return 1\n")
    repo.write("dep.py", "from x import y\n\n\ndef c1():\n    return y()\n")
    repo.write("link.py", "from x import y\n")
    repo.write("bin.py", b"\x00\x01binary")
    repo.commit("Chains and links", days_ago=1)
    (repo.path / "dep.py").unlink()                      # deleted in the working tree
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (repo.path / "link.py").unlink()
    (repo.path / "link.py").symlink_to(fifo)             # would block a reader forever
    cortex.index(model="none")
    con = cortex.reader()
    assert labels(callers(con, TargetSpec("x.py", "y")).items) == set()   # no climb, dep.py gone
    assert con.execute("select skip_reason from struct_files s join files f on f.id = s.file_id"
                       " where f.path = 'link.py'").get == "not a regular file"
    assert "structure skipped for this file: binary" in blast(con, TargetSpec("bin.py")).note
    assert callers(con, TargetSpec("m40.py", "x")).items is not None


def test_a_file_renamed_away_names_its_successor(repo, cortex):
    """A path that history knows but HEAD does not (requests/ moved to src/requests/) has no
    structure: blast says where the file went, not only that it may be unsupported."""
    repo.write("old/core.py", "def y():\n    return 1\n")
    repo.write("use.py", "from old.core import y\n\n\ndef c():\n    return y()\n")
    repo.commit("start", days_ago=3)
    repo.move("old/core.py", "mid/core.py")
    repo.commit("move", days_ago=2)
    repo.move("mid/core.py", "new/core.py")
    repo.write("use.py", "from new.core import y\n\n\ndef c():\n    return y()\n")
    repo.commit("move again", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    for gone in ("old/core.py", "mid/core.py"):   # through every rename to the path at HEAD
        assert blast(con, TargetSpec(gone)).note == (
            f"{gone} is not at HEAD (renamed to new/core.py, which has its structure)")
    assert blast(con, TargetSpec("new/core.py")).note is None
    # At a line: said once (a review found "not at HEAD" twice), where it went after it.
    assert blast(con, TargetSpec("old/core.py", line=2)).note == (
        "old/core.py is not at the indexed HEAD (deleted or renamed away), so line 2 names no "
        "code there; showing the file's dependents; renamed to new/core.py, which has its "
        "structure")


def test_a_symbol_renamed_away_names_its_successor(repo, cortex):
    """blast and callers of a function renamed since say where its code lives at HEAD, as its
    history does (a hostile test on junegunn/fzf's indexByteTwo, now IndexByteTwo); a function
    deleted says only that it is gone."""
    repo.write("m.py", "def old_name(x):\n    return x + 1\n\n\ndef gone():\n    return 0\n\n\n"
                       "def user():\n    return old_name(2)\n")
    repo.commit("start", days_ago=2)
    repo.write("m.py", "def new_name(x):\n    return x + 1\n\n\ndef user():\n"
                       "    return new_name(2)\n")
    sha = repo.commit("rename, and gone is gone", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    moved = (f"m.py::old_name is gone at HEAD (moved to m.py::new_name in {sha[:10]}, which has "
             "its structure)")
    assert blast(con, TargetSpec("m.py", "old_name")).note == moved
    assert callers(con, TargetSpec("m.py", "old_name")).note == moved
    assert blast(con, TargetSpec("m.py", "gone")).note == "m.py::gone is gone at HEAD"


def test_a_head_without_structure_is_not_told_to_index_again(repo, cortex):
    """Every file deleted: no structure at HEAD after a run that read it, and blast said "no
    structure indexed yet (an index run builds it)", which another run would not change."""
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("start", days_ago=2)
    repo.git("rm", "-q", "a.py")
    repo.commit("gone", days_ago=1)
    cortex.index(model="none")
    note = blast(cortex.reader(), TargetSpec("a.py")).note
    assert note is not None and "index" not in note and "a.py is not at HEAD" in note


def test_a_line_no_symbol_encloses_says_the_answer_is_the_files(repo, cortex):
    """`blast a.py:99` answered for the whole file in silence, where history and related say
    "no symbol encloses line 99 at HEAD" (commands.md: the answer says so)."""
    repo.write("a.py", "import os\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return f()\n")
    repo.commit("start", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    said = "no symbol encloses line 99 at HEAD; showing the file's"
    found = blast(con, TargetSpec("a.py", line=99))
    assert (found.target.qualname, found.note, found.dependents_known) == (
        None, f"{said} dependents", True)
    assert callers(con, TargetSpec("a.py", line=99)).note == f"{said} callers"
    assert callees(con, TargetSpec("a.py", line=1)).note == (
        "no symbol encloses line 1 at HEAD; showing the file's callees")
    assert blast(con, TargetSpec("a.py", line=5)).note is None   # f's line: f answers


def test_callers_of_a_file_leave_out_its_own_calls(indexed):
    con = indexed.reader()
    found = callers(con, TargetSpec("pkg/db.py"))
    assert "pkg/db.py" not in {n.path for n in found.items}
    assert ("pkg/api.py", "handler") in labels(found.items)


def test_an_update_resolves_as_a_full_resolution_would(repo, cortex, tmp_path):
    """A change that adds or removes no file resolves again only what names its definitions
    or imports (resolve_refs): every step below must leave the same statuses and edges as
    resolving everything. Re-exports through __init__, an alias chain (`x as y`, imported on
    as y), a wildcard import, a JavaScript default import, a change inside a body, and a
    class's bases changing under a subclass in another file."""
    layout = {
        "pkg/__init__.py": "from .core import build as make\nfrom .util import *\n",
        "pkg/core.py": "def build():\n    return 1\n\n\ndef other():\n    return 2\n",
        "pkg/util.py": "def helper():\n    return 3\n",
        "pkg/mid.py": "from pkg import make as create\n",
        "app.py": "from pkg import make, helper\nfrom pkg.mid import create\n\n\n"
                  "def run():\n    make()\n    create()\n    return helper()\n",
        "web/db.js": "export default function save() {}\nexport function load() {}\n",
        "web/app.js": "import save from './db';\nimport {load} from './db';\n"
                      "export function go() { save(); load(); }\n",
        "pkg/base.py": "class A:\n    def m(self):\n        return 1\n\n\n"
                       "class B:\n    def m(self):\n        return 2\n",
        "pkg/kid.py": "from pkg.base import A, B\n\n\nclass K(A):\n    pass\n",
        "sub.py": "from pkg.kid import K\n\n\nclass S(K):\n    def go(self):\n"
                  "        return self.m()\n",
    }
    steps = [
        ("pkg/core.py", "def other():\n    return 2\n"),                          # build gone
        ("pkg/core.py", "def build():\n    return 1\n"),                          # back
        ("pkg/__init__.py", "from .core import build as make\n"),                 # no wildcard
        ("pkg/__init__.py", "from .util import helper as make\nfrom .util import *\n"),
        ("pkg/util.py", "def helper():\n    return 3\n\n\ndef build():\n    return 4\n"),
        ("pkg/mid.py", "def create():\n    return 5\n"),                          # alias → def
        ("web/db.js", "export function load() {}\nexport default function keep() {}\n"),
        ("web/db.js", "export default function save() {}\nexport function load() {}\n"),
        ("pkg/core.py", "def build():\n    return 11\n"),                         # body only
        ("pkg/kid.py", "from pkg.base import A, B\n\n\nclass K(B):\n    pass\n"),   # bases
    ]
    _updates_resolve_as_a_full_resolution(repo, cortex, tmp_path, layout,
                                          [{path: text} for path, text in steps])


def test_files_that_appear_and_go_resolve_as_a_full_resolution_would(repo, cortex, tmp_path):
    """Files added and removed change what a module names (resolve_refs reads again only the
    imports naming such a file or its folder): Python relative, absolute (the candidate
    closest to the importer), `from . import x`, a package's `__init__` and `from .. import x`
    under a new one; JavaScript's index files and `./x.js` written for `./x.ts`; a Go
    package's files and the module's root package; a Java class and a package import; Rust's
    `mod.rs`, crate roots and qualified paths (`store::put()`); a file at the root; a re-export
    whose module became another file under an import that names neither (`from pkg import
    foo` through pkg's `from util import foo`, when a closer `util` appears), also when pkg's
    file changed in the same commit; `./lib/..`; a call bound through an import whose own
    answer stays; a folder's own module (`__init__.py`, `index.js`, `mod.rs`) appearing alone;
    and, with no file moved, `Helper.go()` when the class a Java wildcard import bound there is
    renamed."""
    layout = {
        "a/b/thing.py": "def foo():\n    return 1\n",
        "x/util.py": "from a.b.thing import foo\n",
        "pkg/__init__.py": "from util import foo\n",
        "app.py": "from pkg import foo\n\n\ndef run():\n    return foo()\n",
        "rel/__init__.py": "",
        "rel/user.py": "from . import helpers\nfrom .sub import thing\n\n\n"
                       "def go():\n    return helpers.h() + thing()\n",
        "rel/sub.py": "def thing():\n    return 2\n",
        "web/app.js": "import {a} from './lib';\nimport {b} from './b.js';\n"
                      "export function go() { a(); b(); }\n",
        "web/lib.js": "export function a() {}\n",
        "web/b.ts": "export function b() {}\n",
        "go.mod": "module example.com/shop\n\ngo 1.22\n",
        "cart/cart.go": "package cart\n\nfunc Add() {}\n",
        "cmd/main.go": "package main\n\nimport \"example.com/shop/cart\"\n\n"
                       "func main() { cart.Add(); cart.Remove() }\n",
        "src/main/java/com/shop/Store.java": "package com.shop;\npublic class Store {}\n",
        "src/main/java/com/shop/app/App.java":
            "package com.shop.app;\nimport com.shop.Store;\nimport com.shop.*;\n"
            "public class App { Store s; Cart c; }\n",
        "crate/src/lib.rs": "pub mod db;\n\npub fn run() { db::save(); }\n",
        "crate/src/db.rs": "pub fn save() {}\n",
        "crate/src/util/x.rs": "use crate::db::save;\n\npub fn go() { save(); }\n",
        "shop.go": "package shop\n\nfunc Open() {}\n",
        "cmd/tool/tool.go": "package main\n\nimport \"example.com/shop\"\n\n"
                            "func main() { shop.Open() }\n",
        "ns/inner/mod.py": "from .. import inner\nfrom .. import sub\n",
        "ns/sub.py": "",
        "web/p/q.js": "import {f} from './a/..';\nexport function g() { f(); }\n",
        "web/p/a/x.js": "export function y() {}\n",
        "crate2/src/lib.rs": "pub fn run() { store::put(); }\n",
        "crate2/src/api.rs": "use crate::widgets::w;\n\npub fn go() { w(); }\n",
        "rel/user2.py": "from .pkg2 import thing\n",
        "web/app2.js": "import {q} from './widgets';\nexport function h() { q(); }\n",
        "src/main/java/com/shop/Helper.java": "package com.shop;\n"
                                              "public class Helper { static void make() {} }\n",
        "src/main/java/com/shop/Runner.java": "package com.shop;\n"
                                              "public class Runner { static void go() {} }\n",
        "src/main/java/org/shop/Store.java": "package org.shop;\npublic class Store {}\n",
        "src/main/java/org/shop/Util.java": "package org.shop;\nimport org.shop.app.Cart;\n"
                                            "public class Util { void f() { Cart.make(); } }\n",
        "src/main/java/org/shop/app/Store.java": "package org.shop.app;\npublic class Store {}\n",
        "src/main/java/org/shop/app/Util.java": "package org.shop.app;\nimport org.shop.Cart;\n"
                                                "public class Util {}\n",
        "src/main/java/com/shop/app/Calls.java":
            "package com.shop.app;\nimport com.ext.Helper;\nimport com.shop.*;\n"
            "public class Calls { void f() { Helper.go(); } }\n",
    }
    steps = [
        {"pkg/sub/util.py": "def other():\n    return 3\n"},        # a closer `util`
        {"rel/helpers.py": "def h():\n    return 4\n"},            # `from . import helpers`
        {"rel/sub.py": None, "rel/sub/__init__.py": "def thing():\n    return 5\n"},
        {"web/lib.js": None, "web/lib/index.js": "export function a() {}\n"},
        {"web/b.ts": None},
        {"cart/remove.go": "package cart\n\nfunc Remove() {}\n"},
        {"src/main/java/com/shop/Cart.java": "package com.shop;\npublic class Cart {}\n"},
        {"crate/src/db.rs": None, "crate/src/db/mod.rs": "pub fn save() {}\n"},
        {"crate/src/lib.rs": None, "crate/src/main.rs": "mod db;\n\nfn main() { db::save(); }\n"},
        {"pkg/sub/util.py": None, "rel/helpers.py": None},
        {"top.py": "from rel import user\n"},                       # at the root: every import
        {"more.go": "package shop\n\nfunc Close() {}\n"},         # the module's own package
        {"ns/__init__.py": ""},                                     # `from .. import x`
        {"crate/src/util/lib.rs": "pub fn other() {}\n"},         # another crate root
        # A closer `util`, with pkg/__init__.py edited in the same commit (its import unchanged).
        {"pkg/deep/util.py": "def other():\n    return 6\n",
         "pkg/__init__.py": "from util import foo\n\n\ndef extra():\n    return 0\n"},
        {"web/p/index.js": "export function other() {}\n"},       # './a/..' is web/p
        {"crate2/src/store.rs": "pub fn other() {}\n"},           # `store::put()`: a module now
        # The class a wildcard import bound under `Helper.go()` is renamed: no name `go` moved.
        {"src/main/java/com/shop/Helper.java": "package com.shop;\n"
                                               "public class Renamed { static void make() {} }\n"},
        # `Cart.make()` in org.shop: its import stops at org.shop.app, which lacks Cart ("module
        # only"), but the binding goes on through app's `import org.shop.Cart` to org.shop's
        # first file, which goes: the import's answer stays, the call's does not.
        {"src/main/java/org/shop/Store.java": None},
        # A folder's own module appears, alone: only the folder's name says it.
        {"rel/pkg2/__init__.py": "def other():\n    return 7\n"},
        {"web/widgets/index.js": "export function other() {}\n"},
        {"crate2/src/widgets/mod.rs": "pub fn other() {}\n"},
    ]
    _updates_resolve_as_a_full_resolution(repo, cortex, tmp_path, layout, steps)


def test_classes_that_appear_and_go_resolve_as_a_full_resolution_would(repo, cortex, tmp_path):
    """A class with bases that appears or goes whole (a test class added, a file of subclasses
    removed) resolves again what names it or its members, not everything: a call on a value of
    the class (`c.base_only()` with `c: Kid`, `k = mod.Kid()`) that reached a method it
    inherits, an alias of it, a subclass of it elsewhere, and a class that changes its bases
    while staying (everything again). Each step must leave what a full resolution leaves."""
    layout = {
        "pkg/base.py": "class Base:\n    def base_only(self):\n        return 1\n\n\n"
                       "class Other:\n    def base_only(self):\n        return 2\n",
        "pkg/kids.py": "from pkg.base import Base\n\n\nclass Kid(Base):\n"
                       "    def own(self):\n        return 3\n",
        "use.py": "from pkg import kids\nfrom pkg.kids import Kid, Kid as K2\n\n\n"
                  "def run(c: Kid, d: K2):\n    k = kids.Kid()\n"
                  "    return c.base_only() + d.base_only() + k.base_only() + c.own()\n",
        "sub.py": "from pkg.kids import Kid\n\n\nclass Grand(Kid):\n"
                  "    def go(self):\n        return self.base_only()\n",
        "tests/test_x.py": "def test_nothing():\n    assert True\n",
    }
    steps = [
        {"pkg/kids.py": "from pkg.base import Base\n"},                        # Kid goes
        {"pkg/kids.py": "from pkg.base import Other\n\n\nclass Kid(Other):\n"   # comes back,
                        "    def own(self):\n        return 3\n"},          # on another base
        {"tests/test_x.py": "from pkg.base import Base\n\n\nclass TestKid(Base):\n"
                            "    def test_it(self):\n        assert self.base_only()\n"},
        {"tests/test_y.py": "from pkg.kids import Kid\n\n\nclass TestMore(Kid):\n"
                            "    pass\n"},                                  # a new file
        {"pkg/kids.py": None},                                                # a file goes
        {"pkg/kids.py": "from pkg.base import Base\n\n\nclass Kid(Base):\n"
                        "    def own(self):\n        return 3\n"},
        {"pkg/kids.py": "from pkg.base import Other\n\n\nclass Kid(Other):\n"   # Kid stays,
                        "    def own(self):\n        return 3\n"},          # its base moves
    ]
    _updates_resolve_as_a_full_resolution(repo, cortex, tmp_path, layout, steps)


_KIDS = ("from pkg.base import Base, Other\n\n\nclass Kid(Base):\n    pass\n\n\n"
         "class Outer:\n    class Kid(Other):\n        pass\n")


@pytest.mark.parametrize("sub, step", [
    # Outer.Kid goes: the top-level Kid that G extends loses Other
    ("class G(Kid):\n    def go(self):\n        return self.o()\n",
     "from pkg.base import Base, Other\n\n\nclass Kid(Base):\n    pass\n\n\n"
     "class Outer:\n    pass\n"),
    # the top-level Kid goes: Outer.Kid, which H extends, loses Base
    ("class H(Outer.Kid):\n    def go(self):\n        return self.b()\n",
     "from pkg.base import Base, Other\n\n\nclass Outer:\n    class Kid(Other):\n"
     "        pass\n"),
    # a function's own Kid appears: the top-level Kid gains Other
    ("class G(Kid):\n    def go(self):\n        return self.o()\n",
     _KIDS.replace("Kid(Other)", "Other2(Other)") + "\n\ndef make():\n    class Kid(Other):\n"
     "        pass\n    return Kid()\n"),
], ids=["nested-goes", "top-level-goes", "function-local-appears"])
def test_a_nested_class_of_a_staying_name_moves_its_bases(repo, cortex, tmp_path, sub, step):
    """A base row counts for every class of its file of that last name (Resolver.bases reads
    `owner`): `Outer.Kid(Other)` gives the top-level `Kid` Other's methods too. A nested, a
    top-level or a function's `Kid` that appears or goes beside another `Kid` is no class
    appearing or going whole: what a subclass elsewhere inherits moved."""
    layout = {
        "pkg/__init__.py": "",
        "pkg/base.py": "class Base:\n    def b(self):\n        return 1\n\n\n"
                       "class Other:\n    def o(self):\n        return 2\n",
        "pkg/kids.py": _KIDS if "make" not in step else _KIDS.replace("Kid(Other)",
                                                                     "Other2(Other)"),
        "sub.py": "from pkg.kids import Kid, Outer\n\n\n" + sub,
    }
    _updates_resolve_as_a_full_resolution(repo, cortex, tmp_path, layout,
                                          [{"pkg/kids.py": step}])


def test_a_new_test_class_resolves_only_what_names_it(repo, cortex):
    """Adding a test class with a base used to resolve every reference of the repository
    again (werkzeug: 15,297 for a commit that dropped one test class)."""
    for n in range(20):
        repo.write(f"pkg/m{n}.py", f"def f{n}():\n    return g{n}()\n\n\ndef g{n}():\n"
                   "    return 0\n")
    repo.write("pkg/base.py", "class Base:\n    def check(self):\n        return 1\n")
    repo.commit("Layout", days_ago=3)
    cortex.index(model="none")
    everything = cortex.reader().execute("select count(*) from refs").get
    repo.write("tests/test_base.py", "from pkg.base import Base\n\n\nclass TestBase(Base):\n"
               "    def test_check(self):\n        assert self.check()\n")
    repo.commit("A test class", days_ago=2)
    summary = cortex.index(model="none")
    assert 0 < summary.structure_refs_resolved < everything / 4


def test_many_moved_files_choose_their_imports_without_an_sql_limit(indexed):
    """A thousand files moved give thousands of keys: past what one SQL expression may nest,
    the imports are matched in Python, with the same answer."""
    from cortex_core.index.structure import _refs_naming_modules
    from cortex_core.store.store import open_writer
    con = open_writer(indexed.db)
    few = _refs_naming_modules(con, ["pkg/db.py"])
    many = _refs_naming_modules(con, ["pkg/db.py"] + [f"gen/m{n}.py" for n in range(1000)])
    assert few and many == few     # no import names gen/m*.py
    assert _refs_naming_modules(con, ["setup.py"]) >= many          # the root: every import
    con.close()


def test_a_new_module_path_in_go_mod_resolves_go_imports_again(repo, cortex, tmp_path):
    """go.mod is no source file, yet its module path decides where Go imports point (the
    module's root package is found only through it): changed, removed or back, every import
    follows, as in a store indexed afresh."""
    from conftest import Indexed

    repo.write("go.mod", "module example.com/shop\n\ngo 1.22\n")
    repo.write("shop.go", "package shop\n\nfunc Open() {}\n")
    repo.write("cmd/main.go", "package main\n\nimport \"example.com/shop\"\n\n"
               "func main() { shop.Open() }\n")
    repo.commit("Layout", days_ago=4)
    cortex.index(model="none")

    def status(store) -> str:
        return store.reader().execute("select status from refs where kind = 'import' and"
                                      " module = 'example.com/shop'").get

    assert status(cortex) == "resolved"
    for n, text in enumerate(["module example.com/store\n", "module example.com/shop\n", None]):
        if text is None:
            repo.remove("go.mod")
        else:
            repo.write("go.mod", text)
        repo.commit(f"go.mod {n}", days_ago=3 - n)
        assert cortex.index().structure_refs_resolved > 0
        fresh = Indexed(repo, tmp_path / f"fresh{n}.db")
        fresh.index(model="none")
        assert status(cortex) == status(fresh) == ("resolved" if n == 1 else "external"), n
    assert cortex.reader().execute("select count(*) from meta where key = 'go_module'").get == 0


def test_a_file_added_in_a_folder_reads_only_the_imports_that_may_name_it(indexed):
    """The imports naming neither the new file nor its folder are not resolved again; a file
    at the root may be any module's, so then every import is."""
    imports = indexed.reader().execute("select count(*) from refs where kind = 'import'").get
    indexed.repo.write("docs_tools/render.py", "def render():\n    return 1\n")
    indexed.repo.commit("Add a renderer", days_ago=1)
    summary = indexed.index()
    assert summary.structure_files_read == 1 and imports > 0
    assert summary.structure_refs_resolved < imports
    indexed.repo.write("render.py", "def render():\n    return 1\n")
    indexed.repo.commit("Add a renderer at the root", days_ago=0)
    assert indexed.index().structure_refs_resolved >= imports


def test_a_resolution_left_pending_is_done_once(py_project, indexed):
    """A run that died during resolution leaves `structure_resolve_pending`: the next run
    resolves everything and clears it, and the one after resolves only what changed."""
    import pygit2

    from cortex_core.index.structure import update_structure
    from cortex_core.store.store import open_writer
    con = open_writer(indexed.db)
    repo = pygit2.Repository(str(py_project.path))
    with con:
        con.execute("insert or replace into meta values ('structure_resolve_pending', '1')")
    everything = con.execute("select count(*) from refs").get
    assert update_structure(con, repo, Settings().index).refs_resolved == everything
    assert con.execute("select count(*) from meta where key = 'structure_resolve_pending'"
                       ).get == 0
    (py_project.path / "tests/test_api.py").write_text(TEST + "\n\ndef test_more():\n"
                                                       "    assert handler(2) == 2\n")
    again = update_structure(con, repo, Settings().index)   # the working tree's file, read
    # Its one new reference; the others it kept, with their answers (_write_refs).
    assert again.files_read == 1 and again.refs_resolved == 1
    con.close()


def test_answers_of_an_earlier_resolver_are_resolved_again_once(py_project, indexed):
    """A store whose answers an earlier resolver gave (no `resolver_version`, or another) is
    resolved in full by the next run, once: its answers may differ from this resolver's."""
    import pygit2

    from cortex_core.index.resolve import RESOLVER_VERSION
    from cortex_core.index.structure import update_structure
    from cortex_core.store.store import open_writer
    con = open_writer(indexed.db)
    repo = pygit2.Repository(str(py_project.path))
    version = "select value from meta where key = 'resolver_version'"
    mark = con.execute(version).get
    assert mark.startswith(RESOLVER_VERSION + ":")                # a new store is this one's
    assert update_structure(con, repo, Settings().index).refs_resolved == 0
    with con:
        con.execute("delete from meta where key = 'resolver_version'")
    everything = con.execute("select count(*) from refs").get
    assert update_structure(con, repo, Settings().index).refs_resolved == everything > 0
    assert con.execute(version).get == mark
    assert update_structure(con, repo, Settings().index).refs_resolved == 0
    # An earlier version updated the store since (its files changed, the mark did not).
    with con:
        con.execute("update struct_files set blob = 'from an earlier version' where file_id ="
                    " (select min(file_id) from struct_files)")
    assert update_structure(con, repo, Settings().index).refs_resolved == everything
    assert con.execute(version).get == mark
    con.close()


def test_definitions_after_updates_are_those_of_one_run(repo, cortex, tmp_path):
    """An update takes the symbols of HEAD's changed files from the commit reader, which has
    just read them (often by the edited regions alone, from the previous version): the
    definitions and references stored must be those a store indexed once at the end reads."""
    def body(names: list[str], edit: int) -> str:
        return "".join(f"@decorate\ndef {name}(x):\n    y = x + {edit}\n    return y\n\n\n"
                       if n % 2 else
                       f"class {name.title()}:\n    def run(self):\n        return {edit}\n\n"
                       f"    def stop(self):\n        return {name}(1)\n\n\n"
                       for n, name in enumerate(names))
    steps = [(["a", "b", "c"], 0), (["a", "b", "c"], 1), (["a", "c"], 1), (["z", "a", "c"], 2),
             (["z", "a", "c", "d"], 2), (["d", "c"], 3), (["d", "c"], 4)]
    for n, (names, edit) in enumerate(steps):
        repo.write("m.py", body(names, edit))
        repo.write("t.ts", "".join(f"export function {name}(v: number) {{ return v + {edit}; }}\n"
                                   for name in names))
        repo.commit(f"step {n}", days_ago=30 - n)
        cortex.index(model="none")
    from conftest import Indexed
    once = Indexed(repo, tmp_path / "once" / "cortex.db")
    once.index(model="none")

    def stored(con) -> tuple[list, list]:
        return (sorted(con.execute(
            "select f.path, d.qualname, d.name, d.kind, d.start_line, d.end_line, d.is_test"
            " from defs d join files f on f.id = d.file_id")),
            sorted(con.execute(
                "select f.path, r.scope, r.kind, r.name, r.qualifier, r.line from refs r"
                " join files f on f.id = r.file_id")))
    assert stored(cortex.reader()) == stored(once.reader())
    assert len(stored(once.reader())[0]) >= 6


def _updates_resolve_as_a_full_resolution(repo, cortex, tmp_path, layout, steps):
    """Index `layout`, then each step (path -> text, None: removed) as one commit; after each
    update, the statuses and edges must equal a full resolution of a copy of the store, and
    those of a store indexed afresh at that commit (the rows an update kept, their lines)."""
    import shutil

    from cortex_core.index.ingest import index_repository
    from cortex_core.index.structure import resolve_refs
    from cortex_core.lang.languages import language_for_path
    from cortex_core.lang.structure_extract import SUPPORTED
    from cortex_core.store.store import open_writer
    for path, text in layout.items():
        repo.write(path, text)
    repo.commit("Layout", days_ago=30)
    cortex.index(model="none")
    for n, step in enumerate(steps):
        for path, text in step.items():
            if text is None:
                repo.remove(path)
            else:
                repo.write(path, text)
        repo.commit(f"step {n}", days_ago=29 - n)
        read = sum(t is not None and language_for_path(p) in SUPPORTED for p, t in step.items())
        assert cortex.index().structure_files_read == read, n
        copy = tmp_path / f"full{n}.db"
        shutil.copy(cortex.db, copy)
        for ext in ("-wal", "-shm"):
            if cortex.db.with_name(cortex.db.name + ext).exists():
                shutil.copy(cortex.db.with_name(cortex.db.name + ext),
                            copy.with_name(copy.name + ext))
        full = open_writer(copy)
        resolve_refs(full, [], set(), everything=True)
        assert resolution(cortex.reader()) == resolution(full), n
        full.close()
        afresh = tmp_path / f"afresh{n}.db"
        index_repository(repo.path, afresh, Settings(), model="none")
        fresh = open_writer(afresh)
        assert resolution(cortex.reader()) == resolution(fresh), n
        fresh.close()


@pytest.mark.parametrize("layout, step", [
    # self.m() in a subclass of a class that a package re-exports, then re-exports another one
    ({"pkg/__init__.py": "from .kid import K\n",
      "pkg/kid.py": "class A:\n    def m(self):\n        return 1\n\n\nclass K(A):\n    pass\n",
      "pkg/kid2.py": "class B:\n    def m(self):\n        return 2\n\n\nclass K(B):\n    pass\n",
      "sub.py": "from pkg import K\n\n\nclass S(K):\n    def go(self):\n"
                "        return self.m()\n"},
     {"pkg/__init__.py": "from .kid2 import K\n"}),
    # pkg.func() where the package re-exports func from another module
    ({"pkg/__init__.py": "from .a import func\n", "pkg/a.py": "def func():\n    return 1\n",
      "pkg/b.py": "def func():\n    return 2\n",
      "app.py": "import pkg\n\n\ndef run():\n    return pkg.func()\n"},
     {"pkg/__init__.py": "from .b import func\n"}),
    # api.func() where a submodule re-exports it
    ({"pkg/__init__.py": "", "pkg/api.py": "from .a import func\n",
      "pkg/a.py": "def func():\n    return 1\n", "pkg/b.py": "def func():\n    return 2\n",
      "app.py": "from pkg import api\n\n\ndef run():\n    return api.func()\n"},
     {"pkg/api.py": "from .b import func\n"}),
    # a class whose base is imported from elsewhere now: a subclass in another file follows
    ({"pkg/base.py": "class A:\n    def m(self):\n        return 1\n",
      "pkg/base2.py": "class A:\n    def m(self):\n        return 2\n",
      "pkg/kid.py": "from pkg.base import A\n\n\nclass K(A):\n    pass\n",
      "sub.py": "from pkg.kid import K\n\n\nclass S(K):\n    def go(self):\n"
                "        return self.m()\n"},
     {"pkg/kid.py": "from pkg.base2 import A\n\n\nclass K(A):\n    pass\n"}),
], ids=["reexported-base", "package-attribute", "submodule-attribute", "base-imported-anew"])
def test_references_through_another_files_reexport_follow_it(repo, cortex, tmp_path, layout,
                                                              step):
    _updates_resolve_as_a_full_resolution(repo, cortex, tmp_path, layout, [step])


_TWO_FS = {"a.py": "def f():\n    return 1\n", "b.py": "def f():\n    return 2\n"}


@pytest.mark.parametrize("layout, step", [
    # an import that names another module: the calls it binds, kept otherwise, follow it; the
    # lines above them moved (their rows are kept, with the new lines)
    ({**_TWO_FS, "app.py": "from a import f\n\n\ndef run():\n    return f()\n"},
     {"app.py": "# moved\n\nfrom b import f\n\n\ndef run():\n    return f()\n"}),
    # the same two imports of one name, swapped: no import appeared or went
    ({**_TWO_FS, "app.py": "from a import f\nfrom b import f\n\n\ndef run():\n    return f()\n"},
     {"app.py": "from b import f\nfrom a import f\n\n\ndef run():\n    return f()\n"}),
    # a wildcard import moved before a named one
    ({**_TWO_FS, "app.py": "from a import *\nfrom b import f\n\n\ndef run():\n    return f()\n"},
     {"app.py": "from b import f\nfrom a import *\n\n\ndef run():\n    return f()\n"}),
    # a class's bases swapped: what self.m() finds in it
    ({"app.py": "class A:\n    def m(self):\n        return 1\n\n\nclass B:\n    def m(self):\n"
                "        return 2\n\n\nclass K(A, B):\n    def go(self):\n"
                "        return self.m()\n"},
     {"app.py": "class A:\n    def m(self):\n        return 1\n\n\nclass B:\n    def m(self):\n"
                "        return 2\n\n\nclass K(B, A):\n    def go(self):\n"
                "        return self.m()\n"}),
    # a function of the file now defines the name its call read through an import
    ({**_TWO_FS, "app.py": "from a import f\n\n\ndef run():\n    return f()\n"},
     {"app.py": "from a import f\n\n\ndef run():\n    return f()\n\n\ndef f():\n"
                "    return 3\n"}),
    # many calls alike in one scope, some gone and the rest moved: matched by fields and line
    ({**_TWO_FS, "app.py": "from a import f\n\n\ndef run():\n" + "    f()\n" * 40},
     {"app.py": "from a import f\n\n\ndef run():\n    x = 1\n" + "    f()\n    x += 1\n" * 25}),
], ids=["import-renamed", "imports-swapped", "wildcard-moved", "bases-swapped", "local-def",
        "calls-alike"])
def test_a_changed_files_kept_references_resolve_as_a_full_resolution(repo, cortex, tmp_path,
                                                                      layout, step):
    """A changed file's references whose fields stay keep their rows and answers
    (structure._write_refs), unless the file's own change can move them."""
    _updates_resolve_as_a_full_resolution(repo, cortex, tmp_path, layout, [step])


# A base row counts for every class of its file whose last name is its owner (Resolver.bases):
# `x.m()` with `x: Outer.Inner` finds m through `make`'s Inner while Outer.Inner is a class.
_INNER = ("class Base:\n    def m(self):\n        return 1\n\n\n"
          "def make():\n    class Inner(Base):\n        pass\n    return Inner\n\n\n"
          "class Outer:\n    class Inner:\n        pass\n\n\n"
          "def use(x: Outer.Inner):\n    return x.m()\n")
_INNER_TS = ("class Base { m() { return 1; } }\n"
             "function make() { class Inner extends Base {} return Inner; }\n"
             "namespace Outer { export class Inner {} }\n"
             "export function use() { return Outer.Inner.m(); }\n")
_INNER_JAVA = ("package p;\nclass Base { void m() {} }\n"
               "class Other { static class Inner extends Base {} }\n"
               "class Outer { static class Inner {} }\n"
               "public class A { void use() { Outer.Inner.m(); } }\n")
_REEXPORT = {"pkg/__init__.py": "from .a import f\n", "pkg/a.py": "def f():\n    return 1\n",
             "pkg/b.py": "def f():\n    return 2\n"}


@pytest.mark.parametrize("layout, steps", [
    # a class named in the middle of a qualifier becomes a method, or appears
    ({"app.py": _INNER},
     [{"app.py": _INNER.replace("    class Inner:\n        pass\n",
                                "    def Inner(self):\n        pass\n")}]),
    ({"app.py": _INNER.replace("    class Inner:\n        pass\n", "    pass\n")},
     [{"app.py": _INNER}]),
    ({"a.ts": _INNER_TS},
     [{"a.ts": _INNER_TS.replace("export class Inner {}", "export function Inner() {}")}]),
    ({"src/p/A.java": _INNER_JAVA},
     [{"src/p/A.java": _INNER_JAVA.replace("static class Inner {}", "")}]),
    # a re-export moves in the commit that reorders, or adds to, the importer's imports: its
    # import is written again, and what it binds follows its new answer
    ({**_REEXPORT, "app.py": "from pkg import f\nimport os\n\n\ndef run():\n    return f()\n"},
     [{"pkg/__init__.py": "from .b import f\n",
       "app.py": "import os\nfrom pkg import f\n\n\ndef run():\n    return f()\n"}]),
    ({**_REEXPORT, "app.py": "from pkg import f\n\n\ndef run():\n    return f()\n"},
     [{"pkg/__init__.py": "from .b import f\n",
       "app.py": "from pkg import f\nimport os\n\n\ndef run():\n    return f()\n"}]),
    # the definition an alias imports goes, in the commit that adds an import beside it
    ({"a.py": "def f():\n    return 1\n",
      "app.py": "from a import f as g\n\n\ndef run():\n    return g()\n"},
     [{"a.py": "def other():\n    return 1\n",
       "app.py": "from a import f as g\nimport os\n\n\ndef run():\n    return g()\n"}]),
    # a barrel's `export *` gains a module before the one it had, while the importer reorders
    ({"lib/a.ts": "export function f() {}\nexport default class K { m() {} }\n",
      "lib/b.ts": "export function f() {}\n", "lib/index.ts": "export * from './a';\n",
      "app.ts": "import K from './lib/a';\nimport { f } from './lib';\n"
                "export function run(k: K) { f(); k.m(); }\n"},
     [{"lib/index.ts": "export * from './b';\nexport * from './a';\n",
       "app.ts": "import { f } from './lib';\nimport K from './lib/a';\n"
                 "export function run(k: K) { f(); k.m(); }\n"},
      {"app.ts": "import { f } from './lib';\nimport K from './lib/a';\n"
                 "function f() {}\nexport function run(k: K) { f(); k.m(); }\n"}]),
    # a file that re-exports swaps a wildcard import and a named one of the same name, or two
    # named ones: what it binds, and so what app.py imports from it, moves (older than the
    # kept references: found by the review's random generator, seed 2499)
    ({"b.py": "from pkg.c import *\nfrom pkg import f\n", "pkg/__init__.py": "f = 1\n",
      "pkg/c.py": "def f():\n    pass\n", "app.py": "from b import f\n\n\nf()\n"},
     [{"b.py": "from pkg import f\nfrom pkg.c import *\n"}]),
    ({"b.py": "from pkg.c import f\nfrom pkg import f\n", "pkg/__init__.py": "f = 1\n",
      "pkg/c.py": "def f():\n    pass\n", "app.py": "from b import f\n\n\nf()\n"},
     [{"b.py": "from pkg import f\nfrom pkg.c import f\n"}]),
], ids=["py-inner-becomes-method", "py-inner-appears", "ts-inner-becomes-function",
        "java-nested-class-goes", "reexport-moves-importer-reorders",
        "reexport-moves-importer-adds", "aliased-target-goes-importer-adds",
        "ts-export-star-and-default", "reexporter-swaps-wildcard", "reexporter-swaps-imports"])
def test_kept_references_follow_what_other_files_moved(repo, cortex, tmp_path, layout, steps):
    """Found by a hostile review of _write_refs: a name read in the middle of a qualifier, an
    import written again (its file's imports changed) whose answer moved with another file's
    change in the same commit, and a re-exporting file's imports only reordered."""
    _updates_resolve_as_a_full_resolution(repo, cortex, tmp_path, layout, steps)


def test_answers_do_not_depend_on_the_order_of_asking(repo, cortex):
    """Re-export chains through packages, files that import from each other (a cycle of files
    but not of names), a cycle of one name, and a chain longer than the followed depth: every
    reference gets the same answer whichever is asked first. An update resolves only some
    references and compares with the stored answers: an answer that moved with the order read
    as a change and resolved the whole repository again (sympy: 6 s for a one-commit update)."""
    import random

    from cortex_core.index.resolve import MAX_REEXPORT_DEPTH, RefRow, Resolver
    files = {
        "lib/__init__.py": "from .pkg import Field, helper, tool\n",
        "lib/pkg/__init__.py": "from .domains import Field\nfrom .x import helper\n"
                               "from .y import tool\n",
        "lib/pkg/domains/__init__.py": "from .field import Field\n",
        "lib/pkg/domains/field.py": "class Field:\n    pass\n",
        # x and y import from each other, each re-exporting a name of a third file
        "lib/pkg/x.py": "from .y import tool\nfrom .w import helper\n",
        "lib/pkg/y.py": "from .x import helper\nfrom .v import tool\n",
        "lib/pkg/w.py": "def helper():\n    return 1\n",
        "lib/pkg/v.py": "def tool():\n    return 2\n",
        "c1.py": "from c2 import loop\n", "c2.py": "from c3 import loop\n",
        "c3.py": "from c1 import loop\n",
        "use.py": "from lib import Field, helper, tool\nfrom lib.pkg.x import tool as t2\n"
                  "from c1 import loop\nfrom m0 import deep\n\n\n"
                  "def run():\n    Field()\n    helper()\n    tool()\n    t2()\n"
                  "    loop()\n    return deep()\n",
    }
    chain = MAX_REEXPORT_DEPTH + 4
    files.update({f"m{i}.py": f"from m{i + 1} import deep\n" for i in range(chain)})
    files[f"m{chain}.py"] = "def deep():\n    return 3\n"
    for path, text in files.items():
        repo.write(path, text)
    repo.commit("Chains and cycles")
    cortex.index(model="none")
    con = cortex.reader()
    rows = [RefRow(*r) for r in con.execute(
        "select id, file_id, scope, kind, name, qualifier, module, level, alias, owner"
        " from refs order by id")]
    answers = []
    for seed in range(12):
        order = list(rows)
        random.Random(seed).shuffle(order)
        resolver = Resolver(con)
        answers.append({ref.id: resolver.resolve(ref) for ref in order})
    assert all(a == answers[0] for a in answers[1:])
    paths = dict(con.execute("select id, path from files"))
    lib = next(r for r in rows if paths[r.file_id] == "lib/__init__.py" and r.name == "Field")
    assert [(paths[f], q) for f, q, _ in answers[0][lib.id][1]] == [
        ("lib/pkg/domains/field.py", "Field")]
    tool = next(r for r in rows if paths[r.file_id] == "lib/__init__.py" and r.name == "tool")
    assert [(paths[f], q) for f, q, _ in answers[0][tool.id][1]] == [("lib/pkg/v.py", "tool")]


def test_a_long_cycle_of_re_exports_costs_bounded_work(repo, cortex, monkeypatch):
    """Answers that a cycle made are found again by each asker; past a budget of lookups per
    asker its chain is cut: each reference still gets an answer, and the budget is what stops
    the lookups."""
    from cortex_core.index import resolve
    for i in range(30):
        repo.write(f"c{i}.py", f"from c{(i + 1) % 30} import loop\n")
    for j in range(60):
        repo.write(f"u{j}.py", f"from c{j % 30} import loop\n\n\ndef f():\n    return loop()\n")
    repo.commit("A cycle and its askers")
    cortex.index(model="none")
    con = cortex.reader()
    rows = [resolve.RefRow(*r) for r in con.execute(
        "select id, file_id, scope, kind, name, qualifier, module, level, alias, owner"
        " from refs order by id")]
    counted, default = {}, resolve.LOOKUPS_PER_ASKER
    for budget in (default, 5):
        monkeypatch.setattr(resolve, "LOOKUPS_PER_ASKER", budget)
        resolver = resolve.Resolver(con)
        answers = [resolver.resolve(ref) for ref in rows]
        assert all(status == "resolved" and targets for status, targets in answers)
        counted[budget] = resolver.lookups
    assert counted[5] <= 150 * 6 < counted[default]   # 150 askers; 4,560 without the bound


def test_definitions_read_as_asked_give_the_answers_of_definitions_read_whole(
        repo, cortex, monkeypatch):
    """An update's resolver reads a file's or a name's definitions when first asked for them,
    and all of them once it has read READ_ALL_AFTER one at a time; a full resolution reads all
    at once. Every reference gets one answer whichever way, in Python, Go, Java and Rust (whose
    module names are gathered over every file), candidates in the order of their paths."""
    from cortex_core.index import resolve
    repo.write("z/util.py", "def helper():\n    return 0\n")
    repo.write("a/util.py", "def helper():\n    return 1\n")
    repo.write("app.py", "from a.util import helper\n\n\nclass Shop:\n    def save(self):\n"
                         "        return helper()\n\n    def run(self):\n"
                         "        return self.save()\n")
    repo.write("b.py", "def run(shop):\n    return shop.save() + helper() + missing()\n")
    repo.write("go.mod", "module example.com/shop\n\ngo 1.22\n")
    repo.write("store/store.go", "package store\n\nfunc Save(x int) int { return x }\n")
    repo.write("cmd/main.go", 'package main\n\nimport "example.com/shop/store"\n\n'
                              "func main() { store.Save(1) }\n")
    repo.write("src/main/java/com/shop/Store.java",
               "package com.shop;\n\npublic class Store {\n  public void save() {}\n}\n")
    repo.write("src/main/java/com/shop/app/App.java",
               "package com.shop.app;\n\nimport com.shop.Store;\n\npublic class App extends Store {\n"
               "  void run() { new Store().save(); }\n}\n")
    repo.write("src/lib.rs", "pub mod db;\n\npub fn run() { db::save(); other::f(); }\n\n"
                             "pub fn make() { Printer::new(); }\n")
    repo.write("src/db.rs", "pub fn save() {}\n\npub struct Printer;\n\n"
                            "impl Printer {\n    pub fn new() -> Printer { Printer }\n}\n")
    repo.commit("Four languages")
    cortex.index(model="none")
    con = cortex.reader()
    rows = [resolve.RefRow(*r) for r in con.execute(
        "select id, file_id, scope, kind, name, qualifier, module, level, alias, owner"
        " from refs order by id")]
    whole = resolve.Resolver(con)
    expected = {ref.id: whole.resolve(ref) for ref in rows}
    assert any(status == "ambiguous" for status, _ in expected.values())   # helper(), by path
    assert any(status == "external" for status, _ in expected.values())    # other::f()
    printer = next(r for r in rows if r.qualifier == "Printer::")   # defined in another file
    assert expected[printer.id][0] != "external"
    for read_all_after in (resolve.READ_ALL_AFTER, 3):
        monkeypatch.setattr(resolve, "READ_ALL_AFTER", read_all_after)
        resolver = resolve.Resolver(con, whole=False)
        assert {ref.id: resolver.resolve(ref) for ref in rows} == expected



def test_of_two_chains_alike_blast_keeps_the_first_by_place(repo, cortex):
    """run.py reaches t.f through a.py and through z.py, at one confidence: the chain shown goes
    through a.py, the first by place, in a full index and after an update that wrote a.py's
    edges again (after z.py's: the edges' order is not the answer's)."""
    repo.write("t.py", "def f():\n    return 1\n")
    repo.write("z.py", "from t import f\n\n\ndef h():\n    return f()\n")
    repo.write("a.py", "from t import f\n\n\ndef g():\n    return f()\n")
    repo.write("run.py", "from z import h\nfrom a import g\n\n\ndef main():\n"
                         "    return h() + g()\n")
    repo.commit("four modules", days_ago=20)

    def chain() -> list[str]:
        found = blast(cortex.reader(), TargetSpec("t.py", "f"), depth=2)
        main = next(d for d in found.dependents if (d.path, d.qualname) == ("run.py", "main"))
        return [link.src_path for link in main.chain]
    cortex.index()
    assert chain() == ["run.py", "a.py"]
    # An update keeps a reference whose fields stay, with its edges (_write_refs): the call
    # goes, then comes back, so that its edge is written again.
    repo.write("a.py", "from t import f\n\n\ndef g():\n    return 0\n")
    repo.commit("a without the call", days_ago=11)
    cortex.index()
    repo.write("a.py", "from t import f\n\n\ndef g():\n    return f() + 0\n")
    repo.commit("a again", days_ago=10)
    cortex.index()
    con = cortex.reader()
    a_edge, z_edge = (con.execute(
        "select max(e.rowid) from edges e join refs r on r.id = e.ref_id join files f"
        " on f.id = r.file_id where f.path = ?", (p,)).get for p in ("a.py", "z.py"))
    assert a_edge > z_edge
    assert chain() == ["run.py", "a.py"]


def test_a_call_matched_by_name_lists_its_candidates_by_path(repo, cortex):
    """A method call on a receiver of unknown type is matched by name: its candidates are
    written in path order, not in the order of the ids an index run gave their files."""
    repo.write("z.py", "class Z:\n    def run(self):\n        return 1\n")
    repo.commit("z", days_ago=20)
    repo.write("a.py", "class A:\n    def run(self):\n        return 2\n")
    repo.write("c.py", "def go(x):\n    return x.run()\n")
    repo.commit("a and c", days_ago=10)
    cortex.index()
    con = cortex.reader()
    ids = dict(con.execute("select path, id from files"))
    assert ids["z.py"] < ids["a.py"]
    targets = [row for row in con.execute(
        "select f.path, e.dst_qualname from edges e join refs r on r.id = e.ref_id"
        " join files f on f.id = e.dst_file_id join files s on s.id = r.file_id"
        " where s.path = 'c.py' and r.kind = 'call' order by e.rowid")]
    assert targets == [("a.py", "A.run"), ("z.py", "Z.run")]


def test_of_two_chains_alike_below_certainty_blast_keeps_the_first(repo, cortex):
    """A call matched by name among three classes is a third as sure (0.1333...): two such
    chains to main.py tie, and the first by place is kept, though the confidence is stored to
    four places (the unrounded second had beaten the stored first)."""
    for name in "tuv":
        repo.write(f"{name}.py", f"class {name.upper()}:\n    def run(self):\n        return 1\n")
    repo.write("a.py", "def g(x):\n    return x.run()\n")
    repo.write("z.py", "def h(x):\n    return x.run()\n")
    repo.write("main.py", "from a import g\nfrom z import h\n\n\ndef main(x):\n"
                          "    return g(x) + h(x)\n")
    repo.commit("all", days_ago=5)
    cortex.index()
    found = blast(cortex.reader(), TargetSpec("t.py", "T.run"), depth=2, min_confidence=0)
    first = {(d.path, d.qualname): d for d in found.dependents}
    assert first[("a.py", "g")].confidence == first[("z.py", "h")].confidence < 0.25
    main = first[("main.py", "main")]
    assert [link.src_path for link in main.chain] == ["main.py", "a.py"]


def test_blast_counts_what_it_leaves_out_below_its_confidence(repo, cortex):
    """Calls matched by name alone among three classes (a third as sure) are under the default
    floor: blast lists none of them, and says how many it left out instead of "no
    dependents" alone (urfave/cli's `Command.Run`: 537 such calls, blast said none)."""
    from cortex_cli import render as cli_render
    from cortex_mcp import render as mcp_render
    for name in "tuv":
        repo.write(f"{name}.py", f"class {name.upper()}:\n    def run(self):\n        return 1\n")
    repo.write("a.py", "def g(x):\n    return x.run()\n")
    repo.write("z.py", "def h(x):\n    return x.run()\n")
    repo.commit("all", days_ago=5)
    cortex.index()
    found = blast(cortex.reader(), TargetSpec("t.py", "T.run"))
    assert found.dependents == []
    assert (found.below_confidence, found.min_confidence) == (2, 0.25)
    everything = blast(cortex.reader(), TargetSpec("t.py", "T.run"), min_confidence=0)
    assert len(everything.dependents) == 2 and everything.below_confidence == 0
    out = cli_render.blast(found)
    assert "2 more below confidence 0.25, left out" in out and "--min-confidence" in out
    assert "2 more below confidence 0.25" in "\n".join(mcp_render.blast(found))


GO_RUN = "package app\n\ntype Command struct{}\n\nfunc (c *Command) Run(args []string) error {\n" \
         "\treturn nil\n}\n"
GO_RUN_TEST = 'package app\n\nimport "testing"\n\nfunc TestRun(t *testing.T) {\n' \
              '\tt.Run("one", func(t *testing.T) {\n\t\tt.Errorf("x")\n\t})\n' \
              "\tcmd := &Command{}\n\t_ = cmd.Run(nil)\n}\n"


def test_a_go_call_on_a_typed_variable_is_a_call_of_that_type(repo, cortex):
    """`t.Run(...)` on a `*testing.T` is no call of the repository's `Command.Run`, and
    `cmd.Run()` with `cmd := &Command{}` is one, at the package's confidence (urfave/cli:
    135 `t.Run` "callers", 537 callers in all under 0.25, and blast said no dependents)."""
    repo.write("go.mod", "module example.com/app\n\ngo 1.22\n")
    repo.write("command.go", GO_RUN)
    repo.write("command_test.go", GO_RUN_TEST)
    repo.commit("command", days_ago=3)
    cortex.index()
    found = callers(cortex.reader(), TargetSpec("command.go", "Command.Run")).items
    assert [(c.path, c.qualname, c.line, c.confidence) for c in found] == [
        ("command_test.go", "TestRun", 10, 0.9)]
    hit = blast(cortex.reader(), TargetSpec("command.go", "Command.Run"))
    assert [d.qualname for d in hit.dependents] == ["TestRun"] and hit.below_confidence == 0


def test_references_an_earlier_extractor_read_are_read_again_once(repo, cortex):
    """A store indexed before a change of what the extractor reads has every file read again
    at its next run (meta `extract_version`), then only what changed."""
    repo.write("go.mod", "module example.com/app\n\ngo 1.22\n")
    repo.write("command.go", GO_RUN)
    repo.write("command_test.go", GO_RUN_TEST)
    repo.commit("command", days_ago=3)
    cortex.index()
    import apsw
    con = apsw.Connection(str(cortex.db))
    con.execute("update meta set value = '1' where key = 'extract_version'")
    con.execute("update refs set qualifier = 't' where qualifier = 'testing.T'")
    con.close()
    assert cortex.index().structure_files_read == 2
    rows = cortex.reader().execute("select count(*) from refs where qualifier = 'testing.T'").get
    assert rows == 2
    assert cortex.index().structure_files_read == 0


def test_a_go_call_on_another_packages_type_of_the_repository_is_its_method(repo, cortex):
    """`c.Run()` with `c *m.Command`, `m` a package of the repository, is `Command.Run` there,
    never the package's top-level `Run` (a review found `cmd.String()` on a `*cli.Command`
    resolved to a type alias named `String`... of the package, at 1.0)."""
    repo.write("go.mod", "module example.com/m\n\ngo 1.22\n")
    repo.write("a.go", "package m\n\ntype Command struct{}\n\nfunc (c *Command) Run() {}\n\n"
                       "func Run() {}\n")
    repo.write("sub/s.go", 'package sub\n\nimport m "example.com/m"\n\n'
                           "func use(c *m.Command) { c.Run() }\n\nfunc top() { m.Run() }\n")
    repo.commit("packages", days_ago=3)
    cortex.index()
    con = cortex.reader()
    assert [(c.path, c.qualname, c.confidence, c.relation) for c in callees(con, TargetSpec(
        "sub/s.go", "use")).items] == [("a.go", "Command", 1.0, "reference"),   # its parameter
                                       ("a.go", "Command.Run", 1.0, "callee")]
    assert [(c.path, c.qualname) for c in callers(con, TargetSpec("a.go", "Run")).items] == [
        ("sub/s.go", "top")]


def test_callers_and_callees_agree_on_a_symbols_own_code(repo, cortex):
    """A recursive call, or a class's method calling another of its own, is the symbol's own
    code: `callers` left it out and `callees` listed it (urfave/cli's `Command.run` calling
    `subCmd.run`). Neither lists it now; calls out of it still count."""
    repo.write("t.py", "def walk(n):\n    return walk(n - 1) + helper()\n\n\n"
                       "def helper():\n    return 1\n\n\n"
                       "class Tree:\n    def size(self):\n        return self.count() + helper()\n\n"
                       "    def count(self):\n        return 1\n")
    repo.commit("recursion", days_ago=2)
    cortex.index()
    con = cortex.reader()
    assert {n.qualname for n in callees(con, TargetSpec("t.py", "walk")).items} == {"helper"}
    assert "walk" not in {n.qualname for n in callers(con, TargetSpec("t.py", "walk")).items}
    assert {n.qualname for n in callees(con, TargetSpec("t.py", "Tree")).items} == {"helper"}
    assert {n.qualname for n in callees(con, TargetSpec("t.py", "Tree.size")).items} == {
        "helper", "Tree.count"}
    assert callees(con, TargetSpec("t.py")).items == []   # a file's own code, as for callers


# -- Rust: modules, the crate's own name, tests, type paths (hexyl, found by a tester) ----------

RUST_LIB = """\
pub struct Printer;

impl Printer {
    pub fn new() -> Self {
        Printer
    }

    pub fn print(&self) -> u32 {
        check(1)
    }
}

pub fn check(x: u32) -> u32 {
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(x: u32) {
        assert_eq!(x, 1);
    }

    #[test]
    fn prints() {
        check(Printer::new().print());
        check(super::check(1));
    }

    #[tokio::test]
    async fn waits() {
        check(2);
    }
}

#[cfg(test)]
mod checks {
    fn helper() {}
}

pub mod sub {
    pub fn deep() -> u32 {
        inner()
    }

    fn inner() -> u32 {
        1
    }
}
"""

RUST_MAIN = """\
use my_tool::{check, Printer};
use serde::Serialize;

mod tests;

pub struct Offset(i64);

impl Offset {
    pub fn new(x: i64) -> Option<Self> {
        Some(Offset(x))
    }

    fn zero() -> Option<Self> {
        Self::new(0)
    }
}

pub struct Size(i64);

impl Size {
    pub fn new(x: i64) -> Option<Self> {
        Some(Size(x))
    }
}

fn run() {
    let p = Printer::new();
    check(p.print());
    Size::new(1);
    let b = Box::new(1);
    let s = String::new();
    let v: Vec<u8> = Vec::new();
    my_tool::sub::deep();
}

fn main() {
    run();
}
"""

RUST_TESTS_RS = """\
use super::*;

fn helper() -> Option<Offset> {
    Offset::new(1)
}

#[test]
fn offsets() {
    helper();
    Size::new(2);
}
"""


@pytest.fixture
def rust_crate(repo, cortex):
    """A package named with a dash (`my-tool`, crate `my_tool`), a library and a binary side by
    side, an example, a `tests.rs` module of the binary, another crate of the workspace named by
    its `[lib] name`, as hexyl is laid out."""
    repo.write("Cargo.toml", '[package]\nname = "my-tool"\nversion = "0.1.0"\nedition = "2021"\n'
                             '\n[workspace]\nmembers = ["crates/extra"]\n')
    repo.write("src/lib.rs", RUST_LIB)
    repo.write("src/main.rs", RUST_MAIN)
    repo.write("src/tests.rs", RUST_TESTS_RS)
    repo.write("examples/demo.rs", "use my_tool::Printer;\n\nfn main() {\n"
                                   "    Printer::new().print();\n    extras::more();\n}\n")
    repo.write("crates/extra/Cargo.toml",
               '[package]\nname = "extra-stuff"\n\n[lib]\nname = "extras"\n')
    repo.write("crates/extra/src/lib.rs", "pub fn more() {}\n")
    repo.commit("A crate", days_ago=3)
    cortex.index(model="none")
    return cortex


def _ref_status(con, path: str, name: str, qualifier: str | None = None) -> list[str]:
    return [s for s, q in con.execute(
        "select r.status, r.qualifier from refs r join files f on f.id = r.file_id"
        " where f.path = ? and r.name = ? order by r.line", (path, name))
        if qualifier is None or q == qualifier]


def test_a_rust_call_in_a_module_finds_the_function_of_that_module(rust_crate):
    """A bare call in an inline `mod tests` is the module's own function first (hexyl's
    `assert_print_all_output`: 5 calls, 0 callers, stored unresolved), then the file's top
    level that `use super::*` brings; `use super::*` in the module names its file."""
    con = rust_crate.reader()
    found = callers(con, TargetSpec("src/lib.rs", "tests.check"))
    assert sorted((n.qualname, n.line, n.confidence) for n in found.items) == [
        ("tests.prints", 27, 1.0), ("tests.prints", 28, 1.0), ("tests.waits", 33, 1.0)]
    assert labels(callers(con, TargetSpec("src/lib.rs", "check")).items) >= {
        ("src/lib.rs", "Printer.print"), ("src/lib.rs", "tests.prints"), ("src/main.rs", "run")}
    assert labels(callers(con, TargetSpec("src/lib.rs", "sub.inner")).items) == {
        ("src/lib.rs", "sub.deep")}
    assert _ref_status(con, "src/lib.rs", "*") == ["resolved"]
    # src/tests.rs is `mod tests;` of main.rs (or of lib.rs: their `mod` lines are not read)
    assert labels(callers(con, TargetSpec("src/main.rs", "Offset.new")).items) == {
        ("src/main.rs", "Offset.zero"), ("src/tests.rs", "helper")}


def test_a_rust_modules_own_use_and_a_nested_fn_shadow_the_files_items(repo, cortex):
    """A review's regression, each at 1.0 on the file's own `open`: `use crate::sys::open` in
    `mod unix` and in `mod tests` (beside `use super::*`), and a fn nested in the caller."""
    repo.write("Cargo.toml", "[package]\nname = \"rs2\"\nversion = \"0.1.0\"\n")
    repo.write("src/lib.rs", RS2_LIB)
    repo.write("src/sys.rs", "pub fn open() -> u32 { 2 }\n")
    # `use crate::sys;` then `sys::open()`: the module the use names (it was the crate root's
    # own `open`, at 0.6: 17 such calls in fd).
    repo.write("src/fsx.rs", "use crate::sys;\npub fn read() { sys::open(); }\n")
    repo.commit("Modules", days_ago=1)
    cortex.index(model="none")
    con = cortex.reader()
    assert labels(callers(con, TargetSpec("src/sys.rs", "open")).items) == {
        ("src/lib.rs", "unix.run"), ("src/lib.rs", "win.run"), ("src/lib.rs", "tests.t"),
        ("src/fsx.rs", "read")}
    assert labels(callers(con, TargetSpec("src/lib.rs", "open")).items) == {
        ("src/lib.rs", "Thing.open")}
    assert labels(callers(con, TargetSpec("src/lib.rs", "outer.open")).items) == {
        ("src/lib.rs", "outer")}


RS2_LIB = """pub mod sys;
pub mod fsx;

fn open() -> u32 { 1 }

mod unix {
    use crate::sys::open;

    pub fn run() -> u32 {
        open()
    }
}

mod win {
    use super::sys;
    pub fn run() -> u32 {
        sys::open()
    }
}

pub fn outer() -> u32 {
    fn open() -> u32 { 3 }
    open()
}

pub fn use_fs() {
    fsx::read();
}

pub struct Thing;
impl Thing {
    pub fn open(&self) -> u32 { open() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::open;

    #[test]
    fn t() {
        open();
    }
}
"""


def test_a_rust_binary_and_examples_import_their_own_crate_by_name(rust_crate):
    """`use my_tool::…` in the binary and the examples is the package's library (hexyl's
    main.rs and examples/simple.rs were stored as importing an outside crate): Cargo.toml's
    package name with `-` as `_`, or `[lib] name` for another crate of the workspace."""
    con = rust_crate.reader()
    result = blast(con, TargetSpec("src/lib.rs"), depth=1)
    assert {(d.path, d.chain[0].line) for d in result.dependents
            if d.relation == "importer"} == {
        ("src/main.rs", 1), ("examples/demo.rs", 1)}
    assert labels(callers(con, TargetSpec("src/lib.rs", "Printer.new")).items) >= {
        ("src/main.rs", "run"), ("examples/demo.rs", "main")}
    assert labels(callers(con, TargetSpec("src/lib.rs", "sub.deep")).items) == {
        ("src/main.rs", "run")}
    assert labels(callers(con, TargetSpec("crates/extra/src/lib.rs", "more")).items) == {
        ("examples/demo.rs", "main")}
    assert _ref_status(con, "src/main.rs", "Serialize") == ["external"]


def test_rust_test_functions_and_test_modules_are_tests(rust_crate):
    """`#[test]` and `#[tokio::test]` functions, anything in `mod tests`, in a `#[cfg(test)]`
    module or in a `tests.rs` module are tests (hexyl: `is_test` 0 everywhere, blast of
    `Printer.print_all` listed its tests as callers and "tests covering it: 0")."""
    con = rust_crate.reader()
    tests = {(p, q) for p, q in con.execute(
        "select f.path, d.qualname from defs d join files f on f.id = d.file_id"
        " where d.is_test = 1 and f.path like 'src/%'")}
    assert tests == {("src/lib.rs", "tests"), ("src/lib.rs", "tests.check"),
                     ("src/lib.rs", "tests.prints"), ("src/lib.rs", "tests.waits"),
                     ("src/lib.rs", "checks"), ("src/lib.rs", "checks.helper"),
                     ("src/tests.rs", "helper"), ("src/tests.rs", "offsets")}
    result = blast(con, TargetSpec("src/lib.rs", "Printer.print"), depth=1)
    assert {(d.qualname, d.relation) for d in result.dependents} == {
        ("tests.prints", "test"), ("run", "caller"), ("main", "caller")}
    assert result.summary.tests == ["src/lib.rs::tests.prints"]
    size = callers(con, TargetSpec("src/main.rs", "Size.new")).items
    assert {(n.path, n.qualname, n.relation) for n in size} == {
        ("src/main.rs", "run", "caller"), ("src/tests.rs", "offsets", "test")}


def test_a_rust_call_through_a_type_path_is_that_types(rust_crate):
    """`Size::new()` is `Size.new`, never another type's `new`; `Box::new`, `String::new`,
    `Vec::new` are outside the repository (hexyl's `NonNegativeI64.new` had `PositiveI64::new`
    and `Box::new` among its callers at 0.13); `Self::new()` is its impl's."""
    con = rust_crate.reader()
    offset = callers(con, TargetSpec("src/main.rs", "Offset.new")).items
    assert ("src/main.rs", "run") not in labels(offset)
    assert [(n.qualname, n.confidence) for n in offset if n.qualname == "Offset.zero"] == [
        ("Offset.zero", 1.0)]
    assert labels(callers(con, TargetSpec("src/main.rs", "Size.new")).items) == {
        ("src/main.rs", "run"), ("src/tests.rs", "offsets")}
    for qualifier in ("Box::", "String::", "Vec::"):
        assert _ref_status(con, "src/main.rs", "new", qualifier) == ["external"], qualifier
    assert labels(callers(con, TargetSpec("src/lib.rs", "Printer.new")).items) == {
        ("src/lib.rs", "tests.prints"), ("src/main.rs", "run"), ("examples/demo.rs", "main")}


RUST_SHOP_LIB = """\
pub mod items;

pub struct Cart;

impl Cart {
    pub fn new() -> Self {
        Cart
    }
}

pub fn total() -> u32 {
    helper()
}

fn helper() -> u32 {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn helper() -> u32 {
        2
    }

    #[test]
    fn t() {
        helper();
        total();
        Cart::new();
    }
}
"""


def test_rust_updates_resolve_as_a_full_resolution_would(repo, cortex, tmp_path):
    """What a Rust path resolves through changes without its own text changing: an impl block
    of a type added in another file, a type named like an outside one (`Box`), an inline
    module renamed, a re-export, a `super` whose file became a mod.rs, the crate renamed in
    Cargo.toml (then everything is resolved again)."""
    layout = {
        "Cargo.toml": '[package]\nname = "shop"\n',
        "src/lib.rs": RUST_SHOP_LIB,
        "src/items.rs": "pub struct Item;\n\npub fn list() {\n    Item::new();\n"
                        "    Box::new(1);\n    super::total();\n}\n",
        "src/items/inner.rs": "pub fn f() {\n    super::list();\n}\n",
        "src/other.rs": "pub fn x() {}\n",
        "src/main.rs": "use shop::{total, Cart};\n\nfn main() {\n    Cart::new();\n"
                       "    total();\n    shop::items::list();\n    shop::Item::new();\n}\n",
    }
    steps = [
        {"src/other.rs": "use crate::items::Item;\n\nimpl Item {\n"
                         "    pub fn new() -> Item {\n        Item\n    }\n}\n"},
        {"src/boxed.rs": "pub struct Box;\n"},
        {"src/lib.rs": RUST_SHOP_LIB.replace("mod tests", "mod checks")},
        {"src/lib.rs": RUST_SHOP_LIB.replace("    fn helper() -> u32 {\n        2\n    }\n", "")},
        {"src/lib.rs": RUST_SHOP_LIB + "\npub use items::Item;\n"},
        {"src/lib.rs": RUST_SHOP_LIB.replace("Cart", "Basket")
         + "\npub use items::Item;\npub use self::Basket as Cart;\n"},
        {"src/main.rs": "use shop::{total, Cart};\nmod tests;\n\nfn main() {\n"
                        "    Cart::new();\n    total();\n}\n",
         "src/tests.rs": "use super::*;\n\nfn t() {\n    total();\n    Cart::new();\n"
                         "    main();\n}\n"},
        {"src/items.rs": None,
         "src/items/mod.rs": "pub struct Item;\n\npub fn list() {\n    Item::new();\n}\n"},
        {"Cargo.toml": '[package]\nname = "store"\n'},
        {"Cargo.toml": '[package]\nname = "shop"\n\n[lib]\nname = "shop"\npath = "src/lib.rs"\n'},
    ]
    _updates_resolve_as_a_full_resolution(repo, cortex, tmp_path, layout, steps)
    con = cortex.reader()
    assert labels(callers(con, TargetSpec("src/other.rs", "Item.new")).items) == {
        ("src/items/mod.rs", "list")}
    assert labels(callers(con, TargetSpec("src/lib.rs", "Basket.new")).items) >= {
        ("src/lib.rs", "tests.t"), ("src/main.rs", "main")}


def test_a_cargo_manifest_that_does_not_parse_names_no_crate(repo, cortex):
    """Cargo.toml is untrusted: broken, deeply nested, without a package, with a name that is
    no string, a library path out of the package: no crate, no failure."""
    from cortex_core.index.structure import _cargo_crate
    assert _cargo_crate(b'[package]\nname = "a-b"\n') == ["a_b", "src/lib.rs"]
    assert _cargo_crate(b'[package]\nname = "a"\n[lib]\nname = "c"\npath = "./x/l.rs"\n') == [
        "c", "x/l.rs"]
    for bad in (b"[package", b"x = " + b"[" * 100_000, b"[workspace]\nmembers = []\n",
                b"[package]\nname = 3\n", b'[package]\nname = "a"\n[lib]\npath = "../x.rs"\n',
                b"\xff\xfe", b'[package]\nname = "' + b"a" * (2 << 20) + b'"\n'):
        assert _cargo_crate(bad) is None
    repo.write("Cargo.toml", "[package\nname = ")
    repo.write("src/lib.rs", "pub fn f() {}\n")
    repo.write("src/main.rs", "fn main() {\n    broken::f();\n}\n")
    repo.commit("broken manifest", days_ago=1)
    cortex.index(model="none")
    assert _ref_status(cortex.reader(), "src/main.rs", "f") == ["external"]


def test_a_barrels_export_star_imports_each_definition_of_the_module(repo, cortex):
    """`export * from './mul'` in src/util/index.ts re-exports `mul`: the barrel is an importer
    of it, as it is of the file. Its edge names no definition, so `mul`'s blast left it out, and
    hidden coupling listed the barrel, which changes with `mul`, as having no structural link.
    A named re-export is the edge shown when a barrel has both; `export * as ns` is no
    re-export of each name."""
    repo.write("src/util/mul.ts", "export const mul = (a: number, b: number) => a * b;\n")
    repo.write("src/util/add.ts", "export function add(a: number, b: number) {\n  return a + b;\n}\n")
    repo.write("src/util/index.ts", "export * from './mul';\nexport * from './add';\n"
                                    "export {add as plus} from './add';\n")
    repo.write("src/ns.ts", "export * as m from './util/mul';\n")
    repo.commit("util", days_ago=30)
    for n in range(2):
        repo.write("src/util/mul.ts",
                   f"export const mul = (a: number, b: number) => a * b * {n + 2};\n")
        repo.write("src/util/index.ts", f"export * from './mul';\nexport * from './add';\n"
                                        f"export {{add as plus}} from './add';\n// {n}\n")
        repo.commit(f"mul and barrel {n}", days_ago=20 - n)
    cortex.index()
    con = cortex.reader()
    found = blast(con, TargetSpec("src/util/mul.ts", "mul"))
    assert [(d.path, d.qualname, d.relation, d.chain[0].line) for d in found.dependents] == [
        ("src/util/index.ts", None, "importer", 1)]
    assert [h.path for h in found.hidden] == []
    assert direct_dependents(con, con.execute(
        "select id from files where path = 'src/util/mul.ts'").fetchone()[0], "mul") == 1
    plus = blast(con, TargetSpec("src/util/add.ts", "add"))
    assert [(d.path, d.chain[0].line) for d in plus.dependents] == [("src/util/index.ts", 3)]


def test_barrels_that_export_each_other_are_no_dependents_of_their_own(repo, cortex):
    """A review: `a.ts` and `b.ts` `export * from` each other; `a.ts::fa`'s blast listed
    `a.ts` itself as an importer at depth 2 (through `b.ts`)."""
    repo.write("src/a.ts", "export * from './b';\nexport function fa() {\n  return 1;\n}\n")
    repo.write("src/b.ts", "export * from './a';\nexport function fb() {\n  return 2;\n}\n")
    repo.write("src/use.ts", "import { fa } from './b';\nexport const u = () => fa();\n")
    repo.commit("cycle", days_ago=3)
    cortex.index()
    con = cortex.reader()
    found = blast(con, TargetSpec("src/a.ts", "fa"))
    assert "src/a.ts" not in [d.path for d in found.dependents]
    assert ("src/b.ts", None) in [(d.path, d.qualname) for d in found.dependents]


def test_a_javascript_private_name_is_the_member_of_the_class_around_it(repo, cortex):
    """`ky.#retry()` in a closure of Ky's static method can only be Ky's `#retry`: private names
    are bound by the class body that declares them. Matched by name, as for an unknown receiver,
    it was 0.4, shared with every other class's `#retry`, and unresolved past five of them."""
    classes = "".join(f"export class C{n} {{\n  #retry() {{\n    return {n};\n  }}\n}}\n\n"
                      for n in range(6))
    repo.write("src/others.ts", classes)
    repo.write("src/ky.ts", "export class Ky {\n  #retry() {\n    return 1;\n  }\n\n"
                            "  static create() {\n    const ky = new Ky();\n"
                            "    const run = () => ky.#retry();\n    return run();\n  }\n\n"
                            "  again() {\n    return this.#retry();\n  }\n}\n")
    repo.commit("classes", days_ago=5)
    cortex.index()
    con = cortex.reader()
    found = callers(con, TargetSpec("src/ky.ts", "Ky.#retry"))
    assert [(n.path, n.qualname, n.line, n.confidence) for n in found.items] == [
        ("src/ky.ts", "Ky.again", 13, 1.0), ("src/ky.ts", "Ky.create.run", 8, 1.0)]
    assert callers(con, TargetSpec("src/others.ts", "C0.#retry")).items == []


def test_calls_on_a_class_are_found_by_any_part_of_their_qualifier():
    import apsw

    from cortex_core.index.structure import _qualified_by
    con = apsw.Connection(":memory:")
    con.execute("create table refs(id integer primary key, qualifier text)")
    qualifiers = ["Kid", "mod.Kid", "Kid.Inner", "crate::Kid", "a.Kid.b", "Kidney", "my_Kid",
                  "mod.Kid_", "Ki%", None, "K_d"]
    con.executemany("insert into refs(id, qualifier) values (?, ?)", enumerate(qualifiers))
    assert sorted(_qualified_by(con, {"Kid"})) == [0, 1, 2, 3, 4]
    assert _qualified_by(con, {"K_d"}) == {10}            # `_` is no wildcard
    assert _qualified_by(con, set()) == set()
    many = {f"C{n}" for n in range(450)} | {"Kidney"}     # more names than one query takes
    assert _qualified_by(con, many) == {5}


def test_a_base_reexported_elsewhere_moves_under_a_changed_subclass_file(repo, cortex,
                                                                         tmp_path):
    """`class Kid(Base)` in a file changed in the same commit as the re-export its Base comes
    through (`mid.py`: `from a import Base` became `from x import Base`): Kid's base row was
    read again, so no answer of it was seen to move, and a subclass of Kid elsewhere kept
    a.py's method."""
    layout = {
        "pkg/__init__.py": "",
        "pkg/a.py": "class Base:\n    def m(self):\n        return 1\n",
        "pkg/x.py": "class Base:\n    def m(self):\n        return 2\n",
        "pkg/mid.py": "from pkg.a import Base\n",
        "pkg/b.py": "from pkg.mid import Base\n\n\nclass Kid(Base):\n    pass\n",
        "c.py": "from pkg.b import Kid\n\n\nclass G(Kid):\n    def go(self):\n"
                "        return self.m()\n",
    }
    steps = [{"pkg/mid.py": "from pkg.x import Base\n",
              "pkg/b.py": layout["pkg/b.py"] + "\n\ndef extra():\n    return 0\n"}]
    _updates_resolve_as_a_full_resolution(repo, cortex, tmp_path, layout, steps)


def test_an_interrupted_structure_pass_keeps_its_finished_transactions(repo, cortex, tmp_path,
                                                                        monkeypatch):
    """The files read for structure commit every BATCH_SECONDS (here: after each file): a run
    stopped at the 200th keeps the 199 before it, and the next run ends with the structure a
    run never stopped would have."""
    import cortex_core.index.structure as structure
    from conftest import Indexed
    for n in range(201):
        repo.write(f"pkg/m{n:03}.py", f"from pkg.m{(n + 1) % 201:03} import f{(n + 1) % 201}\n\n\n"
                                      f"def f{n}():\n    return f{(n + 1) % 201}()\n")
    repo.commit("Modules", days_ago=3)
    monkeypatch.setattr(structure, "BATCH_SECONDS", 0.0)

    def stop(done, total, phase="commits"):
        if phase == "files read for structure" and done == 200:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cortex.index(progress=stop, model="none")
    monkeypatch.undo()
    assert cortex.reader().execute("select count(*) from struct_files").get == 199
    cortex.index(model="none")
    once = Indexed(repo, tmp_path / "once" / "cortex.db")
    once.index(model="none")

    def stored(con) -> list:
        return sorted(con.execute(
            "select f.path, r.kind, r.name, r.line, r.status, d.path, e.dst_qualname,"
            " e.confidence from refs r join files f on f.id = r.file_id"
            " left join edges e on e.ref_id = r.id left join files d on d.id = e.dst_file_id"))
    assert stored(cortex.reader()) == stored(once.reader())
    assert len([row for row in stored(once.reader()) if row[4] == "resolved"]) >= 400


def test_a_batch_whose_commit_fails_raises_that_error(tmp_path, monkeypatch):
    """A review: a commit that failed in a batch's tick (a full disk shows there) left no
    transaction, and the batch's exit, rolling back one that was gone, raised its own error
    instead (`cannot rollback - no transaction is active`)."""
    import apsw

    import cortex_core.index.structure as structure
    con = apsw.Connection(str(tmp_path / "batch.db"))
    con.execute("create table t(x)")
    monkeypatch.setattr(structure, "BATCH_SECONDS", 0.0)
    with pytest.raises(apsw.ConstraintError):   # what SQLite says of a commit a hook refused
        with structure._Batch(con) as batch:
            for n in range(3):
                with con:
                    con.execute("insert into t values (?)", (n,))
                if n == 1:
                    con.set_commit_hook(lambda: True)
                batch.tick()
    con.set_commit_hook(None)
    assert not con.in_transaction and con.execute("select count(*) from t").get == 1

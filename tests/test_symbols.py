"""Symbol extraction: what each language yields, line ranges, fingerprints, caching, and
incremental re-parsing driven by git-style hunks."""

from __future__ import annotations

import difflib
import random
import re
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
from tree_sitter_language_pack import get_parser

import cortex_core.lang.symbols as symbols_module
from cortex_core.lang.languages import SUPPORTED_LANGUAGES, language_for_path
from cortex_core.lang.structure_extract import extract_structure
from cortex_core.lang.symbols import Symbol, SymbolParser, body_hash, extract_symbols


def rows(language: str, source: str | bytes) -> list[tuple[str, str, int, int]]:
    data = source.encode() if isinstance(source, str) else source
    found = extract_symbols(language, data)
    assert_well_formed(found)
    return [(s.qualname, s.kind, s.start_line, s.end_line) for s in found]


def assert_well_formed(found: list[Symbol]) -> None:
    """Parents come first, enclose their children, and prefix their qualified names."""
    for i, s in enumerate(found):
        assert s.start_line <= s.end_line
        if s.parent >= 0:
            p = found[s.parent]
            assert s.parent < i
            assert p.start_line <= s.start_line and s.end_line <= p.end_line
            assert s.qualname.startswith(p.qualname + ".")
        assert s.structural_name.endswith(s.name)


# ---------------------------------------------------------------------------------------------
# One realistic snippet per language


def test_python():
    source = '''\
"""A small service module."""
import functools


def retry(times):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return fn(*args)
        return wrapper
    return decorate


@dataclass(frozen=True)
class Repo:
    path: str

    @property
    def name(self):
        return self.path

    @name.setter
    def name(self, value):
        self.path = value

    async def save(self, item):
        class Batch:
            pass
        return Batch()


if TYPE_CHECKING:
    def typed(): ...
'''
    assert rows("python", source) == [
        ("retry", "function", 5, 11),
        ("retry.decorate", "function", 6, 10),
        ("retry.decorate.wrapper", "function", 7, 9),
        ("Repo", "class", 14, 29),
        ("Repo.name", "method", 18, 20),
        ("Repo.name[setter]", "method", 22, 24),  # a property's accessors are two symbols
        ("Repo.save", "method", 26, 29),
        ("Repo.save.Batch", "class", 27, 28),
        ("typed", "function", 33, 33),
    ]


def test_javascript():
    source = '''\
import { db } from './db';

export function load(id) {
  function key() { return `user:${id}`; }
  return db.get(key());
}

export const save = async (user) => {
  await db.put(user.id, user);
};

const helpers = { format() { return ''; } };

class Cache extends Map {
  ttl = 60;
  evict = (key) => this.delete(key);

  get(key) {
    return super.get(key);
  }

  static *entriesOf(cache) {
    yield* cache;
  }
}

export default function () {
  return new Cache();
}
'''
    assert rows("javascript", source) == [
        ("load", "function", 3, 6),
        ("load.key", "function", 4, 4),
        ("save", "function", 8, 10),
        ("Cache", "class", 14, 25),
        ("Cache.evict", "method", 16, 16),
        ("Cache.get", "method", 18, 20),
        ("Cache.entriesOf", "method", 22, 24),
        ("default", "function", 27, 29),
    ]


def test_typescript():
    source = '''\
export interface User {
  id: string;
  name(): string;
}

export type Id = string;

export enum Role { Admin, Guest }

namespace Store {
  export function open(path: string): void {}
}

@Injectable()
export abstract class Service<T> implements Base {
  private cache = new Map<string, T>();
  protected handler = (e: Event): void => {};

  constructor(private readonly http: Http) {
    super();
  }

  abstract fetch(id: Id): Promise<T>;

  @Memo()
  find(id: Id): T | undefined {
    return this.cache.get(id);
  }
}

export function parse(raw: string): User;
export function parse(raw: unknown): User {
  return raw as User;
}
'''
    assert rows("typescript", source) == [
        ("User", "interface", 1, 4),
        ("Id", "type", 6, 6),
        ("Role", "enum", 8, 8),
        ("Store", "namespace", 10, 12),
        ("Store.open", "function", 11, 11),
        ("Service", "class", 14, 29),
        ("Service.handler", "method", 17, 17),
        ("Service.constructor", "method", 19, 21),
        ("Service.find", "method", 25, 28),  # its decorator is a sibling in the class body
        # The overload signature shares the identity of its implementation.
        ("parse", "function", 31, 31),
        ("parse", "function", 32, 34),
    ]


def test_tsx():
    source = '''\
import React from 'react';

interface Props { items: string[] }

export const List = ({ items }: Props) => {
  const render = (item: string) => <li key={item}>{item}</li>;
  return <ul>{items.map(render)}</ul>;
};

export default function App(): JSX.Element {
  function Header() {
    return <h1 className="title">Hello</h1>;
  }
  return (
    <div>
      <Header />
      <List items={["a", "b"]} />
    </div>
  );
}

class Counter extends React.Component<{}, { n: number }> {
  state = { n: 0 };
  increment = () => this.setState({ n: this.state.n + 1 });
  render() {
    return <button onClick={this.increment}>{this.state.n}</button>;
  }
}
'''
    assert rows("tsx", source) == [
        ("Props", "interface", 3, 3),
        ("List", "function", 5, 8),
        ("List.render", "function", 6, 6),
        ("App", "function", 10, 20),
        ("App.Header", "function", 11, 13),
        ("Counter", "class", 22, 28),
        ("Counter.increment", "method", 24, 24),
        ("Counter.render", "method", 25, 27),
    ]


def test_a_go_doc_comment_is_the_one_right_above():
    """godoc's rule: the comments right above a declaration, no blank line between, each
    starting its line. cobra's doc-only commits (0f056af) were on no function's history."""
    source = b"""package p

// Copyright header

// Find finds.
// It says so twice.
func Find() {}

var x = 1 // about x
func G() {}

// Detached

func H() {}

// Repo holds.
type Repo struct {
	// Name is its own field's.
	Name string
}

// Save saves.
/* and blocks count */
func (r *Repo) Save() error { return nil }
"""
    found = {s.qualname: (s.start_line, s.end_line) for s in extract_symbols("go", source)}
    assert found == {"Find": (5, 7), "G": (10, 10), "H": (14, 14), "Repo": (16, 20),
                     "Repo.Save": (22, 24)}
    # A group of one type lends it its range, from its own doc comment if it has one; the
    # comment inside it does not cut off the `type (` line (a review).
    group = b"package p\n\n// Group doc.\ntype (\n\t// Foo doc.\n\tFoo struct{ n int }\n)\n"
    assert [(s.qualname, s.start_line, s.end_line) for s in extract_symbols("go", group)] == [
        ("Foo", 3, 7)]
    bare = group.replace(b"// Group doc.\n", b"")
    assert [(s.qualname, s.start_line, s.end_line) for s in extract_symbols("go", bare)] == [
        ("Foo", 3, 6)]


def test_go():
    source = '''\
package store

import "errors"

// Repo keeps items.
type Repo[T any] struct {
\titems map[string]T
}

type (
\tSaver interface {
\t\tSave(item string) error
\t}
\tID = string
\tHandler func(string) error
)

func New[T any]() *Repo[T] {
\treturn &Repo[T]{items: map[string]T{}}
}

func (r *Repo[T]) Save(key string, item T) error {
\tif key == "" {
\t\treturn errors.New("empty key")
\t}
\tr.items[key] = item
\treturn nil
}

func (r Repo[T]) Len() int { return len(r.items) }

func run() {
\ttype local struct{ n int }
\tf := func() {}
\tf()
}
'''
    assert rows("go", source) == [
        ("Repo", "struct", 5, 8),   # its doc comment is its own, as godoc reads it
        ("Saver", "interface", 11, 13),
        ("ID", "type", 14, 14),
        ("Handler", "type", 15, 15),
        ("New", "function", 18, 20),
        ("Repo.Save", "method", 22, 28),
        ("Repo.Len", "method", 30, 30),
        ("run", "function", 32, 36),
        ("run.local", "struct", 33, 33),
    ]


def test_rust():
    source = '''\
use std::fmt;

/// A point.
#[derive(Debug, Clone)]
pub struct Point {
    x: i32,
}

pub enum Shape {
    Circle(f64),
}

pub trait Area {
    fn area(&self) -> f64;
    fn describe(&self) -> String {
        format!("{}", self.area())
    }
}

impl Point {
    pub fn new(x: i32) -> Self {
        fn clamp(v: i32) -> i32 { v.max(0) }
        Point { x: clamp(x) }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.x)
    }
}

mod tests {
    #[test]
    fn works() {}
}

macro_rules! square {
    ($x:expr) => { $x * $x };
}

type Grid = Vec<Point>;
'''
    assert rows("rust", source) == [
        ("Point", "struct", 3, 7),  # from its doc comment, its attribute included
        ("Shape", "enum", 9, 11),
        ("Area", "trait", 13, 18),
        ("Area.area", "method", 14, 14),
        ("Area.describe", "method", 15, 17),
        ("Point", "impl", 20, 25),
        ("Point.new", "method", 21, 24),
        ("Point.new.clamp", "function", 22, 22),
        ("Point", "impl", 27, 31),
        ("Point.fmt", "method", 28, 30),
        ("tests", "module", 33, 36),
        ("tests.works", "function", 34, 35),
        ("square", "macro", 38, 40),
        ("Grid", "type", 42, 42),
    ]


def test_java():
    source = '''\
package com.example;

import java.util.List;

@Service
public class OrderService extends Base implements Api {
    private final List<Order> orders;

    public OrderService(List<Order> orders) {
        this.orders = orders;
    }

    @Override
    public Order find(int id) {
        return orders.get(id);
    }

    public Order find(String code) {
        Runnable r = new Runnable() {
            public void run() {}
        };
        return null;
    }

    interface Listener {
        void changed(Order order);
    }

    enum Status {
        OPEN, CLOSED;
        boolean done() { return this == CLOSED; }
    }

    record Line(int qty) {
        Line {
            if (qty < 0) throw new IllegalArgumentException();
        }
    }
}

@interface Audit {
    String value();
}
'''
    assert rows("java", source) == [
        ("OrderService", "class", 5, 39),
        # Overloads are told apart by their parameter types as written.
        ("OrderService.OrderService(List<Order>)", "method", 9, 11),
        ("OrderService.find(int)", "method", 13, 16),
        ("OrderService.find(String)", "method", 18, 23),
        # An anonymous class and its methods are symbols under the method that creates it.
        ("OrderService.find(String).new Runnable", "class", 19, 21),
        ("OrderService.find(String).new Runnable.run()", "method", 20, 20),
        ("OrderService.Listener", "interface", 25, 27),
        ("OrderService.Listener.changed(Order)", "method", 26, 26),
        ("OrderService.Status", "enum", 29, 32),
        ("OrderService.Status.done()", "method", 31, 31),
        ("OrderService.Line", "class", 34, 38),
        ("OrderService.Line.Line", "method", 35, 37),  # a compact constructor has no list
        ("Audit", "interface", 41, 43),
    ]


def test_c():
    source = '''\
#ifndef BUF_H
#define BUF_H
#include <stdlib.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))

typedef struct {
    char *data;
    size_t len;
} buf_t;

struct node {
    struct node *next;
    union {
        int i;
        float f;
    } value;
};

enum color { RED, GREEN };

int buf_len(const buf_t *b);

static char *buf_data(buf_t *b)
{
    return b->data;
}

int (*pick(int which))(int)
{
    return 0;
}

#ifdef DEBUG
void buf_dump(const buf_t *b) {}
#endif
#endif
'''
    assert rows("c", source) == [
        ("MIN", "macro", 5, 5),  # the #define node ends at column 0 of the next line
        ("buf_t", "struct", 7, 10),
        ("node", "struct", 12, 18),
        ("color", "enum", 20, 20),
        ("buf_data", "function", 24, 27),
        ("pick", "function", 29, 32),
        ("buf_dump", "function", 35, 35),
    ]


def test_cpp():
    source = '''\
#include <string>

namespace geo {

template <typename T>
class Shape : public Base {
 public:
  Shape() = default;
  virtual ~Shape();
  T area() const { return T(); }
  struct Cache {
    void clear() {}
  };

 private:
  int id_;
};

namespace detail {
inline int helper(int x) { return x * 2; }
}  // namespace detail

template <typename T>
Shape<T>::~Shape() {}

}  // namespace geo

std::string geo::Shape<int>::name() const {
  return "shape";
}

void geo::detail::log(const char* msg) {}

bool operator==(const geo::Point& a, const geo::Point& b) { return true; }

extern "C" {
int c_api(void) { return 0; }
}
'''
    assert rows("cpp", source) == [
        ("geo", "namespace", 3, 26),
        ("geo.Shape", "class", 5, 17),
        ("geo.Shape.Shape()", "method", 8, 8),
        ("geo.Shape.area() const", "method", 10, 10),
        ("geo.Shape.Cache", "struct", 11, 13),
        ("geo.Shape.Cache.clear()", "method", 12, 12),
        ("geo.detail", "namespace", 19, 21),
        ("geo.detail.helper(int)", "function", 20, 20),
        ("geo.Shape.~Shape()", "method", 23, 24),
        ("geo.Shape.name() const", "method", 28, 30),
        # geo::detail is a namespace of this file
        ("geo.detail.log(const char*)", "function", 32, 32),
        ("operator==(const geo::Point&, const geo::Point&)", "function", 34, 34),
        ("c_api(void)", "function", 37, 37),
    ]


def test_ruby():
    source = '''\
require 'json'

module Billing
  class Invoice < Base
    attr_reader :total

    def self.build(attrs)
      new(attrs)
    end

    class << self
      def registry
        @registry ||= {}
      end
    end

    def initialize(attrs)
      @total = attrs[:total]
    end

    def paid?
      def helper; end
      total.zero?
    end
  end
end

class Billing::Report
end

def main
  puts Billing::Invoice.build(total: 1).total
end
'''
    assert rows("ruby", source) == [
        ("Billing", "module", 3, 26),
        ("Billing.Invoice", "class", 4, 25),
        ("Billing.Invoice.build[self]", "method", 7, 9),
        ("Billing.Invoice.registry[self]", "method", 12, 14),
        ("Billing.Invoice.initialize", "method", 17, 19),
        ("Billing.Invoice.paid?", "method", 21, 24),
        ("Billing.Invoice.paid?.helper", "function", 22, 22),
        ("Billing.Report", "class", 28, 29),
        ("main", "function", 31, 33),
    ]


def test_ruby_methods_of_the_class_and_of_other_objects():
    """A review: `def A.y` inside `class A` was "A.A.y" (it is `def self.y`), and `def obj.z` and
    `class << other` took the instance method's identity or the class's tag, so the instance
    method `z` became "A.z[2]" by order in the file."""
    source = b"""class A
  def x; 1; end
  def self.x; 2; end
  def A.y; 3; end
  def obj.z; 4; end
  def z; 5; end
  class << other
    def w; end
  end
  def w; end
end
module M
  class B
    def B.k; end
  end
end
"""
    assert [(s.qualname, s.start_line) for s in extract_symbols("ruby", source)] == [
        ("A", 1), ("A.x", 2), ("A.x[self]", 3), ("A.y[self]", 4), ("A.z[obj]", 5), ("A.z", 6),
        ("A.w[other]", 8), ("A.w", 10), ("M", 12), ("M.B", 13), ("M.B.k[self]", 14)]


def test_php():
    source = '''\
<?php
namespace App\\Models;

use Illuminate\\Database\\Eloquent\\Model;

#[Table('users')]
final class User extends Model implements HasName
{
    use Notifiable;

    public function __construct(private string $name) {}

    public function name(): string
    {
        return $this->name;
    }

    public static function make(string $name): self
    {
        return new self($name);
    }
}

interface HasName
{
    public function name(): string;
}

trait Greets
{
    public function greet(): string { return 'hi'; }
}

enum Status: string
{
    case Active = 'active';
    public function label(): string { return ucfirst($this->value); }
}

function helper(): void {}

if (!function_exists('legacy')) {
    function legacy() {}
}

$closure = function () {};
'''
    assert rows("php", source) == [
        ("User", "class", 6, 22),
        ("User.__construct", "method", 11, 11),
        ("User.name", "method", 13, 16),
        ("User.make", "method", 18, 21),
        ("HasName", "interface", 24, 27),
        ("HasName.name", "method", 26, 26),
        ("Greets", "trait", 29, 32),
        ("Greets.greet", "method", 31, 31),
        ("Status", "enum", 34, 38),
        ("Status.label", "method", 37, 37),
        ("helper", "function", 40, 40),
        ("legacy", "function", 43, 43),
    ]


# ---------------------------------------------------------------------------------------------
# Ranges, nesting, parents


def test_nested_functions_have_qualified_names_and_parents():
    source = b"""\
def outer():
    def middle():
        def inner():
            return 1
        return inner
    return middle
"""
    found = extract_symbols("python", source)
    assert [(s.qualname, s.name, s.kind, s.parent) for s in found] == [
        ("outer", "outer", "function", -1),
        ("outer.middle", "middle", "function", 0),
        ("outer.middle.inner", "inner", "function", 1),
    ]


def test_definitions_in_branches_are_symbols():
    source = """\
try:
    from fast import parse
except ImportError:
    def parse(text):
        return text

def after(ms, func=None):
    if func is None:
        return None
    else:
        def callit():
            func()
        return callit
"""
    assert rows("python", source) == [
        ("parse", "function", 4, 5), ("after", "function", 7, 13),
        ("after.callit", "function", 11, 12)]


def test_python_decorators_belong_to_the_range():
    source = """\
import functools

@functools.lru_cache(
    maxsize=None,
)
@trace
def cached(x):
    return x
"""
    assert rows("python", source) == [("cached", "function", 3, 8)]


def test_end_line_is_the_last_line_with_text():
    # No trailing newline, trailing blank lines, and a C #define whose node swallows its newline.
    assert rows("python", "def f():\n    return 1") == [("f", "function", 1, 2)]
    assert rows("python", "def f():\n    return 1\n\n\n") == [("f", "function", 1, 2)]
    assert rows("c", "#define SQ(x) ((x) * (x))\nint y;\n") == [("SQ", "macro", 1, 1)]
    assert rows("rust", "#[inline]\n// why\n#[must_use]\nfn f() {}\n") == [("f", "function", 1, 4)]
    # Rust's outer doc comments are the item's, as Javadoc is the method's; plain comments,
    # `////` and the enclosing item's `//!` are not (an audit: fd's doc-only commits were on no
    # function's history, and a line of a doc comment resolved to the whole file).
    assert rows("rust", "//! crate\n// plain\n/// Does f.\n#[inline]\nfn f() {}\n"
                        "//// banner\nfn g() {}\n/** Block. */\nfn h() {}\n") == [
        ("f", "function", 3, 5), ("g", "function", 7, 7), ("h", "function", 8, 9)]


def test_a_wrapper_lends_its_range_to_a_single_definition_only():
    source = ("export const inc = (x) => x + 1,\n  dec = (x) => x - 1;\n"
              "export const one = () => 1;\n")
    assert rows("javascript", source) == [
        ("inc", "function", 1, 1), ("dec", "function", 2, 2), ("one", "function", 3, 3)]


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
def test_nothing_to_read(language):
    for source in (b"", b"\n\n", b"   ", b"\xff\xfe\x00"):
        assert extract_symbols(language, source) == []


@pytest.mark.parametrize("language, comment", [
    ("python", "# nothing here\n# at all\n"), ("javascript", "// none\n/* at all */\n"),
    ("typescript", "// none\n"), ("tsx", "/* none */"), ("go", "// Package x.\npackage x\n"),
    ("rust", "//! crate docs\n/// dangling\n"), ("java", "/** none */\n"),
    ("c", "/* none */\n// at all\n"), ("cpp", "// none\n"), ("ruby", "# none\n=begin\nx\n=end\n"),
    ("php", "<?php\n// none\n# at all\n"),
])
def test_comments_only(language, comment):
    assert extract_symbols(language, comment.encode()) == []


def test_syntax_errors_still_yield_readable_symbols():
    python = b"""\
import x
x = (
def ok():
    pass
class Broken:
    def m(self):
        return [
def after(): pass
"""
    assert [s.qualname for s in extract_symbols("python", python)] == [
        "ok", "Broken", "Broken.m", "after"]
    javascript = b"class A {\n  m() {\n    if (x {\n  }\n  n() {}\n}\nfunction g() {}\n"
    assert "g" in [s.qualname for s in extract_symbols("javascript", javascript)]
    c = b"int ok(void) { return 0; }\nint broken( { \nint after(void) { return 1; }\n"
    names = [s.qualname for s in extract_symbols("c", c)]
    assert names[0] == "ok" and "after" in names


def test_non_utf8_bytes_are_replaced_in_names():
    source = b'declare module "caf\xe9" {\n  export function f(): void {}\n}\n'
    found = extract_symbols("typescript", source)
    assert [(s.qualname, s.name) for s in found] == [("caf\ufffd", "caf\ufffd"),
                                                     ("caf\ufffd.f", "f")]
    # Invalid bytes elsewhere neither break parsing nor leak into names.
    latin1 = b'def caf\xe9():\n    return "\xff"\n\ndef ok():\n    pass\n'
    assert [s.qualname for s in extract_symbols("python", latin1)][-1] == "ok"


def test_deep_nesting_does_not_recurse():
    depth = 1500  # beyond Python's default recursion limit
    source = "".join(f"function f{i}() {{\n" for i in range(depth)) + "}\n" * depth
    found = extract_symbols("javascript", source.encode())
    assert len(found) == depth
    assert found[-1].qualname == ".".join(f"f{i}" for i in range(depth))
    assert found[-1].parent == depth - 2
    deep_expression = "x = " + "(" * 5000 + "1" + ")" * 5000 + "\ndef f(): pass\n"
    assert rows("python", deep_expression) == [("f", "function", 2, 2)]


def test_unknown_language_is_a_clear_error():
    with pytest.raises(ValueError, match="cobol"):
        extract_symbols("cobol", b"")
    with pytest.raises(ValueError, match="cobol"):
        SymbolParser().symbols("cobol", "abc", b"")


# ---------------------------------------------------------------------------------------------
# body_hash


def hashes(language: str, source: str) -> dict[str, str]:
    data = source.encode()
    return {s.qualname: body_hash(s, data) for s in extract_symbols(language, data)}


LOAD = """\
def {name}(user_id, cache):
    if user_id in cache:
        return cache[user_id]
    value = load_uncached(user_id)
    cache[user_id] = value
    return {name}(user_id, cache) if value is None else value
"""


def test_body_hash_survives_renaming_the_function():
    # Whole names only are masked: `load_uncached` is another name and stays as it is.
    before = hashes("python", LOAD.format(name="load"))["load"]
    after = hashes("python", LOAD.format(name="fetch"))["fetch"]
    assert before == after != ""


def test_body_hash_survives_renaming_the_class_and_moving():
    method = "    def total(self, items):\n        return sum(i.price * i.qty for i in items)\n"
    original = hashes("python", "class Cart:\n" + method)
    renamed = hashes("python", "import os\n\n\nclass Basket(Base):\n    x = 1\n\n" + method)
    assert original["Cart.total"] == renamed["Basket.total"] != ""
    # Moved out of the class: indentation differs, the text does not.
    moved = hashes("python", "\n\n" + method.replace("\n    ", "\n").lstrip())
    assert moved["total"] == original["Cart.total"]


def test_body_hash_changes_with_the_body():
    before = hashes("python", LOAD.format(name="load"))["load"]
    changed = hashes("python", LOAD.format(name="load").replace("return cache", "return None"))
    assert changed["load"] != before


def test_body_hash_sees_other_names():
    before = hashes("python", LOAD.format(name="load"))["load"]
    other_helper = LOAD.format(name="load").replace("load_uncached", "load_slowly")
    assert hashes("python", other_helper)["load"] != before


def test_body_hash_is_empty_for_tiny_definitions():
    assert hashes("python", "def f():\n    pass\n") == {"f": ""}
    assert hashes("go", "package x\nfunc (r *R) Len() int { return r.n }\n") == {"R.Len": ""}


# ---------------------------------------------------------------------------------------------
# Cache


def test_a_blob_is_parsed_once():
    parser = SymbolParser()
    first = parser.symbols("python", "blob1", LOAD.format(name="load").encode())
    first.clear()  # the caller's list is its own
    again = parser.symbols("python", "blob1", LOAD.format(name="load").encode())
    assert parser.parse_count() == 1
    assert [s.qualname for s in again] == ["load"]
    # The same id in another language is another parse (a renamed .h -> .cpp).
    parser.symbols("cpp", "blob1", b"int f() { return 0; }\n")
    assert parser.parse_count() == 2


def test_least_recently_used_blobs_are_evicted():
    parser = SymbolParser(cache_size=2)
    for blob in ("a", "b", "a", "c", "a", "b"):
        parser.symbols("python", blob, f"def {blob}(): pass\n".encode())
    assert parser.parse_count() == 4  # a, b, c, and b again: c's arrival evicted it


def test_extract_symbols_matches_the_parser():
    source = LOAD.format(name="load").encode()
    assert extract_symbols("python", source) == SymbolParser().symbols("python", "x", source)


# ---------------------------------------------------------------------------------------------
# Incremental re-parsing


def git_lines(data: bytes) -> list[bytes]:
    """Lines as git splits them: on \\n only, the last one possibly without it."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def difflib_hunks(old: bytes, new: bytes) -> list[tuple[int, int, int, int]]:
    """Zero-context hunks with git's numbering: an empty side names the line after which the
    change happened (0 at the top of the file)."""
    hunks = []
    matcher = difflib.SequenceMatcher(None, git_lines(old), git_lines(new), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            old_lines, new_lines = i2 - i1, j2 - j1
            hunks.append((i1 + 1 if old_lines else i1, old_lines,
                          j1 + 1 if new_lines else j1, new_lines))
    return hunks


def git_hunks(old: bytes, new: bytes) -> list[tuple[int, int, int, int]]:
    patch = pygit2.Patch.create_from(old, new, context_lines=0)
    return [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]


EDGE_CASES = [
    (b"a\nb\n", b"x\na\nb\n"),  # insertion at the top: old_start 0
    (b"a\nb\n", b"a\nb\nc\n"),  # insertion at the end
    (b"a\nb\nc\n", b"a\nc\n"),  # deletion in the middle
    (b"a\nb\nc\n", b"b\nc\n"),  # deletion at the top: new_start 0
    (b"a\nb\nc\n", b"a\nb\n"),  # deletion at the end
    (b"a\nb", b"a\nb\nc"),  # appending to a file without a trailing newline
    (b"a\nb\nc", b"a\nb"),  # removing the last line of such a file
    (b"a\nb\n", b"a\nb"),  # dropping the trailing newline
    (b"a\nb", b"a\nb\n"),  # adding it
    (b"", b"a\n"), (b"a\n", b""),  # from and to an empty blob
    (b"a\nb\nc\nd\n", b"A\nb\nC\nd\nE\n"),  # several hunks
]


@pytest.mark.parametrize("old, new", EDGE_CASES)
def test_hunk_helper_follows_git(old, new):
    assert difflib_hunks(old, new) == git_hunks(old, new)


def spy_on_edits(monkeypatch) -> list[bool]:
    """Records, for each incremental parse, whether the hunks could be turned into edits
    (False would mean a silent fall back to a full parse)."""
    calls: list[bool] = []
    real = symbols_module._edits

    def spy(*args):
        edits = real(*args)
        calls.append(edits is not None)
        return edits

    monkeypatch.setattr(symbols_module, "_edits", spy)
    return calls


PY_EDGE = b"""\
import os


def first(a):
    return a + 1


class Middle:
    def method(self):
        return os.getcwd()


def last(b):
    return b * 2
"""


@pytest.mark.parametrize("edit", [
    lambda s: b"# header\n" + s,
    lambda s: s + b"def added():\n    return 3\n",
    lambda s: s[:-1],  # no trailing newline
    lambda s: s[:-1] + b"\ndef added():\n    return 3",  # append after a last line without \n
    lambda s: s.replace(b"def first(a):\n    return a + 1\n", b""),
    lambda s: s.replace(b"import os\n", b""),
    lambda s: s.replace(b"    return b * 2\n", b""),
    lambda s: s.replace(b"return a + 1", b"return a + 2").replace(b"b * 2", b"b * 3"),
    lambda s: s.replace(b"class Middle:\n", b"class Middle:\n    x = 1\n\n    y = 2\n"),
    lambda s: b"",
])
def test_incremental_parse_at_the_edges_equals_a_full_parse(edit, monkeypatch):
    edited = spy_on_edits(monkeypatch)
    new = edit(PY_EDGE)
    parser = SymbolParser()
    parser.symbols("python", "old", PY_EDGE)
    got = parser.symbols("python", "new", new, base=("old", git_hunks(PY_EDGE, new)))
    assert got == extract_symbols("python", new)
    assert edited == [True]
    assert parser.parse_count() == 2


BASE_MODULE = b'''\
"""Orders."""
import json


def parse(raw):
    data = json.loads(raw)
    return data


@register
class Order:
    def __init__(self, items):
        self.items = items

    def total(self):
        return sum(self.items)


def report(orders):
    def line(order):
        return str(order.total())
    return [line(o) for o in orders]
'''


def valid_edit(rng: random.Random, source: bytes, step: int) -> bytes:
    """One edit that keeps the module valid Python, anywhere in the file."""
    lines = git_lines(source)
    if lines and not lines[-1].endswith(b"\n"):
        lines[-1] += b"\n"
    symbols = extract_symbols("python", b"".join(lines))
    top_starts = [s.start_line - 1 for s in symbols if s.parent == -1]
    op = rng.choice(["comment", "uncomment", "touch", "add_def", "drop_def", "rename"])
    if op == "comment":
        lines.insert(rng.randint(0, len(lines)), b"# note %d\n" % step)
    elif op == "uncomment" and any(line.startswith(b"#") for line in lines):
        lines.remove(rng.choice([line for line in lines if line.startswith(b"#")]))
    elif op == "touch" and lines:
        i = rng.randrange(len(lines))
        if lines[i].strip() and b'"""' not in lines[i]:
            lines[i] = lines[i].rstrip(b"\n") + b"  # touched %d\n" % step
    elif op == "add_def":
        at = rng.choice([0, len(lines), *top_starts])
        lines[at:at] = [b"def added_%d(x):\n" % step, b"    return x + %d\n" % step, b"\n"]
    elif op == "drop_def" and symbols:
        victim = rng.choice([s for s in symbols if s.parent == -1])
        del lines[victim.start_line - 1:victim.end_line]
    elif op == "rename" and symbols:
        victim = rng.choice(symbols)
        i = victim.start_line - 1
        while i < victim.end_line and b" " + victim.name.encode() not in lines[i]:
            i += 1  # past decorators
        if i < victim.end_line:   # not `f = lambda`, named at the start of its line
            lines[i] = lines[i].replace(b" " + victim.name.encode(), b" renamed_%d" % step, 1)
    result = b"".join(lines)
    return result[:-1] if rng.random() < 0.3 and result.endswith(b"\n") else result


@pytest.mark.parametrize("hunks", [difflib_hunks, git_hunks])
@pytest.mark.parametrize("seed", range(4))
def test_incremental_parse_over_random_valid_edits_equals_full_parse(seed, hunks, monkeypatch):
    rng = random.Random(seed)
    edited = spy_on_edits(monkeypatch)
    parser = SymbolParser()
    source = BASE_MODULE
    parser.symbols("python", "v0", source)
    for step in range(1, 40):
        new = source
        for _ in range(rng.randint(1, 3)):  # several hunks per commit
            new = valid_edit(rng, new, step)
        got = parser.symbols("python", f"v{step}", new, base=(f"v{step - 1}", hunks(source, new)))
        assert got == extract_symbols("python", new), (step, new.decode())
        # The incremental tree, lent to the structure pass, reads as a fresh parse does.
        tree = parser.tree("python", f"v{step}")
        assert tree is not None
        assert extract_structure("python", new, tree) == extract_structure("python", new)
        source = new
    assert edited == [True] * 39
    assert parser.parse_count() == 40


def test_a_tree_is_lent_only_for_a_blob_parsed_as_its_own_text() -> None:
    """`tree` gives the kept tree of a blob without parsing; none for a blob not parsed, nor
    for C (its macros were blanked before the parse: the tree is not of the blob's text)."""
    parser = SymbolParser()
    parser.symbols("python", "py", b"def f():\n    g()\n")
    parser.symbols("c", "c", b"int f(void) { return g(); }\n")
    assert parser.tree("python", "py") is not None
    assert parser.tree("python", "other") is None
    assert parser.tree("c", "c") is None and parser.parse_count() == 2
    # A text with conflict markers is read as one side of them: a tree lent is not that side's.
    conflicted = b"<<<<<<< ours\nx = a()\n=======\nx = b()\n>>>>>>> theirs\n"
    assert extract_structure("python", conflicted, parser.tree("python", "py")) == \
        extract_structure("python", conflicted)


RANDOM_LINES = [b"}\n", b"{\n", b"(\n", b"\n", b"  return x;\n", b"def f(:\n", b"/* open\n",
                b"class K {\n", b"fn g() {}\n", b"'\n", b"int h(void) { return 1; }\n"]


@pytest.mark.parametrize("language", ["python", "javascript", "c", "rust"])
def test_incremental_parse_over_random_broken_edits_equals_full_parse(language):
    """Any edit, including ones that break the syntax: the result is still a full parse's."""
    snippets = {
        "python": BASE_MODULE,
        "javascript": b"class A {\n  m() {\n    return 1;\n  }\n}\nfunction f() {\n  g();\n}\n",
        "c": b"struct s {\n  int a;\n};\nint f(void) {\n  return 0;\n}\nint g(void) {}\n",
        "rust": b"struct S;\nimpl S {\n    fn a(&self) {}\n}\nfn main() {\n    S.a();\n}\n",
    }
    rng = random.Random(language)
    parser = SymbolParser()
    source = snippets[language]
    pool = git_lines(source) + RANDOM_LINES
    parser.symbols(language, "v0", source)
    for step in range(1, 60):
        lines = git_lines(source)
        at = rng.choice([0, len(lines), rng.randint(0, len(lines))])
        lines[at:at + rng.randint(0, 3)] = [rng.choice(pool) for _ in range(rng.randint(0, 3))]
        new = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
        if rng.random() < 0.3:
            new = new.rstrip(b"\n")
        hunks = (git_hunks if step % 2 else difflib_hunks)(source, new)
        got = parser.symbols(language, f"v{step}", new, base=(f"v{step - 1}", hunks))
        assert got == extract_symbols(language, new), (step, new.decode())
        source = new


def test_incremental_parse_through_syntax_errors_equals_full_parse():
    # Found by fuzzing: tree-sitter's error recovery on a re-used tree put g's range at 4-9 and
    # a struct inside it, where a full parse reads g alone at line 9.
    old = (b"/* open\n};\n}\n  int a;\n};\nint h(void) { return 1; }\nstruct s {\n  int a;\n"
           b"int f(void) {\n  return 0;\n}\nint g(void) {}\n")
    new = b"/* open\n};\n}\nstruct s {\n  int a;\nint f(void) {\n  return 0;\n}\nint g(void) {}\n"
    parser = SymbolParser()
    parser.symbols("c", "old", old)
    got = parser.symbols("c", "new", new, base=("old", git_hunks(old, new)))
    assert got == extract_symbols("c", new)


def test_a_base_can_have_several_successors():
    """The cached tree of a blob is copied before editing: a second child of the same blob
    (another branch, or the same file changed in two commits) starts from the original."""
    parser = SymbolParser()
    parser.symbols("python", "base", PY_EDGE)
    base_tree = parser._trees[("python", "base")].tree
    left = PY_EDGE.replace(b"import os\n", b"import os\nimport sys\nimport re\n")
    right = PY_EDGE.replace(b"    return b * 2\n", b"    b += 1\n    return b * 2\n")
    for blob_id, new in (("left", left), ("right", right)):
        got = parser.symbols("python", blob_id, new, base=("base", git_hunks(PY_EDGE, new)))
        assert got == extract_symbols("python", new)
        # An edited tree mostly just misaligns and is re-parsed, so look at the tree itself.
        assert not base_tree.root_node.has_changes


def test_missing_or_wrong_base_falls_back_to_a_full_parse():
    old, new = PY_EDGE, PY_EDGE.replace(b"return a + 1", b"return a + 100")
    parser = SymbolParser()
    assert parser.symbols("python", "new", new, base=("never-seen", [(5, 1, 5, 1)])) == \
        extract_symbols("python", new)
    parser.symbols("python", "old", old)
    # Hunks that do not describe these blobs (wrong lines, out of range) are not trusted.
    renamed = PY_EDGE.replace(b"def first(", b"def fir5t(")  # no hunk at all: not trusted either
    assert SymbolParser().symbols("python", "x", renamed, base=("x", [])) == \
        extract_symbols("python", renamed)
    parser = SymbolParser()
    parser.symbols("python", "old", old)
    assert parser.symbols("python", "renamed", renamed, base=("old", [])) == \
        extract_symbols("python", renamed)
    for hunks in ([(1, 1, 1, 1)], [(90, 1, 90, 1)], [(5, 1, 5, 3)], []):
        parser = SymbolParser()
        parser.symbols("python", "old", old)
        assert parser.symbols("python", "new", new, base=("old", hunks)) == \
            extract_symbols("python", new)


# ---------------------------------------------------------------------------------------------
# Reuse of the old blob's symbols after an incremental parse


def spy_on_copies(monkeypatch) -> list[int]:
    """Counts the subtrees whose symbols were copied rather than walked."""
    copies: list[int] = []
    real = symbols_module._copy_subtree

    def spy(*args):
        copied = real(*args)
        copies.extend([1] if copied else [])
        return copied

    monkeypatch.setattr(symbols_module, "_copy_subtree", spy)
    return copies


class Edits:
    """How to edit one language at random: a module to start from, definitions to add at the
    top level and inside the bodies of symbols of `member_kinds`, a comment marker, and lines
    that break the syntax."""

    def __init__(self, base: str, top: list[str], member: list[str], comment: str,
                 broken: list[str], member_kinds: tuple[str, ...] = ("class", "struct")):
        self.base = base.encode()
        self.top = [line.encode() for line in top]
        self.member = [line.encode() for line in member]
        self.comment = comment.encode()
        self.broken = [line.encode() + b"\n" for line in broken]
        self.member_kinds = member_kinds


EDITS = {
    "python": Edits(
        '''\
"""Orders."""
import json


def parse(raw):
    data = json.loads(raw)
    return data


@register
class Order:
    kind = "order"

    def __init__(self, items):
        self.items = items

    @property
    def total(self):
        def add(a, b):
            return a + b
        return sum(self.items)

    class Line:
        def price(self):
            return 1


if DEBUG:
    def debug():
        return True
else:
    def debug():
        return False


def report(orders):
    def line(order):
        return str(order.total)
    return [line(o) for o in orders]
''',
        top=["def added_{n}(x):", "    return x + {n}"],
        member=["def added_{n}(self):", "    return {n}"],
        comment="# note {n}",
        broken=['x = "unclosed', "def broken(:", "(", "class K:", '"""', "  return", "else:"]),
    "javascript": Edits(
        """\
import { db } from './db';

export function load(id) {
  return db.get(id);
}

const save = async (item) => {
  await db.put(item);
};

class Cart {
  items = [];
  total = () => this.items.length;

  add(item) {
    function check(x) {
      return x != null;
    }
    if (check(item)) {
      this.items.push(item);
    }
  }

  static empty() {
    return new Cart();
  }
}

export default function () {
  return 1;
}
""",
        top=["function added_{n}(x) {", "  return x + {n};", "}"],
        member=["added_{n}(x) {", "  return {n};", "}"],
        comment="// note {n}",
        broken=["}", "{", "(", "'", "/* open", "class K {", "function (", "=> {", "`"]),
    "typescript": Edits(
        """\
export interface Item {
  id: string;
}

type Id = string | number;

enum Color {
  Red,
  Green,
}

namespace Util {
  export function pad(s: string): string {
    return s;
  }
}

@Component({ selector: 'x' })
export class Store<T> {
  private items: T[] = [];

  @Input()
  add(item: T): void {
    this.items.push(item);
  }

  get size(): number {
    return this.items.length;
  }
}

export const compute = (a: number): number => {
  return a * 2;
};

declare module "ext" {
  function hidden(): void;
}
""",
        top=["export function added_{n}(x: number): number {", "  return x + {n};", "}"],
        member=["added_{n}(): number {", "  return {n};", "}"],
        comment="// note {n}",
        broken=["}", "{", "(", "'", "/* open", "class K {", "@Dec()", "interface I {", "<"]),
    "go": Edits(
        """\
package store

import "errors"

type Repo struct {
\titems map[string]int
}

type (
\tID    string
\tSaver interface {
\t\tSave() error
\t}
)

func New() *Repo {
\treturn &Repo{items: map[string]int{}}
}

func (r *Repo) Save(id ID) error {
\tif id == "" {
\t\treturn errors.New("empty")
\t}
\treturn nil
}

func (r Repo) Len() int {
\treturn len(r.items)
}
""",
        top=["func added_{n}(x int) int {", "\treturn x + {n}", "}"],
        member=["\tx{n} := {n}", "\t_ = x{n}"],
        comment="// note {n}",
        broken=["}", "{", "(", '"', "/* open", "type (", "func (", "`"],
        member_kinds=("function", "method")),
    "rust": Edits(
        """\
use std::fmt;

#[derive(Debug)]
pub struct Point {
    x: i32,
}

pub enum Shape {
    Dot(Point),
}

pub trait Area {
    fn area(&self) -> f64;
}

impl Area for Point {
    #[inline]
    fn area(&self) -> f64 {
        0.0
    }
}

impl Point {
    pub fn new(x: i32) -> Self {
        fn helper() -> i32 {
            1
        }
        Point { x: x + helper() }
    }
}

mod inner {
    pub fn hidden() {}
}

macro_rules! square {
    ($x:expr) => {
        $x * $x
    };
}

fn main() {
    let p = Point::new(1);
}
""",
        top=["#[test]", "fn added_{n}() -> i32 {", "    {n}", "}"],
        member=["fn added_{n}(&self) -> i32 {", "    {n}", "}"],
        comment="// note {n}",
        broken=["}", "{", "fn (", "'", "/* open", "#[attr]", "impl X {", '"'],
        member_kinds=("impl", "trait")),
    "c": Edits(
        """\
#include <stdio.h>

#define MAX(a, b) ((a) > (b) ? (a) : (b))

struct point {
  int x;
  int y;
};

typedef struct {
  int w;
} size2;

enum color { RED, GREEN };

static int helper(int a) {
  return a + 1;
}

#ifdef DEBUG
void trace(const char *msg) {
  printf("%s", msg);
}
#else
void trace(const char *msg) {
}
#endif

int main(void) {
  return helper(1);
}
""",
        top=["int added_{n}(int x) {", "  return x + {n};", "}"],
        member=["  int f{n};"],
        comment="// note {n}",
        broken=["}", "{", "#ifdef X", "#endif", "/* open", "struct s {", '"', "int h(void) {"]),
    "cpp": Edits(
        """\
#include <vector>

namespace geo {

class Shape {
 public:
  virtual double area() const;
  int sides() const { return 0; }
};

struct Point {
  int x;
};

}  // namespace geo

double geo::Shape::area() const {
  return 0.0;
}

template <typename T>
T twice(T v) {
  return v + v;
}

void Widget::draw() {
}

namespace {
int hidden() { return 1; }
}
""",
        top=["void geo::added_{n}() {", "}", "namespace geo {", "int added_{n}() { return 1; }", "}"],
        member=["  int added_{n}() { return {n}; }"],
        comment="// note {n}",
        broken=["}", "{", "namespace geo {", "/* open", "class K {", "template <", '"']),
    "java": Edits(
        """\
package app;

import java.util.List;

public class Service {
  private final List<String> names;

  public Service(List<String> names) {
    this.names = names;
  }

  public int count() {
    return names.size();
  }

  static class Inner {
    void run() {
    }
  }
}

interface Greeter {
  String greet(String name);
}

enum Level {
  LOW,
  HIGH;

  int weight() {
    return 1;
  }
}

record Pair(int a, int b) {
  Pair {
    assert a < b;
  }
}
""",
        top=["class Added{n} {", "  int v() { return {n}; }", "}"],
        member=["int added{n}() {", "  return {n};", "}"],
        comment="// note {n}",
        broken=["}", "{", "class K {", '"', "/* open", "void m(", "@Override", "enum E {"],
        member_kinds=("class", "interface")),
    "ruby": Edits(
        """\
module Shop
  class Cart
    def initialize
      @items = []
    end

    def self.empty
      new
    end

    class << self
      def build
        new
      end
    end
  end

  def helper
    1
  end
end

def main
  Shop::Cart.new
end
""",
        top=["def added_{n}(x)", "  x + {n}", "end"],
        member=["def added_{n}", "  {n}", "end"],
        comment="# note {n}",
        broken=["end", "def", "class K", "module M", '"', "do |x|", "{", "=begin"],
        member_kinds=("class", "module")),
    "php": Edits(
        """\
<?php
namespace App;

function helper($x) {
    return $x + 1;
}

class Cart {
    private $items = [];

    public function add($item) {
        $this->items[] = $item;
    }
}

interface Shape {
    public function area();
}

if (!function_exists('legacy')) {
    function legacy() {
        return 0;
    }
}
""",
        top=["function added_{n}($x) {", "    return $x + {n};", "}"],
        member=["public function added_{n}() {", "    return {n};", "}"],
        comment="// note {n}",
        broken=["}", "{", "function (", "'", "/* open", "class K {", "<?php", "if ("],
        member_kinds=("class", "interface")),
}


def indent_of(line: bytes) -> bytes:
    return line[:len(line) - len(line.lstrip(b" \t"))]


def random_edit(rng: random.Random, language: str, source: bytes, n: int) -> bytes:
    """One line-level edit anywhere in `source`, aimed at its definitions more often than not:
    renaming one, adding, dropping, moving or copying one, touching its first or last line or
    a line inside, inserting comments, or breaking the syntax."""
    edits = EDITS[language]
    lines = git_lines(source)
    if lines and not lines[-1].endswith(b"\n"):
        lines[-1] += b"\n"
    found = extract_symbols(language, b"".join(lines))
    op = rng.choice(["comment", "touch_first", "touch_last", "touch_inside", "around", "add_top",
                     "add_member", "drop", "move", "copy", "rename", "rename", "break",
                     "delete_line"])
    comment = edits.comment.replace(b"{n}", b"%d" % n)
    if op in ("comment", "break", "delete_line") or not found:
        at = rng.randint(0, len(lines))
        if op == "delete_line" and lines:
            del lines[min(at, len(lines) - 1)]
        else:
            lines.insert(at, (rng.choice(edits.broken) if op == "break" else comment + b"\n"))
        return b"".join(lines)
    victim = rng.choice(found)
    first, last = victim.start_line - 1, victim.end_line - 1  # 0-based, inclusive
    last = min(last, len(lines) - 1)
    if op in ("touch_first", "touch_last", "touch_inside"):
        i = first if op == "touch_first" else last if op == "touch_last" else rng.randint(
            first, last)
        lines[i] = lines[i].rstrip(b"\n") + b" " + comment + b"\n"
    elif op == "around":  # a line right before the first or right after the last
        at = rng.choice([first, last + 1])
        lines.insert(at, indent_of(lines[min(at, len(lines) - 1)]) + comment + b"\n")
    elif op == "add_top":
        at = rng.choice([0, len(lines), first, last + 1])
        pad = indent_of(lines[first]) if at in (first, last + 1) else b""
        block = [pad + line.replace(b"{n}", b"%d" % n) + b"\n" for line in edits.top]
        lines[at:at] = block
    elif op == "add_member":
        victim = rng.choice([s for s in found if s.kind in edits.member_kinds] or [victim])
        first, last = victim.start_line - 1, min(victim.end_line - 1, len(lines) - 1)
        while first < last and not lines[first].rstrip().endswith((b"{", b":")) and \
                language != "ruby":
            first += 1  # past decorators, attributes, a brace on its own line
        pad = indent_of(lines[min(first + 1, len(lines) - 1)]) or indent_of(lines[first]) + b"  "
        lines[first + 1:first + 1] = [pad + line.replace(b"{n}", b"%d" % n) + b"\n"
                                      for line in edits.member]
    elif op == "drop":
        del lines[first:last + 1]
    elif op in ("move", "copy"):
        block = lines[first:last + 1]
        if op == "move":
            del lines[first:last + 1]
        # Next to a symbol at the same level: a method among methods, a function among functions.
        level = [s for s in extract_symbols(language, b"".join(lines))
                 if (s.parent < 0) == (victim.parent < 0)]
        target = rng.choice(level or [victim])
        at = min(rng.choice([target.start_line - 1, target.end_line]), len(lines))
        lines[at:at] = block
    elif op == "rename":
        pattern = re.compile(rb"(?<![\w$])" + re.escape(victim.name.encode()) + rb"(?![\w$])")
        for i in range(first, last + 1):
            if pattern.search(lines[i]):
                new_name = b"Renamed_%d" if victim.name[:1].isupper() else b"renamed_%d"
                lines[i] = pattern.sub(new_name % n, lines[i], count=1)
                break
    return b"".join(lines)


def next_version(rng: random.Random, language: str, history: list[bytes], clean: list[bytes],
                 step: int) -> bytes:
    """The next commit of a random history: edits of the last version (one to three hunks), or
    now and then a revert to an earlier version (large hunks), which after a version that does
    not parse is mostly a fix."""
    source = history[-1]
    if rng.random() < (0.05 if source in clean else 0.4):
        return rng.choice(clean if rng.random() < 0.8 else history)
    new = source
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        new = random_edit(rng, language, new, step)
    return new.rstrip(b"\n") if rng.random() < 0.1 else new


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("language", sorted(EDITS))
def test_reused_symbols_equal_a_full_extraction_over_random_edits(language, seed, monkeypatch):
    """Whatever the edit (a rename, definitions added, dropped or moved, their first or last line
    touched, the syntax broken and mended), the symbols copied from the old blob together with
    those walked are exactly those of a full parse and a full extraction."""
    copies = spy_on_copies(monkeypatch)
    rng = random.Random(f"reuse-{language}-{seed}")
    full_parser = get_parser(language)
    history = clean = [EDITS[language].base]
    assert extract_symbols(language, history[0])
    parser = SymbolParser()
    parser.symbols(language, "v0", history[0])
    for step in range(1, 201):
        source = history[-1]
        new = next_version(rng, language, history, clean, step)
        hunks = (git_hunks if step % 2 else difflib_hunks)(source, new)
        got = parser.symbols(language, f"v{step}", new, base=(f"v{step - 1}", hunks))
        assert got == extract_symbols(language, new), (step, new.decode(errors="replace"))
        history = [*history, new]
        if not full_parser.parse(new).root_node.has_error:
            clean = [*clean, new]
    assert len(clean) > 80  # most steps start from a tree without errors: they can copy
    assert len(copies) > 80  # and do


def test_renaming_a_class_renames_its_unchanged_methods():
    old = PY_EDGE
    new = old.replace(b"class Middle:", b"class Center:")
    parser = SymbolParser()
    parser.symbols("python", "old", old)
    got = parser.symbols("python", "new", new, base=("old", git_hunks(old, new)))
    assert got == extract_symbols("python", new)
    assert [s.qualname for s in got] == ["first", "Center", "Center.method", "last"]


def test_copied_symbols_are_shifted(monkeypatch):
    copies = spy_on_copies(monkeypatch)
    old = PY_EDGE
    new = b"import sys\nimport re\n" + old.replace(b"    return b * 2\n", b"    return b * 3\n")
    parser = SymbolParser()
    before = parser.symbols("python", "old", old)
    got = parser.symbols("python", "new", new, base=("old", git_hunks(old, new)))
    assert got == extract_symbols("python", new)
    assert copies  # first, Middle and its method were copied, not walked
    shifted = {s.qualname: (s.start_line, s.start_byte) for s in got}
    for s in before[:3]:
        assert shifted[s.qualname] == (s.start_line + 2, s.start_byte + len(b"import sys\nimport re\n"))


def test_a_namespace_defined_earlier_changes_an_unchanged_scoped_definition():
    """C++ `a::ns::f` is a method until a namespace a::ns is defined before it in the file: its
    kind depends on text far from it, so neither it nor a subtree holding it is copied."""
    old = b"namespace a {\nvoid ns::f() {\n}\n}\n\nvoid b::g() {\n}\n"
    new = b"namespace a { namespace ns { } }\nnamespace b { }\n" + old
    parser = SymbolParser()
    assert {s.qualname: s.kind for s in parser.symbols("cpp", "old", old)} == {
        "a": "namespace", "a.ns.f()": "method", "b.g()": "method"}
    got = parser.symbols("cpp", "new", new, base=("old", git_hunks(old, new)))
    assert got == extract_symbols("cpp", new)
    assert [(s.qualname, s.kind) for s in got if s.name in ("f", "g")] == [
        ("a.ns.f()", "function"), ("b.g()", "function")]


def test_an_unclosed_comment_changes_what_follows_without_editing_it():
    """Structure that changed beyond the edited lines (tree-sitter's changed ranges) is not
    copied: once the first comment loses its end, f and g are part of it."""
    old = (b"/* a */\nint f(void) { return 1; }\nint g(void) { return 2; } /* b */\n"
           b"int h(void) { return 3; }\n")
    parser = SymbolParser()
    parser.symbols("c", "old", old)
    for blob_id, new in (("open", old.replace(b"/* a */", b"/* a")), ("closed", old)):
        got = parser.symbols("c", blob_id, new, base=("old", git_hunks(old, new)))
        assert got == extract_symbols("c", new)
        old = new
    assert [s.name for s in extract_symbols("c", old.replace(b"/* a */", b"/* a"))] == ["h"]


# ---------------------------------------------------------------------------------------------
# languages.py


@pytest.mark.parametrize("path, language", [
    ("src/app.py", "python"), ("stubs/x.pyi", "python"), ("web/a.js", "javascript"),
    ("a.mjs", "javascript"), ("a.cjs", "javascript"), ("A.JSX", "javascript"),
    ("a.ts", "typescript"), ("a.mts", "typescript"), ("a.cts", "typescript"), ("ui/App.tsx", "tsx"),
    ("main.go", "go"), ("lib.rs", "rust"), ("Foo.java", "java"), ("x.c", "c"), ("x.h", "c"),
    ("x.cc", "cpp"), ("x.cpp", "cpp"), ("x.cxx", "cpp"), ("x.hpp", "cpp"), ("x.hh", "cpp"),
    ("x.hxx", "cpp"), ("app/models/user.rb", "ruby"), ("Rakefile", "ruby"),
    ("sub/Gemfile", "ruby"), ("index.php", "php"), ("C:\\src\\win.py", "python"),
    ("README.md", None), ("Makefile", None), (".py", None), ("archive.tar.gz", None), ("", None),
])
def test_language_for_path(path, language):
    assert language_for_path(path) == language


def test_every_supported_language_has_a_symbol_table():
    for language in SUPPORTED_LANGUAGES:
        assert extract_symbols(language, b"") == []


def test_languages_module_imports_nothing_heavy():
    path = Path(__file__).parent.parent / "cortex_core" / "lang" / "languages.py"
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('languages', {str(path)!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "print(sorted(m for m in sys.modules if m.startswith('tree_sitter')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# Reading a new version by regions (the old version's symbols cached, not its tree)

def region_parser(**kwargs) -> SymbolParser:
    """A parser that keeps no tree (as a worker's, once a file's tree was evicted): each new
    version is read by regions when it can be, in full otherwise."""
    return SymbolParser(tree_cache_bytes=1, keep_oversized=False, **kwargs)


LONG_MODULE = b'''\
"""Shapes."""
import math

RATIO = 2


def area(r):
    return math.pi * r * r


@register
@cache(size=3)
def perimeter(r):
    return 2 * math.pi * r


class Circle:
    """A circle."""

    def __init__(self, r):
        self.r = r

    def grow(self, by):
        def step(x):
            return x + by
        return Circle(step(self.r))


if RATIO > 1:
    def scaled(x):
        return x * RATIO


async def fetch(url):
    return url


def area(r):
    return r


square = lambda x: x * x


class Square:
    def side(self):
        return 1


def last(x):
    return x
'''


REGION_EDITS = [
    ("inside a method", lambda s: s.replace(b"return x + by", b"return x + by + 1")),
    ("a decorator", lambda s: s.replace(b"@cache(size=3)", b"@cache(size=4)\n@traced")),
    ("a new function between two", lambda s: s.replace(
        b"\n\nclass Circle:", b"\n\ndef area(r, s):\n    return r * s\n\n\nclass Circle:")),
    ("a function deleted", lambda s: s.replace(b"async def fetch(url):\n    return url\n", b"")),
    ("the imports", lambda s: s.replace(b"import math\n", b"import math\nimport cmath\n")),
    ("the end", lambda s: s + b"\n\ndef after(y):\n    return y\n"),
    ("a definition nested in an if", lambda s: s.replace(b"return x * RATIO",
                                                         b"return x * RATIO * 2")),
    ("two places", lambda s: s.replace(b"return 2 * math", b"return 3 * math")
     .replace(b"return 1", b"return 2")),
    ("a rename", lambda s: s.replace(b"def side(self)", b"def edge(self)")),
    ("no trailing newline", lambda s: s.replace(b"return x\n", b"return x")),
]


@pytest.mark.parametrize("name, edit", REGION_EDITS, ids=[n for n, _ in REGION_EDITS])
def test_a_version_read_by_regions_equals_a_full_parse(name, edit):
    new = edit(LONG_MODULE)
    assert new != LONG_MODULE
    parser = region_parser()
    parser.symbols("python", "old", LONG_MODULE)
    got = parser.symbols("python", "new", new, base=("old", git_hunks(LONG_MODULE, new)))
    assert got == extract_symbols("python", new)
    assert parser.region_count() == 1, name   # it was read by regions, not in full


def test_ordinals_are_counted_over_the_whole_file():
    """A second `area` inserted before the two there renumbers the ones after the region."""
    new = LONG_MODULE.replace(b"\n\nclass Circle:",
                              b"\n\ndef area(r, s):\n    return r * s\n\n\nclass Circle:")
    parser = region_parser()
    parser.symbols("python", "old", LONG_MODULE)
    got = parser.symbols("python", "new", new, base=("old", git_hunks(LONG_MODULE, new)))
    assert [s.qualname for s in got if s.name == "area"] == ["area", "area[2]", "area[3]"]
    assert parser.region_count() == 1


def test_regions_that_do_not_parse_cleanly_fall_back_to_a_full_parse():
    """An unterminated string opened inside a region runs into the text after it."""
    new = LONG_MODULE.replace(b"    return url\n", b'    return """url\n')
    parser = region_parser()
    parser.symbols("python", "old", LONG_MODULE)
    got = parser.symbols("python", "new", new, base=("old", git_hunks(LONG_MODULE, new)))
    assert got == extract_symbols("python", new)
    assert parser.region_count() == 0 and parser.parse_count() == 2


def test_an_old_version_with_errors_is_no_base_for_regions():
    broken = LONG_MODULE.replace(b"def last(x):", b"def last(x:")
    new = broken.replace(b"return x * RATIO", b"return x * RATIO * 2")
    parser = region_parser()
    parser.symbols("python", "old", broken)
    got = parser.symbols("python", "new", new, base=("old", git_hunks(broken, new)))
    assert got == extract_symbols("python", new)
    assert parser.region_count() == 0


def test_hunks_that_do_not_describe_the_change_are_not_trusted():
    """The text kept from the old version is checked byte for byte (by checksums): hunks that
    name the wrong lines cannot carry a stale symbol over."""
    new = LONG_MODULE.replace(b"def side(self)", b"def edge(self)")   # line 51
    wrong = [(8, 1, 8, 1)]   # claims an edit inside `area` instead
    parser = region_parser()
    parser.symbols("python", "old", LONG_MODULE)
    got = parser.symbols("python", "new", new, base=("old", wrong))
    assert got == extract_symbols("python", new)
    assert "Square.edge" in {s.qualname for s in got}
    assert parser.region_count() == 0


def test_a_region_ending_in_a_line_continuation_is_a_full_parse():
    """Found by review: `\\` at a region's end parses alone, and in the file joins the class
    after it (which the full parse then nests in the class before)."""
    pad = b"".join(b"\n\ndef k%d():\n    return %d\n" % (i, i) for i in range(10))
    old = b"class A:\n    x = 1\n\n\nclass B:\n    pass\n" + pad
    new = old.replace(b"class B:", b"    y = 2 \\\nclass B:")
    parser = region_parser()
    parser.symbols("python", "old", old)
    got = parser.symbols("python", "new", new, base=("old", git_hunks(old, new)))
    assert got == extract_symbols("python", new)
    assert [s.qualname for s in got[:2]] == ["A", "A.B"]
    assert parser.region_count() == 0


@pytest.mark.parametrize("old, new, hunks", [
    # A hunk three lines late: the region would start inside the body of `a`.
    (b"def a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n",
     b"def a():\n    return 1\n\n\n    return 2\n\n\ndef c():\n    return 3\n", [(7, 1, 6, 0)]),
    # One hunk three times: the text kept after it would overlap the text before.
    (b"def f(): pass\n" * 5, b"def f(): pass\n" * 2, [(3, 1, 3, 0)] * 3),
], ids=["late", "repeated"])
def test_hunks_found_by_review_to_mislead_regions_are_not_trusted(old, new, hunks):
    pad = b"".join(b"\n\ndef k%d():\n    return %d\n" % (i, i) for i in range(10))
    old, new = old + pad, new + pad
    parser = region_parser()
    parser.symbols("python", "old", old)
    got = parser.symbols("python", "new", new, base=("old", hunks))
    assert got == extract_symbols("python", new)
    assert parser.region_count() == 0


@pytest.mark.parametrize("share, regions", [(symbols_module._REGION_SHARE, 0), (1.0, 1)])
def test_regions_covering_most_of_the_file_are_a_full_parse(share, regions, monkeypatch):
    monkeypatch.setattr(symbols_module, "_REGION_SHARE", share)
    new = LONG_MODULE.replace(b"return ", b"return 0 or ")   # every definition
    parser = region_parser()
    parser.symbols("python", "old", LONG_MODULE)
    got = parser.symbols("python", "new", new, base=("old", git_hunks(LONG_MODULE, new)))
    assert got == extract_symbols("python", new)
    assert parser.region_count() == regions


def test_an_evicted_base_is_read_in_full():
    new = LONG_MODULE.replace(b"return x + by", b"return x + by + 1")
    parser = region_parser(cache_size=1)
    parser.symbols("python", "old", LONG_MODULE)
    parser.symbols("python", "other", b"def other():\n    pass\n")   # evicts "old"
    got = parser.symbols("python", "new", new, base=("old", git_hunks(LONG_MODULE, new)))
    assert got == extract_symbols("python", new)
    assert parser.region_count() == 0


@pytest.mark.parametrize("hunks", [difflib_hunks, git_hunks])
@pytest.mark.parametrize("seed", range(4))
def test_regions_over_random_valid_edits_equal_full_parses(seed, hunks):
    rng = random.Random(seed)
    parser = region_parser()
    source = LONG_MODULE
    parser.symbols("python", "v0", source)
    for step in range(1, 60):
        new = source
        for _ in range(rng.randint(1, 2)):
            new = valid_edit(rng, new, step)
        got = parser.symbols("python", f"v{step}", new, base=(f"v{step - 1}", hunks(source, new)))
        assert got == extract_symbols("python", new), (step, new.decode())
        source = new
    assert parser.region_count() >= 20   # most versions were read by regions


def test_regions_over_random_broken_edits_equal_full_parses():
    rng = random.Random("regions")
    parser = region_parser()
    source = LONG_MODULE
    pool = git_lines(source) + RANDOM_LINES + [b'"""\n', b"def g():\n", b"@d\n", b"class C:\n"]
    parser.symbols("python", "v0", source)
    for step in range(1, 120):
        if rng.random() < 0.5:   # a revert: back to a clean old version, often
            parser.symbols("python", f"v{step - 1}", LONG_MODULE)
            source = LONG_MODULE
        lines = git_lines(source)
        at = rng.randint(0, len(lines))
        lines[at:at + rng.randint(0, 2)] = [rng.choice(pool) for _ in range(rng.randint(0, 2))]
        new = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
        got = parser.symbols("python", f"v{step}", new, base=(f"v{step - 1}",
                                                              git_hunks(source, new)))
        assert got == extract_symbols("python", new), (step, new.decode())
        source = new
    assert parser.region_count() >= 20

"""From one commit's hunks and symbols to symbol changes: line credit, and the pairing of symbols
that disappeared with symbols that appeared, by fingerprints computed from the blobs' text."""

from __future__ import annotations

import pygit2
from hypothesis import given, strategies as st

import cortex_core.lang.symbol_changes as symbol_changes
from cortex_core.lang.similarity import token_similarity
from cortex_core.lang.symbol_changes import FileSymbols, match_commit, own_lines
from cortex_core.lang.symbols import Symbol, extract_symbols

CART = b"""\
import math


class Cart:
    def total(self, items):
        return sum(i.price * i.qty for i in items if i.qty > 0)

    def count(self, items):
        return len(items)


def load(user_id, cache):
    if user_id in cache:
        return cache[user_id]
    return math.floor(user_id)
"""


def hunks(old: bytes, new: bytes) -> list[tuple[int, int, int, int]]:
    patch = pygit2.Patch.create_from(old, new, context_lines=0)
    return [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]


def file_change(old: bytes, new: bytes, old_path: str = "a.py", new_path: str = "a.py") -> FileSymbols:
    return FileSymbols(old_path, new_path, extract_symbols("python", old),
                       extract_symbols("python", new), hunks(old, new), old, new,
                       "python", "python")


def summary(changes) -> list[tuple]:
    return sorted((c.change, c.symbol.qualname, c.from_symbol.qualname if c.from_symbol else None,
                   c.added, c.deleted) for c in changes)


def test_a_renamed_function_is_paired_by_its_fingerprint():
    new = CART.replace(b"def load(", b"def fetch(")
    assert summary(match_commit([file_change(CART, new)])) == [
        ("renamed", "fetch", "load", 1, 1), ("renamed", "load", None, 0, 1)]


def test_a_renamed_class_carries_its_methods():
    new = CART.replace(b"class Cart:", b"class Basket:")
    assert [row[:3] for row in summary(match_commit([file_change(CART, new)]))
            if row[2] is not None] == [
        # The methods' own code did not change: waypoints of their lineage.
        ("renamed", "Basket", "Cart"), ("rescoped", "Basket.count", "Cart.count"),
        ("rescoped", "Basket.total", "Cart.total")]


def test_a_function_moved_to_another_file_is_paired_by_its_fingerprint():
    load = CART[CART.index(b"def load("):]
    rest = CART[:CART.index(b"def load(")]
    moved_out = file_change(CART, rest, "cart.py", "cart.py")
    moved_in = file_change(b"", b"import math\n\n\n" + load.replace(b"load", b"get"), "store.py", "store.py")
    changes = summary(match_commit([moved_out, moved_in]))
    assert ("moved", "get", "load", 4, 4) in changes


def test_fingerprints_are_computed_only_for_symbols_that_appear_or_disappear(monkeypatch):
    hashed: list[str] = []
    real = symbol_changes.body_hash

    def spy(symbol: Symbol, source: bytes) -> str:
        hashed.append(symbol.qualname)
        return real(symbol, source)

    monkeypatch.setattr(symbol_changes, "body_hash", spy)
    new = CART.replace(b"return len(items)", b"return len(items) + 0").replace(
        b"def load(", b"def fetch(")
    changes = summary(match_commit([file_change(CART, new)]))
    assert ("body", "Cart.count", None, 1, 1) in changes
    assert sorted(hashed) == ["fetch", "load"]


def test_lines_are_credited_to_the_innermost_symbol():
    found = extract_symbols("python", CART)  # Cart 4-9, total 5-6, count 8-9, load 12-15
    assert own_lines(found, [(1, 2), (4, 4), (6, 8), (14, 20)]) == {
        "Cart": 2, "Cart.total": 1, "Cart.count": 1, "load": 2}
    assert own_lines(found, [(10, 11)]) == {}
    assert own_lines(found, []) == {}


def test_a_pair_of_unrelated_functions_is_compared_once_per_commit(monkeypatch):
    # Step 5 (one scope, similarity 0.6) and step 6 (any callables, 0.8) both look at `load`
    # gone and `report` born; the second asks a higher threshold of a pair known to be under
    # the first (sympy's largest generated tests took difflib 5 s a pair).
    compared: list[tuple[int, int, float]] = []
    real = symbol_changes.token_similarity

    def spy(a, b, at_least=0.0):
        compared.append((len(a), len(b), at_least))
        return real(a, b, at_least)

    monkeypatch.setattr(symbol_changes, "token_similarity", spy)
    load = CART[CART.index(b"def load("):]
    report = (b"def report(rows, out):\n    for r in rows:\n        out.write(str(r) + '\\n')\n"
              b"    out.flush()\n    return len(rows)\n")
    changes = summary(match_commit([file_change(CART, CART.replace(load, report))]))
    assert ("deleted", "load", None, 0, 4) in changes and ("added", "report", None, 5, 0) in changes
    assert [t for *_, t in compared] == [symbol_changes.SIMILAR]


TOKENS = st.lists(st.sampled_from(["a", "b", "(", ")", ",", "x"]), max_size=30)


@given(TOKENS, TOKENS, st.lists(st.sampled_from([0.0, 0.3, 0.5, 0.6, 0.8, 0.9, 1.0]),
                                min_size=1, max_size=5))
def test_a_remembered_similarity_answers_as_a_fresh_one(a, b, thresholds):
    def side(name: str) -> symbol_changes._Side:
        return symbol_changes._Side("a.py", Symbol(name, name, "function", 1, 1, -1, 0, 0), "",
                                    0, b"", "python")

    old, new = side("f"), side("g")
    old._masked, new._masked = tuple(a), tuple(b)
    for at_least in thresholds:
        fresh = token_similarity(tuple(a), tuple(b), at_least)
        remembered = symbol_changes._similarity(old, new, at_least)
        assert (remembered >= at_least) == (fresh >= at_least)
        if fresh >= at_least:
            assert remembered == fresh

"""From one commit's hunks and symbols to symbol changes: line credit, and the pairing of symbols
that disappeared with symbols that appeared, by fingerprints computed from the blobs' text."""

from __future__ import annotations

import pygit2
from hypothesis import given, strategies as st

import cortex_core.lang.symbol_changes as symbol_changes
from cortex_core.lang.change_kinds import masked
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


# fd's main -> run (bce9527): the body renamed and edited, a new main of a few lines
# taking its old name.
MAIN = b"""\
def main(argv):
    options = parse(argv)
    paths = [p for p in options.paths if p.exists()]
    if not paths:
        print("nothing to search")
        return 1
    found = 0
    for path in paths:
        for line in path.read_text().splitlines():
            if options.pattern in line:
                print(path, line)
                found += 1
    return 0 if found else 1
"""

MAIN_AND_RUN = b"""\
def main(argv):
    try:
        sys.exit(run(argv))
    except KeyboardInterrupt:
        sys.exit(130)


def run(argv):
    options = parse(argv)
    paths = [p for p in options.paths if p.exists()]
    if not paths:
        raise UsageError("nothing to search")
    found = 0
    for path in sorted(paths, key=str):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if options.pattern in line:
                print(f"{path}:{number}: {line}")
                found += 1
    return 0 if found else 1
"""
ONE_COMMAND = b"""\
def execute_command(cmd, out):
    child = spawn(cmd)
    output = child.wait_with_output()
    out.write(output.stdout)
    if output.status != 0:
        report(cmd, output.status)
        return False
    return True
"""

EACH_COMMAND = b"""\
def execute_commands(cmds, out, quiet):
    failed = []
    for cmd in cmds:
        child = spawn(cmd, stdin=None, quiet=quiet)
        output = child.wait_with_output(timeout=None)
        if not quiet and output.stdout:
            out.write(output.stdout.decode())
        if output.status != 0:
            failed.append((cmd, output.status))
    for cmd, status in failed:
        report(cmd, status)
    return not failed
"""


def masked_similarity(old: bytes, old_name: str, new: bytes, new_name: str) -> float:
    def code(source: bytes, name: str):
        s = next(s for s in extract_symbols("python", source) if s.qualname == name)
        return masked(source[s.start_byte:s.end_byte], "python", s.name)
    return token_similarity(code(old, old_name), code(new, new_name))


def test_a_function_renamed_behind_a_new_wrapper_of_its_old_name_is_followed():
    # Under the 0.9 of an extraction, but a near copy, and the new main kept little of the old.
    assert symbol_changes.RENAMED_MOVED_SIMILAR <= masked_similarity(
        MAIN, "main", MAIN_AND_RUN, "run") < symbol_changes.EXTRACT_SIMILAR
    assert masked_similarity(MAIN, "main", MAIN_AND_RUN, "main") <= symbol_changes.WRAPPER_KEPT
    changes = summary(match_commit([file_change(MAIN, MAIN_AND_RUN)]))
    assert [c[:3] for c in changes] == [("body", "main", None), ("renamed", "run", "main")]


def test_a_near_copy_is_no_extraction_when_the_old_function_kept_much_of_its_code():
    # asciinema's play -> _play: 0.874 of the code, but play kept 0.438 of it: two functions.
    half = MAIN_AND_RUN.replace(b"        sys.exit(run(argv))\n",
                                b"        options = parse(argv)\n        if not options.paths:\n"
                                b"            return 1\n        sys.exit(run(argv))\n")
    kept = masked_similarity(MAIN, "main", half, "main")
    assert symbol_changes.WRAPPER_KEPT < kept
    assert masked_similarity(MAIN, "main", half, "run") < max(symbol_changes.EXTRACT_SIMILAR,
                                                              kept + symbol_changes.EXTRACT_MARGIN)
    changes = summary(match_commit([file_change(MAIN, half)]))
    assert [c[:3] for c in changes] == [("added", "run", None), ("body", "main", None)]


# werkzeug 9bca0b8eab: a one-line method grew, and a new one-line method elsewhere looks like
# its old self.
SHORT_STR = b"""\
class Rule:
    def __str__(self) -> str:
        return self.rule
"""
LONGER_STR = b"""\
class Rule:
    def __str__(self) -> str:
        out = self.rule
        if self.map.subdomain_matching and self.subdomain:
            out = f"{self.subdomain} {out}"
        elif self.map.host_matching and self.host:
            out = f"{self.host} {out}"
        if self.websocket:
            out = f"{out} (websocket)"
        return out


class DuplicateRuleError:
    def __str__(self) -> str:
        return str(self.existing)
"""


def test_a_helper_nested_beside_the_edited_one_may_take_its_code():
    """scrapy's _onsuccess -> _onsuccess_per_item (28bb53fa22): two helpers of one function."""
    def nested(text: bytes) -> bytes:
        return b"".join(b"    " + line if line.strip() else line
                        for line in text.splitlines(keepends=True))
    old = b"def crawl(argv):\n" + nested(MAIN) + b"    return main(argv)\n"
    body = MAIN.replace(b"def main(argv):", b"def main_each(argv):")
    new = (b"def crawl(argv):\n" + nested(b"def main(argv):\n    return [main_each(a) for a in argv]\n\n"
           + body) + b"    return main(argv)\n")
    changes = summary(match_commit([file_change(old, new)]))
    assert ("renamed", "crawl.main_each", "crawl.main") in [c[:3] for c in changes]


def test_names_made_private_plural_or_unexported_need_less_of_the_code():
    # Each body edited as fd's execute_command was (0.5 to 0.6 alike); 60 in one commit, past
    # what a scope's matching compares (a review: 51 paired none), and Go's unexported form.
    old = b"".join(ONE_COMMAND.replace(b"execute_command", f"execute_{n}_command".encode())
                   + b"\n\n" for n in range(60))
    new = b"".join(EACH_COMMAND.replace(b"execute_commands", f"_execute_{n}_command".encode())
                   + b"\n\n" for n in range(60))
    assert 60 * 60 > symbol_changes.MAX_CANDIDATES
    pairs = {(c.from_symbol.name, c.symbol.name) for c in match_commit([file_change(old, new)])
             if c.from_symbol is not None}
    assert pairs == {(f"execute_{n}_command", f"_execute_{n}_command") for n in range(60)}
    for old_name, new_name in (("run_entry", "run_entries"), ("RunCommand", "runCommand")):
        renamed = EACH_COMMAND.replace(b"def execute_commands(", f"def {new_name}(".encode())
        original = ONE_COMMAND.replace(b"def execute_command(", f"def {old_name}(".encode())
        changes = summary(match_commit([file_change(original, renamed)]))
        assert ("renamed", new_name, old_name) in [c[:3] for c in changes]


# A review: `load` became a wrapper of a new `_load`, its old code verbatim, while an unrelated
# `_loads` was deleted; the near names took `_load` first (0.55).
STORE = b"""\
class Store:
    def load(self, key):
        path = self.root / key
        if not path.exists():
            raise KeyError(key)
        data = path.read_bytes()
        if self.compress:
            data = zlib.decompress(data)
        return pickle.loads(data)

    def _loads(self, data):
        if not data:
            raise ValueError(data)
        if self.compress:
            data = zlib.decompress(data)
        self.hits += 1
        log.debug('loaded %d bytes', len(data))
        return json.loads(data, object_hook=self.hook)
"""
STORE_WRAPPED = b"""\
class Store:
    def load(self, key):
        return self._load(key)

    def _load(self, key):
        path = self.root / key
        if not path.exists():
            raise KeyError(key)
        data = path.read_bytes()
        if self.compress:
            data = zlib.decompress(data)
        return pickle.loads(data)
"""


def test_an_extraction_keeps_its_copy_from_a_near_name():
    changes = summary(match_commit([file_change(STORE, STORE_WRAPPED)]))
    assert [c[:3] for c in changes] == [("body", "Store.load", None),
                                        ("deleted", "Store._loads", None),
                                        ("renamed", "Store._load", "Store.load")]


def test_a_function_that_grew_is_no_wrapper():
    kept = masked_similarity(SHORT_STR, "Rule.__str__", LONGER_STR, "Rule.__str__")
    assert kept <= symbol_changes.WRAPPER_KEPT   # it kept little of its code, but it grew
    assert symbol_changes.RENAMED_MOVED_SIMILAR <= masked_similarity(
        SHORT_STR, "Rule.__str__", LONGER_STR, "DuplicateRuleError.__str__") < \
        symbol_changes.EXTRACT_SIMILAR
    changes = summary(match_commit([file_change(SHORT_STR, LONGER_STR)]))
    assert ("added", "DuplicateRuleError.__str__", None) in [c[:3] for c in changes]


def test_a_name_made_plural_needs_less_of_the_code():
    # fd's execute_command -> execute_commands (9fb0c5d): the body wrapped in a loop.
    similarity = masked_similarity(ONE_COMMAND, "execute_command", EACH_COMMAND,
                                   "execute_commands")
    assert symbol_changes.MOVED_SIMILAR <= similarity < symbol_changes.SIMILAR
    changes = summary(match_commit([file_change(ONE_COMMAND, EACH_COMMAND)]))
    assert [c[:3] for c in changes] == [("renamed", "execute_command", None),
                                        ("renamed", "execute_commands", "execute_command")]
    # Another name holding the old one, the same code: a deletion and an addition, as before.
    other = EACH_COMMAND.replace(b"def execute_commands(", b"def retry_execute_command(")
    changes = summary(match_commit([file_change(ONE_COMMAND, other)]))
    assert [c[:3] for c in changes] == [("added", "retry_execute_command", None),
                                        ("deleted", "execute_command", None)]


# mockito 59889347d4: a test's assertions moved into a class nested in the test.
ONE_TEST = b"""\
def test_warns():
    result = run(["--strict", "a.txt"])
    assert result.code == 1
    assert "unused" in result.err
"""
TEST_WITH_A_CHECK = b"""\
def test_warns():
    def check():
        result = run(["--strict", "a.txt"])
        assert result.code == 1
        assert "unused" in result.err
    for flags in (["--strict"], ["--strict", "--quiet"], ["-s"]):
        for name in ("a.txt", "b.txt", "c d.txt"):
            path = tmp / name
            path.write_text("x = 1\\n")
            check()
            assert path.read_text() == "x = 1\\n"
            assert not (tmp / (name + ".bak")).exists()
"""


def test_code_moved_into_a_definition_nested_in_its_function_is_no_extraction():
    assert masked_similarity(ONE_TEST, "test_warns", TEST_WITH_A_CHECK, "test_warns.check") >= \
        symbol_changes.EXTRACT_SIMILAR
    changes = summary(match_commit([file_change(ONE_TEST, TEST_WITH_A_CHECK)]))
    assert [c[:3] for c in changes] == [("added", "test_warns.check", None),
                                        ("body", "test_warns", None)]
    # Nor is it when twin files change alike (mockito's two mock makers, 779b019b66): each
    # nested definition was taken for the other file's extraction.
    twins = match_commit([file_change(ONE_TEST, TEST_WITH_A_CHECK, "a.py", "a.py"),
                          file_change(ONE_TEST, TEST_WITH_A_CHECK, "b.py", "b.py")])
    assert sorted((c.path, c.change, c.symbol.qualname, c.from_symbol) for c in twins) == [
        ("a.py", "added", "test_warns.check", None), ("a.py", "body", "test_warns", None),
        ("b.py", "added", "test_warns.check", None), ("b.py", "body", "test_warns", None)]


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

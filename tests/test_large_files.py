"""Large source files: parsed for symbol history up to [index] max_file_bytes (10 MB by default);
beyond it, every place that shows the reason names the limit and the setting that raises it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cortex_core.query.blame import last_change_of_line
from cortex_core.config import IndexSettings, Settings
from cortex_core.query.history import history
from cortex_core.query.status import status
from cortex_core.query.targets import TargetSpec

from scripted_repo import ScriptedRepo


def cortex_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_cli.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def generated(functions: int, changed: dict[int, str] | None = None) -> str:
    """Generated-looking but legitimate Python: many small functions, five lines each."""
    changed = changed or {}
    return "".join(f"def handler_{i}(value, scale=2):\n    total = value * scale + {i}\n"
                   f"    return total{changed.get(i, '')}\n\n\n" for i in range(functions))


def test_functions_of_a_100k_line_file_have_histories(repo: ScriptedRepo):
    repo.write("big.py", generated(20_000))
    assert (repo.path / "big.py").read_text().count("\n") == 100_000
    repo.commit("Generate the handlers", days_ago=3)
    repo.write("big.py", generated(20_000, {10: " + 1", 19_999: " - 1"}))
    repo.commit("Tune two handlers", days_ago=1)
    indexed = cortex_cli("index", cwd=repo.path)
    assert indexed.returncode == 0, indexed.stderr
    assert "0 at file level only" in indexed.stdout

    proc = cortex_cli("history", "big.py::handler_19999", cwd=repo.path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("big.py::handler_19999  (function, lines 99996-99998)  —  2 commits")
    # Its birth too: a whole file added is not held to max_diff_lines (20,000 changed lines).
    assert "Tune two handlers" in lines[1] and lines[1].rstrip().endswith("body")
    assert "Generate the handlers" in lines[2] and lines[2].rstrip().endswith("added")
    untouched = cortex_cli("history", "big.py::handler_5", "--json", cwd=repo.path)
    entries = json.loads(untouched.stdout)["entries"]
    assert [e["commit"]["subject"] for e in entries] == ["Generate the handlers"]


def write_config(repo: ScriptedRepo, text: str) -> None:
    (repo.path / ".cortex").mkdir(exist_ok=True)
    (repo.path / ".cortex" / "config.toml").write_text(text)


def test_a_file_over_the_limit_says_which_setting_raises_it(repo: ScriptedRepo):
    limit = 5_000
    body = "def f():\n    return 1\n\n\n"
    repo.write("under.py", body + "#" * (limit - len(body) - 1) + "\n")       # exactly the limit
    repo.write("over.py", body + "#" * (limit - len(body)) + "\n")            # one byte over
    repo.commit("Add two files at the limit")
    assert (repo.path / "under.py").stat().st_size == limit
    assert (repo.path / "over.py").stat().st_size == limit + 1
    write_config(repo, f"[index]\nmax_file_bytes = {limit}\n")
    assert cortex_cli("index", cwd=repo.path).returncode == 0

    hint = ("over 5 kB; raise [index] max_file_bytes in .cortex/config.toml, then rebuild the "
            "index")
    shown = cortex_cli("status", cwd=repo.path).stdout
    assert f"  too large             1 files at HEAD        1 changes in history  ({hint})" \
        in shown.splitlines()
    assert "python            1 files        1 symbols" in shown          # under.py is parsed

    assert cortex_cli("history", "under.py::f", cwd=repo.path).returncode == 0
    missing = cortex_cli("history", "over.py::f", cwd=repo.path)
    assert missing.returncode != 0
    assert missing.stderr.strip() == (f"cortex: no symbol 'f' in over.py: the file is recorded at "
                                      f"file level only, too large ({hint})")
    file_level = cortex_cli("history", "over.py", cwd=repo.path).stdout.splitlines()
    assert file_level[1] == f"note: recorded at file level only, too large ({hint})"


def test_limit_reasons_in_the_engine_results(repo: ScriptedRepo, cortex, tmp_path: Path):
    """What the language server's hover and MCP read: the status result and the line origin."""
    repo.write("gen.txt", "filler line\n" * 2_000)
    repo.commit("Too big for the lowered limit")
    repo.write("gen.txt", "one\ntwo\n")
    repo.commit("Small again")
    cortex.index(Settings(index=IndexSettings(max_file_bytes=10_000, max_diff_lines=1_000)),
                 model="none")
    con = cortex.reader()
    (skip,) = status(con, cortex.db).skipped
    # Added too large; the edit from it reads the file again ("was too large"), not its diff.
    assert (skip.reason, skip.files_at_head, skip.changes_in_history) == ("too large", 0, 1)
    assert skip.explanation.startswith("over 10 kB; raise [index] max_file_bytes")
    origin = last_change_of_line(con, "gen.txt", 2)
    assert origin.commit is None
    assert origin.reason.endswith("was not recorded (its previous version was too large): "
                                  "over 10 kB; raise [index] "
                                  "max_file_bytes in .cortex/config.toml, then rebuild "
                                  "the index")
    # An index built before the limits were recorded names the setting without a number.
    con.close()
    import apsw
    writer = apsw.Connection(str(cortex.db))
    writer.execute("delete from meta where key = 'index_limits'")
    writer.close()
    con = cortex.reader()
    assert status(con, cortex.db).skipped[0].explanation.startswith(
        "raise [index] max_file_bytes in .cortex/config.toml")
    assert history(con, TargetSpec("gen.txt")).note is None   # small at HEAD: no note


def test_tree_cache_bounded_by_text_still_gives_full_parse_symbols():
    """Trees evicted for their size: the next version is parsed in full, with the same symbols;
    the newest tree is kept whatever its size, so its successor is still parsed incrementally."""
    from cortex_core.lang.symbols import SymbolParser, extract_symbols
    parser = SymbolParser(tree_cache_bytes=100)
    a, b = generated(30).encode(), generated(40).encode()
    parser.symbols("python", "a", a)
    parser.symbols("python", "b", b)                       # over the budget: a's tree goes
    a2 = generated(30, {3: " + 1"}).encode().replace(b"def handler_29", b"def renamed_29")
    b2 = generated(40, {7: " - 1"}).encode()
    # b's tree is the newest: b2 is parsed incrementally; a's was evicted: a2 is parsed in full.
    assert parser.symbols("python", "b2", b2, ("b", [(38, 1, 38, 1)])) == \
        extract_symbols("python", b2)
    hunks = [(18, 1, 18, 1), (146, 1, 146, 1)]             # handler_3's return, handler_29's def
    assert parser.symbols("python", "a2", a2, ("a", hunks)) == extract_symbols("python", a2)
    assert "renamed_29" in {s.qualname for s in parser.symbols("python", "a2", a2)}


def test_a_parser_within_a_share_keeps_no_tree_over_its_bound_and_can_forget():
    """A worker's parser (keep_oversized=False) does not keep a tree bigger than its cache
    allows: a big file's old tree alive beside its new one doubles what a commit takes. Its
    successor is parsed in full, with the same symbols. forget() empties both caches."""
    from cortex_core.lang.symbols import SymbolParser, extract_symbols
    parser = SymbolParser(tree_cache_bytes=100, keep_oversized=False)
    b = generated(40).encode()
    parser.symbols("python", "b", b)
    assert not parser._trees and parser.parse_count() == 1
    b2 = generated(40, {7: " - 1"}).encode()
    assert parser.symbols("python", "b2", b2, ("b", [(38, 1, 38, 1)])) == \
        extract_symbols("python", b2)
    parser.symbols("python", "b", b)                       # still in the symbols cache
    assert parser.parse_count() == 2
    parser.forget()
    parser.symbols("python", "b", b)                       # parsed again
    assert parser.parse_count() == 3

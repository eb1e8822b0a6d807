"""What a short command loads: `cortex history` imports only what it needs (issue 17, item 5).

The time it takes is measured by bench/bench_start.py, not here: these tests look at which modules
a real `cortex history` process imports (`python -X importtime`), and at the command line that
builds only the parser of the command asked for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scripted_repo import ScriptedRepo, sample_core, sample_use  # noqa: E402

from cortex_core.config import Settings  # noqa: E402
from cortex_core.index.ingest import index_repository  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent
# Imported by indexing, vectors, areas, the language server or MCP; never by a history query.
HEAVY = ("numpy", "scipy", "model2vec", "tree_sitter", "tree_sitter_language_pack", "pygls",
         "lsprotocol", "mcp", "pydantic", "pygit2", "tomllib")


@pytest.fixture
def indexed(tmp_path: Path) -> ScriptedRepo:
    repo = ScriptedRepo(tmp_path / "widgets")
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", sample_core(1))
    repo.write("pkg/use.py", sample_use())
    repo.commit("add the core")
    repo.write("pkg/core.py", sample_core(2))
    repo.commit("tune compute", days_ago=2)
    index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(), model="none")
    return repo


def python(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=str(PROJECT),
                                                CORTEX_MODEL="none"))


def imported(stderr: str) -> set[str]:
    """The modules named by `python -X importtime`'s report."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and "|" in line and "self [us]" not in line}


def line_of(path: Path, needle: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_history_imports_nothing_heavy(indexed: ScriptedRepo):
    line = line_of(indexed.path / "pkg/core.py", "def compute")
    proc = python("-X", "importtime", "-P", "-m", "cortex_core", "history", f"pkg/core.py:{line}",
                  cwd=indexed.path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "tune compute" in proc.stdout and "add the core" in proc.stdout
    modules = imported(proc.stderr)
    assert {"cortex_cli.cli", "cortex_core.query.history", "cortex_core.store.store",
            "apsw"} <= modules
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == [], heavy
    # Nor the modules of other commands.
    others = {"cortex_core.index.ingest", "cortex_core.memory.embeddings",
              "cortex_core.memory.search", "cortex_core.query.coupling",
              "cortex_core.index.structure", "cortex_core.config"}
    assert modules.isdisjoint(others), sorted(modules & others)
    # Nor what the parser's help formatter (shutil), a store id (secrets) or commit
    # classification and lexing (difflib) would bring in.
    assert modules.isdisjoint({"shutil", "secrets", "difflib"}), sorted(
        modules & {"shutil", "secrets", "difflib"})


def test_history_json_imports_nothing_heavy_either(indexed: ScriptedRepo):
    proc = python("-X", "importtime", "-P", "-m", "cortex_core", "history", "pkg/core.py::compute",
                  "--json", cwd=indexed.path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"qualname": "compute"' in proc.stdout
    assert not [m for m in imported(proc.stderr) if m.split(".")[0] in HEAVY]


def test_a_search_with_vectors_imports_only_what_the_query_needs(tmp_path: Path, tiny_model):
    """No model2vec, numpy or pygit2; nor what only indexing (hashlib), a long query
    (statistics) or a config file (tomllib) needs."""
    repo = ScriptedRepo(tmp_path / "w")
    repo.write("client.py", "def fetch(url):\n    return get(url, timeout=30)\n")
    repo.commit("Fix timeout in fetch")
    index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(), model=tiny_model)
    proc = python("-X", "importtime", "-P", "-m", "cortex_core", "search", "deadline",
                  cwd=repo.path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Fix timeout in fetch" in proc.stdout and "semantic search off" not in proc.stdout
    modules = imported(proc.stderr)
    assert "cortex_core.memory.query_encoder" in modules        # the query was embedded
    heavy = sorted(m for m in modules
                   if m.split(".")[0] in HEAVY + ("hashlib", "statistics"))
    assert heavy == [], heavy


def test_a_search_with_a_wordpiece_model_does_not_load_the_tokenizer(tmp_path: Path,
                                                                     tiny_wordpiece_model):
    """The store keeps a copy of a BERT tokenizer's vocabulary (memory/wordpiece.py), so that
    `tokenizers` (and its 30,000-token JSON) is not loaded for an ASCII query; a query it cannot
    promise the same ids for still gets its vector, from `tokenizers`."""
    repo = ScriptedRepo(tmp_path / "w")
    repo.write("client.py", "def fetch(url):\n    return get(url, timeout=30)\n")
    repo.commit("Fix timeout in fetch")
    index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(),
                     model=tiny_wordpiece_model)
    for query, loads in (("deadline hangs", False), ("deadline café", True)):
        proc = python("-X", "importtime", "-P", "-m", "cortex_core", "search", query, "--mode",
                      "vector", cwd=repo.path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "Fix timeout in fetch" in proc.stdout
        assert ("tokenizers" in imported(proc.stderr)) is loads, query


def test_the_parser_of_one_command_and_of_all(indexed: ScriptedRepo):
    cwd = indexed.path
    version = python("-m", "cortex_core", "--version", cwd=cwd)
    assert version.returncode == 0 and version.stdout.startswith("cortex ")
    every = python("-m", "cortex_core", "--help", cwd=cwd)
    assert every.returncode == 0
    for name in ("index", "history", "hotspots", "search", "note", "mcp", "hooks"):
        assert f"\n    {name}" in every.stdout, name
    one = python("-m", "cortex_core", "hotspots", "--help", cwd=cwd)
    assert one.returncode == 0 and "--clock {repository,wall}" in one.stdout
    typo = python("-m", "cortex_core", "histroy", "x", cwd=cwd)
    assert typo.returncode == 2 and "invalid choice: 'histroy'" in typo.stderr
    assert "'history'" in typo.stderr          # the full list of commands, as before
    bad = python("-m", "cortex_core", "history", cwd=cwd)
    assert bad.returncode == 2 and "cortex history: error:" in bad.stderr
    nested = python("-m", "cortex_core", "note", "list", "--json", cwd=cwd)
    assert nested.returncode == 0 and nested.stdout.strip() == "[]"


def test_help_is_as_wide_as_columns_says(indexed: ScriptedRepo):
    """The help formatter's width (read without shutil) follows COLUMNS as argparse's does."""
    widths, lines = {}, {}
    for columns in ("40", "120"):
        proc = subprocess.run([sys.executable, "-m", "cortex_core", "hotspots", "--help"],
                              cwd=indexed.path, capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, PYTHONPATH=str(PROJECT), COLUMNS=columns))
        assert proc.returncode == 0, proc.stderr
        widths[columns] = max(map(len, proc.stdout.splitlines()))
        lines[columns] = len(proc.stdout.splitlines())
    # argparse wraps to COLUMNS - 2 (the usage's unbreakable options may stick out at 40).
    assert widths["40"] < widths["120"] <= 118 and lines["40"] > lines["120"], (widths, lines)


def test_index_runs_with_a_safe_path(indexed: ScriptedRepo):
    """`python -P -m cortex_core index` (what the language server and the hooks run)."""
    indexed.write("pkg/core.py", sample_core(3))
    indexed.commit("tune compute again", days_ago=1)
    proc = python("-P", "-m", "cortex_core", "index", "-q", "--model", "none", cwd=indexed.path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "indexed 1 new commit" in proc.stdout
    history = python("-P", "-m", "cortex_core", "history", "pkg/core.py::compute", cwd=indexed.path)
    assert "tune compute again" in history.stdout

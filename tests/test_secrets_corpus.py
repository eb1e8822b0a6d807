"""No secret leaves the store: one example of every kind, in code, in a removed diff line, in a
commit message and in a note, read back through search, context packs, hovers and MCP answers.

The repository is real (git CLI), indexed by the real `cortex index`, notes are written with the
real `cortex note add`; search and packs go through the CLI, hovers through a real language server
(pytest-lsp), MCP answers through a real `cortex mcp` and the MCP SDK's client. Each answer must
hold no raw value (nor its unescaped core) and must hold the `[REDACTED:<kind>]` marker.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

sys.path.insert(0, str(Path(__file__).parent))

from ls_harness import Session  # noqa: E402
from scripted_repo import ScriptedRepo  # noqa: E402
from secret_corpus import EXAMPLES  # noqa: E402
from test_mcp import ok, server, text  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent
SETTINGS = "app/settings.py"


def cortex(*args: str, cwd: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "cortex_cli.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(PROJECT), CORTEX_MODEL="none"))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def function(i: int, line: str, old: bool) -> str:
    """kind_<i>: the secret's line as code; with `old`, a previous value that a commit removes."""
    body = "".join(f"    {ln}\n" if n == 0 else f"{ln}\n" for n, ln in enumerate(line.split("\n")))
    stale = f"    OLD = {line.split(' = ', 1)[-1]!r}\n" if old else ""
    return f"def kind_{i:02d}():\n{stale}{body}    return None\n\n\n"


def one_line(example) -> str:
    return example.line.replace("\n", " ")


def settings_file(old: set[int]) -> str:
    return "".join(function(i, e.line, i in old) for i, e in enumerate(EXAMPLES))


@pytest.fixture(scope="module")
def corpus_repo(tmp_path_factory) -> ScriptedRepo:
    """Every example in code at HEAD, in a removed line (of its function, and of a deleted file),
    in a commit message (subject and body) and in a note on its function."""
    repo = ScriptedRepo(tmp_path_factory.mktemp("secrets") / "shop")
    pending = set(range(len(EXAMPLES)))
    repo.write("app/__init__.py", "")
    repo.write(SETTINGS, settings_file(pending))
    repo.write("app/legacy.py",
               "".join(f"LEGACY_{i} = {e.line!r}\n" for i, e in enumerate(EXAMPLES)))
    repo.commit("corpus: add the settings", days_ago=60)
    for i, e in enumerate(EXAMPLES):
        pending.discard(i)
        repo.write(SETTINGS, settings_file(pending))
        repo.commit(f"corpus rotate kind_{i:02d}: {one_line(e)}\n\n"
                    f"The previous value was {e.line} and it is gone.", days_ago=50 - i / 2)
    repo.remove("app/legacy.py")
    repo.commit("corpus: drop the legacy settings", days_ago=1)
    cortex("index", "--model", "none", cwd=repo.path)
    # Three notes one by one, the rest in one import: a CLI start per note would take a minute.
    by_hand = {0, len(EXAMPLES) // 2, len(EXAMPLES) - 1}
    for i in sorted(by_hand):
        cortex("note", "add", f"{SETTINGS}::kind_{i:02d}", note_text(EXAMPLES[i]), cwd=repo.path)
    now = int(repo.now)
    export = {"notes": [{"id": i + 1, "target": f"{SETTINGS}::kind_{i:02d}", "text": note_text(e),
                         "author": "Ann", "valid_from": now - 3600, "recorded_at": now - 3600}
                        for i, e in enumerate(EXAMPLES) if i not in by_hand]}
    (repo.path.parent / "notes.json").write_text(json.dumps(export))
    cortex("note", "import", str(repo.path.parent / "notes.json"), cwd=repo.path)
    return repo


def note_text(example) -> str:
    return f"corpus note: {example.line}"


def unescaped(answer: str) -> str:
    """An answer with markdown's backslash escapes and JSON's string escapes undone, so that an
    escaped secret (sk\\_live\\_…) is still seen."""
    return re.sub(r"\\(.)", r"\1", answer)


WINDOW = 16  # no 16 characters of a secret in a row: a clipped secret leaks too


def assert_no_secret(answer: str, examples, where: str, markers: bool = True) -> None:
    plain = unescaped(answer)
    for e in examples:
        for start in range(max(1, len(e.needle) - WINDOW + 1)):
            part = e.needle[start:start + WINDOW]
            assert part not in answer and part not in plain, f"{e.kind} leaks in {where}: {part}"
        if markers:
            assert f"[REDACTED:{e.kind}]" in plain, f"no {e.kind} marker in {where}"


def test_the_corpus_is_where_it_should_be(corpus_repo: ScriptedRepo):
    # The secrets are really there: in code at HEAD, in removed lines, in messages, in notes.
    code = (corpus_repo.path / SETTINGS).read_text()
    removed = corpus_repo.git("log", "-p", "--format=", "--", "app/legacy.py")
    messages = corpus_repo.git("log", "--format=%B")
    notes = cortex("note", "list", "--json", cwd=corpus_repo.path)
    for e in EXAMPLES:
        assert e.value in code
        assert f"-LEGACY_{EXAMPLES.index(e)} = " in removed
        assert e.line.split("\n")[0] in messages
        assert e.needle not in notes                      # notes are redacted when written
    assert notes.count("corpus note") == len(EXAMPLES)


def test_search_shows_markers_not_secrets(corpus_repo: ScriptedRepo):
    answer = cortex("search", "corpus", "--top-k", "100", "--mode", "lexical", "--json",
                    cwd=corpus_repo.path)
    kinds = {hit["kind"] for hit in json.loads(answer)["hits"]}
    assert kinds == {"commit", "note"}
    assert_no_secret(answer, EXAMPLES, "cortex search --json")
    readable = cortex("search", "corpus", "--top-k", "100", "--mode", "lexical",
                      cwd=corpus_repo.path)
    # The readable list clips each text: a marker may be clipped, a secret never shows.
    assert_no_secret(readable, EXAMPLES, "cortex search", markers=False)
    assert readable.count("[REDACTED:") >= len(EXAMPLES)


def test_context_packs_show_markers_not_secrets(corpus_repo: ScriptedRepo):
    # The file's pack: its history and its notes (the code of every function is in the MCP test).
    pack = cortex("context", "--at", SETTINGS, "--budget", "60000", cwd=corpus_repo.path)
    assert pack.count("[note #") == len(EXAMPLES)
    assert_no_secret(pack, EXAMPLES, "the file's pack")
    for i in (0, len(EXAMPLES) // 2, len(EXAMPLES) - 1):
        pack = cortex("context", "corpus rotate", "--at", f"{SETTINGS}::kind_{i:02d}",
                      "--budget", "8000", "--format", "json", cwd=corpus_repo.path)
        assert f"def kind_{i:02d}" in pack                 # the code is in
        assert_no_secret(pack, [EXAMPLES[i]], f"the pack of kind_{i:02d}")


async def test_mcp_answers_show_markers_not_secrets(corpus_repo: ScriptedRepo):
    async with server("--repo", str(corpus_repo.path)) as client:
        found = text(await ok(client, "search_memory", query="corpus", top_k=100))
        assert_no_secret(found, EXAMPLES, "search_memory")
        for i, e in enumerate(EXAMPLES):
            target = f"{SETTINGS}::kind_{i:02d}"
            pack = text(await ok(client, "context_pack", focus=target, budget=4000))
            assert f"def kind_{i:02d}" in pack
            assert_no_secret(pack, [e], f"context_pack of kind_{i:02d}")
            history = text(await ok(client, "symbol_history", target=target))
            assert_no_secret(history, [e], f"symbol_history of kind_{i:02d}")


async def test_hovers_show_markers_not_secrets(client: LanguageClient, corpus_repo: ScriptedRepo):
    lsp = Session(client)
    await lsp.start(corpus_repo.path, options={"historyLength": 5})
    path = corpus_repo.path / SETTINGS
    lines = path.read_text().splitlines()
    uri = lsp.open(path)
    for i, e in enumerate(EXAMPLES):
        row = lines.index(f"def kind_{i:02d}():")
        hover = await lsp.hover(uri, row, 5)
        assert hover and f"kind_{i:02d}" in hover
        # The subject, the reason and the note each held the secret.
        assert_no_secret(hover, [e], f"the hover of kind_{i:02d}")
        assert "corpus note" in hover

"""Context packs: a hard token budget (property-based), citations on every item, and no secret from
the history ever leaving the store."""

from __future__ import annotations

import json
import re
import string

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cortex_core.config import Settings
from cortex_core.context_pack import PackItem, build_pack, count_tokens, pack
from cortex_core.errors import CortexError
from cortex_core.ingest import index_repository
from cortex_core.store import open_reader
from scripted_repo import ScriptedRepo


def test_the_token_counter_is_documented_and_additive():
    assert count_tokens("") == 0
    assert count_tokens("fix the getUserById() crash") == 1 + 1 + 3 + 1 + 1 + 2
    a, b = "## [abc1234] Fix: x", "text, with (punctuation)"
    assert count_tokens(a + "\n\n" + b) == count_tokens(a) + count_tokens(b)


def test_greedy_packing_by_utility_per_token_with_alternatives():
    items = [PackItem("focus", "f", "x " * 300, "a.py:1", 1.0, group="focus"),
             PackItem("focus", "f (signature)", "def f():", "a.py:1", 0.6, group="focus"),
             PackItem("history", "Fix it", "short", "abc", 0.7),
             PackItem("history", "Dup", "short", "abc", 0.2)]
    small = pack("f", items, 40)
    assert [i.title for i in small.items] == ["f (signature)", "Fix it"]   # code too big
    big = pack("f", items, 1000)
    assert [i.title for i in big.items] == ["f", "Fix it"]                # never both
    assert big.used == count_tokens(big.text) <= 1000
    with pytest.raises(CortexError, match="below the"):
        pack("a long subject " * 20, items, 5)
    with pytest.raises(CortexError, match="unknown format"):
        pack("f", items, 100, "yaml")


WORDS = ["timeout", "cache", "retry", "parse", "login", "fix", "crash", "fetch", "memo", "deadline"]


@st.composite
def histories(draw):
    """A small random history: files with functions, commits that edit them with random words."""
    n_files = draw(st.integers(1, 3))
    commits = []
    for _ in range(draw(st.integers(1, 5))):
        f = draw(st.integers(0, n_files - 1))
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))
        body = draw(st.text(alphabet=string.ascii_letters + " .,:-#*`\n", max_size=200))
        commits.append((f, " ".join(words), body, draw(st.integers(0, 3))))
    return n_files, commits


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories(), budgets=st.lists(st.integers(1, 3000), min_size=3, max_size=6),
       query=st.sampled_from(["", "timeout", "fix crash", "why memo"]),
       fmt=st.sampled_from(["markdown", "json"]))
def test_the_budget_is_never_exceeded(tmp_path_factory, history, budgets, query, fmt):
    root = tmp_path_factory.mktemp("pack")
    repo = ScriptedRepo(root / "repo")
    n_files, commits = history
    for n, (f, subject, body, lines) in enumerate(commits):
        code = "".join(f"    x{i} = {n}\n" for i in range(lines + 1))
        repo.write(f"m{f}.py", f"def func{f}():\n{code}    return {n}\n\nclass K{f}:\n    pass\n")
        repo.commit(subject + ("\n\n" + body if body.strip() else ""), days_ago=30 - n)
    db = root / "c.db"
    index_repository(repo.path, db, Settings(), model="none")
    con = open_reader(db)
    focus = f"m{commits[-1][0]}.py::func{commits[-1][0]}"
    for budget in budgets:
        try:
            result = build_pack(con, repo.path, query=query or None, at=focus, budget=budget,
                                fmt=fmt)
        except CortexError as exc:
            assert "below the" in str(exc)
            continue
        assert count_tokens(result.text) <= budget
        assert result.used == count_tokens(result.text)
        for item in result.items:
            assert item.citation and item.citation in result.text
        if fmt == "json":
            data = json.loads(result.text)
            assert len(data["items"]) == len(result.items)


def test_a_pack_about_a_symbol_holds_its_code_history_notes_and_docs(repo, cortex, tiny_model):
    repo.write("client.py", "def fetch(url):\n    return get(url)\n")
    repo.write("README.md", "# Fetching\n\nfetch waits with a deadline.\n")
    repo.commit("Add fetch", days_ago=30)
    repo.write("client.py", "def fetch(url):\n    return get(url, timeout=30)\n")
    sha = repo.commit("Fix timeout in fetch\n\nIt could hang forever.", days_ago=3)
    cortex.index(model=tiny_model)
    from cortex_core.notes import add_note
    from cortex_core.store import open_writer
    note = add_note(open_writer(cortex.db), repo.path, "client.py::fetch", "Keep 30 s: a proxy "
                    "drops idle connections at 35 s.")
    result = build_pack(cortex.reader(), repo.path, at="client.py::fetch", budget=4000)
    sections = {i.section for i in result.items}
    assert {"focus", "notes", "history", "docs"} <= sections
    text = result.text
    assert "return get(url, timeout=30)" in text and "[client.py:1]" in text
    assert f"[{sha[:10]}] Fix timeout in fetch" in text and "It could hang forever." in text
    assert f"[note #{note.id}]" in text and "[README.md:1]" in text
    assert text.index("[client.py:1]") < text.index(f"[note #{note.id}]") < text.index(sha[:10])


# -- secrets ----------------------------------------------------------------------------------------

SECRETS = {
    "aws key": "AKIA" + "QWERTYUIOPASDFGH",
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "gitlab": "glpat-" + "Zx8Yw7Vu6Ts5Rq4Po3Nm",
    "slack": "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "password": "hunter2-Sup3rS3cret",
    "url": "s3cr3tPassw0rd",
    "private key": "MIIEowIBAAKCAQEA7bq" + "Zm9vYmFyYmF6cXV4" * 3,
}


@pytest.fixture
def leaky(repo, cortex, tiny_model):
    repo.write("settings.py", "def connect():\n    return 1\n")
    repo.commit(f"Add AWS access with {SECRETS['aws key']} for the timeout job", days_ago=9)
    repo.write("settings.py", "def connect():\n    return 2\n")
    repo.commit(f"Fix timeout in CI\n\nUse token {SECRETS['github']} and "
                f"{SECRETS['gitlab']} for the mirror.", days_ago=8)
    repo.write("settings.py", "def connect():\n    return 3\n")
    repo.commit(f"Notify on timeout\n\n- post with {SECRETS['slack']}\n"
                f"- connect with password = \"{SECRETS['password']}\"\n"
                f"- db at postgres://admin:{SECRETS['url']}@db.example.com/app", days_ago=7)
    repo.write("settings.py", "def connect():\n    return 4\n")
    repo.write("docs/ops.md", "# Keys\n\nThe timeout deploy key:\n\n-----BEGIN RSA PRIVATE KEY-----\n"
               f"{SECRETS['private key']}\n-----END RSA PRIVATE KEY-----\n")
    repo.commit(f"docs: timeout runbook\n\npassword={SECRETS['password']}", days_ago=6)
    repo.write("settings.py", "def connect():\n    # github token: " + SECRETS["github"] +
               "\n    return 5\n")
    repo.commit("Fix timeout handling in connect", days_ago=5)
    cortex.index(model=tiny_model)
    return cortex


def assert_clean(text: str) -> None:
    for kind, secret in SECRETS.items():
        assert secret not in text, f"{kind} leaked"


def test_no_secret_leaves_the_store(leaky, repo):
    from dataclasses import asdict

    from cortex_core.embeddings import load_embedder
    from cortex_core.history import history
    from cortex_core.notes import add_note, list_notes
    from cortex_core.related_commits import related_commits
    from cortex_core.search import SearchOptions, search
    from cortex_core.store import open_writer
    from cortex_core.targets import TargetSpec
    from cortex_core.what import what
    from cortex_core.workspace import Workspace

    con = leaky.reader()
    embedder = load_embedder(con)
    add_note(open_writer(leaky.db), repo.path, "settings.py::connect",
             f"rotate {SECRETS['aws key']} monthly")
    outputs = []
    for q in ("timeout", "token password key", "AKIA", "postgres admin", "PRIVATE KEY"):
        outputs.append(search(con, q, SearchOptions(top_k=50), embedder=embedder))
    outputs.append(history(con, TargetSpec("settings.py")))
    outputs.append(related_commits(con, "settings.py::connect", embedder=embedder))
    outputs.append(what(con, repo.path, workspace=Workspace("main", ("settings.py",), (), ())))
    outputs.extend(list_notes(con, repo.path))
    for fmt in ("markdown", "json"):
        outputs.append(build_pack(con, repo.path, query="timeout token password", budget=20000,
                                  at="settings.py::connect", fmt=fmt, embedder=embedder).text)
    for out in outputs:
        text = out if isinstance(out, str) else json.dumps(asdict(out), default=str)
        assert_clean(text)
    # and what was redacted says so
    pack_text = outputs[-2]
    assert "[REDACTED:" in pack_text
    assert re.search(r"password = \"?\[REDACTED", json.dumps(
        [asdict(h) for h in outputs[1].hits])) or "[REDACTED:password]" in unescaped(pack_text)


def test_budget_of_a_pack_is_checked_from_the_command_line(leaky, repo):
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "cortex_core.cli", "context", "timeout",
                          "--budget", "300", "--repo", str(repo.path), "--db", str(leaky.db)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert count_tokens(out.stdout) <= 300 and out.stdout.startswith("# Context: timeout")
    assert_clean(out.stdout)
    bad = subprocess.run([sys.executable, "-m", "cortex_core.cli", "context", "--budget", "300",
                          "--repo", str(repo.path), "--db", str(leaky.db)],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "give a query, --at TARGET, or both" in bad.stderr


def test_pack_subject_with_a_secret_is_redacted():
    result = pack(f"why {SECRETS['github']}", [], 200)
    assert SECRETS["github"] not in result.text
    assert "[REDACTED:github-token]" in unescaped(result.text)


def unescaped(text: str) -> str:
    """A markdown pack's text without the escapes that keep repository text inert."""
    return re.sub(r"\\([\\\[\]])", r"\1", text)

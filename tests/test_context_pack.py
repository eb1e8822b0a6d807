"""Context packs: a hard token budget in every encoding (property-based), a budget filled when
there is enough to say, the estimate when bpe-openai is missing, citations on every item, and no
secret from the history ever leaving the store."""

from __future__ import annotations

import json
import re
import string

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cortex_core.config import Settings
from cortex_core.features.context_pack import PackItem, build_pack, pack
from cortex_core.features.token_count import count_tokens, estimate_tokens
from cortex_core.errors import CortexError
from cortex_core.features.token_count import counter, encoding_name
from cortex_core.index.ingest import index_repository
from cortex_core.store.store import open_reader
from scripted_repo import ScriptedRepo


def test_the_estimate_is_documented_and_additive():
    assert estimate_tokens("") == 0
    assert estimate_tokens("fix the getUserById() crash") == 1 + 1 + 3 + 1 + 1 + 2
    a, b = "## [abc1234] Fix: x", "text, with (punctuation)"
    assert estimate_tokens(a + "\n\n" + b) == estimate_tokens(a) + estimate_tokens(b)
    assert count_tokens("implementation", "estimate") == 4


def test_tokens_are_counted_by_a_real_bpe_tokenizer_offline():
    # Counts checked against tiktoken 0.14.0 (encode_ordinary) on the same vocabularies.
    o200k, cl100k = counter("o200k"), counter("cl100k")
    assert o200k.exact and cl100k.exact and not o200k.note
    assert count_tokens("implementation") == 1                        # o200k is the default
    assert o200k.count("fix the getUserById() crash") == 8
    assert cl100k.count("fix the getUserById() crash") == 6
    assert o200k.count("Привет, 世界! 🎉") == 7 and cl100k.count("Привет, 世界! 🎉") == 12
    assert o200k.count("<|endoftext|> hello") == 8                    # special tokens are text
    assert o200k.count("") == 0
    assert encoding_name(" O200K_base ") == "o200k" and encoding_name("cl100k") == "cl100k"
    for bad in ("gpt2", "", None, 3):
        with pytest.raises(CortexError, match="unknown token encoding"):
            encoding_name(bad)


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


def test_a_cut_item_fills_the_room_left_and_code_keeps_whole_lines_and_its_fence():
    code = "```python\n" + "\n".join(f"    step_{i} = compute(step_{i - 1}, {i})"
                                       for i in range(1, 201)) + "\n```"
    items = [PackItem("focus", "function run", code, "a.py:1", 1.0, group="focus"),
             PackItem("focus", "function run (signature)", "```python\ndef run():\n```",
                      "a.py:1", 0.6, group="focus"),
             PackItem("history", "Fix it", "short", "abc", 0.7),
             PackItem("docs", "Guide", " ".join(["the scheduler retries each step"] * 80),
                      "README.md:1", 0.3)]
    for encoding in ("o200k", "cl100k", "estimate"):
        count = counter(encoding).count
        for budget in (300, 600, 1200):
            result = pack("run", items, budget, encoding=encoding)
            assert budget * 0.95 <= count(result.text) == result.used <= budget, (encoding, budget)
            focus = next(i for i in result.items if i.section == "focus")
            assert focus.cut and re.fullmatch(r"function run \(lines 1–\d+ of 200\)", focus.title)
            kept = int(re.search(r"1–(\d+)", focus.title)[1])
            assert focus.text.startswith("```python\n") and focus.text.endswith("\n```")
            assert focus.text.count("\n") == kept + 1        # whole lines, the fence closed
            assert "(signature)" not in result.text           # the cut code replaced it
    # room for everything: nothing is cut
    whole = pack("run", items, 100_000)
    assert not any(i.cut for i in whole.items) and "step_200" in whole.text
    # text other than code is cut at a word and marked
    docs = pack("run", items[2:], 120)
    guide = next(i for i in docs.items if i.section == "docs")
    assert guide.cut and guide.text.endswith(" …") and "retries each step" in guide.text


@pytest.fixture(scope="module")
def plentiful(tmp_path_factory):
    """A function with a long history (reasons in every commit), docs naming it, a co-changed
    file: more to say about it than the budgets below."""
    root = tmp_path_factory.mktemp("plenty")
    repo = ScriptedRepo(root / "repo")
    for n in range(30):
        body = "\n".join(f"    wait_{i} = backoff(attempt, {i + n})" for i in range(60))
        repo.write("engine.py", f"def schedule(attempt):\n{body}\n    return wait_0\n\n"
                   f"def backoff(attempt, base):\n    return base * {n + 1}\n")
        repo.write("config.py", f"RETRIES = {n}\n")
        repo.write("README.md", "# Scheduling\n\n" + "schedule waits between attempts; "
                   f"backoff grows by {n + 1} each time. " * 6 + "\n")
        repo.commit(f"Tune schedule backoff, step {n}\n\nThe retry storm of incident {n} came "
                    "from workers that retried in lockstep, so schedule now spreads the waits "
                    "and backs off longer after each failed attempt; the config follows. The "
                    "queue drained within minutes once the waits were spread, and the p99 "
                    f"latency of the workers fell to {n + 40} ms in the load test we ran after.",
                    days_ago=60 - n)
    db = root / "c.db"
    index_repository(repo.path, db, Settings(), model="none")
    return repo, db


@pytest.mark.parametrize("encoding", ["o200k", "cl100k"])
@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_a_pack_fills_its_budget_when_there_is_enough_to_say(plentiful, encoding, fmt):
    repo, db = plentiful
    con = open_reader(db)
    count = counter(encoding).count
    everything = build_pack(con, repo.path, at="engine.py::schedule", budget=1_000_000,
                            fmt=fmt, encoding=encoding)
    # From a few hundred tokens up: a cut keeps whole lines of code (12-14 tokens each here), so
    # at 200 tokens one line is already 7% of the budget.
    for budget in (400, 800, 1200, 1600):
        assert everything.used > budget       # enough to say
        result = build_pack(con, repo.path, at="engine.py::schedule", budget=budget, fmt=fmt,
                            encoding=encoding)
        real = count(result.text)
        assert result.used == real and 0.95 * budget <= real <= budget, (budget, real)
        # the estimate (the counter of earlier versions) over-counts, so it leaves room unused:
        # less than the real counter fills (not a fixed share: the shas cited differ from run
        # to run, and a hex sha's tokens with them; once 380 of 400 against a bound of 0.95)
        old = build_pack(con, repo.path, at="engine.py::schedule", budget=budget, fmt=fmt,
                         encoding="estimate")
        assert count(old.text) < real


def test_without_bpe_openai_packs_are_estimated_and_say_so(plentiful):
    import subprocess
    import sys
    repo, db = plentiful
    code = ("import sys; sys.modules['bpe_openai'] = None\n"
            "from cortex_cli.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    args = ["context", "--at", "engine.py::schedule", "--budget", "600", "--repo",
            str(repo.path), "--db", str(db)]
    out = subprocess.run([sys.executable, "-c", code, *args, "--json"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "bpe-openai is not installed: tokens are estimated" in out.stderr
    data = json.loads(out.stdout)
    assert data["tokenizer"] == "estimate" and "not counted in o200k" in data["note"]
    assert data["used"] == estimate_tokens(data["text"]) <= 600
    plain_run = subprocess.run([sys.executable, "-c", code, *args, "--encoding", "cl100k"],
                               capture_output=True, text=True, timeout=60)
    assert plain_run.returncode == 0 and "not counted in cl100k" in plain_run.stderr
    assert estimate_tokens(plain_run.stdout) <= 600
    # with the package: counted in o200k, nothing to say about it
    exact = subprocess.run([sys.executable, "-m", "cortex_cli.cli", *args, "--json"],
                           capture_output=True, text=True, timeout=60)
    assert exact.returncode == 0 and "bpe-openai" not in exact.stderr
    assert json.loads(exact.stdout)["tokenizer"] == "o200k"


def test_the_encoding_setting_is_read_from_the_config_and_checked(plentiful, tmp_path):
    import subprocess
    import sys
    from cortex_core.config import load_settings
    config = tmp_path / "config.toml"
    config.write_text('[packs]\nencoding = "CL100K_BASE"\n')
    assert load_settings(config).packs.encoding == "cl100k"
    assert load_settings(tmp_path / "none.toml").packs.encoding == "o200k"
    for bad in ('encoding = "gpt2"', "encoding = 3", 'other = "x"'):
        config.write_text(f"[packs]\n{bad}\n")
        with pytest.raises(CortexError, match="packs"):
            load_settings(config)
    repo, db = plentiful
    own = repo.path / ".cortex" / "config.toml"
    own.parent.mkdir(exist_ok=True)
    own.write_text('[packs]\nencoding = "cl100k"\n')
    try:
        def run(*extra):
            out = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "context", "--at",
                                  "engine.py::schedule", "--budget", "400", "--repo",
                                  str(repo.path), "--db", str(db), "--json", *extra],
                                 capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            return json.loads(out.stdout)
        assert run()["tokenizer"] == "cl100k"
        assert run("--encoding", "estimate")["tokenizer"] == "estimate"   # the option wins
    finally:
        own.unlink()


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
       fmt=st.sampled_from(["markdown", "json"]),
       encoding=st.sampled_from(["o200k", "cl100k", "estimate"]))
def test_the_budget_is_never_exceeded(tmp_path_factory, history, budgets, query, fmt, encoding):
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
                                fmt=fmt, encoding=encoding)
        except CortexError as exc:
            assert "below the" in str(exc)
            continue
        assert count_tokens(result.text, encoding) <= budget
        assert result.used == count_tokens(result.text, encoding)
        assert result.tokenizer == encoding
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
    from cortex_core.memory.notes import add_note
    from cortex_core.store.store import open_writer
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
    assert "line" not in result.note
    # A line no symbol encloses (past the file's end here) gets the file's pack, and says so.
    past = build_pack(cortex.reader(), repo.path, at="client.py:99", budget=4000)
    assert past.note.endswith("no symbol encloses line 99 at HEAD; the pack is about the file")
    assert "focus" not in {i.section for i in past.items} and "Fix timeout" in past.text


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

    from cortex_core.memory.embeddings import load_embedder
    from cortex_core.query.history import history
    from cortex_core.memory.notes import add_note, list_notes
    from cortex_core.query.related_commits import related_commits
    from cortex_core.memory.search import SearchOptions, search
    from cortex_core.store.store import open_writer
    from cortex_core.query.targets import TargetSpec
    from cortex_core.features.what import what
    from cortex_core.git.workspace import Workspace

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
    out = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "context", "timeout",
                          "--budget", "300", "--repo", str(repo.path), "--db", str(leaky.db)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert count_tokens(out.stdout) <= 300 and out.stdout.startswith("# Context: timeout")
    assert_clean(out.stdout)
    bad = subprocess.run([sys.executable, "-m", "cortex_cli.cli", "context", "--budget", "300",
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


@pytest.mark.parametrize("encoding", ["o200k", "cl100k", "estimate"])
@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_lone_surrogates_are_counted_and_shown_as_replacement_characters(encoding, fmt):
    # A client's JSON may hold `"\ud800"` (the language server's query, a note): a BPE encoder
    # cannot take such a str, and no UTF-8 output can carry it.
    for encoding_ in ("o200k", "cl100k"):
        assert count_tokens("a\ud800b\udfff", encoding_) == count_tokens("a\ufffdb\ufffd",
                                                                        encoding_)
    items = [PackItem("search", "found \udcff", "text \ud800 " * 30, "c1", 1.0),
             PackItem("focus", "code", "```python\nx = '\udc80'\n```", "c2", 2.0)]
    result = pack("why \ud83d", items, 120, fmt, encoding)
    result.text.encode("utf-8")                     # no lone surrogate left in the pack
    assert "\ufffd" in result.text and result.items
    assert result.used == count_tokens(result.text, encoding) <= 120


def test_partners_sharing_the_focus_commits_are_all_in_the_pack(tmp_path):
    """b.py and c.py change with a.py in the same commits, which a.py's history also cites:
    each partner is an item of its own, beside that history."""
    repo = ScriptedRepo(tmp_path / "trio")
    for n in range(3):
        for name in ("a", "b", "c"):
            repo.write(f"{name}.py", f"{name.upper()} = {n}\n")
        repo.commit(f"all three {n}", days_ago=10 - n)
    index_repository(repo.path, repo.path / ".cortex" / "cortex.db", Settings(), model="none")
    con = open_reader(repo.path / ".cortex" / "cortex.db")
    result = build_pack(con, repo.path, at="a.py", budget=4000, working_tree=False)
    sections = [(i.section, i.title) for i in result.items]
    assert ("changes-with", "b.py") in sections and ("changes-with", "c.py") in sections
    assert len([s for s in sections if s[0] == "history"]) == 3


@pytest.mark.parametrize("budget, words", [(1, "a budget of 1 token is below"),
                                           (2, "a budget of 2 tokens is below")])
def test_a_budget_below_the_header_says_how_far(budget, words):
    with pytest.raises(CortexError, match=words + r" the \d+ the pack's header needs"):
        pack("a subject", [], budget)

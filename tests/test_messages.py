"""Commit messages: trailer noise dropped, kinds declared or inferred, the "why" of a commit."""

import pytest

from cortex_core.config import DEFAULT_TRAILERS
from cortex_core.index.messages import PACK_WHY_CHARS, WHY_CHARS, classify, split_message, why


def test_trailers_are_dropped_and_the_reason_kept():
    subject, body = split_message(
        "Fix retry budget\n\nRetries could exceed the budget when the pool was empty.\n\n"
        "Signed-off-by: A <a@x>\nCo-authored-by: B <b@x>\nchange-id: I12\n", DEFAULT_TRAILERS)
    assert subject == "Fix retry budget"
    assert body == "Retries could exceed the budget when the pool was empty."


def test_trailer_list_is_configurable():
    _, body = split_message("s\n\nkeep me\nSigned-off-by: A\nNoise: x\n", ("Noise",))
    assert body == "keep me\nSigned-off-by: A"


def test_windows_line_endings():
    assert split_message("subject\r\n\r\nbody line\r\n", DEFAULT_TRAILERS) == ("subject", "body line")


@pytest.mark.parametrize("subject, kind", [
    ("feat(api)!: drop Python 3.8", "feat"),
    ("fix: handle empty input", "fix"),
    ("docs: typo", "docs"),
    ("chore(deps): bump x", "chore"),
    ("tests: cover retries", "test"),
    ('Revert "Add retries"', "revert"),
    ("Fixed a crash in the parser", "fix"),
    ("Add support for proxies", "feat"),
    ("Refactor the session module", "refactor"),
    ("Update README", "docs"),
    ("Bump version to 2.0", "build"),
    ("Speed up header parsing", "perf"),
    ("wip", "other"),
    ("unknowntype: something", "other"),
])
def test_kinds(subject, kind):
    assert classify(subject) == kind


def test_merges_are_merges():
    assert classify("Merge pull request #1 from a/fix-things", is_merge=True) == "merge"


def test_why_keeps_only_what_adds_to_the_subject():
    assert why("fix x", "") is None
    assert why("fix x", "fix x") is None
    assert why("fix x", "Signed-off-by: A <a@b>") is None
    assert why("fix x", "Merge branch 'y' into main") is None
    assert why("fix x", "This reverts commit 0123456789abcdef.") is None
    assert why("fix x", "Fixes #12") is None                          # a bare reference
    assert why("fix x", "Because\nthe parser   broke.\n\nMore.") == "Because the parser broke."
    assert why("fix x", "Fix x\n\nRefs: #4\nThe cache kept stale rows.") == \
        "The cache kept stale rows."                                   # the first that adds
    assert why("s", "password=hunter2hunter2 was leaked in logs") == \
        "password=[REDACTED:password] was leaked in logs"


def test_one_why_with_a_length_for_cards_and_one_for_packs():
    body = "word " * 200
    card, packed = why("s", body), why("s", body, PACK_WHY_CHARS)
    assert (WHY_CHARS, PACK_WHY_CHARS) == (200, 500)
    assert len(card) == WHY_CHARS and card.endswith("…") and packed.startswith(card[:-1])
    assert len(packed) == PACK_WHY_CHARS and packed.endswith("…")
    assert why("s", "short enough, and kept whole", 28) == "short enough, and kept whole"
    # Redacted before it is clipped: a secret cut in half would slip past its pattern.
    secret = "token ghp_" + "a1B2" * 9
    assert "ghp_" not in (why("s", "x" * 180 + " " + secret) or "")


def test_hovers_what_and_packs_give_one_why(repo, cortex):
    """The card (hovers, LSP and MCP histories), `cortex what` and a pack read the same reason
    of a commit, each at its length: the paragraph that repeats the subject and the trailer line
    are skipped by all of them."""
    from cortex_core.features.context_pack import build_pack
    from cortex_core.features.symbol_info import symbol_card
    from cortex_core.features.what import what
    from cortex_core.git.workspace import Workspace

    repo.write("app.py", "def f():\n    return 1\n")
    repo.commit("Add f", days_ago=10)
    repo.write("app.py", "def f():\n    return 2\n")
    reason = "The cache kept stale rows after a reload, " + "so f read an old value " * 12
    reason = reason.strip() + "."
    sha = repo.commit(f"Fix f\n\nFix f\n\nRefs: #12\n{reason}", days_ago=2)
    cortex.index(model="none")
    con = cortex.reader()
    assert 300 < len(reason) < PACK_WHY_CHARS
    clipped = reason[:WHY_CHARS - 1].rstrip() + "…"

    card = symbol_card(con, repo.path, "app.py", "f")
    assert card.history[0].commit.sha == sha and card.history[0].why == clipped
    found = what(con, repo.path, workspace=Workspace("main", ("app.py",), (), ()))
    assert [c.why for c in found.about_changes if c.commit.sha == sha] == [clipped]
    pack = build_pack(con, repo.path, at="app.py::f", budget=4000, working_tree=False)
    [item] = [i for i in pack.items if i.section == "history" and i.citation == sha[:10]]
    assert item.text.endswith(f": {reason}")

"""Commit messages: trailer noise dropped, kinds declared or inferred."""

import pytest

from cortex_core.config import DEFAULT_TRAILERS
from cortex_core.messages import classify, split_message


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

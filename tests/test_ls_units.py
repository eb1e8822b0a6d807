"""The language server's parts that need no server: buffers and positions, settings, runs."""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types

from cortex_core.engine import Engine
from cortex_core.lang.live import buffer_symbols, innermost
from cortex_ls.documents import Buffer, cursor, encoding_name
from cortex_ls.indexer import IndexRun, Outcome
from cortex_ls.repos import Repo
from cortex_ls.settings import Settings, parse_settings

sys.path.insert(0, str(Path(__file__).parent))

from scripted_repo import ScriptedRepo  # noqa: E402

# -- positions ---------------------------------------------------------------------------------


def test_lines_split_as_lsp_does_not_as_python_does():
    # \f, \v, \x1c and \u2028 are not line breaks in LSP; \r\n, \r and \n are.
    buf = Buffer("u", None, "a\fb\r\nc\rd\ne\u2028f\x1cg")
    assert buf.line_count == 4
    assert [buf.line_text(i) for i in range(4)] == ["a\fb", "c", "d", "e\u2028f\x1cg"]


def test_positions_count_units_of_the_negotiated_encoding():
    line = 'x = "é😀𝄞"; y'
    buf = Buffer("u", None, "first\n" + line + "\n")
    y = line.index("y")
    expected = {"utf-16": len(line[:y].encode("utf-16-le")) // 2,
                "utf-8": len(line[:y].encode()), "utf-32": y}
    for encoding, units in expected.items():
        offset = buf.offset(types.Position(1, units), encoding)
        assert buf.text[offset] == "y", encoding
        assert buf.position(offset, encoding) == types.Position(1, units)
        assert cursor(buf, types.Position(1, units), encoding).byte == \
            len(("first\n" + line[:y]).encode())


def test_positions_past_the_end_clamp():
    buf = Buffer("u", None, "ab\ncd")
    assert buf.offset(types.Position(0, 99), "utf-16") == 2        # end of line 0
    assert buf.offset(types.Position(99, 0), "utf-16") == 5        # end of the text
    assert buf.line_end_position(99, "utf-16") == types.Position(1, 2)


def test_encoding_names():
    assert encoding_name(types.PositionEncodingKind.Utf8) == "utf-8"
    assert encoding_name("utf-32") == "utf-32"
    assert encoding_name(None) == "utf-16"


def _apply(text: str, start: int, end: int, new: str, encoding: str) -> str:
    buf = Buffer("u", None, text)
    change = types.TextDocumentContentChangePartial(
        range=types.Range(buf.position(start, encoding), buf.position(end, encoding)), text=new)
    buf.apply(change, encoding)
    return buf.text


ALPHABET = st.sampled_from(list("ab \n\r\té😀\f"))


@given(st.text(ALPHABET, max_size=40), st.data())
def test_incremental_edits_match_string_splicing(text, data):
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    new = data.draw(st.text(ALPHABET, max_size=8))
    encoding = data.draw(st.sampled_from(["utf-8", "utf-16", "utf-32"]))
    # A range inside a \r\n pair has no LSP position: move it off the pair.
    for cut in (start, end):
        if 0 < cut < len(text) and text[cut - 1] == "\r" and text[cut] == "\n":
            return
    assert _apply(text, start, end, new, encoding) == text[:start] + new + text[end:]


def test_a_sequence_of_edits_keeps_the_buffer_in_step():
    rng = random.Random(7)
    text = "def f():\n    return 1\n"
    buf = Buffer("u", None, text)
    for _ in range(300):
        start = rng.randint(0, len(text))
        end = rng.randint(start, min(len(text), start + 5))
        new = rng.choice(["", "x", "é", "😀", "\n", "  "])
        if (0 < start < len(text) and text[start - 1:start + 1] == "\r\n"):
            continue
        change = types.TextDocumentContentChangePartial(
            range=types.Range(buf.position(start, "utf-16"), buf.position(end, "utf-16")),
            text=new)
        buf.apply(change, "utf-16")
        text = text[:start] + new + text[end:]
        assert buf.text == text


def test_full_replacement():
    buf = Buffer("u", None, "old")
    buf.apply(types.TextDocumentContentChangeWholeDocument(text="new\ntext"), "utf-16")
    assert buf.text == "new\ntext" and buf.line_count == 2


# -- the symbol under the cursor ---------------------------------------------------------------


def test_innermost_symbol():
    source = b"class A:\n    def m(self):\n        return 1\n\n\ndef f():\n    pass\n"
    symbols = buffer_symbols("x.py", source)
    at = source.index(b"return")
    assert innermost(symbols, at, 3).qualname == "A.m"
    assert innermost(symbols, source.index(b"pass"), 7).qualname == "f"
    assert innermost(symbols, source.index(b"\n\n\n") + 1, 4) is None
    # Past the end of the last line of a function: the line still counts.
    assert innermost(symbols, len(source), 7).qualname == "f"


def test_unsupported_or_huge_buffers_are_not_parsed():
    assert buffer_symbols("notes.txt", b"def f(): pass") is None
    assert buffer_symbols("big.py", b"x = 1\n" * 400_000) is None


# -- settings ----------------------------------------------------------------------------------


def test_settings_parse_flat_or_nested_and_keep_defaults_on_errors():
    s, errors = parse_settings({"cortex": {"hotspotThreshold": 7, "historyLength": 3,
                                           "clientOnly": "ignored"}})
    assert (s.hotspot_threshold, s.history_length, errors) == (7, 3, [])
    s, errors = parse_settings({"tokenBudget": 10, "hover": "yes", "model": ""}, s)
    assert s.token_budget == Settings().token_budget and s.hover is True and s.model is None
    assert len(errors) == 3 and all("using" in e for e in errors)
    assert s.hotspot_threshold == 7                     # untouched keys keep their value
    s, errors = parse_settings({"hotspotThreshold": None}, s)
    assert s.hotspot_threshold == Settings().hotspot_threshold and not errors
    assert parse_settings([1, 2])[1] and parse_settings(None) == (Settings(), [])


def test_a_model_no_command_line_can_hold_is_refused():
    # JSON carries a lone surrogate; the indexer's argument list cannot.
    s, errors = parse_settings({"cortex": {"model": "minilm-\ud800"}})
    assert s.model is None and len(errors) == 1 and "model" in errors[0]
    errors[0].encode("utf-8")                           # the message itself can be sent
    s, errors = parse_settings({"model": "/models/\u00e9t\u00e9"}, s)
    assert s.model == "/models/\u00e9t\u00e9" and not errors


async def test_an_index_run_that_cannot_start_ends_with_its_error(tmp_path: Path):
    root = ScriptedRepo(tmp_path / "repo").path
    repo = Repo(root, Engine(root))
    done: list[Outcome] = []

    async def on_done(_repo, outcome):
        done.append(outcome)

    async def on_start(_repo):
        pass

    def broken(rebuild):
        raise RuntimeError("no settings")

    # An argument no OS string holds, then a command that cannot be made: each run ends, with
    # the repository no longer "indexing", and a later run still starts.
    for command, said in ((lambda rebuild: [sys.executable, "-c", "\ud800"],
                           "could not start the indexer"),
                          (broken, "the index run failed: no settings")):
        run = IndexRun(repo, command, lambda *a: None, on_done, on_start)
        assert run.request()
        await asyncio.wait_for(run.task, 30)
        assert said in (done[-1].error or "") and not done[-1].ok
        assert not repo.index.running and repo.index.error == done[-1].error
        assert run.request()                            # not stuck: the next run starts
        await asyncio.wait_for(run.task, 30)
        assert len(done) % 2 == 0


def test_the_token_encoding_setting_is_checked_and_normalised():
    s, errors = parse_settings({"cortex": {"tokenEncoding": "CL100K_base"}})
    assert s.token_encoding == "cl100k" and not errors
    s, errors = parse_settings({"tokenEncoding": "gpt2"}, s)
    assert s.token_encoding is None     # unset: the repository's packs.encoding decides
    assert errors == ["Cortex setting tokenEncoding = 'gpt2' is not valid: expected o200k, "
                      "cl100k or estimate; using the repository's setting"]


def test_the_clock_setting_is_read_as_leniently_as_the_encoding():
    s, errors = parse_settings({"cortex": {"clock": " Wall "}})
    assert s.clock == "wall" and not errors
    s, errors = parse_settings({"clock": "today"}, s)
    assert s.clock is None and errors == [
        "Cortex setting clock = 'today' is not valid: expected \"repository\" or \"wall\"; "
        "using the repository's setting"]


def test_booleans_are_not_numbers():
    _, errors = parse_settings({"hotspotThreshold": True, "pollInterval": False})
    assert len(errors) == 2

